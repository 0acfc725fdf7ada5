// STARTTLS over loopback: a self-signed certificate made at test time with the
// OpenSSL API, a TLS client through asio::ssl. Checks the RFC 3207 rules:
// pipelined commands after STARTTLS are discarded, EHLO again, the message
// arrives with envelope.tls set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <filesystem>
#include <inlet/smtp/server.hpp>
#include <mutex>

namespace asio = boost::asio;
namespace smtp = inlet::smtp;
using ::testing::HasSubstr;

namespace {

// Writes a throwaway key + self-signed certificate (PEM) into `dir`.
bool make_cert(const std::filesystem::path& dir) {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* x = X509_new();
  if (!key || !x) return false;
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("mx.test"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  bool ok = X509_sign(x, key, EVP_sha256()) > 0;
  FILE* f = std::fopen((dir / "cert.pem").c_str(), "w");
  ok = ok && f && PEM_write_X509(f, x);
  if (f) std::fclose(f);
  f = std::fopen((dir / "key.pem").c_str(), "w");
  ok = ok && f && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  if (f) std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
  return ok;
}

template <class Stream>
std::string read_reply(Stream& s, asio::streambuf& b) {
  std::string out;
  for (;;) {
    boost::system::error_code ec;
    std::size_t n = asio::read_until(s, b, "\r\n", ec);
    if (ec) return out + "<" + ec.message() + ">";
    std::string line(asio::buffers_begin(b.data()), asio::buffers_begin(b.data()) + n);
    b.consume(n);
    out += line;
    if (line.size() >= 4 && line[3] == ' ') return out;
  }
}

}  // namespace

// STARTTLS runs in the connection core, so every model offers it.
class tls : public ::testing::TestWithParam<smtp::io_model> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // As in server_test: TSan cannot unwind or track Boost.Context fiber stacks.
    if (GetParam() == smtp::io_model::stackful)
      GTEST_SKIP() << "stackful model: TSan cannot unwind or track Boost.Context fiber stacks";
    if (GetParam() == smtp::io_model::process)
      GTEST_SKIP() << "process model: fork + threads are not supported by TSan";
#endif
  }
};

TEST_P(tls, starttls_discards_pipelined_commands_and_delivers) {
  auto dir =
      std::filesystem::temp_directory_path() / ("inlet-smtp-tls-" + std::to_string(::getpid()) +
                                                "-" + std::string(smtp::to_string(GetParam())));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(make_cert(dir));
  smtp::server_config cfg;
  cfg.session.hostname = "mx.test";
  cfg.threads = 2;
  cfg.model = GetParam();
  cfg.tls_cert = (dir / "cert.pem").string();
  cfg.tls_key = (dir / "key.pem").string();
  std::mutex mu;
  std::vector<smtp::received_message> got;
  smtp::server srv(cfg, [&](smtp::received_message&& m, smtp::delivery_callback cb) {
    std::lock_guard lk(mu);
    got.push_back(std::move(m));
    cb({smtp::delivery_status::accepted("TLS1"), {}});
  });
  ASSERT_FALSE(srv.start());
  std::filesystem::remove_all(dir);

  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address("127.0.0.1"), srv.local_endpoints()[0].port});
  asio::streambuf b;
  EXPECT_THAT(read_reply(sock, b), HasSubstr("220 mx.test"));
  asio::write(sock, asio::buffer(std::string("EHLO c\r\n")));
  EXPECT_THAT(read_reply(sock, b), HasSubstr("250-STARTTLS\r\n"));
  // A smuggled command pipelined behind STARTTLS must not survive the handshake.
  asio::write(sock, asio::buffer(std::string("STARTTLS\r\nMAIL FROM:<evil@x.test>\r\n")));
  EXPECT_EQ(read_reply(sock, b), "220 2.0.0 Ready to start TLS\r\n");
  ASSERT_EQ(b.size(), 0u);

  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_verify_mode(asio::ssl::verify_none);  // self-signed, test only
  asio::ssl::stream<asio::ip::tcp::socket&> tls(sock, ctx);
  boost::system::error_code ec;
  tls.handshake(asio::ssl::stream_base::client, ec);
  ASSERT_FALSE(ec) << ec.message();
  asio::write(tls, asio::buffer(std::string("RCPT TO:<b@y.test>\r\n")));
  EXPECT_EQ(read_reply(tls, b), "503 5.5.1 Error: need MAIL command\r\n");
  asio::write(tls, asio::buffer(std::string("EHLO c\r\n")));
  std::string ehlo = read_reply(tls, b);
  EXPECT_THAT(ehlo, ::testing::Not(HasSubstr("STARTTLS")));
  asio::write(tls,
              asio::buffer(std::string("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n")));
  EXPECT_EQ(read_reply(tls, b), "250 2.1.0 Ok\r\n");
  EXPECT_EQ(read_reply(tls, b), "250 2.1.5 Ok\r\n");
  EXPECT_THAT(read_reply(tls, b), HasSubstr("354 "));
  asio::write(tls, asio::buffer(std::string("secret\r\n.\r\nQUIT\r\n")));
  EXPECT_EQ(read_reply(tls, b), "250 2.0.0 Ok: queued as TLS1\r\n");
  EXPECT_EQ(read_reply(tls, b), "221 2.0.0 Bye\r\n");
  srv.stop();
  srv.wait();
  if (GetParam() == smtp::io_model::process)
    return;  // the hook ran in the child: the replies above are the check
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body.to_string(), "secret\r\n");
  EXPECT_TRUE(got[0].envelope.tls);
  EXPECT_EQ(got[0].envelope.mail_from, "a@x.test");
}

// SMTPS (RFC 8314): the handshake before the greeting, STARTTLS not offered, the message
// marked as received over TLS; a client speaking clear text gets no greeting.
TEST_P(tls, implicit_tls_greets_after_the_handshake) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inlet-smtps-" + std::to_string(::getpid()) + "-" +
              std::string(smtp::to_string(GetParam())));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(make_cert(dir));
  smtp::server_config cfg;
  cfg.session.hostname = "mx.test";
  cfg.threads = 2;
  cfg.model = GetParam();
  cfg.listen = {smtp::listen_endpoint{"127.0.0.1", 0, false, true}};
  cfg.tls_cert = (dir / "cert.pem").string();
  cfg.tls_key = (dir / "key.pem").string();
  cfg.greeting_timeout = std::chrono::seconds(2);
  std::mutex mu;
  std::vector<smtp::received_message> got;
  smtp::server srv(cfg, [&](smtp::received_message&& m, smtp::delivery_callback cb) {
    std::lock_guard lk(mu);
    got.push_back(std::move(m));
    cb({smtp::delivery_status::accepted("TLS2"), {}});
  });
  ASSERT_FALSE(srv.start());
  std::filesystem::remove_all(dir);
  const auto port = srv.local_endpoints()[0].port;
  EXPECT_TRUE(srv.local_endpoints()[0].implicit_tls);

  asio::io_context io;
  {  // clear text: the server waits for a ClientHello, says nothing, and closes at the timeout
    asio::ip::tcp::socket plain(io);
    plain.connect({asio::ip::make_address("127.0.0.1"), port});
    asio::write(plain, asio::buffer(std::string("EHLO c\r\n")));
    asio::streambuf pb;
    std::string r = read_reply(plain, pb);
    EXPECT_THAT(r, ::testing::Not(HasSubstr("220")));
  }
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_verify_mode(asio::ssl::verify_none);  // self-signed, test only
  asio::ssl::stream<asio::ip::tcp::socket&> tls(sock, ctx);
  boost::system::error_code ec;
  tls.handshake(asio::ssl::stream_base::client, ec);
  ASSERT_FALSE(ec) << ec.message();
  asio::streambuf b;
  EXPECT_THAT(read_reply(tls, b), HasSubstr("220 mx.test ESMTP"));
  asio::write(tls, asio::buffer(std::string("EHLO c\r\n")));
  EXPECT_THAT(read_reply(tls, b), ::testing::Not(HasSubstr("STARTTLS")));
  asio::write(tls, asio::buffer(std::string(
                       "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n")));
  EXPECT_EQ(read_reply(tls, b), "250 2.1.0 Ok\r\n");
  EXPECT_EQ(read_reply(tls, b), "250 2.1.5 Ok\r\n");
  EXPECT_THAT(read_reply(tls, b), HasSubstr("354 "));
  asio::write(tls, asio::buffer(std::string("over smtps\r\n.\r\nQUIT\r\n")));
  EXPECT_EQ(read_reply(tls, b), "250 2.0.0 Ok: queued as TLS2\r\n");
  EXPECT_EQ(read_reply(tls, b), "221 2.0.0 Bye\r\n");
  srv.stop();
  srv.wait();
  if (GetParam() == smtp::io_model::process) return;  // the hook ran in the child
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body.to_string(), "over smtps\r\n");
  EXPECT_TRUE(got[0].envelope.tls);
}

INSTANTIATE_TEST_SUITE_P(models, tls,
                         ::testing::Values(smtp::io_model::coro, smtp::io_model::async_1n,
                                           smtp::io_model::async_nn, smtp::io_model::async_n2n,
                                           smtp::io_model::thread, smtp::io_model::stackful,
                                           smtp::io_model::process),
                         [](const auto& info) {
                           std::string n(smtp::to_string(info.param));
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });
