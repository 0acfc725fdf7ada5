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

void describe_statement(connection& c, const std::string& text,
                        const std::vector<std::uint32_t>& cpp_params,
                        std::vector<std::uint32_t>& params, std::vector<std::uint32_t>& results,
                        std::string& message, std::error_code& ec) {
  static constexpr const char* name = "inlet_repository_check";
  // Prepared with the parameter types the C++ side sends: the server checks the query
  // exactly as it will run (a cast, an operator or a column that does not fit fails here).
  std::vector<std::uint32_t> oids = cpp_params;
  for (auto& o : oids) o = o ? o : oid::unknown;
  std::vector<std::string> names;
  c.query(sql("SELECT pg_catalog.format_type(o, NULL) FROM unnest($1::oid[]) WITH ORDINALITY AS "
              "u(o, i) ORDER BY i",
              oids),
          into(names), ec);
  if (ec) {
    message = "could not name the parameter types: " + c.last_diagnostics().message;
    return;
  }
  std::string prepare = std::string("PREPARE ") + name;
  for (std::size_t i = 0; i < names.size(); ++i) prepare += (i ? ", " : " (") + names[i];
  if (!names.empty()) prepare += ")";
  prepare += " AS " + text;
  c.query(query<>(prepare), ec);
  if (ec) {
    const auto& d = c.last_diagnostics();
    message = d.message.empty() ? ec.message() : d.sqlstate + ": " + d.message;
    return;
  }
  std::vector<std::vector<std::uint32_t>> rows;
  c.query(
      sql("SELECT parameter_types::oid[] FROM pg_catalog.pg_prepared_statements WHERE name = $1",
          std::string_view(name)),
      into(rows), ec);
  if (!ec && rows.size() == 1) {
    // The result columns: run it once with NULL parameters, rolled back (the server
    // reports the column types even for zero rows; a data-modifying query changes nothing).
    params = std::move(rows[0]);
    std::string exec = std::string("EXECUTE ") + name;
    for (std::size_t i = 0; i < params.size(); ++i) exec += i ? ", NULL" : "(NULL";
    if (!params.empty()) exec += ")";
    std::error_code e2;
    c.query(query<>(std::string_view("BEGIN")), e2);
    if (!e2) c.query(query<>(std::string_view("SET LOCAL statement_timeout = '10s'")), e2);
    result r;
    if (!e2) r = c.query(query<>(exec), e2);
    if (!e2)
      for (int i = 0; i < r.columns(); ++i) results.push_back(r.column_type(i));
    std::error_code rb;
    c.query(query<>(std::string_view("ROLLBACK")), rb);
    if (e2) {
      ec = e2;
      message = "could not run the statement with NULL parameters: " + c.last_diagnostics().message;
    }
  } else if (!ec) {
    ec = make_error_code(errc::protocol_error);
    message = "the prepared statement was not found";
  } else {
    message = "could not describe the statement: " + ec.message();
  }
  std::error_code dec;
  c.query(query<>(std::string_view("DEALLOCATE inlet_repository_check")), dec);
}

}  // namespace inlet::pg::detail
