// The web page's files, embedded at build time (http/web/build.mjs generates the table
// from the front-end sources) and served by `page_route`.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "inlet/http/api.hpp"

namespace inlet::http::web {

/// One file of the page. `gzip` is empty when compressing did not make it smaller.
/// Immutable files are named by their content hash and may be cached forever.
struct asset {
  std::string_view path;  ///< URL path under the webroot: "/" or "/assets/app-HASH.js"
  std::string_view content_type;
  std::string_view body;
  std::string_view gzip;
  std::string_view etag;  ///< quoted, from the content
  bool immutable;
};

/// Every file of the page (generated). Static storage; never invalidated.
std::span<const asset> assets() noexcept;

/// The Content-Security-Policy of the page (scripts and styles from its own files only;
/// styles also inline, for message HTML in the srcdoc frame; see http/DESIGN.md).
std::string_view content_security_policy() noexcept;

/// Answers a request for one of the page's paths ("/", "/index.html", "/assets/...");
/// nullopt for any other path. Answers GET (HEAD is GET to the router), 405 otherwise,
/// 304 when If-None-Match names the current file, gzip when the client accepts it.
/// `gzip` false: never compressed (Mailpit's --disable-http-compression).
std::optional<response> page_route(const request& req, std::string_view path, bool gzip = true);

}  // namespace inlet::http::web
