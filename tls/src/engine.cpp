// Server TLS through memory; see engine.hpp.
#include <inlet/tls/engine.hpp>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace inlet::tls {

// The BIO between OpenSSL and a tls_engine: reads take ciphertext from the
// engine's input streambuf, writes append to its output string. Never blocks:
// an empty input is a retryable read (SSL_ERROR_WANT_READ).
struct tls_bio {
  static int read(BIO* b, char* out, std::size_t len, std::size_t* got) {
    auto* e = static_cast<tls_engine*>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (e->in_.empty()) {
      BIO_set_retry_read(b);
      *got = 0;
      return 0;
    }
    std::size_t n = 0;
    for (std::string_view span : e->in_.readable_spans()) {
      std::size_t k = std::min(span.size(), len - n);
      std::memcpy(out + n, span.data(), k);
      n += k;
      if (n == len) break;
    }
    e->in_.consume(n);
    *got = n;
    return 1;
  }
  static int write(BIO* b, const char* in, std::size_t len, std::size_t* put) {
    auto* e = static_cast<tls_engine*>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    e->out_.append(in, len);
    *put = len;
    return 1;
  }
  static long ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }
  static int create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
  }
  static const BIO_METHOD* method() {
    static BIO_METHOD* m = [] {
      BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "inlet-tls");
      BIO_meth_set_read_ex(bm, &tls_bio::read);
      BIO_meth_set_write_ex(bm, &tls_bio::write);
      BIO_meth_set_ctrl(bm, &tls_bio::ctrl);
      BIO_meth_set_create(bm, &tls_bio::create);
      return bm;
    }();
    return m;
  }
};

std::error_code tls_context::load(const std::string& cert, const std::string& key,
                                  std::unique_ptr<tls_context>& out) {
  out.reset();
  if (cert.empty()) return {};
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return std::make_error_code(std::errc::invalid_argument);
  auto ctx_guard = std::make_unique<tls_context>(ctx);
  SSL_CTX_set_options(ctx, SSL_OP_ALL);
  SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
  // OpenSSL frees a connection's 17 KB read and write record buffers whenever
  // they are empty: an idle TLS connection keeps only its SSL state.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  // No server-side session cache: it would keep a session per connection
  // (up to 20,480) after the connection is gone. Resumption by ticket stays.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  const std::string& k = key.empty() ? cert : key;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, k.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return std::make_error_code(std::errc::invalid_argument);
  }
  out = std::move(ctx_guard);
  return {};
}

tls_context::tls_context(ssl_ctx_st* ctx) noexcept : ctx_(ctx) {}
tls_context::~tls_context() {
  SSL_CTX_free(ctx_);
}

tls_engine::tls_engine(const tls_context& ctx) : ssl_(SSL_new(ctx.get())) {
  BIO* bio = ssl_ != nullptr ? BIO_new(tls_bio::method()) : nullptr;
  if (bio == nullptr) {
    SSL_free(ssl_);
    throw std::bad_alloc();
  }
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways: SSL owns it
  SSL_set_accept_state(ssl_);
}

tls_engine::~tls_engine() {
  SSL_free(ssl_);
}

namespace {
tls_engine::status result_of(ssl_st* ssl, int rc) {
  int err = SSL_get_error(ssl, rc);
  ERR_clear_error();
  return err == SSL_ERROR_WANT_READ ? tls_engine::status::want_read : tls_engine::status::failed;
}
}  // namespace

tls_engine::status tls_engine::handshake() {
  int rc = SSL_do_handshake(ssl_);
  return rc == 1 ? status::ok : result_of(ssl_, rc);
}

tls_engine::status tls_engine::read(std::span<char> out, std::size_t& n) {
  n = 0;
  int rc = SSL_read_ex(ssl_, out.data(), out.size(), &n);
  return rc == 1 ? status::ok : result_of(ssl_, rc);
}

tls_engine::status tls_engine::write(std::string_view plain) {
  if (plain.empty()) return status::ok;
  std::size_t n = 0;
  int rc = SSL_write_ex(ssl_, plain.data(), plain.size(), &n);
  return rc == 1 && n == plain.size() ? status::ok : status::failed;
}

void tls_engine::release_for_wait(bool idle) noexcept {
  in_.release_if_empty();
  if (idle && out_.empty()) std::string().swap(out_);
}

}  // namespace inlet::tls
