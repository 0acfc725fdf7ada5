#include "message_view.hpp"

#include "filter_stage.hpp"
#include "pipeline.hpp"

#include <inlet/filter/mime_scan.hpp>
#include <inlet/mime/message.hpp>

#include <cstdio>

namespace inletd {

namespace mm = inlet::mime;
namespace st = inlet::store;

namespace {

std::vector<st::address> to_addresses(const std::vector<mm::mailbox>& in) {
  std::vector<st::address> out;
  out.reserve(in.size());
  for (const auto& m : in) out.push_back({m.name, m.address});
  return out;
}

}  // namespace

mm::parser& thread_parser() {
  thread_local mm::parser p;
  return p;
}

void analyze(const mm::parsed_message& m, st::summary& out, inlet::filter::scan* scan) {
  mm::summary s = mm::summarize(m);
  if (!s.from.empty()) out.from = {s.from.front().name, s.from.front().address};
  out.to = to_addresses(s.to);
  out.cc = to_addresses(s.cc);
  out.bcc = to_addresses(s.bcc);
  out.reply_to = to_addresses(s.reply_to);
  out.subject = s.subject.value_or("");
  if (s.date) out.date = st::time_point(*s.date);
  out.message_id = s.message_id.value_or("");
  out.snippet = std::move(s.snippet);
  out.attachments.reserve(s.attachments.size());
  for (auto& a : s.attachments)
    out.attachments.push_back({std::move(a.filename), std::move(a.content_type), a.size});
  if (scan) inlet::filter::scan_parsed(*scan, m);
}

inlet::http::rendered_body render_body(std::string_view raw) {
  inlet::http::rendered_body r;
  const mm::parsed_message& m = thread_parser().parse(raw);
  mm::for_each_text_part(m, [&](std::uint32_t p) {
    auto sub = m.parts()[p].sub_type();
    std::string* target = sub == "html" ? &r.html : sub == "plain" ? &r.text : nullptr;
    if (!target || !target->empty()) return;  // the first plain and the first html part
    mm::decode_text(m, p, [&](std::string_view utf8) { target->append(utf8); });
  });
  for (std::uint32_t p = 0; p < m.parts().size(); ++p) {
    if (!mm::is_attachment(m, p)) continue;
    inlet::http::part_info info;
    info.part_id = std::to_string(p);
    info.filename = mm::filename(m, p).value_or("");
    info.content_type = std::string(m.parts()[p].content_type());
    if (auto cid = mm::header_text(m, p, "Content-ID"))
      info.content_id = mm::parse_message_id(*cid).value_or("");
    info.size = mm::decoded_size(m, p);
    bool is_inline = mm::disposition(m, p).value_or("") == "inline" && !info.content_id.empty();
    (is_inline ? r.inline_parts : r.attachments).push_back(std::move(info));
  }
  return r;
}

void append_metrics(const pipeline& p, filter_stage* f, std::string& out) {
  auto line = [&out](const char* name, const char* type, const char* help, double value) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
    out += name;
    out += ' ';
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g\n", value);
    out += buf;
  };
  const auto& c = p.counters();
  auto get = [](const std::atomic<std::uint64_t>& a) {
    return static_cast<double>(a.load(std::memory_order_relaxed));
  };
  line("inlet_messages_received_total", "counter", "Messages whose data was complete.", get(c.received));
  line("inlet_messages_accepted_total", "counter", "Messages answered 250 (stored, or sunk).", get(c.stored));
  line("inlet_message_bytes_total", "counter", "Bytes of messages received.", get(c.bytes));
  line("inlet_store_errors_total", "counter", "Messages the store refused.", get(c.store_errors));
  line("inlet_filter_tagged_total", "counter", "Messages tagged spam by the filter.", get(c.filter_tagged));
  line("inlet_filter_rejected_total", "counter", "Messages rejected by the filter.", get(c.filter_rejected));
  if (f) {
    auto s = f->registry().stats().load();
    line("inlet_filter_messages_scanned_total", "counter", "Messages scanned.", double(s.messages_scanned));
    line("inlet_filter_messages_matched_total", "counter", "Messages with a match.", double(s.messages_matched));
    line("inlet_filter_bytes_scanned_total", "counter", "Decoded bytes scanned.", double(s.bytes_scanned));
    line("inlet_filter_seconds_total", "counter", "Time spent in the engine.", double(s.nanoseconds) / 1e9);
  }
}

}  // namespace inletd
