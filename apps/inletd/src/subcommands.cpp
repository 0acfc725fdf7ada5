#include "subcommands.hpp"

#include <curl/curl.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <inlet/mail/read_view.hpp>
#include <inlet/mail/summary.hpp>
#include <inlet/store/file_store.hpp>
#include <inlet/mime/message.hpp>
#include <inlet/outbound/smtp_relay.hpp>
#include <memory>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config.hpp"

namespace inletd {

namespace {

namespace fs = std::filesystem;
constexpr const char* version_text = "inletd 0.1.0 (Mailpit 1.33.1's API and command line)";

// "[::]:8025", ":8025", "0.0.0.0:8025" -> a host a client can reach: loopback.
std::string client_host(const std::string& host) {
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") return "127.0.0.1";
  return host;
}

std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

// SMTP transactions through inlet's own client (inlet/outbound/smtp_relay.hpp: EHLO,
// dot-stuffing, pipelining, the replies). One client keeps its connection between
// messages, so a folder of thousands of messages is not a connection per message; and no
// HTTP library is loaded for it (a sendmail run is a process per message).
class smtp_client {
 public:
  // "" on success, else why not.
  std::string send(const std::string& server, const std::string& from,
                   const std::vector<std::string>& rcpt, const std::string& raw) {
    if (!client_ || server != server_) {
      host_port hp;
      if (!parse_host_port(server, hp)) return "SMTP server must be HOST:PORT, got '" + server + "'";
      inlet::outbound::smtp_relay_config cfg;
      cfg.host = client_host(hp.host);
      cfg.port = hp.port;
      cfg.timeout = std::chrono::seconds(300);
      // As patient as sendmail's waits: RFC 5321's ten minutes for the reply to the data.
      cfg.setup_timeout = cfg.message_timeout = std::chrono::seconds(600);
      client_ = std::make_unique<inlet::outbound::smtp_client>(std::move(cfg));
      server_ = server;
    }
    return client_->send(from, rcpt, raw);
  }

 private:
  std::string server_;
  std::unique_ptr<inlet::outbound::smtp_client> client_;
};

std::string smtp_send(const std::string& server, const std::string& from,
                      const std::vector<std::string>& rcpt, const std::string& raw) {
  smtp_client c;
  return c.send(server, from, rcpt, raw);
}

// CRLF line ends, as SMTP carries them (a file or a pipe usually has LF).
std::string crlf(std::string_view in) {
  std::string out;
  out.reserve(in.size() + in.size() / 40);
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\n' && (i == 0 || in[i - 1] != '\r')) out += '\r';
    out += in[i];
  }
  return out;
}

// The header block's To, Cc and Bcc addresses (sendmail -t, and no recipient given).
std::vector<std::string> header_recipients(const std::string& raw) {
  auto parsed = inlet::mime::parse(raw);
  inlet::mime::summary s;
  inlet::mime::summarize(parsed, s, 0, 10000);
  std::vector<std::string> out;
  for (auto* list : {&s.to, &s.cc, &s.bcc})
    for (auto& m : *list)
      if (!m.address.empty()) out.push_back(m.address);
  return out;
}

// sendmail -t takes Bcc out of what it sends.
std::string without_bcc(const std::string& raw) {
  std::string out;
  std::size_t at = 0;
  bool skipping = false;
  while (at < raw.size()) {
    std::size_t eol = raw.find('\n', at);
    std::size_t next = eol == std::string::npos ? raw.size() : eol + 1;
    std::string_view line(raw.data() + at, next - at);
    if (line == "\r\n" || line == "\n") {  // end of the header block: the rest as it is
      out.append(raw, at, std::string::npos);
      return out;
    }
    const bool continuation = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (!continuation) skipping = line.size() >= 4 && strncasecmp(line.data(), "bcc:", 4) == 0;
    if (!skipping) out.append(line);
    at = next;
  }
  return out;
}

std::string default_sender() {
  std::string user = "root";
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_name) user = pw->pw_name;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !*host) std::strcpy(host, "localhost");
  return user + "@" + host;
}

// sendmail -bs: stdin and stdout are the SMTP session, relayed to the server as they are.
int relay_stdio(const std::string& server) {
  host_port hp;
  if (!parse_host_port(server, hp)) {
    std::fprintf(stderr, "sendmail: -S must be HOST:PORT\n");
    return 1;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(client_host(hp.host).c_str(), std::to_string(hp.port).c_str(), &hints, &res) != 0)
    return 1;
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    std::fprintf(stderr, "sendmail: cannot connect to %s\n", server.c_str());
    freeaddrinfo(res);
    return 1;
  }
  freeaddrinfo(res);
  pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {fd, POLLIN, 0}};
  char buf[16384];
  for (;;) {
    if (poll(p, 2, -1) < 0) break;
    if (p[1].revents & (POLLIN | POLLHUP)) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      if (write(STDOUT_FILENO, buf, static_cast<std::size_t>(n)) != n) break;
    }
    if (p[0].revents & (POLLIN | POLLHUP)) {
      ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
      if (n <= 0) {
        shutdown(fd, SHUT_WR);
        p[0].fd = -1;
        continue;
      }
      if (send(fd, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
    }
  }
  close(fd);
  return 0;
}

int sendmail(int argc, char** argv, int first) {
  std::string server = "localhost:1025", from;
  if (const char* s = std::getenv("MP_SENDMAIL_SMTP_ADDR"); s && *s) server = s;
  if (const char* f = std::getenv("MP_SENDMAIL_FROM"); f && *f) from = f;
  bool smtp_stdio = false;
  std::vector<std::string> rcpt;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::size_t skip) -> std::string {  // "-fx" or "-f x"
      if (a.size() > skip) return a.substr(skip);
      return i + 1 < argc ? argv[++i] : std::string();
    };
    if (a == "--") {
      for (++i; i < argc; ++i) rcpt.emplace_back(argv[i]);
      break;
    }
    if (a.rfind("--smtp-addr", 0) == 0) {
      server = a.find('=') != std::string::npos ? a.substr(a.find('=') + 1) : value(a.size());
    } else if (a.rfind("-S", 0) == 0) {
      server = value(2);
    } else if (a.rfind("-f", 0) == 0) {
      from = value(2);
    } else if (a == "-bs") {
      smtp_stdio = true;
    } else if (a.rfind("-F", 0) == 0 || a.rfind("-B", 0) == 0 || a.rfind("-e", 0) == 0 ||
               a.rfind("-o", 0) == 0) {
      if (a.size() == 2) ++i;  // their value, ignored (as Mailpit does)
    } else if (a == "-t" || a == "-i" || a == "-v" || a == "-oi" || a.rfind("-bm", 0) == 0) {
      // -t: recipients come from the headers when none is given, as they always do here.
    } else if (!a.empty() && a[0] == '-') {
      // Unknown sendmail flags are ignored, as Mailpit's sendmail ignores them.
    } else {
      rcpt.push_back(a);
    }
  }
  if (smtp_stdio) return relay_stdio(server);
  std::string raw((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  raw = crlf(raw);
  if (rcpt.empty()) {
    rcpt = header_recipients(raw);
    raw = without_bcc(raw);
  }
  if (rcpt.empty()) {
    std::fprintf(stderr, "sendmail: no recipients (none given, none in To/Cc/Bcc)\n");
    return 1;
  }
  if (from.empty()) from = default_sender();
  if (auto err = smtp_send(server, from, rcpt, raw); !err.empty()) {
    std::fprintf(stderr, "sendmail: %s\n", err.c_str());
    return 11;
  }
  return 0;
}

std::size_t to_vector(char* p, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

// GET url: the status (0: no answer) and the body.
long http_get(const std::string& url, bool insecure, std::string& body, long timeout_s = 10) {
  CURL* c = curl_easy_init();
  if (!c) return 0;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_vector);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  if (insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return status;
}

std::string webroot_path(std::string w) {
  while (!w.empty() && w.front() == '/') w.erase(0, 1);
  while (!w.empty() && w.back() == '/') w.pop_back();
  return w.empty() ? "/" : "/" + w + "/";
}

int readyz(int argc, char** argv) {
  CLI::App app{"inletd readyz: exit 0 when a running server is ready, else 1"};
  std::string listen = "[::]:8025", webroot = "/", timeout = "30s";
  if (const char* v = std::getenv("MP_UI_BIND_ADDR"); v && *v) listen = v;
  if (const char* v = std::getenv("MP_WEBROOT"); v && *v) webroot = v;
  bool https = false, wait = false;
  app.add_option("-l,--listen", listen, "the server's HTTP HOST:PORT");
  app.add_option("--webroot", webroot, "the server's webroot");
  app.add_flag("--https", https, "connect with HTTPS (certificates not verified)");
  app.add_flag("--wait", wait, "wait until the server is ready instead of checking once");
  app.add_option("--timeout", timeout, "longest wait with --wait (e.g. 30s, 2m)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  host_port hp;
  std::uint64_t seconds = 0;
  if (!parse_host_port(listen, hp) || !parse_duration(timeout, seconds)) {
    std::fprintf(stderr, "readyz: --listen is HOST:PORT, --timeout a duration (30s)\n");
    return 2;
  }
  const std::string url = std::string(https ? "https" : "http") + "://" +
                          url_host(client_host(hp.host)) + ":" + std::to_string(hp.port) +
                          webroot_path(webroot) + "readyz";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    std::string body;
    if (http_get(url, true, body, 5) == 200) return 0;
    if (!wait || std::chrono::steady_clock::now() >= until) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Every regular file under each path, in order (a maildir's cur/ and new/ included).
std::vector<fs::path> message_files(const std::vector<std::string>& paths, unsigned recent_days) {
  std::vector<fs::path> out;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(24) * recent_days;
  auto take = [&](const fs::path& p) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return;
    if (recent_days > 0 && fs::last_write_time(p, ec) < cutoff) return;
    out.push_back(p);
  };
  for (const auto& s : paths) {
    std::error_code ec;
    if (fs::is_directory(s, ec)) {
      std::vector<fs::path> here;
      for (auto it = fs::recursive_directory_iterator(s, ec); !ec && it != fs::end(it);
           it.increment(ec))
        if (it->is_regular_file(ec)) here.push_back(it->path());
      std::sort(here.begin(), here.end());
      for (auto& p : here) take(p);
    } else {
      take(s);
    }
  }
  return out;
}


int ingest(int argc, char** argv) {
  CLI::App app{"inletd ingest: deliver files and folders of messages over SMTP"};
  std::string server = "localhost:1025";
  unsigned recent = 0;
  std::uint64_t max_mb = 50;
  std::vector<std::string> paths;
  app.add_option("-S,--smtp-addr", server, "the server's SMTP HOST:PORT");
  app.add_option("-r,--recent", recent, "only files changed in the last N days (0: all)");
  app.add_option("--max-message-size", max_mb, "skip larger files, MB (0: no limit)");
  app.add_option("paths", paths, "files, folders, maildirs")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // A few connections at once: each file is a round trip or four, and the server takes
  // several connections' messages in parallel.
  const auto files = message_files(paths, recent);
  constexpr unsigned workers = 4;
  std::atomic<std::size_t> next{0}, sent{0}, failed{0}, skipped{0};
  auto work = [&] {
    smtp_client client;
    for (std::size_t i = next++; i < files.size(); i = next++) {
      const auto& p = files[i];
      std::error_code ec;
      if (max_mb != 0 && fs::file_size(p, ec) > (max_mb << 20)) {
        ++skipped;
        continue;
      }
      std::ifstream in(p, std::ios::binary);
      std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      raw = crlf(raw);
      auto parsed = inlet::mime::parse(raw);
      inlet::mime::summary s;
      inlet::mime::summarize(parsed, s, 0, 10000);
      std::vector<std::string> rcpt;
      for (auto* list : {&s.to, &s.cc, &s.bcc})
        for (auto& m : *list)
          if (!m.address.empty()) rcpt.push_back(m.address);
      // As Mailpit's ingest: the envelope sender is Return-Path, else From; a message
      // with no recipient header goes to its sender.
      std::string from = inlet::mail::message_view(raw).return_path();
      if (from.empty()) from = s.from.empty() ? "ingest@localhost" : s.from.front().address;
      if (rcpt.empty()) rcpt.push_back(from);
      if (auto err = client.send(server, from, rcpt, raw); !err.empty()) {
        std::fprintf(stderr, "ingest: %s: %s\n", p.c_str(), err.c_str());
        ++failed;
      } else {
        ++sent;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  std::printf("ingest: %zu sent, %zu failed, %zu skipped\n", sent.load(), failed.load(),
              skipped.load());
  return failed ? 1 : 0;
}

// A file the ID names in `dir`: nothing but letters, digits, '-' and '_' (neither a server
// nor a database can make dump write elsewhere).
bool safe_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 &&
         id.find_first_not_of("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_") ==
             std::string::npos;
}

// The journal mode a file was left in (header bytes 18-19: 2 for WAL), so a tool that
// opens it keeps that mode: a file of --disable-wal stays without WAL.
bool file_uses_wal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char h[20] = {};
  if (!in.read(h, sizeof h)) return true;
  return h[18] == 2 || h[19] == 2;
}

// `dump --database FILE DIR`: read in place (inlet's tables, or Mailpit's as Mailpit
// left them), without a server and without writing to the file.
int dump_database(const std::string& path, const std::string& tenant_id, const std::string& out_dir) {
  inlet::store::file_store_config cfg;
  cfg.path = path;
  cfg.tenant_id = tenant_id;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "dump: %s: %s\n", out_dir.c_str(), ec.message().c_str());
    return 1;
  }
  std::size_t written = 0;
  bool write_failed = false;
  try {
    inlet::store::read_raw_messages(cfg, [&](std::string_view id_view, std::string_view raw) {
      std::string id(id_view);
      if (!safe_id(id)) {
        std::fprintf(stderr, "dump: skipping a message with the ID \"%s\"\n", id.c_str());
        return;
      }
      std::ofstream f(fs::path(out_dir) / (id + ".eml"), std::ios::binary);
      f.write(raw.data(), static_cast<std::streamsize>(raw.size()));
      if (!f) write_failed = true;
      ++written;
    });
  } catch (const inlet::store::file_store_error& e) {
    std::fprintf(stderr, "dump: %s\n", e.what());
    return 1;
  }
  if (write_failed) {
    std::fprintf(stderr, "dump: writing into %s failed\n", out_dir.c_str());
    return 1;
  }
  std::printf("dump: %zu messages written to %s\n", written, out_dir.c_str());
  return 0;
}

// `reindex <database>`, as Mailpit's: every message's derived data rebuilt from its raw
// bytes. A server may keep running on the file (its writes wait one batch at a time).
int reindex(int argc, char** argv) {
  CLI::App app{"inletd reindex: rebuild summaries and search text of every message in a database file"};
  std::string database, tenant_id;
  app.add_option("database", database, "the database file")->required();
  app.add_option("--tenant-id", tenant_id, "the tenant whose messages to reindex");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "verbose logging (accepted)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!fs::exists(database)) {
    // Never create an empty database where the user meant an existing one.
    std::fprintf(stderr, "reindex: %s: no such file\n", database.c_str());
    return 1;
  }
  inlet::store::file_store_config cfg;
  cfg.path = database;
  cfg.tenant_id = tenant_id;
  cfg.wal = file_uses_wal(database);
  cfg.reader_threads = 1;
  cfg.summarize = [](std::string_view raw, inlet::store::summary& s) {
    inlet::mail::analyze(inlet::mail::thread_parser().parse(raw), {}, s, nullptr);
  };
  try {
    inlet::store::file_store store(std::move(cfg));
    inlet::store::file_store::reindex_options opt;
    opt.summarize = [](std::string_view raw, const inlet::store::envelope& env,
                       inlet::store::summary& s) {
      inlet::mail::analyze(inlet::mail::thread_parser().parse(raw), env.rcpt_to, s, nullptr);
    };
    const auto r = store.reindex(opt);
    std::printf("reindex: %zu messages reindexed%s\n", r.reindexed,
                r.failed ? (", " + std::to_string(r.failed) + " whose raw bytes do not decode left as they were").c_str()
                         : "");
    return r.failed ? 1 : 0;
  } catch (const inlet::store::file_store_error& e) {
    std::fprintf(stderr, "reindex: %s\n", e.what());
    return 1;
  }
}

int dump(int argc, char** argv) {
  CLI::App app{"inletd dump: every message of a running server into a folder of .eml files"};
  std::string http, out_dir, database;
  app.add_option("--http", http, "the server's base URL, e.g. http://127.0.0.1:8025/");
  std::string tenant_id;
  app.add_option("--database", database, "a database file (inlet's or Mailpit's), read in place");
  app.add_option("--tenant-id", tenant_id, "the tenant whose messages a database file holds");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "verbose logging (accepted)");
  app.add_option("output", out_dir, "the folder to write into")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!database.empty() && !http.empty()) {
    std::fprintf(stderr, "dump: --database and --http: one or the other\n");
    return 2;
  }
  if (!database.empty()) return dump_database(database, tenant_id, out_dir);
  if (http.empty()) {
    std::fprintf(stderr, "dump: --http URL or --database FILE is needed\n");
    return 2;
  }
  while (!http.empty() && http.back() == '/') http.pop_back();
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  std::size_t written = 0;
  for (std::size_t start = 0;; start += 500) {
    std::string body;
    if (http_get(http + "/api/v1/messages?start=" + std::to_string(start) + "&limit=500", true,
                 body, 60) != 200) {
      std::fprintf(stderr, "dump: %s does not answer the messages API\n", http.c_str());
      return 1;
    }
    auto page = boost::json::parse(body, ec);
    const auto* obj = ec ? nullptr : page.if_object();
    const auto* list = obj ? obj->if_contains("messages") : nullptr;
    if (!list || !list->is_array()) {
      std::fprintf(stderr, "dump: %s answered no message list\n", http.c_str());
      return 1;
    }
    const auto& msgs = list->get_array();
    for (const auto& m : msgs) {
      const auto* o = m.if_object();
      const auto* idv = o ? o->if_contains("ID") : nullptr;
      if (!idv || !idv->is_string()) continue;
      std::string id(idv->get_string());
      if (!safe_id(id)) {
        std::fprintf(stderr, "dump: skipping a message with the ID \"%s\"\n", id.c_str());
        continue;
      }
      std::string raw;
      if (http_get(http + "/api/v1/message/" + id + "/raw", true, raw, 60) != 200) return 1;
      std::ofstream(fs::path(out_dir) / (id + ".eml"), std::ios::binary) << raw;
      ++written;
    }
    if (msgs.size() < 500) break;
  }
  std::printf("dump: %zu messages written to %s\n", written, out_dir.c_str());
  return 0;
}

}  // namespace

std::optional<int> run_subcommand(int argc, char** argv) {
  const std::string self = argc > 0 ? fs::path(argv[0]).filename().string() : "";
  if (self == "sendmail") return sendmail(argc, argv, 1);
  if (argc < 2) return std::nullopt;
  const std::string cmd = argv[1];
  auto rest = [&](int (*f)(int, char**)) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = f(argc - 1, argv + 1);
    curl_global_cleanup();
    return rc;
  };
  if (cmd == "sendmail") return sendmail(argc, argv, 2);  // SMTP only: no libcurl
  if (cmd == "readyz") return rest(readyz);
  if (cmd == "ingest") return rest(ingest);
  if (cmd == "dump") return rest(dump);
  if (cmd == "version") {
    std::printf("%s\n", version_text);
    return 0;
  }
  if (cmd == "reindex") return reindex(argc - 1, argv + 1);
  return std::nullopt;
}

}  // namespace inletd
