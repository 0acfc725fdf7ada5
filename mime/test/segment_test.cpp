// inlet::mime over inlet::buffer::segment: every two-way split of each crafted message,
// as a segment of wrapped pieces, parses exactly like the flat message.
#include "split.hpp"

#include <inlet/mime/segment.hpp>

#include <gtest/gtest.h>

namespace inlet::mime::test {
namespace {

buffer::segment segment_of(std::string_view in, std::size_t cut1, std::size_t cut2) {
  buffer::segment s = buffer::segment::wrap(in.data(), cut1);
  s.append(buffer::segment::wrap(in.data() + cut1, cut2 - cut1));
  s.append(buffer::segment::wrap(in.data() + cut2, in.size() - cut2));
  return s;
}

TEST(segment, parses_like_flat_input_at_every_split) {
  for (const char* name : {"simple.eml", "nested.eml", "broken.eml", "digest.eml"}) {
    const std::string in = read_data(name);
    const std::string want = describe(parse(std::string_view(in)));
    parser p;
    for (std::size_t k = 0; k <= in.size(); ++k) {
      buffer::segment s = segment_of(in, k / 2, k);
      ASSERT_EQ(s.size(), in.size());
      ASSERT_EQ(describe(parse(p, s)), want) << name << " split " << k;
    }
    buffer::segment copied = buffer::segment::copy_of(in);
    parsed_message m = parse(copied);
    ASSERT_EQ(describe(m), want);
    EXPECT_EQ(summarize(m).subject, summarize(parse(std::string_view(in))).subject);
  }
}

}  // namespace
}  // namespace inlet::mime::test
