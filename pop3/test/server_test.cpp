// The POP3 server over loopback against a memory store, on the SMTP server's
// I/O models (coro, async-nn, stackful, thread): clear text, STLS and
// implicit TLS (an asio::ssl client, a throwaway certificate from the openssl
// tool), the connection limits and eviction, the idle deadline and the stop.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <inlet/pop3/server.hpp>
#include <inlet/store/memory_store.hpp>
#include <istream>
#include <memory>
#include <string>
#include <thread>

namespace asio = boost::asio;
namespace pop3 = inlet::pop3;
namespace store = inlet::store;
using asio::ip::tcp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

struct cert_files {
  std::filesystem::path dir, cert, key;
  cert_files() {
    dir = std::filesystem::temp_directory_path() / ("inlet-pop3-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    cert = dir / "cert.pem";
    key = dir / "key.pem";
    std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                      "-keyout " + key.string() + " -out " + cert.string() + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) cert.clear();
  }
  ~cert_files() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const cert_files& certs() {
  static cert_files c;
  return c;
}

// A line-oriented client over any stream (plain socket or ssl::stream).
template <class Stream>
struct client {
  explicit client(Stream& stream) : s(stream) {}
  Stream& s;
  asio::streambuf buf;
  std::string line() {
    boost::system::error_code ec;
    asio::read_until(s, buf, "\r\n", ec);
    if (ec) return "<" + ec.message() + ">";
    std::istream is(&buf);
    std::string l;
    std::getline(is, l);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    return l;
  }
  // A multi-line response up to its "." line, unstuffed, with CRLF line ends.
  std::string multi() {
    std::string out;
    for (;;) {
      std::string l = line();
      if (l == "." || l.starts_with("<")) return out;
      if (l.starts_with(".")) l.erase(0, 1);
      out += l + "\r\n";
    }
  }
  std::string cmd(const std::string& c) {
    asio::write(s, asio::buffer(c + "\r\n"));
    return line();
  }
};

// A line client on its own loopback connection (the socket lives beside the client that
// reads it).
struct socket_holder {
  tcp::socket sock;
};
struct plain_client : socket_holder, client<tcp::socket> {
  plain_client(asio::io_context& io, std::uint16_t port)
      : socket_holder{tcp::socket(io)}, client<tcp::socket>(sock) {
    sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
};

class pop3_server : public ::testing::TestWithParam<inlet::smtp::io_model> {
 protected:
  store::memory_store st{store::memory_store_config{1000, 1u << 26}};
  std::string first_id;

  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      store::new_message m;
      m.raw = "Subject: m" + std::to_string(i) + "\r\n\r\nline\r\n.dot\r\n";
      std::error_code ec;
      auto p = st.put_sync(std::move(m), ec);
      ASSERT_FALSE(ec);
      if (i == 0) first_id = p->id.str();
    }
  }

  pop3::server_config config() {
    pop3::server_config c;
    c.model = GetParam();
    c.session.auth = [](std::string_view u, std::string_view p) {
      return u == "alice" && p == "pw";
    };
    return c;
  }

  static tcp::socket connect(asio::io_context& io, std::uint16_t port) {
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    return s;
  }

  static asio::ssl::context client_tls() {
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_verify_mode(asio::ssl::verify_none);
    return ctx;
  }

  template <class Stream>
  void sign_in_and_retrieve(client<Stream>& c) {
    EXPECT_EQ(c.cmd("USER alice"), "+OK send PASS");
    EXPECT_THAT(c.cmd("PASS pw"), StartsWith("+OK signed in, 3 messages"));
    EXPECT_THAT(c.cmd("UIDL 3"), "+OK 3 " + first_id);  // 1 is the newest
    EXPECT_THAT(c.cmd("RETR 3"), HasSubstr(" octets"));
    EXPECT_EQ(c.multi(), "Subject: m0\r\n\r\nline\r\n.dot\r\n");
  }
};

TEST_P(pop3_server, clear_text_session_and_delete_on_quit) {
  pop3::server srv(config(), st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  auto sock = connect(io, srv.port());
  client<tcp::socket> c(sock);
  EXPECT_EQ(c.line(), "+OK inlet POP3 server ready");
  sign_in_and_retrieve(c);
  EXPECT_EQ(c.cmd("DELE 3"), "+OK message marked for deletion");
  EXPECT_EQ(c.cmd("QUIT"), "+OK inlet POP3 server signing off (1 messages deleted)");
  EXPECT_EQ(c.line(), "<End of file>");
  EXPECT_EQ(st.stats().messages, 2u);
  std::error_code got;
  st.async_get(first_id, [&](std::error_code ec, store::message_ptr) { got = ec; });
  EXPECT_EQ(got, store::errc::not_found);  // the memory store answers inline
  srv.stop();
  srv.wait();
  EXPECT_EQ(srv.stats().messages_deleted, 1u);
  EXPECT_EQ(srv.stats().messages_retrieved, 1u);
  std::string metrics;
  srv.append_metrics(metrics);
  EXPECT_THAT(metrics, HasSubstr("\ninlet_pop3_messages_retrieved_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\ninlet_pop3_messages_deleted_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\ninlet_pop3_sign_ins_total 1\n"));
}

TEST_P(pop3_server, stls_then_sign_in) {
  if (certs().cert.empty()) GTEST_SKIP() << "no openssl tool";
  auto cfg = config();
  cfg.tls_cert = certs().cert.string();
  cfg.tls_key = certs().key.string();
  cfg.tls = pop3::tls_mode::stls;
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  auto sock = connect(io, srv.port());
  {
    client<tcp::socket> c(sock);
    c.line();
    EXPECT_THAT(c.cmd("CAPA"), StartsWith("+OK"));
    EXPECT_THAT(c.multi(), HasSubstr("STLS\r\n"));
    EXPECT_EQ(c.cmd("STLS"), "+OK begin TLS negotiation");
  }
  auto tls = client_tls();
  asio::ssl::stream<tcp::socket&> ss(sock, tls);
  ss.handshake(asio::ssl::stream_base::client);
  client<asio::ssl::stream<tcp::socket&>> c(ss);
  EXPECT_THAT(c.cmd("CAPA"), StartsWith("+OK"));
  EXPECT_THAT(c.multi(), ::testing::Not(HasSubstr("STLS")));
  sign_in_and_retrieve(c);
  EXPECT_THAT(c.cmd("QUIT"), StartsWith("+OK"));
}

TEST_P(pop3_server, implicit_tls) {
  if (certs().cert.empty()) GTEST_SKIP() << "no openssl tool";
  auto cfg = config();
  cfg.tls_cert = certs().cert.string();
  cfg.tls_key = certs().key.string();
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  auto sock = connect(io, srv.port());
  auto tls = client_tls();
  asio::ssl::stream<tcp::socket&> ss(sock, tls);
  ss.handshake(asio::ssl::stream_base::client);
  client<asio::ssl::stream<tcp::socket&>> c(ss);
  EXPECT_EQ(c.line(), "+OK inlet POP3 server ready");
  EXPECT_THAT(c.cmd("CAPA"), StartsWith("+OK"));
  EXPECT_THAT(c.multi(), ::testing::Not(HasSubstr("STLS")));
  sign_in_and_retrieve(c);
  EXPECT_THAT(c.cmd("QUIT"), StartsWith("+OK"));
}

TEST_P(pop3_server, bad_certificate_is_bad_config) {
  auto cfg = config();
  cfg.tls_cert = "/nonexistent/cert.pem";
  pop3::server srv(cfg, st);
  EXPECT_EQ(srv.start(), pop3::errc::bad_config);
}

TEST_P(pop3_server, connection_limit) {
  auto cfg = config();
  cfg.admission.max_total = 1;
  cfg.admission.evict = false;
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  plain_client ca(io, srv.port());
  EXPECT_THAT(ca.line(), StartsWith("+OK"));
  plain_client cb(io, srv.port());
  EXPECT_EQ(cb.line(), "-ERR [SYS/TEMP] too many connections");
  EXPECT_EQ(cb.line(), "<End of file>");
  EXPECT_EQ(ca.cmd("NOOP"), "-ERR sign in first");  // the first one is served on
  EXPECT_EQ(srv.stats().connections_refused, 1u);
}

TEST_P(pop3_server, connection_limit_per_address) {
  auto cfg = config();
  cfg.admission.max_per_ip = 2;
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  plain_client ca(io, srv.port());
  EXPECT_THAT(ca.line(), StartsWith("+OK"));
  plain_client cb(io, srv.port());
  EXPECT_THAT(cb.line(), StartsWith("+OK"));
  plain_client cc(io, srv.port());  // a third from 127.0.0.1
  EXPECT_EQ(cc.line(), "-ERR [SYS/TEMP] too many connections from your address");
  EXPECT_EQ(cc.line(), "<End of file>");
  EXPECT_EQ(ca.cmd("NOOP"), "-ERR sign in first");  // the first two are served on
  EXPECT_THAT(cb.cmd("QUIT"), StartsWith("+OK"));
  EXPECT_EQ(cb.line(), "<End of file>");
  // Its slot is given back once the server has closed it (bounded wait, no timing asserted).
  for (int i = 0; i < 500 && srv.stats().active_connections > 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  plain_client cd(io, srv.port());
  EXPECT_THAT(cd.line(), StartsWith("+OK"));
  EXPECT_EQ(srv.stats().connections_refused, 1u);
}

// Every slot taken: the idle connection that has waited longest makes room, says
// why and is closed; the newcomer and the other connection are served.
TEST_P(pop3_server, full_server_gives_the_longest_idle_slot_to_a_new_client) {
  auto cfg = config();
  cfg.admission.max_total = 2;
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  plain_client ca(io, srv.port());
  EXPECT_THAT(ca.line(), StartsWith("+OK"));
  // A connection waits "since" it began to wait, after its reply was written: a server
  // thread preempted between the two can start its wait after b's. The pause makes a's
  // wait clearly the older one on a loaded machine.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  plain_client cb(io, srv.port());
  EXPECT_THAT(cb.line(), StartsWith("+OK"));
  EXPECT_EQ(cb.cmd("NOOP"), "-ERR sign in first");  // b waits since later than a
  // A connection is marked idle just after its reply is written: a newcomer that
  // arrives before a and b are marked finds no slot to take and is refused. So the
  // newcomer retries (bounded) until it is admitted; every other try was refused.
  std::unique_ptr<plain_client> cc;
  std::string greeting;
  std::uint64_t tries = 0;
  while (tries++ < 200) {
    cc = std::make_unique<plain_client>(io, srv.port());
    greeting = cc->line();
    if (greeting.starts_with("+OK")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_THAT(greeting, StartsWith("+OK"));
  EXPECT_EQ(ca.line(), "-ERR [SYS/TEMP] too many connections, closing an idle one");
  EXPECT_EQ(ca.line(), "<End of file>");
  EXPECT_EQ(cb.cmd("NOOP"), "-ERR sign in first");
  sign_in_and_retrieve(*cc);
  EXPECT_EQ(srv.stats().connections_evicted, 1u);
  EXPECT_EQ(srv.stats().connections_refused, tries - 1);
}

// One subnet past its limit is refused, free slots or not.
TEST_P(pop3_server, subnet_limit) {
  auto cfg = config();
  cfg.admission.max_per_subnet = 1;
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  plain_client ca(io, srv.port());
  EXPECT_THAT(ca.line(), StartsWith("+OK"));
  plain_client cb(io, srv.port());  // 127.0.0.1 again: the same /24
  EXPECT_EQ(cb.line(), "-ERR [SYS/TEMP] too many connections from your network");
  EXPECT_EQ(cb.line(), "<End of file>");
  EXPECT_EQ(ca.cmd("NOOP"), "-ERR sign in first");
  EXPECT_EQ(srv.stats().connections_refused, 1u);
}

// Under slot pressure an address past its share is refused, and a waiting
// connection's idle time is cut to pressure_timeout from its next wait on.
TEST_P(pop3_server, slot_pressure_shares_and_shorter_idle_time) {
  auto cfg = config();
  cfg.admission.max_total = 4;
  cfg.admission.pressure_at(50);  // on from 2 open connections
  cfg.admission.pressure_per_ip = 2;
  cfg.pressure_timeout = std::chrono::milliseconds(50);
  cfg.idle_timeout = std::chrono::hours(1);
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  plain_client ca(io, srv.port());
  EXPECT_THAT(ca.line(), StartsWith("+OK"));
  plain_client cb(io, srv.port());
  EXPECT_THAT(cb.line(), StartsWith("+OK"));
  EXPECT_TRUE(srv.stats().under_pressure);
  plain_client cc(io, srv.port());
  EXPECT_EQ(cc.line(), "-ERR [SYS/TEMP] too many connections from your address");
  // a's next wait is under pressure: closed without a reply (the autologout),
  // long before its hour; a receive timeout keeps a regression from hanging.
  timeval tv{60, 0};
  ::setsockopt(ca.sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(ca.cmd("NOOP"), "-ERR sign in first");
  EXPECT_EQ(ca.line(), "<End of file>");
}

TEST_P(pop3_server, idle_connection_is_closed_without_a_reply) {
  auto cfg = config();
  cfg.idle_timeout = std::chrono::milliseconds(50);
  pop3::server srv(cfg, st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  auto sock = connect(io, srv.port());
  client<tcp::socket> c(sock);
  EXPECT_THAT(c.line(), StartsWith("+OK"));
  EXPECT_EQ(c.line(), "<End of file>");
}

TEST_P(pop3_server, stop_tells_idle_clients_and_removes_nothing) {
  pop3::server srv(config(), st);
  ASSERT_FALSE(srv.start());
  asio::io_context io;
  auto sock = connect(io, srv.port());
  client<tcp::socket> c(sock);
  c.line();
  c.cmd("USER alice");
  c.cmd("PASS pw");
  EXPECT_EQ(c.cmd("DELE 1"), "+OK message marked for deletion");
  srv.stop();
  EXPECT_EQ(c.line(), "-ERR [SYS/TEMP] server shutting down");
  EXPECT_EQ(c.line(), "<End of file>");
  srv.wait();
  EXPECT_EQ(st.stats().messages, 3u);
}

// POP3 runs on every I/O model of the SMTP server but `process`.
INSTANTIATE_TEST_SUITE_P(models, pop3_server,
                         ::testing::Values(inlet::smtp::io_model::coro,
                                           inlet::smtp::io_model::async_nn,
                                           inlet::smtp::io_model::stackful,
                                           inlet::smtp::io_model::thread),
                         [](const auto& info) {
                           std::string n(inlet::smtp::to_string(info.param));
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(pop3_server_models, process_is_refused) {
  store::memory_store st{store::memory_store_config{10, 1u << 20}};
  pop3::server_config cfg;
  cfg.model = inlet::smtp::io_model::process;
  pop3::server srv(cfg, st);
  EXPECT_EQ(srv.start(), pop3::errc::bad_config);
}

}  // namespace
