// MailHog's API (v1 and v2) and MailDev's REST API, served beside Mailpit's from the
// same stored messages. Each answers the paths it owns and leaves the rest (nullopt) to
// Mailpit's router. The read side (headers, bodies, parts) comes from the mail library's
// message_view through the few helpers below, so every view reads one model.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api_internal.hpp"

namespace inlet::http::detail {

/// MailHog's paths: /api/v2/..., /api/v1/messages/{id}... and, with
/// api_config::mailhog_v1, /api/v1/messages itself (else Mailpit's).
awaitable<std::optional<reply>> mailhog_route(const ctx_t& c, const request& req,
                                              const target& t);

/// MailHog's /api/v2/jim: Jim's settings over inlet's chaos (jim_state).
response mailhog_jim(const ctx_t& c, const request& req);

/// MailDev's paths: /api/email..., /api/config, /api/healthz and the 2.x paths without
/// the /api prefix (/email..., /config, /healthz).
awaitable<std::optional<reply>> maildev_route(const ctx_t& c, const request& req,
                                              const target& t);

/// A message as MailHog's data.Message JSON (its event streams carry it); needs the raw
/// bytes.
std::string mailhog_message_text(const store::stored_message& msg);

// ---- the read model, as the catchers use it ----
/// A message's top-level header fields, names in canonical case, values unfolded.
std::vector<std::pair<std::string, std::vector<std::string>>> catcher_headers(
    std::string_view raw);
/// The text and HTML bodies (UTF-8).
std::pair<std::string, std::string> catcher_bodies(std::string_view raw);
/// Attachments and inline parts.
std::vector<part_entry> catcher_parts(std::string_view raw);
/// The decoded bytes of the part with this Mailpit part ID.
std::optional<std::pair<part_entry, std::string>> catcher_part(std::string_view raw,
                                                               std::string_view part_id);

/// The two views kept in the render cache (its key's tag byte).
inline constexpr char mailhog_view = 'h', maildev_view = 'd';

/// A listed message with its rendering when the cache had it (else null: the message
/// then has its raw bytes, to render from).
struct catcher_item {
  store::message_ptr msg;
  render_cache::entry_ptr rendered;
};

/// A page of messages (newest first), each either rendered already (cache) or with its
/// raw bytes loaded, cut once the raw bytes pass a third of api_config::max_list_bytes
/// (at least one message is kept).
awaitable<std::pair<std::error_code, store::page>> catcher_list(
    const ctx_t& c, store::list_request lr, char view, std::vector<catcher_item>& items);

/// `messages` (cut as catcher_list cuts), each rendered already or with its raw bytes.
awaitable<std::error_code> catcher_load(const ctx_t& c,
                                        const std::vector<store::message_ptr>& messages,
                                        char view, std::vector<catcher_item>& items);

/// The message's rendering in `view`: `cached` when given, else made by `render` (from
/// the raw bytes) and kept.
template <class Render>
render_cache::entry_ptr catcher_rendered(const ctx_t& c, char view, const store::stored_message& m,
                                         render_cache::entry_ptr cached, Render&& render) {
  if (cached) return cached;
  if (auto e = c.rendered->find(view, m.id.str())) return e;
  auto e = std::make_shared<const render_cache::entry>(render(m));
  c.rendered->put(view, m.id.str(), e);
  return e;
}

/// Appends an entry's text to `out`, `splice` at its splice point.
inline void append_rendered(std::string& out, const render_cache::entry& e,
                            std::string_view splice) {
  if (e.splice_at == std::string::npos) {
    out += e.text;
    return;
  }
  out.append(e.text, 0, e.splice_at);
  out += splice;
  out.append(e.text, e.splice_at, std::string::npos);
}

/// A list answer from the rendered entries: `head`, the entries separated by commas
/// (each with its splice text), then `tail`. A large one is written piece by piece (about
/// `window` bytes at a time) and never copied whole into one buffer; its size is known up
/// front (Content-Length).
class rendered_source final : public body_source {
 public:
  struct item {
    render_cache::entry_ptr entry;
    std::string_view splice;  // a literal ("true", "false") or empty
  };
  rendered_source(std::string head, std::vector<item> items, std::string tail)
      : head_(std::move(head)), items_(std::move(items)), tail_(std::move(tail)) {
    size_ = head_.size() + tail_.size() + (items_.empty() ? 0 : items_.size() - 1);
    for (const auto& it : items_)
      size_ += it.entry->text.size() + (it.entry->splice_at == std::string::npos ? 0 : it.splice.size());
  }
  bool next(std::string& out, std::size_t window) override {
    if (done_) return false;
    const std::size_t start = out.size();
    out += head_;
    std::string().swap(head_);
    while (i_ < items_.size() && out.size() - start < window) {
      if (i_ > 0) out += ',';
      append_rendered(out, *items_[i_].entry, items_[i_].splice);
      items_[i_].entry.reset();
      ++i_;
    }
    if (i_ == items_.size()) {
      out += tail_;
      done_ = true;
    }
    return true;
  }
  std::optional<std::uint64_t> size() const override { return size_; }

  /// The answer: whole in `res`, streamed only past 64 MiB. A catcher's list is bounded
  /// by max_list_bytes already, and the server's streamed writes measured several times
  /// slower than one copy for answers of 1-3 MB (MailHog's and MailDev's lists).
  static reply answer(response res, std::shared_ptr<rendered_source> src) {
    if (src->size_ > (64u << 20)) return reply(std::move(res), std::move(src));
    std::string body;
    body.reserve(src->size_);
    src->next(body, src->size_ + 1);
    res.body() = std::move(body);
    res.prepare_payload();
    return reply(std::move(res));
  }

 private:
  std::string head_;
  std::vector<item> items_;
  std::string tail_;
  std::size_t i_ = 0;
  std::uint64_t size_ = 0;
  bool done_ = false;
};

}  // namespace inlet::http::detail
