// The HTML check: which HTML and CSS features a message uses, and how well email clients
// support them, from caniemail.com's data (the npm package `caniemail`, MIT, fetched at
// deps time by scripts/fetch-caniemail.sh and embedded at build time).
//
// Detection reads the HTML once into counts (elements, attributes, the CSS of <style>
// blocks and style attributes) and derives a test from each feature's slug: `html-X` an
// element or attribute, `css-X` a property, `css-display-X` a property value,
// `css-at-X` / `css-pseudo-class-X` / `css-pseudo-element-X` / `css-unit-X` /
// `css-function-X` their syntax, `image-X` an image reference. Features no such test fits
// (CSS selectors, nesting, AMP, BIMI) are not tested and not counted. Support per client
// is caniemail's result for the latest version tested on each platform.
#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "outbound.hpp"

#if INLET_HAVE_CANIEMAIL
namespace inlet::http {
extern const unsigned char caniemail_data[];
extern const std::size_t caniemail_size;
}  // namespace inlet::http
#endif

namespace inlet::http::detail {
namespace json = boost::json;
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t count_of(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return 0;
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string_view::npos;
       at = hay.find(needle, at + needle.size()))
    ++n;
  return n;
}

// What the HTML contains, counted once.
struct document {
  std::map<std::string, std::size_t> elements;    // tag name -> count
  std::map<std::string, std::size_t> attributes;  // attribute name -> count
  std::map<std::string, std::size_t> typed;       // "input:checkbox", "button:submit" -> count
  std::map<std::string, std::size_t> properties;  // CSS property -> count
  std::map<std::string, std::size_t> values;      // "display:flex" -> count
  std::string css;                // every stylesheet and style attribute, lower case
  std::string lowered;            // the document, lower case
  std::vector<std::string> urls;  // src/href/url() values, lower case
  std::size_t nodes = 0;
};

void read_css_declarations(std::string_view css, document& d) {
  // property: value pairs (inside or outside braces; selectors never contain ':' followed
  // by a value and ';' the way declarations do, pseudo-classes are counted separately).
  std::size_t i = 0;
  while (i < css.size()) {
    auto colon = css.find(':', i);
    if (colon == std::string_view::npos) break;
    std::size_t b = colon;
    while (b > i && (std::isalnum(static_cast<unsigned char>(css[b - 1])) || css[b - 1] == '-'))
      --b;
    std::string prop(css.substr(b, colon - b));
    const bool is_decl = !prop.empty() && (b == 0 || css[b - 1] == '{' || css[b - 1] == ';' ||
                                           std::isspace(static_cast<unsigned char>(css[b - 1])) ||
                                           css[b - 1] == '"');
    std::size_t v = colon + 1;
    while (v < css.size() && std::isspace(static_cast<unsigned char>(css[v]))) ++v;
    std::size_t ve = v;
    while (ve < css.size() && css[ve] != ';' && css[ve] != '}' && css[ve] != '"' && css[ve] != '{')
      ++ve;
    if (is_decl && ve < css.size() && css[ve] != '{') {
      ++d.properties[prop];
      std::string value(css.substr(v, ve - v));
      auto sp = value.find_first_of(" \t!");
      ++d.values[prop + ":" + value.substr(0, sp)];
    }
    i = colon + 1;
  }
}

document read_document(std::string_view html) {
  document d;
  d.lowered = lower(html);
  const std::string& h = d.lowered;
  std::size_t i = 0;
  while ((i = h.find('<', i)) != std::string::npos) {
    if (h.compare(i, 4, "<!--") == 0) {
      auto e = h.find("-->", i);
      i = e == std::string::npos ? h.size() : e + 3;
      continue;
    }
    std::size_t n = i + 1;
    while (n < h.size() && (std::isalnum(static_cast<unsigned char>(h[n])) || h[n] == '-')) ++n;
    std::string tag = h.substr(i + 1, n - i - 1);
    auto close = h.find('>', n);
    if (close == std::string::npos) close = h.size();
    if (!tag.empty()) {
      ++d.nodes;
      ++d.elements[tag];
      // attributes: name[=value]
      std::string_view attrs(h.data() + n, close - n);
      std::size_t a = 0;
      while (a < attrs.size()) {
        while (a < attrs.size() && !(std::isalpha(static_cast<unsigned char>(attrs[a])))) ++a;
        std::size_t ae = a;
        while (ae < attrs.size() &&
               (std::isalnum(static_cast<unsigned char>(attrs[ae])) || attrs[ae] == '-'))
          ++ae;
        if (ae == a) break;
        std::string name(attrs.substr(a, ae - a));
        std::string value;
        std::size_t k = ae;
        while (k < attrs.size() && attrs[k] == ' ') ++k;
        if (k < attrs.size() && attrs[k] == '=') {
          ++k;
          while (k < attrs.size() && attrs[k] == ' ') ++k;
          char q = k < attrs.size() && (attrs[k] == '"' || attrs[k] == '\'') ? attrs[k] : 0;
          if (q) ++k;
          std::size_t ve = k;
          while (ve < attrs.size() &&
                 (q ? attrs[ve] != q : !std::isspace(static_cast<unsigned char>(attrs[ve]))))
            ++ve;
          value = std::string(attrs.substr(k, ve - k));
          k = ve + (q ? 1 : 0);
        }
        ++d.attributes[name];
        if (name == "type" && (tag == "input" || tag == "button")) ++d.typed[tag + ":" + value];
        if (name == "style") {
          d.css += value;
          d.css += ";\n";
        }
        if (name == "src" || name == "href" || name == "background" || name == "srcset")
          d.urls.push_back(value);
        a = k > a ? k : ae;
      }
      if (tag == "style") {
        auto end = h.find("</style", close);
        if (end == std::string::npos) end = h.size();
        d.css.append(h, close + 1, end - close - 1);
        d.css += "\n";
      }
    }
    i = close;
  }
  read_css_declarations(d.css, d);
  for (std::size_t u = d.css.find("url("); u != std::string::npos; u = d.css.find("url(", u + 4)) {
    auto e = d.css.find(')', u);
    std::string v = d.css.substr(u + 4, e == std::string::npos ? std::string::npos : e - u - 4);
    v.erase(std::remove_if(v.begin(), v.end(),
                           [](char c) { return c == '"' || c == '\'' || c == ' '; }),
            v.end());
    d.urls.push_back(v);
  }
  return d;
}

std::size_t count_unit(std::string_view css, std::string_view unit) {
  std::size_t n = 0;
  for (auto at = css.find(unit); at != std::string_view::npos; at = css.find(unit, at + 1)) {
    const bool digit_before =
        at > 0 && (std::isdigit(static_cast<unsigned char>(css[at - 1])) || css[at - 1] == '.');
    const std::size_t e = at + unit.size();
    const bool word_after =
        e < css.size() && (std::isalpha(static_cast<unsigned char>(css[e])) || css[e] == '-');
    if (digit_before && !word_after) ++n;
  }
  return n;
}

std::size_t count_pseudo(std::string_view css, std::string_view name, bool element) {
  std::size_t n = 0;
  for (auto at = css.find(name); at != std::string_view::npos; at = css.find(name, at + 1)) {
    if (at == 0 || css[at - 1] != ':') continue;
    const bool doubled = at >= 2 && css[at - 2] == ':';
    const std::size_t e = at + name.size();
    if (e < css.size() && (std::isalnum(static_cast<unsigned char>(css[e])) || css[e] == '-'))
      continue;
    if (element ? true : !doubled) ++n;
  }
  return n;
}

// How often the document uses a feature; nullopt: no test fits this feature.
std::optional<std::size_t> detect(std::string_view slug, const document& d) {
  auto el = [&](std::string_view t) {
    auto it = d.elements.find(std::string(t));
    return it == d.elements.end() ? std::size_t{0} : it->second;
  };
  auto attr = [&](std::string_view t) {
    auto it = d.attributes.find(std::string(t));
    return it == d.attributes.end() ? std::size_t{0} : it->second;
  };
  auto prop = [&](std::string_view t) {
    auto it = d.properties.find(std::string(t));
    return it == d.properties.end() ? std::size_t{0} : it->second;
  };
  auto sum = [&](std::initializer_list<std::size_t> v) {
    std::size_t s = 0;
    for (auto x : v) s += x;
    return s;
  };
  if (slug.starts_with("html-")) {
    std::string_view x = slug.substr(5);
    if (x == "h1-h6") return sum({el("h1"), el("h2"), el("h3"), el("h4"), el("h5"), el("h6")});
    if (x == "lists") return sum({el("ul"), el("ol"), el("dl")});
    if (x == "semantics")
      return sum({el("article"), el("aside"), el("details"), el("figcaption"), el("figure"),
                  el("footer"), el("header"), el("main"), el("mark"), el("nav"), el("section"),
                  el("summary"), el("time")});
    if (x == "anchor-links")
      return count_of(d.lowered, "href=\"#") + count_of(d.lowered, "href='#");
    if (x == "mailto-links")
      return count_of(d.lowered, "href=\"mailto:") + count_of(d.lowered, "href='mailto:");
    if (x == "image-maps") return el("map");
    if (x == "comments") return count_of(d.lowered, "<!--");
    if (x == "doctype") return count_of(d.lowered, "<!doctype");
    if (x == "meta-color-scheme")
      return count_of(d.lowered, "color-scheme\"") + count_of(d.lowered, "color-scheme'");
    if (x == "loading-attribute") return attr("loading");
    if (x.starts_with("input-")) {
      auto it = d.typed.find("input:" + std::string(x.substr(6)));
      return it == d.typed.end() ? 0 : it->second;
    }
    if (x.starts_with("button-")) {
      auto b = d.typed.find("button:" + std::string(x.substr(7)));
      auto i = d.typed.find("input:" + std::string(x.substr(7)));
      return (b == d.typed.end() ? 0 : b->second) + (i == d.typed.end() ? 0 : i->second);
    }
    static const std::set<std::string_view> attribute_features = {
        "align",   "background", "cellpadding", "cellspacing", "dir",    "height", "hidden", "lang",
        "popover", "required",   "role",        "srcset",      "target", "valign", "width"};
    if (attribute_features.contains(x) || x.starts_with("aria-")) return attr(x);
    return el(x);
  }
  if (slug.starts_with("image-")) {
    std::string_view x = slug.substr(6);
    if (x == "base64") return count_of(d.lowered, "data:image/");
    if (x == "heif" || x == "hdr") return std::nullopt;
    std::size_t n = 0;
    for (const auto& u : d.urls) {
      std::string path = u.substr(0, u.find_first_of("?#"));
      auto ends = [&](std::string_view ext) {
        return path.size() > ext.size() && path.ends_with(ext);
      };
      const std::string e1 = "." + std::string(x);
      if (ends(e1) || (x == "jpg" && ends(".jpeg")) || (x == "tiff" && ends(".tif")) ||
          u.starts_with("data:image/" + std::string(x == "jpg" ? "jpeg" : x)))
        ++n;
    }
    return n;
  }
  if (!slug.starts_with("css-")) return std::nullopt;
  std::string_view x = slug.substr(4);
  const std::string_view css = d.css;
  if (x.starts_with("selector-") || x == "nesting" || x == "modern-color") return std::nullopt;
  if (x.starts_with("at-media-"))
    return css.find("@media") == std::string_view::npos ? 0 : count_of(css, x.substr(9));
  if (x.starts_with("at-")) return count_of(css, "@" + std::string(x.substr(3)));
  if (x.starts_with("pseudo-class-")) return count_pseudo(css, x.substr(13), false);
  if (x.starts_with("pseudo-element-")) return count_pseudo(css, x.substr(15), true);
  if (x.starts_with("function-")) return count_of(css, std::string(x.substr(9)) + "(");
  if (x.starts_with("display-")) {
    auto it = d.values.find("display:" + std::string(x.substr(8)));
    return it == d.values.end() ? 0 : it->second;
  }
  if (x.starts_with("unit-")) {
    std::string_view u = x.substr(5);
    if (u == "calc") return count_of(css, "calc(");
    if (u == "percent") return count_unit(css, "%");
    if (u == "initial") return count_of(css, ":initial") + count_of(css, ": initial");
    return count_unit(css, u);
  }
  if (x.ends_with("-gradient") || x == "rgb" || x == "rgba")
    return count_of(css, std::string(x) + "(");
  if (x == "important") return count_of(css, "!important");
  if (x == "variables") return count_of(css, "var(--");
  if (x == "comments") return count_of(css, "/*");
  if (x == "sytem-ui") return count_of(css, "system-ui");
  if (x == "inert-attribute") return attr("inert");
  if (x == "left-right-top-bottom")
    return sum({prop("left"), prop("right"), prop("top"), prop("bottom")});
  if (x == "intrinsic-size")
    return count_of(css, "min-content") + count_of(css, "max-content") +
           count_of(css, "fit-content");
  if (x == "column-layout-properties")
    return sum({prop("column-count"), prop("column-gap"), prop("column-rule"), prop("column-span"),
                prop("column-width"), prop("columns")});
  if (x == "block-inline-size") return sum({prop("block-size"), prop("inline-size")});
  return prop(x);
}

// ---- the data ----

struct result {
  std::string family, platform, version, support, note;  // support: yes, no, partial, unknown
};

struct feature {
  std::string slug, title, description, url, category, keywords;
  std::vector<std::string> tags;
  std::map<std::string, std::string> notes;
  std::vector<result> results;  // the latest version of each family/platform
};

struct database {
  std::vector<feature> features;
  std::map<std::string, std::string> family_names, platform_names;
};

std::string as_string(const json::value* v) {
  return v && v->is_string() ? std::string(v->get_string()) : "";
}

const database* load_database() {
#if INLET_HAVE_CANIEMAIL
  static const database db = [] {
    database out;
    std::error_code ec;
    json::value v = json::parse(
        std::string_view(reinterpret_cast<const char*>(caniemail_data), caniemail_size), ec);
    if (ec || !v.is_object()) return out;
    const auto& o = v.get_object();
    if (auto* n = o.if_contains("nicenames"); n && n->is_object()) {
      if (auto* f = n->get_object().if_contains("family"); f && f->is_object())
        for (const auto& kv : f->get_object()) out.family_names[kv.key()] = as_string(&kv.value());
      if (auto* p = n->get_object().if_contains("platform"); p && p->is_object())
        for (const auto& kv : p->get_object())
          out.platform_names[kv.key()] = as_string(&kv.value());
    }
    const auto* data = o.if_contains("data");
    if (!data || !data->is_array()) return out;
    for (const auto& fv : data->get_array()) {
      if (!fv.is_object()) continue;
      const auto& f = fv.get_object();
      feature ft;
      ft.slug = as_string(f.if_contains("slug"));
      ft.title = as_string(f.if_contains("title"));
      ft.description = as_string(f.if_contains("description"));
      ft.url = as_string(f.if_contains("url"));
      ft.category = as_string(f.if_contains("category"));
      ft.keywords = as_string(f.if_contains("keywords"));
      if (auto* t = f.if_contains("tags"); t && t->is_array())
        for (const auto& tv : t->get_array()) ft.tags.push_back(as_string(&tv));
      if (auto* n = f.if_contains("notes_by_num"); n && n->is_object())
        for (const auto& kv : n->get_object()) ft.notes[kv.key()] = as_string(&kv.value());
      if (auto* st = f.if_contains("stats"); st && st->is_object()) {
        for (const auto& fam : st->get_object()) {
          if (!fam.value().is_object()) continue;
          for (const auto& plat : fam.value().get_object()) {
            if (!plat.value().is_object() || plat.value().get_object().empty()) continue;
            const auto& versions = plat.value().get_object();
            const auto& latest = *(versions.end() - 1);  // versions are listed oldest first
            std::string r = as_string(&latest.value());
            result res;
            res.family = std::string(fam.key());
            res.platform = std::string(plat.key());
            res.version = std::string(latest.key());
            const char s = r.empty() ? 'u' : r[0];
            res.support = s == 'y' ? "yes" : s == 'n' ? "no" : s == 'a' ? "partial" : "unknown";
            if (auto hash = r.find('#'); hash != std::string::npos) res.note = r.substr(hash + 1);
            ft.results.push_back(std::move(res));
          }
        }
      }
      out.features.push_back(std::move(ft));
    }
    return out;
  }();
  return db.features.empty() ? nullptr : &db;
#else
  return nullptr;
#endif
}

std::string nice(const std::map<std::string, std::string>& names, const std::string& key) {
  auto it = names.find(key);
  return it == names.end() ? key : it->second;
}

double percent(std::size_t part, std::size_t whole) {
  if (whole == 0) return 0;
  return static_cast<double>(static_cast<long>(10000.0 * part / whole + 0.5)) / 100.0;
}

}  // namespace

std::optional<std::string> html_check_json(std::string_view html) {
  const database* db = load_database();
  if (!db) return std::nullopt;
  const document doc = read_document(html);
  json::array warnings;
  std::size_t tests = 0;
  // Per client (family/platform): the worst support among the features found.
  std::map<std::string, int> client_state;  // 0 yes, 1 partial, 2 no
  json::object platforms;
  std::map<std::string, std::set<std::string>> platform_clients;
  for (const auto& f : db->features) {
    auto found = detect(f.slug, doc);
    if (!found) continue;
    ++tests;
    for (const auto& r : f.results)
      platform_clients[r.platform].insert(nice(db->family_names, r.family));
    if (*found == 0) continue;
    std::size_t yes = 0, partial = 0, no = 0;
    json::array results;
    for (const auto& r : f.results) {
      if (r.support == "yes")
        ++yes;
      else if (r.support == "partial")
        ++partial;
      else if (r.support == "no")
        ++no;
      if (r.support != "unknown") {
        const std::string client = r.family + "/" + r.platform;
        const int s = r.support == "yes" ? 0 : r.support == "partial" ? 1 : 2;
        auto [it, fresh] = client_state.emplace(client, s);
        if (!fresh) it->second = std::max(it->second, s);
      }
      const std::string family = nice(db->family_names, r.family);
      const std::string platform = nice(db->platform_names, r.platform);
      results.push_back(json::object{{"Name", family + " " + platform + " " + r.version},
                                     {"Family", family},
                                     {"Platform", r.platform},
                                     {"Version", r.version},
                                     {"Support", r.support},
                                     {"NoteNumber", r.note}});
    }
    const std::size_t known = yes + partial + no;
    json::object notes;
    for (const auto& [k, v] : f.notes) notes.emplace(k, v);
    json::array tags;
    for (const auto& t : f.tags) tags.push_back(json::string(t));
    warnings.push_back(json::object{
        {"Slug", f.slug},
        {"Title", f.title},
        {"Description", f.description},
        {"URL", f.url},
        {"Category", f.category},
        {"Tags", std::move(tags)},
        {"Keywords", f.keywords},
        {"NotesByNumber", std::move(notes)},
        {"Results", std::move(results)},
        {"Score", json::object{{"Found", *found},
                               {"Supported", percent(yes, known)},
                               {"Partial", percent(partial, known)},
                               {"Unsupported", percent(no, known)}}},
    });
  }
  std::size_t c_yes = 0, c_partial = 0, c_no = 0;
  for (const auto& [client, s] : client_state) (s == 0 ? c_yes : s == 1 ? c_partial : c_no)++;
  for (const auto& [platform, clients] : platform_clients) {
    json::array names;
    for (const auto& c : clients) names.push_back(json::string(c));
    platforms.emplace(platform, std::move(names));
  }
  const std::size_t clients = client_state.size();
  json::object out{
      {"Platforms", std::move(platforms)},
      {"Total", json::object{{"Nodes", doc.nodes},
                             {"Tests", tests},
                             {"Supported", clients ? percent(c_yes, clients) : 100.0},
                             {"Partial", percent(c_partial, clients)},
                             {"Unsupported", percent(c_no, clients)}}},
      {"Warnings", std::move(warnings)},
  };
  return json::serialize(out);
}

}  // namespace inlet::http::detail
