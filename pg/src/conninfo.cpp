#include "conninfo.hpp"

#include <libpq-fe.h>

#include <cstdlib>

namespace inlet::pg::detail {
namespace {
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(std::move(cur));
  return out;
}
void quote_into(std::string& out, const std::string& v) {
  out.push_back('\'');
  for (char c : v) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
}
}  // namespace

std::string conninfo::host::label() const {
  std::string h = !host.empty() ? host : !hostaddr.empty() ? hostaddr : "default host";
  return port.empty() ? h : h + ":" + port;
}

bool conninfo::parse(const std::string& dsn, conninfo& out, std::string& err) {
  char* msg = nullptr;
  PQconninfoOption* opts = PQconninfoParse(dsn.c_str(), &msg);
  if (!opts) {
    err = msg ? msg : "cannot parse the connection string";
    if (msg) PQfreemem(msg);
    return false;
  }
  out = conninfo{};
  std::string host, hostaddr, port;
  for (auto* o = opts; o->keyword; ++o) {
    if (!o->val) continue;
    std::string k = o->keyword, v = o->val;
    if (k == "host")
      host = v;
    else if (k == "hostaddr")
      hostaddr = v;
    else if (k == "port")
      port = v;
    else if (k == "target_session_attrs")
      out.target_session_attrs = v;
    else {
      if (k == "connect_timeout") out.connect_timeout = std::chrono::seconds(std::atoi(v.c_str()));
      out.params.emplace_back(std::move(k), std::move(v));
    }
  }
  PQconninfoFree(opts);
  auto hs = split(host), as = split(hostaddr), ps = split(port);
  std::size_t n = std::max(hs.size(), as.size());
  if ((hs.size() != 1 && hs.size() != n) || (as.size() != 1 && as.size() != n) ||
      (ps.size() != 1 && ps.size() != n)) {
    err = "the host, hostaddr and port lists differ in length";
    return false;
  }
  for (std::size_t i = 0; i < n; ++i) {
    out.hosts.push_back({hs.size() == 1 ? hs[0] : hs[i], as.size() == 1 ? as[0] : as[i],
                         ps.size() == 1 ? ps[0] : ps[i]});
  }
  return true;
}

std::string conninfo::single_host(std::size_t i, const std::string& target) const {
  std::string s;
  auto add = [&](const std::string& k, const std::string& v) {
    if (v.empty()) return;
    if (!s.empty()) s.push_back(' ');
    s += k;
    s.push_back('=');
    quote_into(s, v);
  };
  const auto& h = hosts.at(i);
  add("host", h.host);
  add("hostaddr", h.hostaddr);
  add("port", h.port);
  add("target_session_attrs", target.empty() ? target_session_attrs : target);
  for (const auto& [k, v] : params) add(k, v);
  return s;
}

conninfo::arrays conninfo::for_host(std::size_t i, const std::string& target) const {
  arrays a;
  const auto& h = hosts.at(i);
  std::vector<std::pair<std::string, std::string>> kv;
  if (!h.host.empty()) kv.emplace_back("host", h.host);
  if (!h.hostaddr.empty()) kv.emplace_back("hostaddr", h.hostaddr);
  if (!h.port.empty()) kv.emplace_back("port", h.port);
  const std::string& t = target.empty() ? target_session_attrs : target;
  if (!t.empty()) kv.emplace_back("target_session_attrs", t);
  for (const auto& p : params) kv.push_back(p);
  a.storage.reserve(kv.size() * 2);
  for (auto& [k, v] : kv) {
    a.storage.push_back(std::move(k));
    a.storage.push_back(std::move(v));
  }
  for (std::size_t j = 0; j < a.storage.size(); j += 2) {
    a.keys.push_back(a.storage[j].c_str());
    a.values.push_back(a.storage[j + 1].c_str());
  }
  a.keys.push_back(nullptr);
  a.values.push_back(nullptr);
  return a;
}

}  // namespace inlet::pg::detail
