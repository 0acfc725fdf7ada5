// Aho-Corasick engine: a full DFA over byte equivalence classes. See DESIGN.md.
#include <array>
#include <deque>
#include <limits>
#include <vector>

#include "engines.hpp"

namespace inlet::filter::detail {
namespace {

constexpr unsigned char fold(unsigned char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + 32) : c;
}

// Transition entries hold (row offset of the target state << 1) | has_output.
// The row offset is state * class_count, so the scan loop needs no multiply.
constexpr std::size_t max_table_entries = std::size_t{1} << 28;  // 1 GiB of uint32

class ac_engine final : public engine {
 public:
  std::array<std::uint8_t, 256> cls_{};
  std::uint32_t classes_ = 1;
  std::vector<std::uint32_t> delta_;          // states * classes_ encoded entries
  std::vector<std::uint32_t> out_begin_;      // per state: range in out_terms_
  std::vector<std::uint32_t> out_terms_;
  std::vector<std::uint32_t> dict_link_;      // per state: next state with output, or npos
  static constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();

  engine_kind kind() const noexcept override { return engine_kind::aho_corasick; }
  std::size_t memory_bytes() const noexcept override {
    return (delta_.size() + out_begin_.size() + out_terms_.size() + dict_link_.size()) *
           sizeof(std::uint32_t);
  }
  std::unique_ptr<engine_stream> open_stream() const override;

  void report(std::uint32_t state, match_callback cb, void* ctx) const noexcept {
    for (std::uint32_t s = state; s != npos; s = dict_link_[s]) {
      for (std::uint32_t i = out_begin_[s]; i < out_begin_[s + 1]; ++i) cb(ctx, out_terms_[i]);
    }
  }
};

class ac_stream final : public engine_stream {
 public:
  explicit ac_stream(const ac_engine& e) : e_(e) {}
  std::error_code feed(std::string_view piece, match_callback cb, void* ctx) noexcept override {
    const std::uint32_t* delta = e_.delta_.data();
    const std::uint8_t* cls = e_.cls_.data();
    const std::uint32_t nc = e_.classes_;
    std::uint32_t row = row_;  // row offset of the current state
    for (unsigned char c : piece) {
      std::uint32_t v = delta[row + cls[c]];
      row = v >> 1;
      if (v & 1u) e_.report(row / nc, cb, ctx);
    }
    row_ = row;
    return {};
  }
  std::error_code finish(match_callback, void*) noexcept override {
    row_ = 0;
    return {};
  }

 private:
  const ac_engine& e_;
  std::uint32_t row_ = 0;
};

std::unique_ptr<engine_stream> ac_engine::open_stream() const {
  return std::make_unique<ac_stream>(*this);
}

}  // namespace

result<std::unique_ptr<engine>> compile_aho_corasick(const term_list& terms) {
  auto e = std::make_unique<ac_engine>();
  // 1. Byte classes: one per distinct folded byte used by a term, 0 for the rest.
  std::array<bool, 256> used{};
  for (const term& t : terms.terms) {
    if (t.kind == term_kind::regex)
      return term_error{t.line, make_error_code(errc::regex_unsupported), "re:" + t.pattern};
    for (unsigned char c : t.pattern) used[fold(c)] = true;
  }
  std::array<std::uint8_t, 256> folded_class{};
  std::uint32_t nc = 1;
  for (int b = 0; b < 256; ++b)
    if (used[b]) folded_class[b] = static_cast<std::uint8_t>(nc++);
  // At most 230 folded bytes exist (A-Z fold onto a-z), so nc <= 231 fits a uint8.
  for (int b = 0; b < 256; ++b) e->cls_[b] = folded_class[fold(static_cast<unsigned char>(b))];
  e->classes_ = nc;

  // 2. Trie over classes (0 = no child; the root is never a child).
  std::vector<std::uint32_t> go(nc, 0);
  std::vector<std::vector<std::uint32_t>> outs(1);
  for (std::size_t id = 0; id < terms.size(); ++id) {
    std::uint32_t s = 0;
    for (unsigned char c : terms.terms[id].pattern) {
      std::uint32_t k = e->cls_[c];
      if (go[std::size_t{s} * nc + k] == 0) {
        if ((outs.size() + 1) * nc > max_table_entries)
          return term_error{terms.terms[id].line, make_error_code(errc::engine_failure),
                            "Aho-Corasick automaton too large"};
        go[std::size_t{s} * nc + k] = static_cast<std::uint32_t>(outs.size());
        outs.emplace_back();
        go.resize(go.size() + nc, 0);
      }
      s = go[std::size_t{s} * nc + k];
    }
    outs[s].push_back(static_cast<std::uint32_t>(id));
  }
  const std::size_t states = outs.size();

  // 3. BFS: failure links, dictionary links, and complete the DFA in place.
  std::vector<std::uint32_t> fail(states, 0);
  e->dict_link_.assign(states, ac_engine::npos);
  std::deque<std::uint32_t> queue;
  for (std::uint32_t k = 0; k < nc; ++k)
    if (go[k] != 0) queue.push_back(go[k]);
  while (!queue.empty()) {
    std::uint32_t s = queue.front();
    queue.pop_front();
    std::uint32_t f = fail[s];
    e->dict_link_[s] = !outs[f].empty() ? f : e->dict_link_[f];
    for (std::uint32_t k = 0; k < nc; ++k) {
      std::uint32_t& child = go[std::size_t{s} * nc + k];
      std::uint32_t via_fail = go[std::size_t{f} * nc + k];
      if (child != 0) {
        fail[child] = via_fail;
        queue.push_back(child);
      } else {
        child = via_fail;
      }
    }
  }
  // dict_link_ of a state points at a state *with* output; for the root, none.
  e->dict_link_[0] = ac_engine::npos;

  // 4. Flatten outputs; a state "has output" if it or its dictionary chain has one.
  e->out_begin_.resize(states + 1);
  std::vector<bool> has_out(states);
  for (std::size_t s = 0; s < states; ++s) {
    e->out_begin_[s] = static_cast<std::uint32_t>(e->out_terms_.size());
    e->out_terms_.insert(e->out_terms_.end(), outs[s].begin(), outs[s].end());
    has_out[s] = !outs[s].empty() || e->dict_link_[s] != ac_engine::npos;
  }
  e->out_begin_[states] = static_cast<std::uint32_t>(e->out_terms_.size());
  e->delta_.resize(go.size());
  for (std::size_t i = 0; i < go.size(); ++i) {
    std::uint32_t t = go[i];
    e->delta_[i] = ((t * nc) << 1) | (has_out[t] ? 1u : 0u);
  }
  return std::unique_ptr<engine>(std::move(e));
}

}  // namespace inlet::filter::detail
