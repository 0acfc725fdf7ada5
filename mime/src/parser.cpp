#include <inlet/mime/parser.hpp>

#include "ascii.hpp"

#include <algorithm>
#include <cstring>

namespace inlet::mime {

void part::set_content_type(std::string_view t) noexcept {
  type_len_ = static_cast<std::uint8_t>(std::min(t.size(), type_.size()));
  for (std::size_t i = 0; i < type_len_; ++i) type_[i] = detail::ascii_lower(t[i]);
}

const header_field* parsed_message::find(std::uint32_t p, std::string_view name) const {
  if (p >= parts_.size()) return nullptr;
  const part& pt = parts_[p];
  std::string scratch;
  for (std::uint32_t i = pt.first_header; i < pt.first_header + pt.header_count; ++i) {
    const header_field& h = headers_[i];
    if (h.name.size() != name.size()) continue;
    if (detail::iequals(input_.view(h.name, scratch), name)) return &h;
  }
  return nullptr;
}

void parsed_message::clear() noexcept {
  input_.clear();
  headers_.clear();
  parts_.clear();
  defects_.clear();
  unix_from_ = {};
  cr_cr_lf_ = false;
}

parser::parser(options opt) : opt_(opt) { reset(); }

void parser::reset() noexcept {
  msg_.clear();
  stack_.clear();
  state_ = state::headers;
  pos_ = scan_ = 0;
  field_ = SIZE_MAX;
  open_boundaries_ = 0;
  part_limit_hit_ = header_limit_hit_ = false;
  hint_ = 0;
  msg_.parts_.emplace_back();
  stack_.push_back(open_part{});
  stack_.back().part = 0;
}

parsed_message parser::release() {
  parsed_message out = std::move(msg_);
  msg_ = parsed_message{};
  reset();
  return out;
}

const parsed_message& parser::parse(std::string_view flat) {
  reset();
  feed(flat);
  finish();
  return msg_;
}

const parsed_message& parser::parse(const chunked_view& pieces) {
  reset();
  for (std::size_t i = 0; i < pieces.piece_count(); ++i) feed(pieces.piece(i));
  finish();
  return msg_;
}

void parser::feed(std::string_view piece) {
  if (state_ == state::done || piece.empty()) return;
  msg_.input_.append(piece);
  run(false);
}

void parser::finish() {
  if (state_ == state::done) return;
  run(true);
  close_above(0, msg_.input_.size());
  state_ = state::done;
}

void parser::run(bool at_end) {
  for (;;) {
    bool progressed = state_ == state::headers ? step_headers(at_end) : step_body(at_end);
    if (!progressed) return;
  }
}

void parser::add_defect(errc e, std::size_t off) {
  std::uint32_t p = stack_.empty() ? 0 : stack_.back().part;
  msg_.defects_.push_back(defect{e, off, p});
}

char parser::byte(std::size_t off) const noexcept {
  const chunked_view& in = msg_.input_;
  if (hint_ >= in.piece_count() || off < in.piece_start(hint_) ||
      off >= in.piece_start(hint_) + in.piece(hint_).size())
    hint_ = in.piece_of(off);
  return in.piece(hint_)[off - in.piece_start(hint_)];
}

std::size_t parser::find_byte(char c, std::size_t from) const noexcept {
  const chunked_view& in = msg_.input_;
  if (from >= in.size()) return SIZE_MAX;
  std::size_t i = in.piece_of(from);
  std::size_t rel = from - in.piece_start(i);
  for (; i < in.piece_count(); ++i, rel = 0) {
    std::string_view p = in.piece(i);
    const void* hit = std::memchr(p.data() + rel, c, p.size() - rel);
    if (hit) return in.piece_start(i) + static_cast<std::size_t>(static_cast<const char*>(hit) - p.data());
  }
  return SIZE_MAX;
}

// ---- header block ------------------------------------------------------------

bool parser::step_headers(bool at_end) {
  const std::size_t size = msg_.input_.size();
  if (pos_ >= size) return false;
  std::size_t nl = find_byte('\n', std::max(scan_, pos_));
  std::size_t ce, le;
  if (nl == SIZE_MAX) {
    scan_ = size;
    if (!at_end) return false;
    ce = le = size;
    if (ce > pos_ && byte(ce - 1) == '\r') --ce;
  } else {
    le = nl + 1;
    ce = (nl > pos_ && byte(nl - 1) == '\r') ? nl - 1 : nl;
    if (ce < nl && ce > pos_ && stack_.size() == 1 && byte(ce - 1) == '\r') {
      msg_.cr_cr_lf_ = true;  // CR CR LF: the value ends before both CRs
      --ce;
    }
  }
  if (ce - pos_ > opt_.max_line_length) add_defect(errc::line_too_long, pos_);
  // The start of the line, in place (or linearised if it straddles pieces): enough to
  // classify it and find the colon.
  std::string_view head = msg_.input_.view({pos_, std::min(ce, pos_ + max_name_scan)}, line_scratch_);
  header_line(pos_, ce, le, head);
  return true;
}

void parser::header_line(std::size_t ls, std::size_t ce, std::size_t le, std::string_view head) {
  part& pt = msg_.parts_[stack_.back().part];
  const bool first_line = ls == pt.header.begin;
  if (head.size() >= 2 && open_boundaries_ > 0 && head[0] == '-' && head[1] == '-' && boundary_line(ls, le))
    return;
  pos_ = scan_ = le;
  if (ce == ls) {  // blank line: end of the header block
    end_field();
    end_headers(le);
    return;
  }
  if (head[0] == ' ' || head[0] == '\t') {
    if (field_ != SIZE_MAX)
      msg_.headers_[field_].value.end = ce;
    else if (pt.header_count == 0)
      add_defect(errc::first_header_line_is_continuation, ls);
    return;
  }
  end_field();
  if (head.starts_with("From ")) {  // mbox envelope line
    if (first_line && stack_.size() == 1) msg_.unix_from_ = {ls, ce};
    else if (!first_line) add_defect(errc::invalid_header_name, ls);
    return;
  }
  // One pass: printable name, optional WSP (obsolete syntax), colon.
  std::size_t k = 0;
  while (k < head.size()) {
    auto u = static_cast<unsigned char>(head[k]);
    if (u == ':' || u <= 32 || u >= 127) break;
    ++k;
  }
  const std::size_t name_end = k;
  while (k < head.size() && (head[k] == ' ' || head[k] == '\t')) ++k;
  if (name_end == 0 || k >= head.size() || head[k] != ':') {  // not a header: the body starts here
    add_defect(errc::missing_header_body_separator, ls);
    end_headers(ls);
    return;
  }
  if (msg_.headers_.size() >= opt_.max_headers) {
    if (!header_limit_hit_) add_defect(errc::header_limit, ls);
    header_limit_hit_ = true;
    return;
  }
  field_ = msg_.headers_.size();
  msg_.headers_.push_back(header_field{{ls, ls + name_end}, {ls + k + 1, ce}, stack_.back().part});
  ++pt.header_count;
}

void parser::end_field() {
  if (field_ == SIZE_MAX) return;
  const header_field& h = msg_.headers_[field_];
  if (h.name.size() != 12 && h.name.size() != 25) {  // neither Content-Type nor -Transfer-Encoding
    field_ = SIZE_MAX;
    return;
  }
  part& pt = msg_.parts_[h.part];
  std::string_view name = msg_.input_.view(h.name, scratch2_);
  if (detail::iequals(name, "content-type")) {
    if (pt.content_type_field == no_index) pt.content_type_field = static_cast<std::uint32_t>(field_);
  } else if (detail::iequals(name, "content-transfer-encoding")) {
    std::string_view v = detail::trim(msg_.input_.view(h.value, scratch2_));
    transfer_encoding e = transfer_encoding::unknown;
    if (detail::iequals(v, "7bit")) e = transfer_encoding::seven_bit;
    else if (detail::iequals(v, "8bit")) e = transfer_encoding::eight_bit;
    else if (detail::iequals(v, "binary")) e = transfer_encoding::binary;
    else if (detail::iequals(v, "base64")) e = transfer_encoding::base64;
    else if (detail::iequals(v, "quoted-printable")) e = transfer_encoding::quoted_printable;
    pt.encoding = e;
  }
  field_ = SIZE_MAX;
}

void parser::resolve_type(std::uint32_t idx, open_part& e) {
  part& pt = msg_.parts_[idx];
  if (pt.content_type_field != no_index) {
    std::string_view v = msg_.input_.view(msg_.headers_[pt.content_type_field].value, scratch_);
    if (parse_content_type(pt, v, e)) {
      pt.explicit_type = true;
      return;
    }
  }
  bool digest = pt.parent != no_index && msg_.parts_[pt.parent].content_type() == "multipart/digest";
  pt.set_content_type(digest ? "message/rfc822" : "text/plain");
}

void parser::end_headers(std::size_t body_begin) {
  open_part& e = stack_.back();
  const std::uint32_t idx = e.part;
  {
    part& pt = msg_.parts_[idx];
    pt.header.end = body_begin;
    pt.body = {body_begin, body_begin};
  }
  resolve_type(idx, e);
  part& pt = msg_.parts_[idx];
  state_ = state::body;
  pos_ = scan_ = body_begin;
  if (pt.main_type() == "multipart") {
    if (!e.has_boundary) {
      add_defect(errc::no_boundary_in_multipart, body_begin);
    } else if (pt.depth >= opt_.max_depth) {
      add_defect(errc::depth_limit, body_begin);
      e.has_boundary = false;
    } else {
      pt.kind = part_kind::multipart;
      pt.preamble = {body_begin, body_begin};
      ++open_boundaries_;
    }
    return;
  }
  e.has_boundary = false;
  if (pt.content_type() != "message/rfc822" && pt.content_type() != "message/global") return;
  if (pt.encoding == transfer_encoding::base64 || pt.encoding == transfer_encoding::quoted_printable) {
    add_defect(errc::multipart_invariant_violation, body_begin);
    return;
  }
  if (pt.depth >= opt_.max_depth) {
    add_defect(errc::depth_limit, body_begin);
    return;
  }
  std::uint32_t child = new_part(body_begin);
  if (child == no_index) return;
  msg_.parts_[idx].kind = part_kind::message;
  state_ = state::headers;
}

std::uint32_t parser::new_part(std::size_t header_begin) {
  if (msg_.parts_.size() >= opt_.max_parts) {
    if (!part_limit_hit_) add_defect(errc::part_limit, header_begin);
    part_limit_hit_ = true;
    return no_index;
  }
  open_part& parent_entry = stack_.back();
  const std::uint32_t parent = parent_entry.part;
  const auto idx = static_cast<std::uint32_t>(msg_.parts_.size());
  part c;
  c.parent = parent;
  c.depth = msg_.parts_[parent].depth + 1;
  c.header = {header_begin, header_begin};
  c.body = {header_begin, header_begin};
  c.first_header = static_cast<std::uint32_t>(msg_.headers_.size());
  msg_.parts_.push_back(c);
  part& p = msg_.parts_[parent];
  if (p.first_child == no_index) p.first_child = idx;
  else msg_.parts_[parent_entry.last_child].next_sibling = idx;
  parent_entry.last_child = idx;
  ++p.child_count;
  stack_.push_back(open_part{});
  stack_.back().part = idx;
  field_ = SIZE_MAX;
  return idx;
}

// ---- bodies and boundaries ---------------------------------------------------

bool parser::step_body(bool at_end) {
  const std::size_t size = msg_.input_.size();
  if (open_boundaries_ == 0) {
    scan_ = size;
    return false;
  }
  for (;;) {
    std::size_t p = find_byte('-', scan_);
    if (p == SIZE_MAX) {
      scan_ = size;
      return false;
    }
    if (p != pos_ && byte(p - 1) != '\n') {
      scan_ = p + 1;
      continue;
    }
    if (p + 1 >= size) {
      scan_ = at_end ? size : p;
      return false;
    }
    if (byte(p + 1) != '-') {
      scan_ = p + 2;
      continue;
    }
    std::size_t nl = find_byte('\n', p + 2);
    std::size_t le;
    if (nl == SIZE_MAX) {
      if (!at_end && size - p <= max_boundary_line) {
        scan_ = p;
        return false;
      }
      le = size;
    } else {
      le = nl + 1;
    }
    if (le - p <= max_boundary_line && boundary_line(p, le)) return true;
    scan_ = p + 2;
  }
}

std::size_t parser::content_end_before(std::size_t ls, std::size_t floor) const noexcept {
  std::size_t end = ls;
  if (end > floor && byte(end - 1) == '\n') {
    --end;
    if (end > floor && byte(end - 1) == '\r') --end;
  }
  return end;
}

bool parser::boundary_line(std::size_t ls, std::size_t le) {
  std::string_view line = msg_.input_.view({ls, std::min(le, ls + max_boundary_line)}, scratch_);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (!line.starts_with("--")) return false;
  line.remove_prefix(2);
  for (std::size_t k = stack_.size(); k-- > 0;) {
    open_part& e = stack_[k];
    if (!e.has_boundary || e.closed) continue;
    std::string_view b = e.boundary_view();
    if (!line.starts_with(b)) continue;
    std::string_view rest = line.substr(b.size());
    const bool close = rest.starts_with("--");
    if (close) rest.remove_prefix(2);
    if (rest.find_first_not_of(" \t") != std::string_view::npos) continue;
    on_boundary(k, ls, le, close);
    return true;
  }
  return false;
}

void parser::on_boundary(std::size_t k, std::size_t ls, std::size_t le, bool close) {
  const std::size_t end = content_end_before(ls, pos_);
  close_above(k + 1, end);
  open_part& e = stack_[k];
  part& m = msg_.parts_[e.part];
  if (!e.seen_first) {
    e.seen_first = true;
    m.preamble = {m.body.begin, std::max(end, m.body.begin)};
  }
  state_ = state::body;
  pos_ = scan_ = le;
  if (close) {
    e.closed = true;
    --open_boundaries_;
    m.epilogue = {le, le};
    return;
  }
  if (new_part(le) != no_index) state_ = state::headers;
}

void parser::close_above(std::size_t keep, std::size_t end) {
  while (stack_.size() > keep) {
    open_part& e = stack_.back();
    const std::uint32_t idx = e.part;
    if (state_ == state::headers) {  // the top part ended inside its header block
      end_field();
      part& pt = msg_.parts_[idx];
      pt.header.end = std::max(end, pt.header.begin);
      pt.body = {pt.header.end, pt.header.end};
      resolve_type(idx, e);
      e.has_boundary = false;
      state_ = state::body;
    }
    part& pt = msg_.parts_[idx];
    pt.body.end = std::max(end, pt.body.begin);
    if (pt.kind == part_kind::multipart) {
      if (e.closed) {
        pt.epilogue.end = std::max(end, pt.epilogue.begin);
      } else {
        --open_boundaries_;
        if (!e.seen_first) {
          add_defect(errc::start_boundary_not_found, end);
          pt.preamble = pt.body;
        } else {
          add_defect(errc::close_boundary_not_found, end);
        }
      }
    }
    stack_.pop_back();
  }
}

bool parser::parse_content_type(part& p, std::string_view v, open_part& e) {
  detail::lexer lx{v};
  lx.skip_cfws();
  std::string_view type = lx.token();
  lx.skip_cfws();
  if (type.empty() || !lx.eat('/')) return false;
  lx.skip_cfws();
  std::string_view sub = lx.token();
  if (sub.empty() || type.size() + sub.size() + 1 > 94) return false;
  char buf[96];
  std::memcpy(buf, type.data(), type.size());
  buf[type.size()] = '/';
  std::memcpy(buf + type.size() + 1, sub.data(), sub.size());
  p.set_content_type({buf, type.size() + 1 + sub.size()});
  if (p.main_type() != "multipart") return true;
  // Only the boundary matters here; the other parameters are parsed on demand.
  detail::param_reader pr{lx};
  std::string_view name, value;
  bool quoted = false;
  while (pr.next(name, value, quoted)) {
    const bool extended = detail::iequals(name, "boundary*");  // RFC 2231: cs'lang'%XX
    if (!extended && !detail::iequals(name, "boundary")) continue;
    if (extended) {
      auto q1 = value.find('\'');
      auto q2 = q1 == std::string_view::npos ? q1 : value.find('\'', q1 + 1);
      if (q2 != std::string_view::npos) value.remove_prefix(q2 + 1);
    }
    std::size_t n = 0;
    for (std::size_t i = 0; i < value.size() && n < e.boundary.size(); ++i) {
      char c = value[i];
      if (quoted && c == '\\' && i + 1 < value.size()) {
        c = value[++i];
      } else if (extended && c == '%' && i + 2 < value.size() && detail::is_hex(value[i + 1]) &&
                 detail::is_hex(value[i + 2])) {
        c = static_cast<char>(detail::hex_val(value[i + 1]) << 4 | detail::hex_val(value[i + 2]));
        i += 2;
      }
      e.boundary[n++] = c;
    }
    while (n > 0 && (e.boundary[n - 1] == ' ' || e.boundary[n - 1] == '\t')) --n;
    if (n == 0) return true;
    e.boundary_len = static_cast<std::uint16_t>(n);
    e.has_boundary = true;
    return true;
  }
  return true;
}

}  // namespace inlet::mime
