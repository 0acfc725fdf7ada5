#include "inlet/mail/read_view.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <inlet/mime/text.hpp>
#include <map>

namespace inlet::mail {
namespace mm = inlet::mime;

namespace {

std::string hex(const unsigned char* p, unsigned n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (unsigned i = 0; i < n; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 15]);
  }
  return out;
}

std::string digest(const EVP_MD* md, std::string_view bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  if (!EVP_Digest(bytes.data(), bytes.size(), out, &n, md, nullptr)) return {};
  return hex(out, n);
}

std::string decoded(const mm::parsed_message& m, std::uint32_t p) {
  std::string out;
  const auto& pt = m.parts()[p];
  if (pt.kind == mm::part_kind::leaf) {
    mm::decode_body(m, p, [&](std::string_view s) { out.append(s); });
  } else {
    out = m.copy(pt.body);  // an attached message: its bytes as they are
  }
  return out;
}

std::string text_of(const mm::parsed_message& m, std::uint32_t p) {
  std::string out;
  mm::decode_text(m, p, [&](std::string_view s) { out.append(s); });
  return out;
}

}  // namespace

std::string canonical_header_name(std::string_view name) {
  std::string out(name);
  bool up = true;
  for (auto& c : out) {
    c = static_cast<char>(up ? std::toupper(static_cast<unsigned char>(c))
                             : std::tolower(static_cast<unsigned char>(c)));
    up = c == '-';
  }
  return out;
}

checksums checksums_of(std::string_view bytes) {
  return {digest(EVP_md5(), bytes), digest(EVP_sha1(), bytes), digest(EVP_sha256(), bytes)};
}

bool is_inline_part(const mm::parsed_message& m, std::uint32_t p) {
  if (auto disp = mm::disposition(m, p)) return *disp == "inline";
  return m.find(p, "content-id") != nullptr;
}

bool inside_attached_message(const mm::parsed_message& m, std::uint32_t p) {
  const auto& parts = m.parts();
  for (auto q = parts[p].parent; q != mm::no_index; q = parts[q].parent)
    if (parts[q].kind == mm::part_kind::message) return true;
  return false;
}

std::vector<std::string> part_ids(const mm::parsed_message& m) {
  const auto& parts = m.parts();
  std::vector<std::string> ids(parts.size());
  if (parts.empty()) return ids;
  if (parts[0].kind != mm::part_kind::multipart) ids[0] = "1";
  // Parents come before their children in part order.
  for (std::uint32_t p = 0; p < parts.size(); ++p) {
    std::uint32_t k = 1;
    for (auto c = parts[p].first_child; c != mm::no_index; c = parts[c].next_sibling, ++k)
      ids[c] = ids[p].empty() ? std::to_string(k) : ids[p] + "." + std::to_string(k);
  }
  return ids;
}

namespace {

// Whether p lies inside an attached message (message/rfc822 below the root).

part_entry entry(const mm::parsed_message& m, const std::vector<std::string>& ids, std::uint32_t p,
                 bool with_checksums) {
  part_entry e;
  e.part_id = ids[p];
  e.index = p;
  e.filename = mm::filename(m, p).value_or("");
  e.content_type = std::string(m.parts()[p].content_type());
  if (auto cid = mm::header_text(m, p, "Content-ID"))
    e.content_id = mm::parse_message_id(*cid).value_or("");
  e.is_inline = is_inline_part(m, p);
  if (with_checksums || m.parts()[p].kind != mm::part_kind::leaf) {
    const std::string bytes = decoded(m, p);
    e.size = bytes.size();
    if (with_checksums) e.sums = checksums_of(bytes);
  } else {
    e.size = mm::decoded_size(m, p);
  }
  return e;
}

}  // namespace

std::vector<part_entry> list_parts(const mm::parsed_message& m, const std::vector<std::string>& ids,
                                   bool with_checksums) {
  std::vector<part_entry> out;
  const auto& parts = m.parts();
  for (std::uint32_t p = 0; p < parts.size(); ++p) {
    if (inside_attached_message(m, p)) continue;
    const bool attached_message = parts[p].kind == mm::part_kind::message && p != 0;
    if (!attached_message && !mm::is_attachment(m, p)) continue;
    out.push_back(entry(m, ids, p, with_checksums));
  }
  return out;
}

message_view::message_view(std::string_view raw) : msg_(mm::parse(raw)), ids_(part_ids(msg_)) {
  const auto& parts = msg_.parts();
  for (std::uint32_t p = 0; p < parts.size(); ++p) {
    const auto& pt = parts[p];
    if (pt.kind != mm::part_kind::leaf || pt.main_type() != "text" || inside_attached_message(msg_, p))
      continue;
    if (mm::is_attachment(msg_, p)) continue;
    if (plain_ == mm::no_index && pt.sub_type() == "plain") plain_ = p;
    if (html_ == mm::no_index && pt.sub_type() == "html") html_ = p;
  }
}

std::string message_view::text() const {
  if (plain_ != mm::no_index) return text_of(msg_, plain_);
  if (html_ != mm::no_index) return mm::html_to_text(text_of(msg_, html_));
  return {};
}

std::string message_view::html() const {
  return html_ == mm::no_index ? std::string{} : text_of(msg_, html_);
}

std::vector<part_entry> message_view::parts(bool with_checksums) const {
  return list_parts(msg_, ids_, with_checksums);
}

std::optional<std::pair<part_entry, std::string>> message_view::part_content(
    std::string_view part_id) const {
  if (part_id.empty()) return std::nullopt;
  for (std::uint32_t p = 0; p < ids_.size(); ++p) {
    if (ids_[p] != part_id || msg_.parts()[p].kind == mm::part_kind::multipart) continue;
    part_entry e = entry(msg_, ids_, p, false);
    std::string bytes = decoded(msg_, p);
    e.size = bytes.size();
    return std::pair{std::move(e), std::move(bytes)};
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::vector<std::string>>> message_view::headers() const {
  std::map<std::string, std::vector<std::string>> by_name;
  if (msg_.parts().empty()) return {};
  const auto& root = msg_.parts()[0];
  std::string scratch;
  for (std::uint32_t i = root.first_header; i < root.first_header + root.header_count; ++i) {
    const auto& h = msg_.headers()[i];
    by_name[canonical_header_name(msg_.view(h.name, scratch))].push_back(
        mm::unfold(msg_.view(h.value, scratch)));
  }
  return {by_name.begin(), by_name.end()};
}

list_unsubscribe message_view::unsubscribe() const {
  list_unsubscribe u;
  std::string scratch;
  if (const auto* h = msg_.find("list-unsubscribe"))
    u.header = mm::unfold(msg_.view(h->value, scratch));
  if (const auto* h = msg_.find("list-unsubscribe-post"))
    u.header_post = mm::unfold(msg_.view(h->value, scratch));
  if (u.header.empty()) return u;
  // RFC 2369: a comma-separated list of <URI>s; at most one mailto: and one http(s): kept.
  std::vector<std::string> problems;
  bool mailto = false, web = false, https = false;
  std::string_view rest = u.header;
  while (!rest.empty()) {
    auto open = rest.find('<');
    if (open == std::string_view::npos) break;
    auto close = rest.find('>', open);
    if (close == std::string_view::npos) {
      problems.push_back("unterminated <link>");
      break;
    }
    std::string link(rest.substr(open + 1, close - open - 1));
    rest = rest.substr(close + 1);
    std::string lower = link;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.starts_with("mailto:")) {
      if (!mailto) u.links.push_back(link);
      mailto = true;
    } else if (lower.starts_with("http://") || lower.starts_with("https://")) {
      if (!web) u.links.push_back(link);
      web = true;
      https = https || lower.starts_with("https://");
    } else {
      problems.push_back("\"" + link + "\" is not a mailto: or http(s): link");
    }
  }
  if (u.links.empty() && problems.empty())
    problems.push_back("no <link> found in the List-Unsubscribe header");
  if (!u.header_post.empty() && !https)
    problems.push_back("List-Unsubscribe-Post needs an https: link in List-Unsubscribe");
  for (std::size_t i = 0; i < problems.size(); ++i) u.errors += (i ? "; " : "") + problems[i];
  return u;
}

std::string message_view::return_path() const {
  std::string scratch;
  const auto* h = msg_.find("return-path");
  if (!h) return {};
  std::string v = mm::unfold(msg_.view(h->value, scratch));
  auto open = v.find('<');
  auto close = v.rfind('>');
  if (open != std::string::npos && close != std::string::npos && close > open)
    return v.substr(open + 1, close - open - 1);
  return v;
}

}  // namespace inlet::mail
