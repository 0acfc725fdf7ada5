// What OpenSSL itself keeps per idle server connection after a handshake: the
// floor under idle_conns.py --tls, whatever the server around it does.
//
// inlet's own STARTTLS engine (smtp/src/tls.hpp: the context as inletd loads
// it, the connection's SSL with its memory BIO) and an OpenSSL client shake
// hands through memory and exchange one record each way (so TLS 1.3 tickets
// are sent and read); the engine then lets go of what it releases before an
// idle wait, and the program lists every allocation OpenSSL made for the
// server side that is still live: count, requested bytes, what malloc
// reserved, and the sites by size. The engine's own buffers come from inlet's
// pools, not OpenSSL's allocator, so they are not counted. The first
// connection of each configuration is a warm-up (OpenSSL caches provider
// methods on first use); only the second is counted.
//
// usage: inlet-tls-floor [--top N]
#include <inlet/tls/self_signed.hpp>
#include <malloc.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tls.hpp"

namespace {

struct site {
  std::size_t bytes;
  const char* file;
  int line;
};

// OpenSSL's allocator hooks: every live allocation made while `counting` is
// set, by pointer. The map itself uses malloc directly, never these hooks.
bool counting = false;
std::unordered_map<void*, site>* live = nullptr;

void* hook_malloc(std::size_t n, const char* file, int line) {
  void* p = std::malloc(n);
  if (p != nullptr && counting) (*live)[p] = site{n, file, line};
  return p;
}
void hook_free(void* p, const char*, int) {
  if (p == nullptr) return;
  live->erase(p);
  std::free(p);
}
void* hook_realloc(void* p, std::size_t n, const char* file, int line) {
  if (p == nullptr) return hook_malloc(n, file, line);
  bool was_counted = live->count(p) != 0;
  void* q = std::realloc(p, n);
  if (q == nullptr) return nullptr;
  live->erase(p);
  if (was_counted || counting) (*live)[q] = site{n, file, line};
  return q;
}

// A fresh self-signed P-256 key and certificate, as PEM files in `dir`.
bool write_certificate(const std::filesystem::path& dir) {
  std::string error;
  auto pem = inlet::tls::make_self_signed({"inlet"}, 1, error);
  return pem && inlet::tls::write_pem_files(*pem, (dir / "cert.pem").string(),
                                            (dir / "key.pem").string(), error);
}

using inlet::smtp::detail::tls_context;
using inlet::smtp::detail::tls_engine;

// Client ciphertext into the engine, and the engine's output to the client.
void to_server(BIO* client_out, tls_engine& server) {
  for (;;) {
    auto space = server.read_space();
    auto first = *space.begin();
    int n = BIO_read(client_out, first.data(), static_cast<int>(first.size()));
    if (n <= 0) return;
    server.commit(static_cast<std::size_t>(n));
  }
}
void to_client(tls_engine& server, BIO* client_in) {
  std::string_view out = server.output();
  if (!out.empty()) BIO_write(client_in, out.data(), static_cast<int>(out.size()));
  server.clear_output();
}

struct result {
  std::size_t allocations = 0, requested = 0, reserved = 0;
  std::string version;
  std::vector<site> sites;
};

// One connection; the server side's allocations are counted when `count`.
bool one_connection(const tls_context& server_ctx, SSL_CTX* client_ctx, bool count,
                    result& out) {
  SSL* client = SSL_new(client_ctx);
  BIO* c_in = BIO_new(BIO_s_mem());
  BIO* c_out = BIO_new(BIO_s_mem());
  SSL_set_bio(client, c_in, c_out);
  SSL_set_connect_state(client);

  counting = count;
  auto server = std::make_unique<tls_engine>(server_ctx);
  counting = false;

  bool done = false;
  for (int round = 0; round < 8 && !done; ++round) {
    SSL_do_handshake(client);
    to_server(c_out, *server);
    counting = count;
    done = server->handshake() == tls_engine::status::ok;
    counting = false;
    to_client(*server, c_in);
  }
  SSL_do_handshake(client);
  char buf[64];
  std::size_t n = 0;
  SSL_write_ex(client, "EHLO client\r\n", 13, &n);
  to_server(c_out, *server);
  counting = count;
  bool ok = done && server->read(buf, n) == tls_engine::status::ok &&
            server->write("250 ok\r\n") == tls_engine::status::ok;
  server->release_for_wait(false);
  counting = false;
  to_client(*server, c_in);
  ok = ok && SSL_read_ex(client, buf, sizeof buf, &n) == 1;
  counting = count;
  server->release_for_wait(true);  // what a connection does before an idle wait
  counting = false;

  if (count) {
    out.version = std::string(SSL_get_version(client)) + ", " + SSL_get_cipher_name(client);
    for (auto& [p, s] : *live) {
      ++out.allocations;
      out.requested += s.bytes;
      out.reserved += malloc_usable_size(p);
      out.sites.push_back(s);
    }
    std::sort(out.sites.begin(), out.sites.end(),
              [](const site& a, const site& b) { return a.bytes > b.bytes; });
  }
  server.reset();
  SSL_free(client);
  live->clear();
  return ok;
}

struct config {
  const char* name;
  int max_version;
  const char* suites;
  bool tickets;
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t top = 8;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
      top = std::strtoul(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--top N]\n", argv[0]);
      return 2;
    }
  }
  live = new std::unordered_map<void*, site>();
  if (CRYPTO_set_mem_functions(hook_malloc, hook_realloc, hook_free) != 1) {
    std::fprintf(stderr, "OpenSSL was used before main; cannot hook its allocator\n");
    return 1;
  }
  std::printf("%s\n\n", OpenSSL_version(OPENSSL_VERSION));
  std::printf("| server connection, idle after the handshake and one record each way | live allocations | requested B | reserved by malloc B |\n");
  std::printf("|---|---|---|---|\n");
  const config configs[] = {
      {"inlet's context as loaded", 0, nullptr, true},
      {"no session tickets", 0, nullptr, false},
      {"TLS 1.3 ChaCha20-Poly1305 only", 0, "TLS_CHACHA20_POLY1305_SHA256", true},
      {"TLS 1.2 at most", TLS1_2_VERSION, nullptr, true},
  };
  namespace fs = std::filesystem;
  std::string dir_template = (fs::temp_directory_path() / "inlet-tls-floor-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const fs::path dir = dir_template;
  struct remove_dir {
    fs::path p;
    ~remove_dir() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{dir};
  if (!write_certificate(dir)) {
    std::fprintf(stderr, "cannot make a certificate\n");
    return 1;
  }
  std::vector<result> results;
  for (const config& c : configs) {
    // The server context exactly as inletd loads it; a variant changes one setting.
    std::unique_ptr<tls_context> server_ctx;
    if (tls_context::load((dir / "cert.pem").string(), (dir / "key.pem").string(), server_ctx) ||
        !server_ctx) {
      std::fprintf(stderr, "cannot load the certificate\n");
      return 1;
    }
    SSL_CTX* sc = server_ctx->get();
    if (c.max_version != 0) SSL_CTX_set_max_proto_version(sc, c.max_version);
    if (c.suites != nullptr) SSL_CTX_set_ciphersuites(sc, c.suites);
    if (!c.tickets) SSL_CTX_set_num_tickets(sc, 0);
    SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
    result warm, r;
    if (!one_connection(*server_ctx, client_ctx, false, warm) ||
        !one_connection(*server_ctx, client_ctx, true, r)) {
      std::fprintf(stderr, "%s: the handshake or the record exchange failed\n", c.name);
      return 1;
    }
    std::printf("| %s (%s) | %zu | %zu | %zu |\n", c.name, r.version.c_str(), r.allocations,
                r.requested, r.reserved);
    results.push_back(std::move(r));
    SSL_CTX_free(client_ctx);
  }
  // Where the first configuration's bytes are, by site (same-site entries summed).
  std::map<std::string, std::pair<std::size_t, std::size_t>> by_site;
  for (const site& s : results.front().sites) {
    auto& e = by_site[std::string(s.file) + ":" + std::to_string(s.line)];
    e.first += s.bytes;
    ++e.second;
  }
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> sorted(by_site.begin(),
                                                                                   by_site.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::printf("\nlargest sites, %s:\n", configs[0].name);
  for (std::size_t i = 0; i < sorted.size() && i < top; ++i) {
    std::printf("  %6zu B in %zu  %s\n", sorted[i].second.first, sorted[i].second.second,
                sorted[i].first.c_str());
  }
  return 0;
}
