// inlet::tls — server-side TLS without sockets: an OpenSSL server session whose
// ciphertext goes through memory, so a protocol's connection core runs TLS itself
// (STARTTLS, STLS or implicit TLS) and every I/O model only moves bytes. Used by
// the SMTP connection core and the POP3 driver. tls_context is the server's
// SSL_CTX, tls_engine one connection's SSL.
//
// Memory while idle: the context sets SSL_MODE_RELEASE_BUFFERS (OpenSSL
// frees its record buffers whenever they are empty), and the engine's
// ciphertext input is pooled fragments given back when drained. What stays is
// the SSL object and its cipher state.
//
// Thread-safety: tls_context is immutable after load() and shared by every
// connection (OpenSSL's SSL_CTX is safe for concurrent SSL_new); a tls_engine
// belongs to one connection, used from one thread or strand at a time.
#pragma once

#include <inlet/buffer/streambuf.hpp>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

struct ssl_ctx_st;
struct ssl_st;

namespace inlet::tls {

class tls_context {
 public:
  /// Loads a PEM certificate chain and key (`key` empty: the key is in `cert`); an
  /// empty `cert` loads nothing and succeeds with `out` null.
  /// std::errc::invalid_argument when they cannot be loaded.
  static std::error_code load(const std::string& cert, const std::string& key,
                              std::unique_ptr<tls_context>& out);
  /// Takes ownership of a configured SSL_CTX (tests).
  explicit tls_context(ssl_ctx_st* ctx) noexcept;
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;
  ssl_ctx_st* get() const noexcept { return ctx_; }

 private:
  ssl_ctx_st* ctx_;
};

class tls_engine {
 public:
  enum class status { ok, want_read, failed };

  explicit tls_engine(const tls_context& ctx);
  ~tls_engine();
  tls_engine(const tls_engine&) = delete;
  tls_engine& operator=(const tls_engine&) = delete;

  /// Space for ciphertext from the peer, and how much of it arrived.
  buffer::streambuf::mutable_buffers_type read_space() { return in_.prepare(16 * 1024 + 512); }
  void commit(std::size_t n) noexcept { in_.commit(n); }

  /// Advances the server handshake with the ciphertext committed so far.
  status handshake();
  /// Decrypts into `out`; `n` octets written. want_read: nothing more can be
  /// decrypted until more ciphertext arrives.
  status read(std::span<char> out, std::size_t& n);
  /// Encrypts all of `plain` into output().
  status write(std::string_view plain);

  /// Ciphertext to send (handshake messages, encrypted replies).
  std::string_view output() const noexcept { return out_; }
  void clear_output() noexcept { out_.clear(); }
  /// Before waiting: gives back the ciphertext input's fragments when they
  /// are drained, and (`idle`) the output string's space.
  void release_for_wait(bool idle) noexcept;

 private:
  friend struct tls_bio;
  ssl_st* ssl_;
  buffer::streambuf in_;  // ciphertext not yet taken by OpenSSL
  std::string out_;       // ciphertext OpenSSL produced, not yet written
};

}  // namespace inlet::tls
