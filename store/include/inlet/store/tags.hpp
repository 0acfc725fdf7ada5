// Tag names as Mailpit allows them: letters, digits, '-', '.', '_' and spaces, at least
// one character. Whoever takes tags from outside (an X-Tags header, a plus address, the
// API) cleans them with clean_tag; stores keep tags as they are given.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inlet::store {

/// Drops the characters Mailpit does not allow, collapses runs of spaces, trims; "" when
/// nothing is left.
std::string clean_tag(std::string_view tag);

/// Title Case ("tag one" -> "Tag One"), for Mailpit's --tags-title-case.
std::string title_case(std::string_view tag);

/// Cleans each tag and drops the empty ones and the duplicates (compared case-insensitively,
/// the first spelling kept).
std::vector<std::string> clean_tags(const std::vector<std::string>& tags);

}  // namespace inlet::store
