// End-to-end tests: run the inlet-parse binary on crafted messages, check its output.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace json = boost::json;

namespace {

struct result {
  std::string out;
  int status = -1;
};

result run(const std::string& args) {
  result r;
  std::string cmd = std::string(INLET_PARSE_BIN) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string data(const std::string& name) { return std::string(INLET_MIME_TEST_DATA) + "/" + name; }

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (std::size_t e; (e = s.find('\n', b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
  return out;
}

TEST(inlet_parse, json_schema_for_one_file) {
  result r = run("--json " + data("nested.eml"));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(lines(r.out).size(), 1u);
  json::object o = json::parse(r.out).as_object();
  EXPECT_FALSE(o.contains("file"));
  EXPECT_EQ(o.at("subject"), "report");
  EXPECT_EQ(o.at("from").as_array().at(0).at("name"), "Alice");
  EXPECT_EQ(o.at("from").as_array().at(0).at("address"), "alice@example.org");
  EXPECT_TRUE(o.at("to").as_array().empty());
  EXPECT_EQ(o.at("date"), "1969-02-14T03:02:54Z");
  EXPECT_TRUE(o.at("message_id").is_null());
  EXPECT_TRUE(o.at("defects").as_array().empty());
  json::array headers = o.at("headers").as_array();
  ASSERT_EQ(headers.size(), 6u);
  EXPECT_EQ(headers.at(5).at("name"), "Content-Type");
  EXPECT_EQ(headers.at(5).at("value"), "multipart/mixed; boundary=\"==outer==\"");
  const json::object& body = o.at("body").as_object();
  EXPECT_EQ(body.at("content_type"), "multipart/mixed");
  const json::array& kids = body.at("children").as_array();
  ASSERT_EQ(kids.size(), 3u);
  EXPECT_EQ(kids.at(0).at("content_type"), "multipart/alternative");
  EXPECT_EQ(kids.at(0).at("children").at(0).at("charset"), "iso-8859-1");
  EXPECT_EQ(kids.at(0).at("children").at(0).at("size"), 32);
  EXPECT_TRUE(kids.at(0).at("children").at(1).at("filename").is_null());
  EXPECT_EQ(kids.at(1).at("filename"), "résumé.pdf");
  EXPECT_EQ(kids.at(1).at("disposition"), "attachment");
  EXPECT_EQ(kids.at(1).at("size"), 70);
  const json::object& msg = kids.at(2).as_object();
  EXPECT_EQ(msg.at("content_type"), "message/rfc822");
  ASSERT_EQ(msg.at("children").as_array().size(), 1u);
  const json::object& inner = msg.at("children").at(0).as_object();
  EXPECT_EQ(inner.at("content_type"), "multipart/mixed");
  EXPECT_EQ(inner.at("children").at(0).at("content_type"), "text/plain");
  EXPECT_EQ(inner.at("children").at(1).at("content_type"), "image/png");
  EXPECT_EQ(inner.at("children").at(1).at("size"), 8);
}

TEST(inlet_parse, several_files_one_object_per_line) {
  result r = run("--json " + data("simple.eml") + " " + data("broken.eml") + " " + data("digest.eml"));
  ASSERT_EQ(r.status, 0);
  auto ls = lines(r.out);
  ASSERT_EQ(ls.size(), 3u);
  json::object a = json::parse(ls[0]).as_object();
  EXPECT_EQ(std::string(a.at("file").as_string()), data("simple.eml"));
  EXPECT_EQ(a.at("subject"), "Café and Привет folded");
  EXPECT_EQ(a.at("message_id"), "1234@local.machine.example");
  EXPECT_EQ(a.at("cc").as_array().at(1).at("name"), "Giant; \"Big\" Box");
  EXPECT_EQ(a.at("body").at("content_type"), "text/plain");
  EXPECT_TRUE(a.at("body").at("charset").is_null());
  json::object b = json::parse(ls[1]).as_object();
  EXPECT_EQ(std::string(b.at("file").as_string()), data("broken.eml"));
  json::array d = b.at("defects").as_array();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.at(0), "MissingHeaderBodySeparatorDefect");
  EXPECT_EQ(d.at(1), "CloseBoundaryNotFoundDefect");
  EXPECT_EQ(b.at("body").at("children").at(1).at("charset"), "koi8-r");
  json::object c = json::parse(ls[2]).as_object();
  EXPECT_EQ(c.at("body").at("children").at(0).at("content_type"), "message/rfc822");
}

TEST(inlet_parse, stdin_and_readable_tree) {
  result r = run("--json - < " + data("simple.eml"));
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(json::parse(r.out).at("date"), "2003-07-01T08:52:37Z");
  r = run(data("nested.eml"));
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Subject:    report"), std::string::npos);
  EXPECT_NE(r.out.find("    multipart/alternative"), std::string::npos);
  EXPECT_NE(r.out.find("application/pdf; filename=\"résumé.pdf\" [attachment] (70 bytes)"), std::string::npos) << r.out;
}

TEST(inlet_parse, unreadable_file_is_an_error_others_still_print) {
  result r = run("--json does-not-exist.eml " + data("simple.eml"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.out).size(), 1u);
  r = run("");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
