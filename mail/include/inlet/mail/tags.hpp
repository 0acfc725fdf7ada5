// Tags of a received message: the ones it carries itself (X-Tags, user+tag addresses)
// and the ones Mailpit's tag filters (--tag, --tags-config) give it.
//
// Thread-safety: message_tags is a pure function; a tag_rules is immutable after parse
// and apply() may run on any thread.
#pragma once

#include <inlet/mime/message.hpp>
#include <inlet/store/search.hpp>
#include <inlet/store/types.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::mail {

/// Which of Mailpit's automatic tags apply (--tags-disable, --tags-title-case).
struct tag_options {
  bool x_tags = true;          ///< X-Tags: a, b
  bool plus_addresses = true;  ///< user+tag@example.com in From, To, Cc, Bcc
  bool title_case = false;
};

/// The tags a message carries itself, cleaned (store::clean_tag), appended to `out`.
void message_tags(const inlet::mime::parsed_message& m, const inlet::store::summary& s,
                  const tag_options& o, std::vector<std::string>& out);

/// Mailpit's tag filters: a search query -> tags. Words and phrases match anywhere in the
/// raw message (headers included, case-insensitively), as Mailpit's filters do; the other
/// terms mean what they mean in a search (is:read, tag: and is:tagged never hold for a
/// message being received).
class tag_rules {
 public:
  /// From --tag values (`tag=match tag2=match2`, double quotes group, tags
  /// comma-separated) and a --tags-config YAML file (`filters:`, a sequence of maps with
  /// `match:` and `tags:`; "" for none). False and a message in `error` on a bad rule or
  /// file.
  static bool parse(const std::vector<std::string>& specs, const std::string& yaml_file,
                    tag_rules& out, std::string& error);
  /// The same for YAML text already read (`origin` names it in errors).
  static bool parse_yaml(std::string_view yaml, std::string_view origin, tag_rules& out,
                         std::string& error);
  bool empty() const noexcept { return rules_.empty(); }
  std::size_t size() const noexcept { return rules_.size(); }
  /// Appends the tags of every rule the message matches.
  void apply(const inlet::store::new_message& msg, std::vector<std::string>& tags) const;

 private:
  struct rule {
    inlet::store::search::query words;   // text terms: matched against the raw bytes
    inlet::store::search::query others;  // the rest: matched against the summary
    std::vector<std::string> tags;
  };
  bool add(std::string_view tags, std::string_view match, std::string& error);
  std::vector<rule> rules_;
};

}  // namespace inlet::mail
