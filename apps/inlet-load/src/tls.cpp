#include "inlet/load/tls.hpp"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <stdexcept>

#include "inlet/load/error.hpp"

namespace inlet::load {
namespace {
std::string openssl_error_text() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}
}  // namespace

tls_context::tls_context(const tls_options& o) : opts_(o) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (!ctx_) throw std::runtime_error("SSL_CTX_new: " + openssl_error_text());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  // Mem BIOs grow as needed: a write is never partial. No SSL_MODE_RELEASE_BUFFERS: it
  // frees and re-allocates (zeroed) record buffers around every record, which callgrind
  // showed as the client's largest cost with TLS; a load client keeps its buffers.
  if (o.verify) {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    const int ok = o.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx_)
                                     : SSL_CTX_load_verify_locations(ctx_, o.ca_file.c_str(), nullptr);
    if (ok != 1) {
      SSL_CTX_free(ctx_);
      throw std::runtime_error("TLS CA file " + o.ca_file + ": " + openssl_error_text());
    }
  } else {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
  }
}

tls_context::~tls_context() { SSL_CTX_free(ctx_); }

tls_channel::tls_channel(const tls_context& ctx) {
  ssl_ = SSL_new(ctx.native());
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  if (!ssl_ || !in_ || !out_) throw std::bad_alloc();
  BIO_set_mem_eof_return(in_, -1);  // an empty input BIO means "want read", not EOF
  SSL_set_bio(ssl_, in_, out_);     // ssl_ owns both BIOs from here
  const auto& o = ctx.options();
  if (!o.server_name.empty()) {
    SSL_set_tlsext_host_name(ssl_, o.server_name.c_str());
    if (o.verify) SSL_set1_host(ssl_, o.server_name.c_str());
  }
  SSL_set_connect_state(ssl_);
}

tls_channel::~tls_channel() { SSL_free(ssl_); }

std::error_code tls_channel::fail() {
  last_error_ = openssl_error_text();
  if (SSL_get_verify_result(ssl_) != X509_V_OK)
    last_error_ += std::string(" (") + X509_verify_cert_error_string(SSL_get_verify_result(ssl_)) + ")";
  return errc::tls_failed;
}

std::error_code tls_channel::handshake() {
  if (established_) return {};
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    established_ = true;
    return {};
  }
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return {};
  return fail();
}

std::error_code tls_channel::feed(std::string_view cipher, std::string& plain) {
  if (!cipher.empty() && BIO_write(in_, cipher.data(), static_cast<int>(cipher.size())) <= 0)
    return fail();
  if (!established_) {
    if (auto ec = handshake()) return ec;
    if (!established_) return {};
  }
  // Decrypt every complete record; the rest waits in in_ for the next read. Into a stack
  // buffer, then appended: resizing `plain` by a record's size first would zero-fill 16 KB
  // per call (that memset was 42 % of the client's instructions with TLS).
  char buf[16384];
  for (;;) {
    const int r = SSL_read(ssl_, buf, sizeof buf);
    if (r > 0) {
      plain.append(buf, static_cast<std::size_t>(r));
      continue;
    }
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return {};
    if (e == SSL_ERROR_ZERO_RETURN) return errc::tls_closed;
    return fail();
  }
}

std::error_code tls_channel::write(std::string_view plain) {
  while (!plain.empty()) {
    const int r = SSL_write(ssl_, plain.data(), static_cast<int>(std::min<std::size_t>(plain.size(), 1 << 30)));
    if (r <= 0) return fail();
    plain.remove_prefix(static_cast<std::size_t>(r));
  }
  return {};
}

bool tls_channel::has_output() const noexcept { return BIO_ctrl_pending(out_) > 0; }

void tls_channel::take_output(std::string& dst) {
  // Through a stack buffer: resizing dst first would zero-fill it, and BIO_reset (to take
  // the BIO's memory directly) clears the whole BIO buffer; both showed in callgrind.
  char buf[16384];
  for (int r; (r = BIO_read(out_, buf, sizeof buf)) > 0;) dst.append(buf, static_cast<std::size_t>(r));
}

}  // namespace inlet::load
