// TLS without sockets for the connection cores' tests (SMTP's and POP3's): a client
// whose ciphertext moves through OpenSSL memory BIOs, and a server context with a
// throwaway self-signed certificate.
#pragma once

#include <inlet/tls/engine.hpp>
#include <inlet/tls/self_signed.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>

namespace inlet::test {

// What it sends (take_sent) goes to the server; what the server writes is given to
// receive(), which steps the handshake until it is done and then decrypts into `plain`.
struct tls_client {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = nullptr;
  BIO* from_server = BIO_new(BIO_s_mem());
  BIO* to_server = BIO_new(BIO_s_mem());
  std::string plain;  // decrypted replies
  tls_client() {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);  // a throwaway self-signed server
    ssl = SSL_new(ctx);
    SSL_set_bio(ssl, from_server, to_server);
    SSL_set_connect_state(ssl);
  }
  ~tls_client() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  tls_client(const tls_client&) = delete;
  tls_client& operator=(const tls_client&) = delete;
  bool done() const { return SSL_is_init_finished(ssl) == 1; }
  void step() { SSL_do_handshake(ssl); }
  void receive(std::string_view cipher) {
    BIO_write(from_server, cipher.data(), static_cast<int>(cipher.size()));
    if (!done()) step();
    char buf[4096];
    std::size_t n = 0;
    while (done() && SSL_read_ex(ssl, buf, sizeof buf, &n) == 1) plain.append(buf, n);
  }
  void encrypt(std::string_view p) { SSL_write(ssl, p.data(), static_cast<int>(p.size())); }
  std::string take_sent() {
    std::string out;
    char buf[4096];
    int n;
    while ((n = BIO_read(to_server, buf, sizeof buf)) > 0)
      out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
};

// A server context with a throwaway EC key and a self-signed certificate for `host`.
inline std::unique_ptr<inlet::tls::tls_context> test_tls_context(const std::string& host) {
  std::string error;
  auto pem = inlet::tls::make_self_signed({host}, 1, error);
  if (!pem) return nullptr;
  BIO* cb = BIO_new_mem_buf(pem->certificate.data(), static_cast<int>(pem->certificate.size()));
  BIO* kb = BIO_new_mem_buf(pem->private_key.data(), static_cast<int>(pem->private_key.size()));
  X509* x = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate(ctx, x);
  SSL_CTX_use_PrivateKey(ctx, key);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  X509_free(x);
  EVP_PKEY_free(key);
  BIO_free(cb);
  BIO_free(kb);
  return std::make_unique<inlet::tls::tls_context>(ctx);
}

}  // namespace inlet::test
