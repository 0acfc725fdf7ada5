#include "inlet/load/reply.hpp"

namespace inlet::load {

bool reply_parser::on_line(std::string_view line, reply& r) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (line.size() < 3 || !digit(line[0]) || !digit(line[1]) || !digit(line[2]) ||
      line[0] < '1' || line[0] > '5' || (line.size() > 3 && line[3] != ' ' && line[3] != '-')) {
    error_ = errc::malformed_reply;
    return false;
  }
  const int code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
  if (code_ != 0 && code != code_) {
    error_ = errc::inconsistent_code;
    return false;
  }
  if (code_ == 0) text_.clear();
  else text_ += '\n';
  code_ = code;
  if (line.size() > 4) text_.append(line.substr(4));
  if (line.size() > 3 && line[3] == '-') return false;  // continuation
  r.code = code;
  r.text = text_;
  code_ = 0;
  return true;
}

}  // namespace inlet::load
