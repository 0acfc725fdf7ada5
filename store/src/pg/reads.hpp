// Reading rows of mail.message into stored_message records, and Mailpit's search
// language compiled to SQL.
//
// Thread-safety: plain functions.
#pragma once

#include <string>
#include <vector>

#include "inlet/pg/result.hpp"
#include "inlet/pg/types.hpp"
#include "inlet/store/search.hpp"
#include "inlet/store/types.hpp"

namespace inlet::store::pgstore {

/// The columns summary_row() reads, in order (prefix each with `alias.` via the
/// argument). `with_raw` adds search_text and raw (the whole message).
std::string summary_columns(std::string_view alias, bool with_raw);

/// Decodes one row whose first columns are summary_columns(…, with_raw).
std::error_code read_summary_row(const pg::result& r, int row, bool with_raw, stored_message& out);

/// A search compiled to a SQL condition over mail.message (alias `m`), with its values
/// in three array parameters: texts ($T), instants ($I) and sizes ($S), whose numbers
/// the caller chooses.
struct compiled_search {
  std::string condition;  ///< "TRUE" when the query is empty
  std::vector<std::string> texts;
  std::vector<pg::timestamptz> instants;
  std::vector<std::int64_t> sizes;
};

compiled_search compile_search(const search::query& q, int texts_param, int instants_param,
                               int sizes_param);

}  // namespace inlet::store::pgstore
