// inletd's use of the MIME parser: one parse of each message fills the store's summary,
// finds the tags the message carries (X-Tags, plus addresses) and feeds the filter the
// decoded headers and text parts; the HTTP API renders bodies from the raw bytes on demand.
// Tag rules (Mailpit's --tag / --tags-config) tag messages that match a search.
#pragma once

#include <inlet/filter/filter.hpp>
#include <inlet/http/api.hpp>
#include <inlet/mime/message.hpp>
#include <inlet/store/search.hpp>
#include <inlet/store/types.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace inletd {

class pipeline;
class filter_stage;

/// The calling thread's MIME parser. Reused for every message, it keeps the capacity of
/// its tables, so parsing allocates nothing once they have grown (mime/parser.hpp).
/// A result is valid until the thread's next parse.
inlet::mime::parser& thread_parser();

/// From one parse: fills `out` (addresses, Subject, Date, Message-ID, snippet,
/// attachments without inline parts, the inline part count; envelope recipients no
/// To/Cc/Bcc header names become Bcc), every list and string bounded; and, when `scan` is
/// given, feeds it the decoded unstructured headers and every non-attachment text/* part
/// as UTF-8. Not the search text: see search_text_of.
void analyze(const inlet::mime::parsed_message& m, const inlet::store::recipient_list& rcpt_to,
             inlet::store::summary& out, inlet::filter::scan* scan);

/// summary.search_text of a received message (a store::search_text_builder, which the
/// pipeline hands the store instead of the text): subject, names and addresses, the first
/// 8 KiB of the first text/plain part (else of the first text/html part, as text),
/// attachment names; folded, whitespace collapsed, at most 8 KiB. Parses `raw` again
/// (its own per-thread parser); a plain or HTML part without transfer encoding in ASCII
/// or UTF-8 is read in place. Thread-safe.
std::string search_text_of(const inlet::store::summary& s, std::string_view raw);

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
///
/// Thread-safety: immutable after parse; apply() may run on any thread.
class tag_rules {
 public:
  /// From --tag values (`tag=match tag2=match2`, quotes group, tags comma-separated) and
  /// a --tags-config YAML file (`filters:` of `- match:` / `tags:`; "" for none).
  static bool parse(const std::vector<std::string>& specs, const std::string& yaml_file,
                    tag_rules& out, std::string& error);
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

/// The pipeline's and the filter's counters for /metrics (Prometheus text format).
void append_metrics(const pipeline& p, filter_stage* f, std::string& out);

}  // namespace inletd
