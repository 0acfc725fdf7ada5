#include "inlet/store/tags.hpp"

#include <algorithm>

#include "inlet/store/search.hpp"

namespace inlet::store {

std::string clean_tag(std::string_view tag) {
  std::string out;
  out.reserve(tag.size());
  for (char c : tag) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == ' ';
    if (!ok) continue;
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string title_case(std::string_view tag) {
  std::string out(tag);
  bool start = true;
  for (auto& c : out) {
    if (start && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    start = c == ' ' || c == '-' || c == '_' || c == '.';
  }
  return out;
}

std::vector<std::string> clean_tags(const std::vector<std::string>& tags) {
  std::vector<std::string> out, folded;
  for (const auto& t : tags) {
    auto c = clean_tag(t);
    if (c.empty()) continue;
    auto f = search::fold_case(c);
    if (std::find(folded.begin(), folded.end(), f) != folded.end()) continue;
    folded.push_back(std::move(f));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace inlet::store
