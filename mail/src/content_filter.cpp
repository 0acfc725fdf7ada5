#include "inlet/mail/content_filter.hpp"

#include <cstdio>

namespace inlet::mail {

content_filter::content_filter(const std::string& path, bool reject, double threshold)
    : registry_(path), reject_(reject), threshold_(threshold) {}

std::unique_ptr<content_filter> content_filter::create(const std::string& path, bool reject,
                                                   double threshold, std::string& error) {
  std::unique_ptr<content_filter> f(new content_filter(path, reject, threshold));
  auto status = f->registry_.reload();
  if (!status.ok) {
    error = "--filter-terms: " + describe(status);
    return nullptr;
  }
  f->registry_.on_reload([](const inlet::filter::reload_status& s) {
    std::printf("inletd: filter file changed: %s\n", describe(s).c_str());
    std::fflush(stdout);
  });
  if (auto ec = f->registry_.watch())
    std::fprintf(stderr, "inletd: not watching %s for changes (%s); SIGHUP reloads it\n",
                 path.c_str(), ec.message().c_str());
  return f;
}

std::string content_filter::reload() { return describe(registry_.reload()); }

std::string content_filter::describe(const inlet::filter::reload_status& s) {
  if (s.ok) return "filter: " + std::to_string(s.terms) + " terms in force";
  return "filter: kept the list in force: " + s.error.to_string();
}

}  // namespace inlet::mail
