// The query repository's file parser and the server-side description of a statement
// (repository.hpp).
#include "inlet/pg/repository.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace inlet::pg::detail {

namespace {
bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// :name -> $n, outside string literals, quoted identifiers and comments; `::` is a cast.
std::string translate(std::string_view body, int first_line, std::string_view file,
                      const repo_entry& e, const std::string_view* params, std::size_t nparams,
                      std::string& errors) {
  std::string out;
  out.reserve(body.size());
  int line = first_line;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '\n') ++line;
    if (c == '\'' || c == '"') {  // copy the quoted part as is
      const std::size_t end = body.find(c, i + 1);
      const std::size_t stop = end == std::string_view::npos ? body.size() : end + 1;
      for (std::size_t k = i; k < stop; ++k) line += body[k] == '\n' && k > i ? 1 : 0;
      out.append(body.substr(i, stop - i));
      i = stop - 1;
      continue;
    }
    if (c == ':' && i + 1 < body.size() && body[i + 1] == ':') {
      out.append("::");
      ++i;
      continue;
    }
    if (c == ':' && i + 1 < body.size() && ident_start(body[i + 1])) {
      std::size_t j = i + 1;
      while (j < body.size() && ident_char(body[j])) ++j;
      const std::string_view name = body.substr(i + 1, j - i - 1);
      std::size_t k = 0;
      while (k < nparams && params[k] != name) ++k;
      if (k == nparams) {
        errors += std::string(file) + ":" + std::to_string(line) + ": " + e.name +
                  ": unknown parameter :" + std::string(name) + " (parameters_type has";
        for (std::size_t p = 0; p < nparams; ++p)
          errors += std::string(p ? ", " : " ") + std::string(params[p]);
        errors += nparams ? ")\n" : " none)\n";
      } else {
        out += '$' + std::to_string(k + 1);
      }
      i = j - 1;
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::vector<repo_entry> parse_repository(std::string_view text, std::string_view file,
                                         const std::vector<std::string_view>& params_of_all,
                                         const std::vector<std::size_t>& param_offsets,
                                         const std::vector<std::string_view>& query_names,
                                         std::string& errors) {
  struct block {
    repo_entry e;
    std::string body;
    int body_line = 0;
  };
  std::vector<block> blocks;
  int line = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view l = text.substr(pos, nl - pos);
    ++line;
    const std::string_view t = trim(l);
    if (t.starts_with("--")) {
      const std::string_view c = trim(t.substr(2));
      if (c.starts_with("name:")) {
        block b;
        b.e.name = std::string(trim(c.substr(5)));
        b.e.line = line;
        for (const auto& o : blocks)
          if (o.e.name == b.e.name)
            errors += std::string(file) + ":" + std::to_string(line) + ": query \"" + b.e.name +
                      "\" is defined twice (first at line " + std::to_string(o.e.line) + ")\n";
        blocks.push_back(std::move(b));
      }
    } else if (!blocks.empty() && !t.empty()) {
      auto& b = blocks.back();
      if (b.body.empty()) b.body_line = line;
      b.body.append(l).push_back('\n');
    }
    if (nl == text.size()) break;
    pos = nl + 1;
  }
  std::vector<repo_entry> out;
  for (auto& b : blocks) {
    std::size_t qi = 0;
    while (qi < query_names.size() && query_names[qi] != b.e.name) ++qi;
    if (qi == query_names.size()) continue;  // a query no C++ type asks for
    const std::size_t first = param_offsets[qi], n = param_offsets[qi + 1] - first;
    while (!b.body.empty() && (b.body.back() == '\n' || b.body.back() == ';')) b.body.pop_back();
    b.e.text = translate(b.body, b.body_line, file, b.e, params_of_all.data() + first, n, errors);
    out.push_back(std::move(b.e));
  }
  return out;
}

std::string read_file(const std::string& path, std::error_code& ec) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    ec = std::make_error_code(std::errc::no_such_file_or_directory);
    return {};
  }
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

namespace {
constexpr std::string_view check_name = "inlet_repository_check";

std::string failure_text(std::error_code ec, const diagnostics* d) {
  if (d && !d->message.empty()) return d->sqlstate + ": " + d->message;
  if (d && !d->client_message.empty()) return d->client_message;
  return ec.message();
}
}  // namespace

statement_check::statement_check(std::string_view text, std::vector<std::uint32_t> cpp_params)
    : text_(text), cpp_(std::move(cpp_params)) {
  go(cpp_.empty() ? step::prepare : step::name_types);
}

void statement_check::go(step s) {
  step_ = s;
  switch (s) {
    case step::name_types: {  // the server's spelling of the C++ parameter types
      sql_ = "SELECT pg_catalog.format_type(o, NULL) FROM unnest('{";
      for (std::size_t i = 0; i < cpp_.size(); ++i)
        sql_ += (i ? "," : "") + std::to_string(cpp_[i] ? cpp_[i] : oid::unknown);
      sql_ += "}'::oid[]) WITH ORDINALITY AS u(o, i) ORDER BY i";
      break;
    }
    case step::prepare: {  // with the C++ types: the server checks the query as it will run
      sql_ = "PREPARE " + std::string(check_name);
      for (std::size_t i = 0; i < type_names_.size(); ++i)
        sql_ += (i ? ", " : " (") + type_names_[i];
      if (!type_names_.empty()) sql_ += ")";
      sql_ += " AS " + text_;
      break;
    }
    case step::param_types:
      sql_ = "SELECT parameter_types::oid[] FROM pg_catalog.pg_prepared_statements WHERE name = '" +
             std::string(check_name) + "'";
      break;
    case step::begin:
      sql_ = "BEGIN";
      break;
    case step::timeout:
      sql_ = "SET LOCAL statement_timeout = '10s'";
      break;
    case step::execute: {  // NULL parameters, rolled back: the columns' names and types
      sql_ = "EXECUTE " + std::string(check_name);
      for (std::size_t i = 0; i < params_.size(); ++i) sql_ += i ? ", NULL" : "(NULL";
      if (!params_.empty()) sql_ += ")";
      break;
    }
    case step::rollback:
      sql_ = "ROLLBACK";
      break;
    case step::deallocate:
      sql_ = "DEALLOCATE " + std::string(check_name);
      break;
    case step::done:
      sql_.clear();
      break;
  }
}

void statement_check::feed(std::error_code ec, const result& r, const diagnostics* d) {
  switch (step_) {
    case step::name_types:
      if (!ec) ec = r.read_all<std::string>(type_names_);
      if (ec) {
        failure_ = "could not name the parameter types: " + failure_text(ec, d);
        return go(step::done);
      }
      return go(step::prepare);
    case step::prepare:
      if (ec) {
        failure_ = failure_text(ec, d);
        return go(step::done);
      }
      return go(step::param_types);
    case step::param_types: {
      std::vector<std::vector<std::uint32_t>> rows;
      if (!ec) ec = r.read_all<std::vector<std::uint32_t>>(rows);
      if (ec || rows.size() != 1) {
        failure_ = "could not describe the statement: " +
                   (ec ? failure_text(ec, d) : std::string("the prepared statement was not found"));
        return go(step::deallocate);
      }
      params_ = std::move(rows[0]);
      return go(step::begin);
    }
    case step::begin:
    case step::timeout:
    case step::execute:
      if (ec) {
        failure_ = "could not run the statement with NULL parameters: " + failure_text(ec, d);
        return go(step_ == step::begin ? step::deallocate : step::rollback);
      }
      if (step_ != step::execute) return go(step_ == step::begin ? step::timeout : step::execute);
      for (int i = 0; i < r.columns(); ++i) {
        columns_.push_back(r.column_type(i));
        names_.emplace_back(r.column_name(i));
      }
      return go(step::rollback);
    case step::rollback:
      return go(step::deallocate);
    case step::deallocate:
    case step::done:
      return go(step::done);
  }
}

std::string server_type_name(std::uint32_t o) {
  const std::string_view builtin = type_name(o);
  if (builtin != "other") return std::string(builtin);
  if (const type_map* m = current_types)
    for (const auto& e : m->entries()) {
      if (e.oid == o) return std::string(e.name);
      if (e.array_oid == o) return std::string(e.name) + "[]";
    }
  return "a type unknown to the client";
}

void run_check(connection& c, statement_check& s) {
  while (!s.done()) {
    std::error_code ec;
    result r = c.query(query<>(s.next()), ec);
    s.feed(ec, r, ec ? &c.last_diagnostics() : nullptr);
  }
}

void append_field_mismatches(const std::string_view* fields, std::size_t n,
                             const std::vector<std::string>& names, int* cols, std::string& out) {
  std::vector<bool> used(names.size(), false);
  std::string missing, extra;
  for (std::size_t i = 0; i < n; ++i) {
    cols[i] = -1;
    for (std::size_t c = 0; c < names.size(); ++c)
      if (!used[c] && names[c] == fields[i]) {
        cols[i] = static_cast<int>(c);
        used[c] = true;
        break;
      }
    if (cols[i] < 0) missing.append(missing.empty() ? "\"" : ", \"").append(fields[i]).append("\"");
  }
  for (std::size_t c = 0; c < names.size(); ++c)
    if (!used[c]) extra.append(extra.empty() ? "\"" : ", \"").append(names[c]).append("\"");
  if (!missing.empty()) out += " no column for field(s) " + missing + ";";
  if (!extra.empty()) out += " column(s) " + extra + " match no field;";
}

}  // namespace inlet::pg::detail
