#include "inlet/mail/tags.hpp"

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <fstream>
#include <inlet/store/tags.hpp>
#include <sstream>

#include <inlet/util/ascii.hpp>

namespace inlet::mail {

namespace mm = inlet::mime;
namespace st = inlet::store;

void message_tags(const mm::parsed_message& m, const st::summary& s, const tag_options& o,
                  std::vector<std::string>& out) {
  auto add = [&](std::string_view raw_tag) {
    std::string t = st::clean_tag(raw_tag);
    if (t.empty()) return;
    out.push_back(o.title_case ? st::title_case(t) : std::move(t));
  };
  if (o.x_tags) {
    const auto& root = m.parts().front();
    std::string scratch;
    for (std::uint32_t i = root.first_header; i < root.first_header + root.header_count; ++i) {
      const auto& h = m.headers()[i];
      std::string_view name = m.view(h.name, scratch);
      if (name.size() != 6 || !(name[0] == 'x' || name[0] == 'X') ||
          st::search::fold_case(name) != "x-tags")
        continue;
      std::string value = mm::decode_unstructured(m.view(h.value, scratch));
      std::string_view rest = value;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        add(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
  }
  if (o.plus_addresses) {
    auto from_address = [&](const st::address& a) {
      auto at = a.address.rfind('@');
      auto local = std::string_view(a.address).substr(0, at == std::string::npos ? 0 : at);
      auto plus = local.find('+');
      if (plus == std::string_view::npos) return;
      local.remove_prefix(plus + 1);  // user+one+two@x: one, two
      while (!local.empty()) {
        auto next = local.find('+');
        add(local.substr(0, next));
        if (next == std::string_view::npos) break;
        local.remove_prefix(next + 1);
      }
    };
    from_address(s.from);
    const auto lists = s.lists();
    for (auto list : {lists[0], lists[1], lists[2]})  // To, Cc, Bcc
      for (const auto& a : list) from_address(a);
  }
}

namespace {

// Mailpit's argument splitting (whitespace outside double quotes; quotes dropped).
std::vector<std::string> split_args(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : s) {
    if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace

bool tag_rules::add(std::string_view tags, std::string_view match, std::string& error) {
  rule r;
  std::string_view rest = tags;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string t = st::clean_tag(rest.substr(0, comma));
    if (!t.empty()) r.tags.push_back(std::move(t));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  st::search::query q;
  std::string why;
  if (st::search::parse(match, {}, q, &why)) {
    error = "tag filter \"" + std::string(match) + "\": " + why;
    return false;
  }
  if (r.tags.empty() || q.empty()) {
    error = "tag filter \"" + std::string(tags) + "=" + std::string(match) +
            "\" needs a tag and a match";
    return false;
  }
  for (auto& t : q.terms) {
    const bool word = t.what == st::search::kind::match && t.where == st::search::field::text;
    (word ? r.words : r.others).terms.push_back(std::move(t));
  }
  rules_.push_back(std::move(r));
  return true;
}

bool tag_rules::parse(const std::vector<std::string>& specs, const std::string& yaml_file,
                      tag_rules& out, std::string& error) {
  tag_rules rules;
  for (const auto& spec : specs) {
    for (const auto& arg : split_args(spec)) {
      auto eq = arg.find('=');
      if (eq == std::string::npos || eq == 0) {
        error = "--tag \"" + arg + "\" is not tag=match";
        return false;
      }
      if (!rules.add(std::string_view(arg).substr(0, eq), std::string_view(arg).substr(eq + 1),
                     error))
        return false;
    }
  }
  if (!yaml_file.empty()) {
    std::ifstream in(yaml_file);
    if (!in) {
      error = "cannot read " + yaml_file;
      return false;
    }
    std::stringstream text;
    text << in.rdbuf();
    tag_rules from_file;
    if (!parse_yaml(text.str(), yaml_file, from_file, error)) return false;
    for (auto& r : from_file.rules_) rules.rules_.push_back(std::move(r));
  }
  out = std::move(rules);
  return true;
}

bool tag_rules::parse_yaml(std::string_view yaml, std::string_view origin, tag_rules& out,
                           std::string& error) {
  // Mailpit's tags file: `filters:`, a sequence of maps with `match` and `tags` (a
  // comma-separated string, or a sequence of strings).
  auto fail = [&](std::string why) {
    error = std::string(origin) + ": " + std::move(why);
    return false;
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return fail(e.what());
  }
  tag_rules rules;
  if (root.IsNull()) {
    out = std::move(rules);
    return true;
  }
  if (!root.IsMap()) return fail("expected a map with `filters:`");
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>("");
    if (key != "filters") return fail("unexpected key \"" + key + "\"");
  }
  const YAML::Node filters = root["filters"];
  if (filters.IsNull()) {
    out = std::move(rules);
    return true;
  }
  if (!filters.IsSequence()) return fail("`filters` must be a list");
  for (const auto& f : filters) {
    if (!f.IsMap()) return fail("each filter must be a map of `match` and `tags`");
    std::string match, tags;
    for (const auto& kv : f) {
      const std::string key = kv.first.as<std::string>("");
      const YAML::Node& v = kv.second;
      if (key == "match" && v.IsScalar()) {
        match = v.as<std::string>();
      } else if (key == "tags" && v.IsScalar()) {
        tags = v.as<std::string>();
      } else if (key == "tags" && v.IsSequence()) {
        for (const auto& t : v) {
          if (!t.IsScalar()) return fail("`tags` must be strings");
          if (!tags.empty()) tags += ',';
          tags += t.as<std::string>();
        }
      } else {
        return fail("unexpected key \"" + key + "\" in a filter");
      }
    }
    if (!rules.add(tags, match, error)) return false;
  }
  out = std::move(rules);
  return true;
}

void tag_rules::apply(const st::new_message& msg, std::vector<std::string>& tags) const {
  if (rules_.empty()) return;
  // What the terms look at: the summary (as the store will keep it) and the raw bytes,
  // folded once for the words.
  st::stored_message probe;
  probe.envelope = msg.envelope;
  probe.summary = msg.summary;
  probe.size = msg.raw.size();
  probe.created = std::chrono::system_clock::now();
  const st::search::prepared_fields fields(probe);
  std::string folded;
  for (const auto& r : rules_) {
    if (!st::search::matches(r.others, probe, fields)) continue;
    bool ok = true;
    for (const auto& w : r.words.terms) {
      if (folded.empty()) folded = st::search::fold_case(msg.raw);
      const bool found = folded.find(w.value) != std::string::npos;
      if (found == w.negated) {
        ok = false;
        break;
      }
    }
    if (ok) tags.insert(tags.end(), r.tags.begin(), r.tags.end());
  }
}

}  // namespace inlet::mail
