// The small engine interface behind inlet::filter, and the two engines:
//   engine_kind::hyperscan     Hyperscan 5.4, streaming mode, one database shared by
//                              all threads, scratch per thread (literals + regexes)
//   engine_kind::aho_corasick  our own Aho-Corasick DFA (literals only; a list with a
//                              `re:` term is refused with errc::regex_unsupported and
//                              the line number)
// Most users go through inlet::filter::filter and scan (filter.hpp) instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <system_error>

#include "inlet/filter/error.hpp"
#include "inlet/filter/terms.hpp"

namespace inlet::filter {

enum class engine_kind : std::uint8_t { hyperscan, aho_corasick };

std::string_view to_string(engine_kind k) noexcept;

/// Called once per (term, stream) at least; may be called again for the same term.
using match_callback = void (*)(void* ctx, std::uint32_t term_id) noexcept;

/// One text stream being scanned. Matches across feed() boundaries are found.
/// Not thread-safe: one thread at a time (it may move between threads between calls).
/// Must not outlive the engine that opened it.
class engine_stream {
 public:
  virtual ~engine_stream() = default;
  /// Scans the next piece of the stream.
  virtual std::error_code feed(std::string_view piece, match_callback cb, void* ctx) noexcept = 0;
  /// Ends the stream (reports end-anchored matches) and resets it for a new stream.
  virtual std::error_code finish(match_callback cb, void* ctx) noexcept = 0;
};

/// A compiled term set. Immutable after construction; every const member is safe to
/// call from any number of threads at once.
class engine {
 public:
  virtual ~engine() = default;
  virtual engine_kind kind() const noexcept = 0;
  virtual std::size_t memory_bytes() const noexcept = 0;
  /// May throw std::bad_alloc only.
  virtual std::unique_ptr<engine_stream> open_stream() const = 0;
};

/// Compiles `terms` (must be non-empty) for the engine `kind`. Errors carry the line
/// number of the offending term (invalid regex, regex on Aho-Corasick).
result<std::unique_ptr<engine>> compile_engine(const term_list& terms, engine_kind kind);

}  // namespace inlet::filter
