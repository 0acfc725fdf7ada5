#pragma once
// Messages for inlet-load: loading (a directory of files, an mbox), synthesis (lognormal
// sizes, seeded) and preparation (CRLF, dot-stuffing, BDAT command) done once up front, so
// the send path only hands views of these bytes to the kernel.
//
// Thread-safety: a prepared_corpus is immutable after construction and shared read-only by
// every client thread. Views into it live as long as the corpus.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace inlet::load {

// Line endings made CRLF (bare LF and bare CR become CRLF); a final CRLF is added if the
// message does not end with one. An empty input stays empty.
std::string normalize_crlf(std::string_view raw);

// RFC 5321 4.5.2 transparency over CRLF-normalised text: a '.' starting a line is doubled;
// then the end-of-data line ".\r\n" is appended. `text` must be empty or end with CRLF.
std::string dot_stuff(std::string_view text);

// One message ready to send.
struct prepared_message {
  std::string raw;       // CRLF-normalised bytes (the BDAT payload; what the server stores)
  std::string stuffed;   // dot-stuffed raw + ".\r\n" (the DATA payload)
  std::string bdat_cmd;  // "BDAT <raw.size()> LAST\r\n"
};

prepared_message prepare(std::string_view raw_message);

// Splits an mbox (mboxo/mboxrd): messages start at a "From " line at the start of the file or
// after a newline; the From_ line is dropped and one '>' is removed from lines matching
// ">+From ". Empty messages are skipped.
std::vector<std::string> split_mbox(std::string_view mbox);

// Every regular file under `dir` (recursively, sorted by path), skipping empty ones; with a
// non-empty `extension` (e.g. ".txt") only the files that have it.
std::vector<std::string> load_directory(const std::filesystem::path& dir, std::error_code& ec,
                                        const std::string& extension = {});
std::vector<std::string> load_mbox(const std::filesystem::path& file, std::error_code& ec);

struct synthetic_params {
  std::size_t count = 256;     // distinct messages generated
  double mean_bytes = 9000.0;  // mean size of the lognormal distribution
  double sigma = 0.8;          // shape of the lognormal (of ln(size))
  std::size_t min_bytes = 400;
  std::size_t max_bytes = 4u << 20;
  std::uint64_t seed = 1;
};

// Synthetic text/plain messages with sizes drawn from a lognormal distribution, scaled so the
// corpus mean is the given mean (before clamping to [min_bytes, max_bytes]). The same parameters give the same bytes on every run (own PRNG and transform, not
// std::lognormal_distribution). About one line in 40 starts with '.', to exercise stuffing.
std::vector<std::string> synthesize(const synthetic_params& p);

struct corpus_stats {
  std::size_t messages = 0;
  std::uint64_t raw_bytes = 0;
  std::uint64_t stuffed_bytes = 0;
  double mean_raw_bytes = 0;
};

class prepared_corpus {
 public:
  prepared_corpus() = default;
  explicit prepared_corpus(const std::vector<std::string>& messages);

  std::size_t size() const noexcept { return messages_.size(); }
  bool empty() const noexcept { return messages_.empty(); }
  const prepared_message& operator[](std::size_t i) const noexcept {
    return messages_[i % messages_.size()];
  }
  corpus_stats stats() const noexcept { return stats_; }

 private:
  std::vector<prepared_message> messages_;
  corpus_stats stats_;
};

}  // namespace inlet::load
