#include "inlet/filter/mime_scan.hpp"
#include <inlet/util/ascii.hpp>

#include <array>
#include <string>
#include <string_view>

namespace inlet::filter {
namespace {

using util::iequals;

constexpr std::array<std::string_view, 5> unstructured = {"subject", "comments", "keywords",
                                                          "content-description", "thread-topic"};

// Header fields of the message itself and of nested messages' roots.
bool message_header(const mime::parsed_message& m, std::uint32_t part) {
  if (part == 0) return true;
  const auto& parts = m.parts();
  if (part >= parts.size()) return false;
  std::uint32_t parent = parts[part].parent;
  return parent < parts.size() && parts[parent].kind == mime::part_kind::message;
}

}  // namespace

void visit_text(const mime::parsed_message& m, text_visitor& v) {
  std::string scratch;
  for (const mime::header_field& h : m.headers()) {
    std::string_view name = m.view(h.name, scratch);
    bool wanted = false;
    for (std::string_view u : unstructured) wanted = wanted || iequals(name, u);
    if (!wanted || !message_header(m, h.part)) continue;
    std::string value = mime::header_value(m, h);
    v.begin(stream_kind::header);
    v.piece(value);
    v.end();
  }
  mime::for_each_text_part(m, [&](std::uint32_t p) {
    v.begin(m.parts()[p].sub_type() == "html" ? stream_kind::text_html : stream_kind::text_plain);
    mime::decode_text(m, p, [&](std::string_view utf8) { v.piece(utf8); });
    v.end();
  });
}

void scan_parsed(scan& s, const mime::parsed_message& m) {
  struct to_scan final : text_visitor {
    scan& s;
    explicit to_scan(scan& sc) : s(sc) {}
    void begin(stream_kind k) override { s.begin_stream(k); }
    void piece(std::string_view b) override { s.feed(b); }
    void end() override { s.end_stream(); }
  } adapter(s);
  visit_text(m, adapter);
}

verdict scan_message(std::shared_ptr<const filter> f, const mime::parsed_message& m, double threshold,
                     counters* stats) {
  scan s(std::move(f), stats);
  scan_parsed(s, m);
  return s.finish(threshold);
}

}  // namespace inlet::filter
