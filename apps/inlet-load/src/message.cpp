#include "inlet/load/message.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <iterator>

#include "inlet/load/error.hpp"

namespace inlet::load {

std::string normalize_crlf(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() + raw.size() / 32 + 2);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '\r') {
      out += "\r\n";
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else if (c == '\n') {
      out += "\r\n";
    } else {
      out += c;
    }
  }
  if (!out.empty() && !out.ends_with("\r\n")) out += "\r\n";
  return out;
}

std::string dot_stuff(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool line_start = true;
  for (const char c : text) {
    if (line_start && c == '.') out += '.';
    out += c;
    line_start = (c == '\n');
  }
  out += ".\r\n";
  return out;
}

prepared_message prepare(std::string_view raw_message) {
  prepared_message m;
  m.raw = normalize_crlf(raw_message);
  m.stuffed = dot_stuff(m.raw);
  m.bdat_cmd = "BDAT " + std::to_string(m.raw.size()) + " LAST\r\n";
  return m;
}

namespace {
bool is_from_line(std::string_view s, std::size_t pos) {
  return s.substr(pos, 5) == "From ";
}

// Removes one '>' from a line of the form ">+From ".
void append_unescaped_line(std::string& out, std::string_view line) {
  std::size_t gt = 0;
  while (gt < line.size() && line[gt] == '>') ++gt;
  if (gt > 0 && line.substr(gt, 5) == "From ") line.remove_prefix(1);
  out.append(line);
}
}  // namespace

std::vector<std::string> split_mbox(std::string_view mbox) {
  std::vector<std::string> out;
  std::string current;
  bool in_message = false;
  std::size_t pos = 0;
  while (pos < mbox.size()) {
    std::size_t nl = mbox.find('\n', pos);
    const std::size_t end = (nl == std::string_view::npos) ? mbox.size() : nl + 1;
    const std::string_view line = mbox.substr(pos, end - pos);
    if (is_from_line(mbox, pos)) {
      if (in_message && !current.empty()) out.push_back(std::move(current));
      current.clear();
      in_message = true;
    } else if (in_message) {
      append_unescaped_line(current, line);
    }
    pos = end;
  }
  if (in_message && !current.empty()) out.push_back(std::move(current));
  return out;
}

namespace {
bool read_file(const std::filesystem::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}
}  // namespace

std::vector<std::string> load_directory(const std::filesystem::path& dir, std::error_code& ec,
                                        const std::string& extension) {
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && (extension.empty() || it->path().extension() == extension))
      files.push_back(it->path());
  }
  if (ec) return {};
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const auto& f : files) {
    std::string data;
    if (read_file(f, data) && !data.empty()) out.push_back(std::move(data));
  }
  if (out.empty()) ec = errc::empty_corpus;
  return out;
}

std::vector<std::string> load_mbox(const std::filesystem::path& file, std::error_code& ec) {
  std::string data;
  if (!read_file(file, data)) {
    ec = std::make_error_code(std::errc::no_such_file_or_directory);
    return {};
  }
  auto out = split_mbox(data);
  if (out.empty()) ec = errc::empty_corpus;
  return out;
}

namespace {
// splitmix64: small, fast, fully specified (same stream on every platform).
struct rng {
  std::uint64_t s;
  std::uint64_t next() noexcept {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0,1)
  double normal() noexcept {  // Box-Muller
    const double u1 = 1.0 - uniform();  // (0,1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  }
};

constexpr std::array<std::string_view, 24> words = {
    "inbound", "mail",   "service", "message", "buffer", "segment", "parser",  "header",
    "body",    "filter", "store",   "queue",   "relay",  "domain",  "address", "payload",
    "latency", "load",   "socket",  "kernel",  "thread", "reply",   "sender",  "the"};

void append_body(std::string& m, std::size_t target, rng& r) {
  while (m.size() < target) {
    std::string line;
    if (r.next() % 40 == 0) line += '.';
    const std::size_t len = 40 + r.next() % 37;  // 40..76 characters
    while (line.size() < len) {
      if (!line.empty() && line.back() != '.') line += ' ';
      line += words[r.next() % words.size()];
    }
    const std::size_t room = target > m.size() + 2 ? target - m.size() - 2 : 0;
    if (line.size() > room) line.resize(room);
    m += line;
    m += "\r\n";
  }
}
}  // namespace

std::vector<std::string> synthesize(const synthetic_params& p) {
  rng r{p.seed};
  const double sigma = std::max(0.0, p.sigma);
  const double mu = std::log(std::max(1.0, p.mean_bytes)) - sigma * sigma / 2.0;
  // Draw every size first, then scale them so that the corpus mean is the requested mean
  // (a few hundred lognormal draws alone miss it by several per cent).
  std::vector<double> sizes(p.count);
  double sum = 0;
  for (auto& s : sizes) sum += (s = std::exp(mu + sigma * r.normal()));
  const double scale = sum > 0 ? p.mean_bytes * static_cast<double>(p.count) / sum : 1.0;
  std::vector<std::string> out;
  out.reserve(p.count);
  for (std::size_t i = 0; i < p.count; ++i) {
    const double drawn = sizes[i] * scale;
    const auto target = std::clamp(static_cast<std::size_t>(drawn), p.min_bytes, p.max_bytes);
    std::string m;
    m.reserve(target + 80);
    m += "From: Load Generator <load@inlet.test>\r\n";
    m += "To: <rcpt@inlet.test>\r\n";
    m += "Subject: inlet-load message " + std::to_string(i) + "\r\n";
    m += "Date: Thu, 01 Jan 2026 00:00:00 +0000\r\n";
    m += "Message-ID: <" + std::to_string(p.seed) + "." + std::to_string(i) + "@inlet.test>\r\n";
    m += "MIME-Version: 1.0\r\n";
    m += "Content-Type: text/plain; charset=us-ascii\r\n\r\n";
    append_body(m, target, r);
    out.push_back(std::move(m));
  }
  return out;
}

prepared_corpus::prepared_corpus(const std::vector<std::string>& messages) {
  messages_.reserve(messages.size());
  for (const auto& m : messages) {
    messages_.push_back(prepare(m));
    stats_.raw_bytes += messages_.back().raw.size();
    stats_.stuffed_bytes += messages_.back().stuffed.size();
  }
  stats_.messages = messages_.size();
  if (!messages_.empty())
    stats_.mean_raw_bytes = static_cast<double>(stats_.raw_bytes) / messages_.size();
}

}  // namespace inlet::load
