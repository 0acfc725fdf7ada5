// The API's blocking work, run on its thread pool (never on an I/O thread): image
// thumbnails (GraphicsMagick), link checks and message release (libcurl), the HTML check.
//
// Thread-safety: every function may run on several threads at once.
#pragma once

#include <sys/socket.h>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/http/api.hpp"

namespace inlet::http::detail {

// ---- thumbnails (thumbnail.cpp) ----

/// A 180x120 JPEG of an image (JPEG, PNG, GIF, WebP, BMP): scaled to cover and cropped
/// to the middle, or, when smaller, centred on white. Anything else (not an image, too
/// large, a decoder error) gives the blank thumbnail. Bounded by `limits` in bytes and
/// pixels before any pixel is decoded. Empty when GraphicsMagick cannot be loaded.
std::string make_thumbnail(std::string_view image, const thumbnail_config& limits);
/// A white 180x120 JPEG (empty when GraphicsMagick cannot be loaded).
std::string blank_thumbnail();

// ---- link check (link_check.cpp) ----

struct link_status {
  std::string url;
  int status_code = 0;  ///< 0: no HTTP answer
  std::string status;   ///< "OK", "Not Found", or what went wrong
};

/// The http(s) links of a message: href and src attributes of its HTML, URLs in its text;
/// distinct, in order, at most `max` of them.
std::vector<std::string> extract_links(std::string_view html, std::string_view text,
                                       std::size_t max);

/// True for an address a link check must not reach unless allowed: loopback, private,
/// link-local, multicast, reserved and documentation ranges, and IPv6 forms that embed
/// such an IPv4 address (mapped, NAT64, 6to4, Teredo, ISATAP).
bool internal_address(const sockaddr* a);

/// Requests each link (HEAD, then GET when the server refuses HEAD), `parallel` at a time,
/// each within the timeout; redirects followed when asked. Never reads a body.
std::vector<link_status> check_links(const std::vector<std::string>& urls, bool follow,
                                     const link_check_config& cfg);

// ---- HTML check (html_check.cpp) ----

/// Mailpit's HTMLCheckResponse for an HTML body, as JSON text; nullopt when this build has
/// no caniemail data (scripts/fetch-caniemail.sh was not run before configuring).
std::optional<std::string> html_check_json(std::string_view html);

}  // namespace inlet::http::detail
