// Uses the installed inlet::mime: parses a message and prints its summary.
#include <inlet/mime/message.hpp>

#include <cstdio>
#include <string_view>

int main() {
  constexpr std::string_view raw =
      "From: Ann <ann@example.com>\r\n"
      "To: bob@example.org\r\n"
      "Subject: =?UTF-8?B?SGVsbG8sIHdvcmxk?=\r\n"
      "Content-Type: text/plain; charset=utf-8\r\n"
      "\r\n"
      "First words of the body.\r\n";
  inlet::mime::parsed_message m = inlet::mime::parse(raw);
  inlet::mime::summary s = inlet::mime::summarize(m);
  std::printf("subject: %s\nfrom: %s\nsnippet: %s\n", s.subject.value_or("").c_str(),
              s.from.empty() ? "" : s.from.front().address.c_str(), s.snippet.c_str());
  bool ok = s.subject == "Hello, world" && !s.from.empty() &&
            s.from.front().address == "ann@example.com";
  return ok ? 0 : 1;
}
