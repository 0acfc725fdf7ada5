// Hyperscan engine: one streaming-mode database per compiled term list, shared
// read-only by every thread; one scratch per thread (thread_local), grown with
// hs_alloc_scratch the first time a thread meets a database; one hs_stream_t per
// scan, reset (not reopened) between the streams of a message.
#include <hs.h>

#include <atomic>
#include <cstdio>
#include <vector>

#include "engines.hpp"

namespace inlet::filter::detail {
namespace {

std::atomic<std::uint64_t> next_database_id{1};

struct thread_scratch {
  hs_scratch_t* scratch = nullptr;
  std::uint64_t sized_for = 0;  // database id the scratch was last (re)sized for
  ~thread_scratch() {
    if (scratch != nullptr) hs_free_scratch(scratch);
  }
};

thread_local thread_scratch tls_scratch;

class hs_engine;

struct callback_ctx {
  match_callback cb;
  void* ctx;
};

int on_hs_match(unsigned int id, unsigned long long, unsigned long long, unsigned int,
                void* ctx) {
  auto* c = static_cast<callback_ctx*>(ctx);
  c->cb(c->ctx, id);
  return 0;  // keep scanning
}

class hs_engine final : public engine {
 public:
  hs_engine(hs_database_t* db, std::uint64_t id) : db_(db), id_(id) {}
  ~hs_engine() override { hs_free_database(db_); }
  engine_kind kind() const noexcept override { return engine_kind::hyperscan; }
  std::size_t memory_bytes() const noexcept override {
    std::size_t n = 0;
    hs_database_size(db_, &n);
    return n;
  }
  std::unique_ptr<engine_stream> open_stream() const override;

  // The calling thread's scratch, sized for this database; nullptr on failure.
  hs_scratch_t* scratch() const noexcept {
    thread_scratch& t = tls_scratch;
    if (t.sized_for != id_ || t.scratch == nullptr) {
      if (hs_alloc_scratch(db_, &t.scratch) != HS_SUCCESS) return nullptr;
      t.sized_for = id_;
    }
    return t.scratch;
  }
  const hs_database_t* db() const noexcept { return db_; }

 private:
  hs_database_t* db_;
  std::uint64_t id_;
};

class hs_stream final : public engine_stream {
 public:
  explicit hs_stream(const hs_engine& e) : engine_(e) {}
  ~hs_stream() override {
    if (stream_ != nullptr) hs_close_stream(stream_, nullptr, nullptr, nullptr);
  }

  std::error_code feed(std::string_view piece, match_callback cb, void* ctx) noexcept override {
    if (piece.empty()) return {};
    hs_scratch_t* s = engine_.scratch();
    if (s == nullptr) return errc::engine_failure;
    if (stream_ == nullptr && hs_open_stream(engine_.db(), 0, &stream_) != HS_SUCCESS) {
      stream_ = nullptr;
      return errc::engine_failure;
    }
    callback_ctx c{cb, ctx};
    // hs_scan_stream takes an unsigned int length: feed huge pieces in slices.
    while (!piece.empty()) {
      std::size_t n = std::min<std::size_t>(piece.size(), 1u << 30);
      if (hs_scan_stream(stream_, piece.data(), static_cast<unsigned>(n), 0, s, on_hs_match, &c) !=
          HS_SUCCESS)
        return errc::engine_failure;
      piece.remove_prefix(n);
    }
    return {};
  }

  std::error_code finish(match_callback cb, void* ctx) noexcept override {
    if (stream_ == nullptr) return {};  // nothing fed since the last reset
    hs_scratch_t* s = engine_.scratch();
    if (s == nullptr) return errc::engine_failure;
    callback_ctx c{cb, ctx};
    // Reports end-of-data matches ($-anchored regexes) and resets for reuse.
    if (hs_reset_stream(stream_, 0, s, on_hs_match, &c) != HS_SUCCESS) return errc::engine_failure;
    return {};
  }

 private:
  const hs_engine& engine_;
  hs_stream_t* stream_ = nullptr;
};

std::unique_ptr<engine_stream> hs_engine::open_stream() const {
  return std::make_unique<hs_stream>(*this);
}

}  // namespace

std::string hyperscan_expression(const term& t) {
  if (t.kind == term_kind::regex) return t.pattern;
  std::string out;
  out.reserve(t.pattern.size() * 2);
  for (unsigned char c : t.pattern) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out.append(buf, 4);
    }
  }
  return out;
}

unsigned hyperscan_flags(const term&) { return HS_FLAG_CASELESS | HS_FLAG_SINGLEMATCH; }

result<std::unique_ptr<engine>> compile_hyperscan(const term_list& terms) {
  std::vector<std::string> exprs;
  std::vector<const char*> ptrs;
  std::vector<unsigned> flags, ids;
  exprs.reserve(terms.size());
  for (std::size_t i = 0; i < terms.size(); ++i) {
    exprs.push_back(hyperscan_expression(terms.terms[i]));
    flags.push_back(hyperscan_flags(terms.terms[i]));
    ids.push_back(static_cast<unsigned>(i));
  }
  for (const auto& e : exprs) ptrs.push_back(e.c_str());

  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  hs_error_t rc = hs_compile_multi(ptrs.data(), flags.data(), ids.data(),
                                   static_cast<unsigned>(ptrs.size()), HS_MODE_STREAM, nullptr,
                                   &db, &err);
  if (rc != HS_SUCCESS) {
    term_error te;
    te.code = make_error_code(errc::invalid_regex);
    if (err != nullptr) {
      te.detail = err->message != nullptr ? err->message : "";
      if (err->expression >= 0 && static_cast<std::size_t>(err->expression) < terms.size()) {
        const term& bad = terms.terms[static_cast<std::size_t>(err->expression)];
        te.line = bad.line;
        te.detail += " (" + std::string(bad.kind == term_kind::regex ? "re:" : "") + bad.pattern + ")";
      } else {
        te.code = make_error_code(errc::engine_failure);
      }
      hs_free_compile_error(err);
    } else {
      te.code = make_error_code(errc::engine_failure);
    }
    return te;
  }
  return std::unique_ptr<engine>(
      std::make_unique<hs_engine>(db, next_database_id.fetch_add(1, std::memory_order_relaxed)));
}

}  // namespace inlet::filter::detail
