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

/// A page of messages (newest first) with their raw bytes loaded, cut once the raw bytes
/// pass a third of api_config::max_list_bytes (at least one message is kept).
awaitable<std::pair<std::error_code, store::page>> catcher_list(const ctx_t& c,
                                                                store::list_request lr);

}  // namespace inlet::http::detail
