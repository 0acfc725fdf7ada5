// Internal: the engine factories and what the benchmarks need to build a raw
// Hyperscan reference database from the same terms.
#pragma once

#include <memory>
#include <string>

#include "inlet/filter/engine.hpp"

namespace inlet::filter::detail {

/// Hyperscan expression for a term: literals are escaped byte by byte (\xHH for
/// every non-alphanumeric byte), regexes pass through.
std::string hyperscan_expression(const term& t);
/// Hyperscan compile flags for a term (HS_FLAG_CASELESS | HS_FLAG_SINGLEMATCH).
unsigned hyperscan_flags(const term& t);

result<std::unique_ptr<engine>> compile_hyperscan(const term_list& terms);
result<std::unique_ptr<engine>> compile_aho_corasick(const term_list& terms);

}  // namespace inlet::filter::detail
