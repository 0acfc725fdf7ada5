// What OpenSSL itself keeps per idle server connection after a handshake: the
// floor under idle_conns.py --tls, whatever the server around it does.
//
// A server and a client SSL shake hands through memory, exchange one record
// each way (so TLS 1.3 tickets are sent and read), then the program lists
// every allocation OpenSSL made on the server side that is still live: count,
// requested bytes, what malloc actually reserved, and the sites by size. The
// first connection of each configuration is a warm-up (OpenSSL caches
// provider methods on first use); only the second is counted.
//
// usage: inlet-tls-floor [--top N]
#include <malloc.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

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

// A fresh self-signed P-256 certificate, in memory.
bool add_certificate(SSL_CTX* ctx) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  if (key == nullptr || cert == nullptr) return false;
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("inlet"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  bool ok = X509_sign(cert, key, EVP_sha256()) > 0 && SSL_CTX_use_certificate(ctx, cert) == 1 &&
            SSL_CTX_use_PrivateKey(ctx, key) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  return ok;
}

// The server's BIO, as inlet's engine has one: ciphertext in two strings
// outside OpenSSL's allocator, so only OpenSSL's own state is counted.
struct pipe_bio {
  std::string in, out;

  static int read(BIO* b, char* data, std::size_t len, std::size_t* got) {
    auto* p = static_cast<pipe_bio*>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (p->in.empty()) {
      BIO_set_retry_read(b);
      *got = 0;
      return 0;
    }
    *got = std::min(len, p->in.size());
    std::memcpy(data, p->in.data(), *got);
    p->in.erase(0, *got);
    return 1;
  }
  static int write(BIO* b, const char* data, std::size_t len, std::size_t* put) {
    static_cast<pipe_bio*>(BIO_get_data(b))->out.append(data, len);
    *put = len;
    return 1;
  }
  static long ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }
  static int create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
  }
  static BIO* make(pipe_bio* p) {
    static BIO_METHOD* m = [] {
      BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tls-floor");
      BIO_meth_set_read_ex(bm, &pipe_bio::read);
      BIO_meth_set_write_ex(bm, &pipe_bio::write);
      BIO_meth_set_ctrl(bm, &pipe_bio::ctrl);
      BIO_meth_set_create(bm, &pipe_bio::create);
      return bm;
    }();
    BIO* b = BIO_new(m);
    BIO_set_data(b, p);
    return b;
  }
};

// Client -> server and server -> client.
void to_server(BIO* client_out, pipe_bio& server) {
  char buf[16384];
  int n = 0;
  while ((n = BIO_read(client_out, buf, sizeof buf)) > 0) server.in.append(buf, n);
}
void to_client(pipe_bio& server, BIO* client_in) {
  if (!server.out.empty()) BIO_write(client_in, server.out.data(), static_cast<int>(server.out.size()));
  server.out.clear();
}

struct result {
  std::size_t allocations = 0, requested = 0, reserved = 0;
  std::string version;
  std::vector<site> sites;
};

// One connection; the server side's allocations are counted when `count`
// (its BIO object is made before counting starts).
bool one_connection(SSL_CTX* server_ctx, SSL_CTX* client_ctx, bool count, result& out) {
  SSL* client = SSL_new(client_ctx);
  BIO* c_in = BIO_new(BIO_s_mem());
  BIO* c_out = BIO_new(BIO_s_mem());
  SSL_set_bio(client, c_in, c_out);
  SSL_set_connect_state(client);
  pipe_bio pipe;
  BIO* s_bio = pipe_bio::make(&pipe);

  counting = count;
  SSL* server = SSL_new(server_ctx);
  counting = false;
  SSL_set_bio(server, s_bio, s_bio);
  SSL_set_accept_state(server);

  bool done = false;
  for (int round = 0; round < 8 && !done; ++round) {
    SSL_do_handshake(client);
    to_server(c_out, pipe);
    counting = count;
    done = SSL_do_handshake(server) == 1;
    counting = false;
    to_client(pipe, c_in);
  }
  SSL_do_handshake(client);
  char buf[64];
  std::size_t n = 0;
  SSL_write_ex(client, "EHLO client\r\n", 13, &n);
  to_server(c_out, pipe);
  counting = count;
  bool ok = done && SSL_read_ex(server, buf, sizeof buf, &n) == 1 &&
            SSL_write_ex(server, "250 ok\r\n", 8, &n) == 1;
  counting = false;
  to_client(pipe, c_in);
  ok = ok && SSL_read_ex(client, buf, sizeof buf, &n) == 1;

  if (count) {
    out.version = SSL_get_version(server);
    for (auto& [p, s] : *live) {
      ++out.allocations;
      out.requested += s.bytes;
      out.reserved += malloc_usable_size(p);
      out.sites.push_back(s);
    }
    std::sort(out.sites.begin(), out.sites.end(),
              [](const site& a, const site& b) { return a.bytes > b.bytes; });
  }
  SSL_free(server);
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
  std::printf("| server, after handshake and one record each way | live allocations | requested B | reserved by malloc B |\n");
  std::printf("|---|---|---|---|\n");
  const config configs[] = {
      {"TLS 1.3, AES-128-GCM (inlet's context)", 0, "TLS_AES_128_GCM_SHA256", true},
      {"TLS 1.3, AES-128-GCM, no tickets", 0, "TLS_AES_128_GCM_SHA256", false},
      {"TLS 1.3, ChaCha20-Poly1305", 0, "TLS_CHACHA20_POLY1305_SHA256", true},
      {"TLS 1.2, ECDHE-ECDSA-AES128-GCM", TLS1_2_VERSION, nullptr, true},
  };
  std::vector<result> results;
  for (const config& c : configs) {
    // The server context as inlet sets it up (smtp/src/tls.cpp).
    SSL_CTX* server_ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_options(server_ctx, SSL_OP_ALL);
    SSL_CTX_set_mode(server_ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(server_ctx, SSL_SESS_CACHE_OFF);
    if (c.max_version != 0) SSL_CTX_set_max_proto_version(server_ctx, c.max_version);
    if (c.suites != nullptr) SSL_CTX_set_ciphersuites(server_ctx, c.suites);
    if (!c.tickets) SSL_CTX_set_num_tickets(server_ctx, 0);
    SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
    if (!add_certificate(server_ctx)) {
      std::fprintf(stderr, "cannot make a certificate\n");
      return 1;
    }
    result warm, r;
    if (!one_connection(server_ctx, client_ctx, false, warm) ||
        !one_connection(server_ctx, client_ctx, true, r)) {
      std::fprintf(stderr, "%s: the handshake or the record exchange failed\n", c.name);
      return 1;
    }
    std::printf("| %s (%s) | %zu | %zu | %zu |\n", c.name, r.version.c_str(), r.allocations,
                r.requested, r.reserved);
    results.push_back(std::move(r));
    SSL_CTX_free(client_ctx);
    SSL_CTX_free(server_ctx);
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
