// Serves the web page's files from the table http/web/build.mjs generates.
#include <algorithm>
#include <inlet/util/ascii.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <cctype>

#include "api_internal.hpp"
#include "page_assets.hpp"

namespace inlet::http {
namespace web {
namespace {

namespace bh = boost::beast::http;

const asset* find(std::string_view path) {
  if (path == "/index.html") path = "/";
  for (const auto& a : assets())
    if (a.path == path) return &a;
  return nullptr;
}

using util::iequals;


// Does If-None-Match name this entity tag (or "*")?
bool matches(std::string_view inm, std::string_view etag) {
  if (inm.find('*') != std::string_view::npos) return true;
  return inm.find(etag) != std::string_view::npos;
}

response base(const request& req, bh::status status) {
  response res{status, req.version()};
  res.keep_alive(req.keep_alive());
  res.set("X-Content-Type-Options", "nosniff");
  return res;
}

}  // namespace

std::string_view content_security_policy() noexcept {
  // img-src and font-src allow http(s) only so that a message's remote images can show
  // once the user allows them; the message frame's own policy refuses them until then.
  return "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
         "img-src 'self' data: http: https:; font-src 'self' data: http: https:; "
         "media-src 'self' http: https:; connect-src 'self'; frame-src 'self'; "
         "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";
}

std::optional<response> page_route(const request& req, std::string_view path, bool gzip) {
  const asset* a = find(path);
  if (!a) return std::nullopt;
  // Under a webroot, "/mail" is the page too; its relative URLs need "/mail/".
  const std::string_view target = req.target();
  const auto raw_path = target.substr(0, target.find('?'));
  if (path == "/" && !raw_path.ends_with('/')) {
    auto res = base(req, bh::status::permanent_redirect);
    res.set(bh::field::location,
            std::string(raw_path) + "/" + std::string(target.substr(raw_path.size())));
    res.prepare_payload();
    return res;
  }
  if (req.method() != bh::verb::get) {
    auto res = base(req, bh::status::method_not_allowed);
    res.set(bh::field::content_type, "text/plain; charset=utf-8");
    res.set(bh::field::allow, "GET, HEAD");
    res.body() = "method not allowed";
    res.prepare_payload();
    return res;
  }
  const bool gz = gzip && !a->gzip.empty() && inlet::http::detail::accepts_gzip(req[bh::field::accept_encoding]);
  auto res = base(req, bh::status::ok);
  res.set(bh::field::etag, a->etag);
  res.set(bh::field::vary, "Accept-Encoding");
  res.set(bh::field::cache_control,
          a->immutable ? "public, max-age=31536000, immutable" : "no-cache");
  if (!a->immutable) {
    // The list of everything is what most visits show first: the browser fetches its
    // first page (model.ts's FIRST_PAGE) alongside the script instead of after it.
    if (req.target().find('?') == std::string_view::npos)
      res.set(bh::field::link,
              "<api/v1/messages?start=0&limit=60>; rel=preload; as=fetch; crossorigin");
    res.set("Content-Security-Policy", content_security_policy());
    res.set("Referrer-Policy", "no-referrer");
    res.set("X-Frame-Options", "DENY");
  }
  if (matches(req[bh::field::if_none_match], a->etag)) {
    res.result(bh::status::not_modified);
    return res;
  }
  res.set(bh::field::content_type, a->content_type);
  if (gz) res.set(bh::field::content_encoding, "gzip");
  res.body() = std::string(gz ? a->gzip : a->body);
  res.prepare_payload();
  return res;
}

}  // namespace web

std::string_view web_page() noexcept {
  const auto* a = web::assets().data();
  return a ? a->body : std::string_view{};
}

}  // namespace inlet::http
