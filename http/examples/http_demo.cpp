// A memory store behind the HTTP server, seeded with sample messages, for trying the API
// and the page by hand:  http_demo [PORT [SECONDS]]   (127.0.0.1 only; default 8025, 60 s;
// a new sample message arrives every 2 s so the live view has something to show).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "inlet/http/server.hpp"
#include "inlet/store/memory_store.hpp"

namespace {

volatile std::sig_atomic_t stop_requested = 0;

inlet::store::new_message sample(int i) {
  inlet::store::new_message m;
  std::string box = i % 2 ? "ann@example.com" : "bob@example.com";
  m.envelope = {"demo.example", "sender@example.org", {box}, "127.0.0.1:1", "ESMTP", ""};
  m.summary.from = {"Demo Sender", "sender@example.org"};
  m.summary.to = {{"", box}};
  m.summary.subject = "Sample " + std::to_string(i) + " <b>not bold</b>";
  m.summary.snippet = "Hello number " + std::to_string(i);
  m.summary.date = std::chrono::system_clock::now();
  // An HTML body that tries to script the page: the page's sandbox must stop it.
  m.raw = "From: Demo Sender <sender@example.org>\r\nTo: " + box + "\r\nSubject: Sample " +
          std::to_string(i) +
          "\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\n"
          "Content-Type: text/plain\r\n\r\nHello number " +
          std::to_string(i) +
          "\r\n--b\r\nContent-Type: text/html\r\n\r\n<p style=color:red>Hello</p>"
          "<script>parent.document.title='pwned'</script>\r\n--b--\r\n";
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  inlet::store::memory_store store({.max_messages = 1000, .max_bytes = 64 << 20});
  inlet::http::server_config cfg;
  cfg.port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 8025);
  int seconds = argc > 2 ? std::atoi(argv[2]) : 60;
  inlet::http::server srv(store, cfg);
  if (auto ec = srv.start()) {
    std::fprintf(stderr, "http_demo: %s\n", ec.message().c_str());
    return 1;
  }
  std::signal(SIGINT, [](int) { stop_requested = 1; });
  std::signal(SIGTERM, [](int) { stop_requested = 1; });
  std::printf("http_demo: http://%s:%u/ for %d s\n", srv.address().c_str(), srv.port(), seconds);
  std::fflush(stdout);
  std::error_code ec;
  int i = 0;
  for (; i < 5; ++i) store.put_sync(sample(i), ec);
  for (int t = 0; t < seconds * 10 && !stop_requested; ++t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (t % 20 == 19) store.put_sync(sample(i++), ec);
  }
  srv.stop();
  return 0;
}
