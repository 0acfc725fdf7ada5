#include "inlet/tls/self_signed.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <memory>

namespace inlet::tls {

namespace {

using pkey_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using x509_ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using bio_ptr = std::unique_ptr<BIO, decltype(&BIO_free)>;

bool is_ip(const std::string& n) {
  ASN1_OCTET_STRING* ip = a2i_IPADDRESS(n.c_str());
  if (!ip) return false;
  ASN1_OCTET_STRING_free(ip);
  return true;
}

std::string bio_text(BIO* b) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

bool write_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return false;
  ::fchmod(fd, mode);  // an existing file keeps its mode through O_CREAT
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return ::close(fd) == 0 && done == text.size();
}

}  // namespace

std::optional<self_signed_pem> make_self_signed(const std::vector<std::string>& names,
                                                int days, std::string& error) {
  if (names.empty()) {
    error = "a certificate needs at least one name";
    return std::nullopt;
  }
  pkey_ptr key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  x509_ptr x(X509_new(), X509_free);
  if (!key || !x) {
    error = "cannot generate a key";
    return std::nullopt;
  }
  X509_set_version(x.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) {
    error = "cannot draw a serial number";
    return std::nullopt;
  }
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), static_cast<long>(days) * 86400);
  X509_set_pubkey(x.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("inlet (self-signed)"), -1,
                             -1, 0);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(names.front().c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(x.get(), subject);
  std::string sans;
  for (const auto& n : names) {
    if (!sans.empty()) sans += ',';
    sans += (is_ip(n) ? "IP:" : "DNS:") + n;
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x.get(), x.get(), nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair<int, std::string>{NID_subject_alt_name, sans},
                            {NID_basic_constraints, "critical,CA:FALSE"},
                            {NID_ext_key_usage, "serverAuth"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (!ext) {
      error = "cannot make a certificate for " + sans;
      return std::nullopt;
    }
    X509_add_ext(x.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(x.get(), key.get(), EVP_sha256()) <= 0) {
    error = "cannot sign the certificate";
    return std::nullopt;
  }
  bio_ptr cb(BIO_new(BIO_s_mem()), BIO_free), kb(BIO_new(BIO_s_mem()), BIO_free);
  if (!cb || !kb || PEM_write_bio_X509(cb.get(), x.get()) != 1 ||
      PEM_write_bio_PrivateKey(kb.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    error = "cannot write the certificate as PEM";
    return std::nullopt;
  }
  return self_signed_pem{bio_text(cb.get()), bio_text(kb.get())};
}

bool write_pem_files(const self_signed_pem& pem, const std::string& cert_path,
                     const std::string& key_path, std::string& error) {
  if (!write_file(cert_path, pem.certificate, 0644)) {
    error = "cannot write " + cert_path;
    return false;
  }
  if (!write_file(key_path, pem.private_key, 0600)) {
    error = "cannot write " + key_path;
    return false;
  }
  return true;
}

}  // namespace inlet::tls
