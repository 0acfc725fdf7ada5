// tls_channel without sockets: a real OpenSSL server over memory BIOs on the other side, a
// certificate made in the test. Bytes are shuttled by hand, also one byte at a time.
#include "inlet/load/tls.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "inlet/load/error.hpp"

using namespace inlet::load;

namespace {

// A self-signed P-256 certificate for CN=localhost (also its own CA).
struct test_cert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  test_cert() {
    key = EVP_EC_gen("P-256");
    cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509_sign(cert, key, EVP_sha256());
  }
  ~test_cert() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  std::string pem_file() const {  // written once per test; removed by the caller
    std::string path = (std::filesystem::temp_directory_path() / "inlet-load-tls-test-XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    FILE* f = ::fdopen(fd, "w");
    PEM_write_X509(f, cert);
    std::fclose(f);
    return path;
  }
};

// The server end: an SSL in accept state over two memory BIOs.
struct test_server {
  SSL_CTX* ctx;
  SSL* ssl;
  BIO* in;
  BIO* out;
  explicit test_server(const test_cert& c) {
    ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx, c.cert);
    SSL_CTX_use_PrivateKey(ctx, c.key);
    ssl = SSL_new(ctx);
    in = BIO_new(BIO_s_mem());
    out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
  }
  ~test_server() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  std::string take() {
    std::string s(BIO_ctrl_pending(out), '\0');
    if (!s.empty()) BIO_read(out, s.data(), static_cast<int>(s.size()));
    return s;
  }
  void give(const std::string& s) { BIO_write(in, s.data(), static_cast<int>(s.size())); }
  void step() { SSL_do_handshake(ssl); }
  std::string read_plain() {
    std::string s;
    char buf[4096];
    for (int r; (r = SSL_read(ssl, buf, sizeof buf)) > 0;) s.append(buf, static_cast<std::size_t>(r));
    return s;
  }
};

// Runs the handshake to its end, feeding the client `chunk` bytes at a time.
std::error_code handshake(tls_channel& c, test_server& s, std::size_t chunk) {
  if (auto ec = c.handshake()) return ec;
  std::string plain;
  for (int round = 0; round < 10 && !c.established(); ++round) {
    std::string to_server;
    c.take_output(to_server);
    s.give(to_server);
    s.step();
    const std::string to_client = s.take();
    for (std::size_t i = 0; i < to_client.size(); i += chunk)
      if (auto ec = c.feed(std::string_view(to_client).substr(i, chunk), plain)) return ec;
  }
  std::string rest;  // the client's Finished
  c.take_output(rest);
  s.give(rest);
  s.step();
  EXPECT_TRUE(plain.empty());
  return {};
}

}  // namespace

TEST(Tls, HandshakeAndBothDirectionsAtEveryChunkSize) {
  test_cert cert;
  tls_context ctx(tls_options{});
  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{100000}}) {
    test_server srv(cert);
    tls_channel c(ctx);
    ASSERT_FALSE(handshake(c, srv, chunk)) << c.last_error();
    ASSERT_TRUE(c.established());
    // Client -> server: several views, one output (what one flush writes).
    ASSERT_FALSE(c.write("MAIL FROM:<a@x>\r\n"));
    ASSERT_FALSE(c.write("RCPT TO:<b@y>\r\n"));
    ASSERT_FALSE(c.write(std::string(20000, 'x')));  // more than one record
    std::string wire;
    c.take_output(wire);
    EXPECT_FALSE(c.has_output());
    srv.give(wire);
    EXPECT_EQ(srv.read_plain(), "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\n" + std::string(20000, 'x'));
    // Server -> client, fed in pieces: plaintext comes out in order, records re-joined.
    SSL_write(srv.ssl, "250 ok\r\n", 8);
    SSL_write(srv.ssl, "250 2.0.0 queued\r\n", 18);
    const std::string back = srv.take();
    std::string plain;
    for (std::size_t i = 0; i < back.size(); i += chunk)
      ASSERT_FALSE(c.feed(std::string_view(back).substr(i, chunk), plain));
    EXPECT_EQ(plain, "250 ok\r\n250 2.0.0 queued\r\n");
  }
}

TEST(Tls, VerificationFailsWithoutTheCaAndPassesWithIt) {
  test_cert cert;
  const std::string ca = cert.pem_file();
  {
    tls_context ctx(tls_options{.verify = true, .ca_file = ca, .server_name = "localhost"});
    test_server srv(cert);
    tls_channel c(ctx);
    EXPECT_FALSE(handshake(c, srv, 1000)) << c.last_error();
    EXPECT_TRUE(c.established());
  }
  {  // the right CA but another name
    tls_context ctx(tls_options{.verify = true, .ca_file = ca, .server_name = "mx.example"});
    test_server srv(cert);
    tls_channel c(ctx);
    EXPECT_EQ(handshake(c, srv, 1000), errc::tls_failed);
    EXPECT_FALSE(c.established());
    EXPECT_NE(c.last_error().find("verify"), std::string::npos) << c.last_error();
  }
  ::unlink(ca.c_str());
  {  // a CA bundle that does not hold our certificate: an empty one
    tls_context ctx(tls_options{.verify = true, .ca_file = "", .server_name = "localhost"});
    test_server srv(cert);
    tls_channel c(ctx);
    EXPECT_EQ(handshake(c, srv, 1000), errc::tls_failed);
  }
  EXPECT_THROW(tls_context(tls_options{.verify = true, .ca_file = "/nonexistent/ca.pem", .server_name = ""}),
               std::runtime_error);
}

TEST(Tls, GarbageFromTheServerFails) {
  tls_context ctx(tls_options{});
  tls_channel c(ctx);
  ASSERT_FALSE(c.handshake());
  std::string plain;
  EXPECT_EQ(c.feed("220 this is not TLS at all\r\n", plain), errc::tls_failed);
  EXPECT_FALSE(c.established());
}
