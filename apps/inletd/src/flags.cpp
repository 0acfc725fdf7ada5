// The flag table (flag_table.hpp): every flag of inletd, once.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <inlet/mail/streaming_parse.hpp>
#include <limits>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <unistd.h>

#include "flag_table.hpp"

namespace inletd::flags {

namespace {

[[noreturn]] void bad(const std::string& why) { throw std::invalid_argument(why); }

template <class T>
std::string number_text(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  } else {
    return std::to_string(v);
  }
}

template <class T>
T parse_number(const std::string& v, T lo, T hi) {
  T n{};
  if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    n = static_cast<T>(std::strtod(v.c_str(), &end));
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(n))
      bad("expected a number, got '" + v + "'");
  } else {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || p != v.data() + v.size() || v.empty())
      bad("expected a whole number, got '" + v + "'");
  }
  if (n < lo || n > hi) {
    std::string range = std::to_string(lo) + " to " + std::to_string(hi);
    if constexpr (std::is_floating_point_v<T>) range = "at least " + number_text(lo);
    bad("must be " + range + ", got '" + v + "'");
  }
  return n;
}

bool truthy(const std::string& v) { return v == "true" || v == "1" || v == "yes" || v == "on"; }

// ---- binders: `get` maps a config to the field the flag sets ----

template <class Get>
binding text(Get get, std::string unit = "TEXT") {
  return {std::move(unit), false, false, false,
          [get](config& c, const std::string& v) { get(c) = v; },
          [get](config& c) { return std::string(get(c)); }};
}

template <class Get>
binding file(Get get) {
  binding b = text(get, "FILE");
  b.existing_file = true;
  return b;
}

// A PEM file, or Mailpit's `sans:NAME,...` (a certificate generated at start).
template <class Get>
binding cert_file(Get get) {
  return {"FILE|sans:NAMES", false, false, false,
          [get](config& c, const std::string& v) {
            if (v.rfind("sans:", 0) != 0 && ::access(v.c_str(), R_OK) != 0)
              bad("file does not exist or cannot be read: " + v);
            get(c) = v;
          },
          [](config&) { return std::string(); }};
}

template <class Get>
binding list(Get get, std::string unit) {
  return {std::move(unit), false, true, false,
          [get](config& c, const std::string& v) { get(c).push_back(v); },
          [](config&) { return std::string(); }};
}

template <class T, class Get>
binding number(Get get, T lo, T hi, std::string unit = "N") {
  return {std::move(unit), false, false, false,
          [get, lo, hi](config& c, const std::string& v) { get(c) = parse_number<T>(v, lo, hi); },
          [get](config& c) { return number_text(get(c)); }};
}

template <class Get>
binding seconds(Get get, unsigned lo = 0) {  // a std::chrono duration set in whole seconds
  return {"SECONDS", false, false, false,
          [get, lo](config& c, const std::string& v) {
            get(c) = std::chrono::seconds(parse_number<unsigned>(v, lo, 86400u * 365));
          },
          [get](config& c) {
            return std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(get(c)).count());
          }};
}

template <class Get>
binding on(Get get, bool value = true) {  // a switch
  return {"", true, false, false,
          [get, value](config& c, const std::string& v) {
            if (truthy(v)) get(c) = value;
          },
          [](config&) { return std::string("off"); }};
}

binding endpoint(std::function<void(config&, const host_port&)> put,
                 std::function<std::string(config&)> show) {
  return {"HOST:PORT", false, false, false,
          [put](config& c, const std::string& v) {
            host_port hp;
            if (!parse_host_port(v, hp)) bad("expected HOST:PORT, got '" + v + "'");
            put(c, hp);
          },
          std::move(show)};
}

binding duration(std::function<void(config&, std::chrono::seconds)> put) {
  return {"DURATION", false, false, false,
          [put](config& c, const std::string& v) {
            std::uint64_t s = 0;
            if (!parse_duration(v, s) || s == 0)
              bad("expected a duration such as 90m, 24h or 7d, got '" + v + "'");
            put(c, std::chrono::seconds(s));
          },
          [](config&) { return std::string(); }};
}

template <class E>
binding choice(std::function<void(config&, E)> put, std::vector<std::pair<std::string, E>> names,
               std::string shown) {
  std::string unit;
  for (const auto& [n, e] : names) unit += (unit.empty() ? "" : "|") + n;
  return {unit, false, false, false,
          [put, names](config& c, const std::string& v) {
            for (const auto& [n, e] : names)
              if (n == v) return put(c, e);
            std::string all;
            for (const auto& [n, e] : names) all += (all.empty() ? "" : ", ") + n;
            bad("expected one of " + all + ", got '" + v + "'");
          },
          [shown](config&) { return shown; }};
}

// A Mailpit switch whose effect is inletd's behaviour already: accepted, nothing to set.
binding already() {
  return {"", true, false, false, [](config&, const std::string&) {},
          [](config&) { return std::string("off"); }};
}

flag f(std::string group, std::string names, std::string env, std::string help, binding b,
       std::string doc = {}, std::string default_text = {}) {
  flag x;
  x.group = std::move(group);
  x.names = std::move(names);
  x.env = std::move(env);
  x.help = std::move(help);
  x.doc = std::move(doc);
  x.bind = std::move(b);
  x.default_text = std::move(default_text);
  x.from = x.env.empty() ? origin::inlet : origin::mailpit;
  return x;
}

flag deprecated(std::string names, std::string env, std::string instead, binding b) {
  flag x = f("Mailpit's deprecated spellings", std::move(names), std::move(env),
             "Mailpit (deprecated): " + instead, std::move(b));
  x.from = origin::deprecated;
  x.instead = std::move(instead);
  x.doc = "Deprecated spelling of `" + x.instead + "`; named at start.";
  return x;
}

// Groups, in documentation order.
const std::string listeners = "Listeners";
const std::string store = "Store";
const std::string file_store = "File store";
const std::string pg = "PostgreSQL store";
const std::string limits = "SMTP limits and policy";
const std::string admission = "SMTP connections";
const std::string smtp_auth = "SMTP AUTH";
const std::string io = "I/O model";
const std::string filter = "Filter";
const std::string tags = "Tags";
const std::string logging = "Logging and shutdown";
const std::string http = "HTTP API and web page";
const std::string relay = "Message release (SMTP relay)";
const std::string outbound = "Webhooks";
const std::string pop3 = "POP3";

std::string mib_text(std::uint64_t bytes) { return std::to_string(bytes >> 20); }

std::vector<flag> make_table() {
  std::vector<flag> t;
  auto add = [&t](flag x) { t.push_back(std::move(x)); };

  // ---- Listeners ----
  add(f(listeners, "-s,--smtp", "MP_SMTP_BIND_ADDR", "SMTP listener",
        endpoint(
            [](config& c, const host_port& hp) {
              c.smtp.listen.front().address = hp.host;
              c.smtp.listen.front().port = hp.port;
            },
            [](config& c) {
              return c.smtp.listen.front().address + ":" +
                     std::to_string(c.smtp.listen.front().port);
            }),
        "SMTP listener. Port 0 picks a free port (printed at start). Mailpit's `:1025` (no "
        "host) means every interface."));
  add(f(listeners, "-l,--listen", "MP_UI_BIND_ADDR",
        "HTTP listener: API, web page, /metrics",
        endpoint(
            [](config& c, const host_port& hp) {
              c.http.address = hp.host;
              c.http.port = hp.port;
            },
            [](config& c) { return c.http.address + ":" + std::to_string(c.http.port); }),
        "HTTP listener: the API, the web page, `/metrics`."));
  add(f(listeners, "--lmtp", "", "LMTP listener (RFC 2033); off unless given",
        endpoint(
            [](config& c, const host_port& hp) {
              c.smtp.listen.push_back({hp.host, hp.port, true});
            },
            [](config&) { return std::string(); }),
        "LMTP listener (RFC 2033): one reply per recipient after the data.", "off"));
  add(f(listeners, "--hostname", "", "name in the greeting and EHLO reply",
        text([](config& c) -> std::string& { return c.smtp.session.hostname; }, "NAME"),
        "The name in the 220 greeting and the EHLO reply."));

  // ---- Store ----
  add(f(store, "--store", "",
        "memory (default), sink (accept and discard after parsing), or a postgresql:// URI "
        "(the first shard; `postgresql`: shards from --shard/--shards-file)",
        {"KIND", false, false, false,
         [](config& c, const std::string& v) {
           if (v == "memory") {
             c.store.kind = store_kind::memory;
           } else if (v == "sink") {
             c.store.kind = store_kind::sink;
           } else if (v == "postgresql") {
             c.store.kind = store_kind::postgresql;
           } else if (v.starts_with("postgresql://") || v.starts_with("postgres://")) {
             c.store.kind = store_kind::postgresql;
             c.store.first_shard = v;
           } else {
             bad("expected memory, sink, postgresql or a postgresql:// URI, got '" + v + "'");
           }
           c.store.name = c.store.kind == store_kind::postgresql ? "postgresql" : v;
         },
         [](config&) { return std::string("memory"); }},
        "`memory`: bounded in-memory store, oldest evicted first. `sink`: parse and filter "
        "every message, answer 250, keep nothing (for benchmarks against bare sinks). A "
        "`postgresql://` URI: the PostgreSQL store, durable and sharded, this URI being shard "
        "0 (docs/store-pg.md); `postgresql`: the same with every shard from "
        "`--shard`/`--shards-file`. `inletd-uring` refuses the PostgreSQL store (use "
        "`inletd`)."));
  add(f(store, "--max-messages", "", "memory and file stores: messages kept (oldest evicted)",
        number<std::size_t>([](config& c) -> std::size_t& { return c.store.memory.max_messages; },
                            1, std::numeric_limits<std::size_t>::max()),
        "Memory and file stores: messages kept (the oldest go first)."));
  add(f(store, "-m,--max", "MP_MAX_MESSAGES",
        "Mailpit: messages kept, 0 = no count bound (same as --max-messages)",
        {"N", false, false, false,
         [](config& c, const std::string& v) {
           auto n = parse_number<std::size_t>(v, 0, std::numeric_limits<std::size_t>::max());
           c.store.memory.max_messages = n == 0 ? std::numeric_limits<std::size_t>::max() : n;
         },
         [](config&) { return std::string(); }},
        "Mailpit's spelling of `--max-messages`; `0`: no count bound (the memory store's byte "
        "bound stays).",
        "10000"));
  add(f(store, "--max-store-bytes", "", "memory store: raw bytes kept (oldest evicted)",
        number<std::size_t>([](config& c) -> std::size_t& { return c.store.memory.max_bytes; }, 1,
                            std::numeric_limits<std::size_t>::max()),
        "Memory store: bytes kept: the raw messages and what is kept beside them (summary, "
        "search text, tags, a per-message overhead)."));
  add(f(store, "--max-age", "MP_MAX_AGE",
        "Mailpit: delete messages older than this (memory store: a sweep; PostgreSQL store: "
        "--retention when that is not given)",
        duration([](config& c, std::chrono::seconds s) { c.store.max_age = s; }),
        "Messages older than this (by received time) are deleted (`12h`, `7d`; also `90m`, "
        "`3600s`). Memory store: a sweep every DURATION/10 (1 s to 1 min), so a message lives "
        "at most that much longer; the file store likewise. PostgreSQL store: the same as "
        "`--retention DURATION` when `--retention` is not given.",
        "keep"));

  // ---- File store ----
  add(f(file_store, "-d,--database", "MP_DATABASE",
        "Mailpit: keep mail in this SQLite file (the file store; created when missing)",
        text([](config& c) -> std::string& { return c.store.file.path; }, "FILE"),
        "The file store: every message, tag and read flag in this SQLite file, kept across "
        "restarts; each message is acknowledged after its commit reached the disk. A file "
        "Mailpit wrote is imported once on start. A file that is not SQLite, truncated, "
        "damaged or another application's stops inletd (exit 2) and is left as it is "
        "(docs/store-file.md).",
        "off (memory store)"));
  add(f(file_store, "--compression", "MP_COMPRESSION",
        "Mailpit: file store: compress raw messages, 0 (none) to 3 (zstd, best)",
        number<int>([](config& c) -> int& { return c.store.file.compression; }, 0, 3),
        "File store: raw messages stored as they are (`0`) or compressed with zstd, as "
        "Mailpit's levels: `1` fastest, `2` default, `3` best."));
  add(f(file_store, "--disable-wal", "MP_DISABLE_WAL",
        "Mailpit: file store: a rollback journal instead of WAL (network filesystems)",
        on([](config& c) -> bool& { return c.store.file.wal; }, false),
        "File store: a rollback journal instead of SQLite's WAL, for a file on a network "
        "filesystem (NFS) where WAL's shared memory does not work; readers then wait for "
        "the writer."));
  add(f(file_store, "--tenant-id", "MP_TENANT_ID",
        "Mailpit: file store: keep this tenant's mail apart in a shared file",
        text([](config& c) -> std::string& { return c.store.file.tenant_id; }, "ID"),
        "File store: this tenant's tables (named with Mailpit's prefix for the ID) in a file "
        "several instances share.",
        "none"));
  add(f(file_store, "--disable-auto-vacuum", "MP_DISABLE_AUTO_VACUUM",
        "Mailpit: file store: keep freed pages in the file",
        on([](config& c) -> bool& { return c.store.file.auto_vacuum; }, false),
        "File store: keep the pages deleted messages free in the file instead of giving them "
        "back (incremental vacuum). Takes effect on a file created with it."));

  // ---- PostgreSQL store ----
  add(f(pg, "--shard", "", "PostgreSQL store: another shard's URI, in shard order (repeatable)",
        list([](config& c) -> std::vector<std::string>& { return c.store.shards; }, "URI"),
        "The next shard (repeatable); shards are numbered in the order given, and every "
        "instance must give the same list in the same order. A URI may name several hosts "
        "(`postgresql://h1,h2/db?target_session_attrs=read-write`)."));
  add(f(pg, "--shards-file", "", "PostgreSQL store: file with one shard URI per line, in order",
        file([](config& c) -> std::string& { return c.store.shards_file; }),
        "One shard URI per line, after `--store`'s and `--shard`'s (blank lines and `#` "
        "comments skipped)."));
  add(f(pg, "--retention", "",
        "PostgreSQL store: drop messages older than this (whole time partitions); default: keep",
        duration([](config& c, std::chrono::seconds s) { c.store.pg.retention = s; }),
        "Messages older than this are dropped, a whole time partition at a time (`90m`, `24h`, "
        "`7d`; a message lives between DURATION and DURATION + one partition, 1/8 of it). Give "
        "every instance the same value.",
        "keep"));
  add(f(pg, "--mailbox-cap", "", "PostgreSQL store: messages kept per mailbox (newest); 0 = no cap",
        number<std::size_t>([](config& c) -> std::size_t& { return c.store.pg.mailbox_cap; }, 0,
                            std::numeric_limits<std::size_t>::max()),
        "At most N messages per mailbox, the newest (older ones leave in the transaction that "
        "stores a new one); `0`: no cap."));
  add(f(pg, "--expect-shards", "",
        "PostgreSQL store: the number of shards meant; a shard list of another length is "
        "refused at start",
        number<unsigned>([](config& c) -> unsigned& { return c.store.pg.expect_shards; }, 1, 4096),
        "The number of shards meant; a shard list of another length is refused at start. "
        "Without it inletd still refuses to start when shard 0 records more shards than it was "
        "given.",
        "not checked"));
  add(f(pg, "--buckets", "", "PostgreSQL store: buckets of a new cluster (fixed once created)",
        number<std::uint32_t>([](config& c) -> std::uint32_t& { return c.store.pg.buckets; }, 1,
                              3844),
        "Buckets a new cluster is made with (mailboxes hash to buckets, buckets map to shards); "
        "fixed once the cluster exists."));
  add(f(pg, "--pg-writers", "",
        "PostgreSQL store: writer connections (transactions in flight) per shard",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.store.pg.writer_connections; }, 1, 64),
        "Writer connections per shard: group-commit transactions in flight per shard (up to "
        "--pg-writer-pipeline times as many while the shard is a network round trip away)."));
  add(f(pg, "--pg-writer-pipeline", "",
        "PostgreSQL store: transactions in flight per writer connection at most",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.store.pg.writer_pipeline; }, 1, 64),
        "Transactions a writer connection may have in flight (pipelined, each committed on "
        "its own); more than one only while the shard is a network round trip away (1: one at "
        "a time)."));
  add(f(pg, "--pg-max-batch", "", "PostgreSQL store: messages per transaction at most",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.store.pg.max_batch_messages; }, 1, 256)));
  add(f(pg, "--pg-batch-wait", "",
        "PostgreSQL store: microseconds a batch may wait for more messages while a connection "
        "is free",
        {"USEC", false, false, false,
         [](config& c, const std::string& v) {
           c.store.pg.max_batch_wait = std::chrono::microseconds(parse_number(v, 0u, 100000u));
         },
         [](config& c) { return std::to_string(c.store.pg.max_batch_wait.count()); }},
        "With a writer connection free, wait up to this long for more messages before sending "
        "a batch (0: send at once; batches still form while other transactions commit)."));

  // ---- SMTP limits and policy ----
  add(f(limits, "--max-message-size", "MP_MAX_MESSAGE_SIZE",
        "largest message accepted, in MB as Mailpit counts them (MiB); 0 = no limit",
        {"MB", false, false, false,
         [](config& c, const std::string& v) {
           auto mib = parse_number<std::uint64_t>(v, 0, std::uint64_t{1} << 24);
           c.smtp.session.max_message_size = mib << 20;
         },
         [](config& c) { return mib_text(c.smtp.session.max_message_size); }},
        "Mailpit's unit: MiB; 0 = no limit (announced as `SIZE 0`, RFC 1870). Announced with "
        "SIZE; a larger declared SIZE gets 552 5.3.4 at MAIL, a larger body 552 5.3.4 at the "
        "end of data. The send API takes JSON up to this size and a third (base64), at least "
        "1 MiB."));
  add(f(limits, "--max-message-bytes", "",
        "largest message accepted, in bytes (the same limit as --max-message-size, exactly); "
        "0 = no limit",
        number<std::uint64_t>(
            [](config& c) -> std::uint64_t& { return c.smtp.session.max_message_size; }, 0,
            std::numeric_limits<std::uint64_t>::max(), "BYTES"),
        "The same limit in bytes (the last of the two given wins); 0 = no limit."));
  add(f(limits, "--max-recipients,--smtp-max-recipients", "MP_SMTP_MAX_RECIPIENTS",
        "recipients per transaction (452 4.5.3 past it)",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.smtp.session.max_recipients; }, 1,
            std::numeric_limits<std::size_t>::max()),
        "Recipients per transaction; past it 452 4.5.3."));
  add(f(limits, "--max-command-line", "", "longest command line, octets incl. CRLF",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.smtp.session.max_command_line; }, 512, 65536),
        "Longest command line in octets including CRLF (RFC 5321 4.5.3.1.4); longer gets 500 "
        "5.5.6."));
  add(f(limits, "--max-line-length", "",
        "longest text line of a message, octets incl. CRLF (RFC 5321 4.5.3.1.6); 0 = no limit",
        number<std::size_t>([](config& c) -> std::size_t& { return c.smtp.session.max_text_line; },
                            0, std::size_t{1} << 30),
        "Longest text line of a message body in octets including CRLF (RFC 5321 4.5.3.1.6). A "
        "message with a longer line is read to its end and refused with 500 5.5.6, nothing "
        "stored. `0` = no limit. See docs/smtp.md, \"Text line limit\"."));
  add(f(limits, "--domain", "", "accept mail for this domain (repeatable; none = every domain)",
        list([](config& c) -> std::vector<std::string>& { return c.smtp.session.domains; },
             "NAME"),
        "Accept mail for this domain (repeatable). Others get 550 5.1.1. `postmaster` is "
        "always accepted.",
        "every domain"));
  add(f(limits, "--timeout", "", "SMTP command timeout, seconds (RFC 5321 4.5.3.2)",
        {"SECONDS", false, false, false,
         [](config& c, const std::string& v) {
           auto s = std::chrono::seconds(parse_number(v, 1u, 86400u));
           c.smtp.command_timeout = s;
           c.smtp.greeting_timeout = s;
         },
         [](config& c) {
           return std::to_string(
               std::chrono::duration_cast<std::chrono::seconds>(c.smtp.command_timeout).count());
         }},
        "Greeting and command timeout (RFC 5321 4.5.3.2), 421 4.4.2 when it fires. The body "
        "keeps the RFC's defaults: 3 minutes per read (and `--min-data-rate`), 10 minutes for "
        "the whole body. A command trickled in byte by byte does not extend its deadline."));
  add(f(limits, "--tls-cert,--smtp-tls-cert", "MP_SMTP_TLS_CERT",
        "PEM certificate chain (or sans:NAME,... for a generated one): offers STARTTLS",
        cert_file([](config& c) -> std::string& { return c.smtp.tls_cert; }),
        "PEM certificate chain: offers STARTTLS (RFC 3207); needs `--tls-key`. `sans:NAME,...` "
        "(Mailpit's): a self-signed certificate for those names (DNS names or IP addresses), "
        "made at start and removed at exit; give the same `sans:` value to `--tls-key`.",
        "off"));
  add(f(limits, "--tls-key,--smtp-tls-key", "MP_SMTP_TLS_KEY", "PEM private key for --tls-cert",
        cert_file([](config& c) -> std::string& { return c.smtp.tls_key; }), "", "off"));
  add(f(limits, "--smtp-require-tls", "MP_SMTP_REQUIRE_TLS",
        "Mailpit: TLS from the first byte on the SMTP port (SMTPS, RFC 8314)",
        on([](config& c) -> bool& { return c.smtp.listen.front().implicit_tls; }),
        "The SMTP listener speaks TLS from the first byte (SMTPS, RFC 8314: the client's "
        "handshake, then the greeting); needs `--tls-cert`; not with "
        "`--smtp-require-starttls` or `--smtp-auth-allow-insecure`, as in Mailpit."));
  add(f(limits, "--smtp-require-starttls", "MP_SMTP_REQUIRE_STARTTLS",
        "Mailpit: MAIL, RCPT, DATA, RSET, AUTH get 530 before STARTTLS (needs --tls-cert)",
        on([](config& c) -> bool& { return c.smtp.session.require_starttls; }),
        "Before STARTTLS, `MAIL`, `RCPT`, `DATA`, `RSET` and `AUTH` get `530 5.7.0 Must issue "
        "a STARTTLS command first` (Mailpit's reply); needs `--tls-cert`."));
  add(f(limits, "--smtp-allowed-recipients", "MP_SMTP_ALLOWED_RECIPIENTS",
        "Mailpit: only recipients matching this regular expression (550 5.1.0 otherwise)",
        {"REGEX", false, false, false,
         [](config& c, const std::string& v) {
           c.smtp_allowed_recipients = v;
           if (v.empty()) return c.smtp.session.recipient_allowed = nullptr, void();
           std::shared_ptr<const std::regex> re;
           try {
             // Mailpit matches anywhere in the address (Go's MatchString), case-sensitive.
             re = std::make_shared<const std::regex>(v, std::regex::ECMAScript);
           } catch (const std::regex_error& e) {
             bad("bad regular expression: " + std::string(e.what()));
           }
           // A const std::regex is safe to match from many connection threads at once.
           c.smtp.session.recipient_allowed = [re](std::string_view address) {
             return std::regex_search(address.begin(), address.end(), *re);
           };
         },
         [](config&) { return std::string(); }},
        "Only recipients matching this regular expression (anywhere in the address, "
        "case-sensitive) are accepted; others get `550 5.1.0 Invalid recipient`.",
        "every recipient"));
  add(f(limits, "--smtp-strict-rfc-headers", "MP_SMTP_STRICT_RFC_HEADERS",
        "Mailpit: a header block with CR CR LF is refused (451 4.3.5); else it becomes CR LF",
        on([](config& c) -> bool& { return c.ingest.strict_rfc_headers; }),
        "A message whose header block has a bare CR before a line end (CR CR LF, written by some "
        "mailers) is refused with `451 4.3.5 Unable to process mail`, Mailpit's reply. Without "
        "it, every CR CR LF of such a message is stored as CR LF, as Mailpit stores it."));
  add(f(limits, "--smtp-disable-rdns", "MP_SMTP_DISABLE_RDNS",
        "Mailpit: no reverse DNS lookup of SMTP clients (inletd never makes one)", already(),
        "Accepted: inletd never looks up a client's name (no DNS on the receive path)."));
  add(f(limits, "--smtp-ignore-rejected-recipients", "MP_SMTP_IGNORE_REJECTED_RECIPIENTS",
        "Mailpit: recipients refused by --smtp-allowed-recipients get 250 and are dropped",
        on([](config& c) -> bool& { return c.smtp.session.ignore_rejected_recipients; }),
        "Recipients refused by `--smtp-allowed-recipients` get 250 and are dropped; a message "
        "left with none is answered 250 and discarded."));

  // ---- SMTP connections ----
  add(f(admission, "--max-connections", "", "SMTP connections in total (421 4.7.0 past it)",
        number<std::size_t>([](config& c) -> std::size_t& { return c.smtp.max_connections; }, 1,
                            std::numeric_limits<std::size_t>::max()),
        "SMTP connections in total. When every slot is taken, a new client within its shares "
        "(below) takes the slot of the slowest connection waiting for its client, which gets "
        "421 4.7.0 and is closed; with nothing to close (or `--no-evict`), the new client gets "
        "421 4.7.0. The Asio models register one socket state per slot once they listen (in "
        "chunks of 256 on their own threads, so start-up does not wait for it)."));
  add(f(admission, "--max-connections-per-ip", "", "SMTP connections per client IP",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.smtp.max_connections_per_ip; }, 1,
            std::numeric_limits<std::size_t>::max()),
        "SMTP connections per client address; past it 421 4.7.0."));
  add(f(admission, "--max-connections-per-subnet", "",
        "SMTP connections per client subnet (see --subnet-prefix-v4/-v6); 0 = no limit",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.smtp.max_connections_per_subnet; }, 0,
            std::numeric_limits<std::size_t>::max()),
        "SMTP connections per client subnet (the address masked to `--subnet-prefix-v4` / "
        "`-v6` bits); past it 421 4.7.0. `0` = no limit."));
  add(f(admission, "--subnet-prefix-v4", "", "bits of an IPv4 address that make its subnet",
        number<unsigned>([](config& c) -> unsigned& { return c.smtp.subnet_prefix_v4; }, 0, 32,
                         "BITS")));
  add(f(admission, "--subnet-prefix-v6", "", "bits of an IPv6 address that make its subnet",
        number<unsigned>([](config& c) -> unsigned& { return c.smtp.subnet_prefix_v6; }, 0, 128,
                         "BITS"),
        "Bits of an IPv6 address that make its subnet. An IPv4-mapped IPv6 address counts as "
        "IPv4."));
  add(f(admission, "--pressure-at", "",
        "SMTP slot pressure from this percent of --max-connections (0 = never): shorter "
        "timeouts, per-IP and per-subnet shares",
        number<unsigned>([](config& c) -> unsigned& { return c.smtp.pressure_percent; }, 0, 100,
                         "PERCENT"),
        "Slot pressure begins when this share of `--max-connections` is open and ends below "
        "four fifths of it (`0` = never). Under pressure a client whose address already has "
        "`--pressure-per-ip` connections, or whose subnet has `--pressure-per-subnet`, gets "
        "421 4.7.0, and every timeout is cut to `--pressure-timeout`, for connections already "
        "waiting too (Postfix's stress mode). See docs/smtp.md, \"Slot pressure\"."));
  add(f(admission, "--pressure-per-ip", "", "under slot pressure: connections per client IP",
        number<std::size_t>([](config& c) -> std::size_t& { return c.smtp.pressure_per_ip; }, 1,
                            std::numeric_limits<std::size_t>::max())));
  add(f(admission, "--pressure-per-subnet", "",
        "under slot pressure: connections per client subnet",
        number<std::size_t>([](config& c) -> std::size_t& { return c.smtp.pressure_per_subnet; },
                            1, std::numeric_limits<std::size_t>::max())));
  add(f(admission, "--pressure-timeout", "",
        "under slot pressure: greeting, command, data and write timeout, seconds",
        seconds([](config& c) -> std::chrono::milliseconds& { return c.smtp.pressure_timeout; },
                1)));
  add(f(admission, "--min-data-rate", "",
        "octets/s a message body must keep up (a slower body times out); 0 = off",
        number<std::size_t>([](config& c) -> std::size_t& { return c.smtp.min_data_rate; }, 0,
                            std::numeric_limits<std::size_t>::max(), "BYTES"),
        "Octets per second a message body must keep up: each read moves the body's deadline on "
        "by its size at this rate, never past 3 minutes ahead, so a body trickled more slowly "
        "times out (421 4.4.2) after about 3 minutes (10 s under pressure). `0` = any read "
        "restarts the 3 minutes."));
  add(f(admission, "--no-evict", "",
        "when every SMTP slot is taken, refuse new clients instead of closing the slowest "
        "connection",
        on([](config& c) -> bool& { return c.smtp.evict_when_full; }, false)));
  add(f(admission, "--no-release-memory", "",
        "keep freed memory after a wave of connections instead of returning it (malloc_trim)",
        on([](config& c) -> bool& { return c.smtp.release_memory; }, false),
        "Keep freed memory after a wave of connections ends; by default the buffer pool's "
        "spare fragments are freed and `malloc_trim` returns free heap pages once the open "
        "count falls to half its peak."));

  // ---- SMTP AUTH ----
  add(f(smtp_auth, "--smtp-auth-file", "MP_SMTP_AUTH_FILE",
        "Mailpit: SMTP AUTH password file (AUTH then required)",
        file([](config& c) -> std::string& { return c.smtp_auth.file; }),
        "Password file (the format of `--ui-auth-file`); AUTH is then required: `MAIL` before "
        "it gets `530 5.7.0`. `MP_SMTP_AUTH` (`user:password` pairs separated by spaces) "
        "gives the same inline."));
  add(f(smtp_auth, "--smtp-auth-accept-any", "MP_SMTP_AUTH_ACCEPT_ANY",
        "Mailpit: accept any SMTP AUTH credentials",
        on([](config& c) -> bool& { return c.smtp_auth.accept_any; }),
        "AUTH is offered and any user name and password sign in; not required."));
  add(f(smtp_auth, "--smtp-auth-allow-insecure", "MP_SMTP_AUTH_ALLOW_INSECURE",
        "Mailpit: allow SMTP AUTH without TLS",
        on([](config& c) -> bool& { return c.smtp.session.auth_allow_insecure; }),
        "Offer AUTH on plain text too; otherwise it is offered only after STARTTLS (`538 "
        "5.7.11` before), and without a certificate inletd refuses to start, as Mailpit does."));
  add(f(smtp_auth, "--tags-username", "MP_TAGS_USERNAME",
        "Mailpit: tag each message with its SMTP AUTH user name",
        on([](config& c) -> bool& { return c.ingest.tag_auth_user; })));

  // ---- I/O model ----
  add(f(io, "--io-model", "",
        "coro (default), async-1n, async-nn, async-n2n, thread, stackful, process",
        {"M", false, false, false,
         [](config& c, const std::string& v) {
           if (!inlet::smtp::parse_io_model(v, c.smtp.model))
             bad("expected coro, async-1n, async-nn, async-n2n, thread, stackful or process, "
                 "got '" + v + "'");
         },
         [](config& c) { return std::string(inlet::smtp::to_string(c.smtp.model)); }},
        "`coro` (Asio completion handlers, one io_context, a thread per core), `async-1n`, "
        "`async-nn`, `async-n2n`, `thread`, `stackful` (asio::spawn), `process` (a process per "
        "connection; needs `--store sink`, else inletd exits 2). POP3 (`--pop3`) runs on the "
        "same model, every one but `process`. See docs/smtp.md."));
  add(f(io, "--threads", "", "I/O threads (0 = one per core)",
        number<unsigned>([](config& c) -> unsigned& { return c.smtp.threads; }, 0, 4096), "",
        "cores"));
  add(f(io, "--reads-per-event", "", "async models: reads per wake-up",
        number<unsigned>([](config& c) -> unsigned& { return c.smtp.reads_per_event; }, 1, 1024),
        "Async and stackful models: after handling the commands of one read, read again up to "
        "N times before going back to the event loop."));
  add(f(io, "--accepts-per-event", "",
        "coro, async and stackful models: connections accepted per listener wake-up",
        number<unsigned>([](config& c) -> unsigned& { return c.smtp.accepts_per_event; }, 1, 1024),
        "coro, async-* and stackful: after one accept, take up to N-1 more waiting connections "
        "from the listen queue with non-blocking accepts before going back to the event loop "
        "(connection bursts); limits apply to each."));
  add(f(io, "--receive-buffer", "",
        "async models: segment (zero-copy, default) or flat (std::string + copy out, for "
        "comparisons)",
        choice<bool>([](config& c, bool flat) { c.smtp.flat_receive_buffer = flat; },
                     {{"segment", false}, {"flat", true}}, "segment"),
        "coro and async-* models: `segment` reads into the zero-copy segmented buffer and "
        "hands each message on without copying; `flat` reads into a per-connection "
        "`std::string` and copies each message body out (a copying baseline, to compare the "
        "two in one run). `thread`, `process` and `stackful` always use `segment`."));
  add(f(io, "--parse", "",
        "after (default: parse each message once it is complete) or streaming (parse while "
        "receiving: every io model)",
        choice<bool>(
            [](config& c, bool streaming) {
              c.smtp.body_observer =
                  streaming ? inlet::smtp::body_observer_factory(inlet::mail::parse_observer::make)
                            : nullptr;
            },
            {{"after", false}, {"streaming", true}}, "after"),
        "When the MIME parser runs. `after`: once the message is complete, over the whole body. "
        "`streaming`: while the body arrives: each message being received gets an incremental "
        "parser, fed every body piece as the SMTP driver reads it (after dot-unstuffing) and "
        "finished at the end of the data, so the delivery hook finds it parsed. Every io model "
        "supports it, with either `--receive-buffer`. The filter scan runs at the end of the "
        "data in both modes. Stored summaries, tags and the API's answers are the same in both "
        "modes. Measured: docs/benchmarks/inletd.md, section 2."));
  add(f(io, "--heavy-message-bytes", "",
        "messages of at least this many bytes are parsed and stored on a worker pool (0: every "
        "message on its I/O thread)",
        number<std::size_t>([](config& c) -> std::size_t& { return c.ingest.heavy_bytes; }, 0,
                            std::numeric_limits<std::size_t>::max()),
        "Messages of at least N bytes are parsed, scanned and stored on a small worker pool "
        "(one thread per core but one), not on the SMTP I/O thread that received them: a 1 MB "
        "header of 80,000 addresses costs milliseconds, and on the I/O thread it would hold up "
        "every other connection of that thread. The client's reply to DATA waits for the "
        "worker. `0`: every message on its I/O thread. `--io-model process` keeps every "
        "message in its connection's process. Measured: docs/benchmarks/hostile.md, "
        "\"address-list\"."));

  // ---- Filter ----
  add(f(filter, "--filter-terms", "", "term list file; SIGHUP or a change reloads it",
        file([](config& c) -> std::string& { return c.filter.terms; }),
        "Term list (docs/filter.md): one term per line, `re:` for a regular expression, an "
        "optional TAB and weight, `#` comments. SIGHUP or a change of the file reloads it; a "
        "bad file keeps the list in force.",
        "off"));
  add(f(filter, "--filter-action", "", "tag (default) or reject",
        choice<filter_action>([](config& c, filter_action a) { c.filter.action = a; },
                              {{"tag", filter_action::tag}, {"reject", filter_action::reject}},
                              "tag"),
        "`tag`: store the message with the tag `spam` (the API shows it). `reject`: 550 5.7.1 "
        "at the end of data, nothing stored."));
  add(f(filter, "--filter-threshold", "", "score at which the action applies",
        number<double>([](config& c) -> double& { return c.filter.threshold; }, 0.0,
                       std::numeric_limits<double>::max(), "X"),
        "Score (sum of matched terms' weights) at which the action applies."));

  // ---- Tags ----
  add(f(tags, "-t,--tag", "MP_TAG",
        "Mailpit: tag rules 'tag=query tag2=query2' (a search query -> a tag)",
        list([](config& c) -> std::vector<std::string>& { return c.tag_rules; }, "'TAG=QUERY ...'"),
        "Tag filters (repeatable): a received message matching the search QUERY gets TAG "
        "(several: `\"A, B\"=QUERY`). Free words in QUERY match anywhere in the raw message, "
        "headers included.",
        "none"));
  add(f(tags, "--tags-config", "MP_TAGS_CONFIG", "Mailpit: YAML file of tag filters (match / tags)",
        file([](config& c) -> std::string& { return c.tag_rules_file; }),
        "The same filters as YAML: `filters:` then `- match: QUERY` / `  tags: A, B` pairs.",
        "none"));
  add(f(tags, "--tags-title-case", "MP_TAGS_TITLE_CASE",
        "Mailpit: Title Case new tags from X-Tags and plus addresses",
        on([](config& c) -> bool& { return c.ingest.tags.title_case; })));
  add(f(tags, "--tags-disable", "MP_TAGS_DISABLE",
        "Mailpit: x-tags and/or plus-addresses (comma-separated)",
        {"LIST", false, false, false,
         [](config& c, const std::string& v) {
           c.ingest.tags.x_tags = v.find("x-tags") == std::string::npos;
           c.ingest.tags.plus_addresses = v.find("plus-addresses") == std::string::npos;
         },
         [](config&) { return std::string(); }},
        "`x-tags` and/or `plus-addresses`: turn those automatic tags off.", "none"));
  add(f(store, "--ignore-duplicate-ids", "MP_IGNORE_DUPLICATE_IDS",
        "Mailpit: a message whose Message-ID the store holds is answered 250 and dropped",
        on([](config& c) -> bool& { return c.ingest.ignore_duplicate_ids; }),
        "An SMTP message whose Message-ID the store already holds is answered `250 2.0.0 Ok: "
        "queued` and not stored (counted as `SMTPIgnored` / `mailpit_smtp_ignored_total`), as "
        "Mailpit does; costs one search of the store per message. Not atomic: two copies "
        "arriving at the same instant may both be stored."));
  add(f(tags, "--use-message-dates", "MP_USE_MESSAGE_DATES",
        "Mailpit: a message's Date header as its received time (when it has one)",
        on([](config& c) -> bool& { return c.ingest.use_message_dates; }),
        "A message's Date header is its received time (`Created`); listings stay in arrival "
        "order."));

  // ---- Logging and shutdown ----
  add(f(logging, "-q,--quiet", "MP_QUIET", "log only errors",
        on([](config& c) -> bool& { return c.log.quiet; })));
  add(f(logging, "-v,--verbose", "MP_VERBOSE", "Mailpit: log a line for every message stored",
        on([](config& c) -> bool& { return c.log.verbose; }),
        "A line on stdout for every message stored (ID, sender, recipients, size)."));
  add(f(logging, "--log-file", "MP_LOG_FILE",
        "Mailpit: append the log (stdout and stderr) to this file instead",
        text([](config& c) -> std::string& { return c.log.file; }, "FILE"),
        "stdout and stderr are appended to FILE (created if missing); a file that cannot be "
        "opened stops inletd (exit 2)."));
  add(f(logging, "--shutdown-grace", "",
        "on SIGTERM/SIGINT: seconds a transaction in flight may take; then 421 4.3.2 and close",
        seconds([](config& c) -> std::chrono::milliseconds& { return c.smtp.shutdown_grace; }),
        "On SIGTERM/SIGINT: how long a transaction in flight may take before its connection "
        "gets 421 4.3.2 and is closed (see Signals)."));

  // ---- HTTP API and web page ----
  add(f(http, "--label", "MP_LABEL",
        "Mailpit: a name for this instance (web UI, /api/v1/webui, SMTP greeting)",
        {"TEXT", false, false, false,
         [](config& c, const std::string& v) {
           c.http.api.label = v;
           c.webhook.label = v;
           // Shown in the greeting too: one line of printable text.
           c.smtp.session.label.clear();
           for (char ch : v)
             if (static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f)
               c.smtp.session.label.push_back(ch);
           c.pop3.server.session.label = c.smtp.session.label;
         },
         [](config&) { return std::string(); }},
        "A name for this instance: `/api/v1/webui`'s Label, the page's title, the SMTP greeting "
        "(`220 host ESMTP inlet (label)`), webhooks' `Mailpit-Label`.",
        "none"));
  add(f(http, "--webroot", "MP_WEBROOT",
        "Mailpit: serve the page and the API under this path, e.g. mail",
        text([](config& c) -> std::string& { return c.http.api.webroot; }, "PATH"),
        "Serve the page, the API and the views under `/PATH/` (e.g. `mail`)."));
  add(f(http, "--ui-auth-file", "MP_UI_AUTH_FILE",
        "Mailpit: password file (htpasswd) for the page and the API",
        file([](config& c) -> std::string& { return c.ui_auth.file; }),
        "Basic authentication for everything but `/livez` and `/readyz` (the event stream "
        "included), from an htpasswd-style file: `user:password` lines, the password plain or "
        "hashed as bcrypt, SHA-256/512 crypt, MD5 crypt, APR1, `{SHA}` or `{SSHA}`. "
        "`MP_UI_AUTH` (`user:password` pairs separated by spaces) gives the same inline.",
        "off"));
  add(f(http, "--send-api-auth-file", "MP_SEND_API_AUTH_FILE",
        "Mailpit: password file for POST /api/v1/send (instead of --ui-auth-file's)",
        file([](config& c) -> std::string& { return c.send_auth.file; }),
        "`POST /api/v1/send` takes these credentials (the format of `--ui-auth-file`), and "
        "only these; the rest of the API keeps `--ui-auth-file`'s. `MP_SEND_API_AUTH` "
        "(`user:password` pairs separated by spaces) gives the same inline.",
        "off"));
  add(f(http, "--send-api-auth-accept-any", "MP_SEND_API_AUTH_ACCEPT_ANY",
        "Mailpit: POST /api/v1/send needs no credentials, even with --ui-auth-file",
        on([](config& c) -> bool& { return c.http.api.send_auth_accept_any; }),
        "`POST /api/v1/send` takes any credentials, or none, even when `--ui-auth-file` guards "
        "the rest; not with `--send-api-auth-file` (exit code 2), as in Mailpit."));
  add(f(http, "--ui-tls-cert", "MP_UI_TLS_CERT",
        "Mailpit: HTTPS for the page and the API: PEM certificate chain (or sans:NAME,...)",
        cert_file([](config& c) -> std::string& { return c.http.tls_cert; }),
        "The page, the API, the event stream and `/metrics` over HTTPS (TLS 1.2 and later) "
        "with this certificate chain; needs `--ui-tls-key`. `sans:NAME,...` (Mailpit's): a "
        "self-signed certificate for those names, made at start.",
        "off"));
  add(f(http, "--ui-tls-key", "MP_UI_TLS_KEY", "Mailpit: the private key for --ui-tls-cert",
        cert_file([](config& c) -> std::string& { return c.http.tls_key; }), "", "off"));
  add(f(http, "--api-cors", "MP_API_CORS", "Mailpit: Access-Control-Allow-Origin for the API (CORS)",
        text([](config& c) -> std::string& { return c.http.api.cors_origin; }, "ORIGIN"),
        "`Access-Control-Allow-Origin` on API answers (a comma-separated list: the request's "
        "origin when it is in the list), and `OPTIONS` preflights answered.",
        "off"));
  add(f(http, "--allowed-hosts", "MP_ALLOWED_HOSTS",
        "Mailpit: Host header values the HTTP server answers to, comma-separated",
        {"LIST", false, false, false,
         [](config& c, const std::string& v) {
           c.http.api.only_allowed_hosts = true;
           std::string_view rest = v;
           while (!rest.empty()) {
             auto comma = rest.find(',');
             std::string h(rest.substr(0, comma));
             h.erase(0, h.find_first_not_of(" \t"));
             h.erase(h.find_last_not_of(" \t") + 1);
             if (!h.empty()) c.http.api.allowed_hosts.push_back(h);
             if (comma == std::string_view::npos) break;
             rest.remove_prefix(comma + 1);
           }
         },
         [](config&) { return std::string(); }},
        "Only these `Host` header values are answered (DNS rebinding), comma-separated; the "
        "same list as `--allowed-host`. Without it, any Host is answered, as Mailpit 1.33 "
        "does.",
        "any"));
  add(f(http, "--allowed-host", "",
        "HTTP: a Host name the API answers to besides loopback names, IP literals and the "
        "--listen address (repeatable)",
        list([](config& c) -> std::vector<std::string>& { return c.http.api.allowed_hosts; },
             "NAME"),
        "A `Host` name the page and the API answer to (repeatable; `.example.com`: any name "
        "under it; `*`: any), besides loopback names (`localhost`, `*.localhost`), IP literals "
        "and the `--listen` host. With `--allowed-hosts` or `--public`, any other `Host` gets "
        "403, so a web page whose DNS name was rebound to this server cannot read or delete "
        "mail.",
        "none"));
  add(f(http, "--public", "",
        "HTTP: disposable-inbox mode: only mailbox-scoped reads, API requests rate-limited",
        on([](config& c) -> bool& { return c.http.api.public_mode; }),
        "Disposable-inbox mode: only mailbox-scoped reads are open (`/api/v1/mailbox/{address}`, "
        "a message and its parts by ID, `/view`, the page, `/livez`, `/readyz`); global listing "
        "and search, deletes, read flags, tags, send, release, `latest`, the event stream, "
        "`/metrics` and `/api/v1/info` get 403. API requests are rate-limited (10 per second "
        "per client unless `--api-rate-limit` says otherwise). See docs/api.md, \"Public "
        "mode\"."));
  add(f(http, "--api-rate-limit", "",
        "HTTP: API requests per second per client IP (429 past it); default 0, 10 with --public",
        number<double>([](config& c) -> double& { return c.api_rate_limit; }, 0.0,
                       std::numeric_limits<double>::max()),
        "API requests (`/api/...`, `/view/...`, `/metrics`) per second per client IP address "
        "(IPv6: per /64); past it 429 with `Retry-After`. The page's own files are not counted.",
        "`0` (off); `10` with `--public`"));
  add(f(http, "--api-rate-burst", "",
        "HTTP: requests a client may make at once before --api-rate-limit applies",
        number<double>([](config& c) -> double& { return c.http.api.rate_burst; }, 0.0,
                       std::numeric_limits<double>::max()),
        "Requests a client may make at once before the rate applies.",
        "twice the rate, at least 10"));
  add(f(http, "--http-max-connections", "",
        "HTTP: connections at once; past it the longest-waiting idle one is closed, or 503",
        number<std::size_t>([](config& c) -> std::size_t& { return c.http.max_connections; }, 1,
                            std::numeric_limits<std::size_t>::max()),
        "HTTP connections at once. At the cap a new connection closes the one that has waited "
        "longest for its client (idle keep-alive, slow headers, an event stream) and is served; "
        "when every connection is being answered it gets 503 with a JSON body. Past half the "
        "cap the header and idle timeouts shrink with the free slots left (to 5 %, never under "
        "1 s)."));
  add(f(http, "--http-max-event-streams", "",
        "HTTP: event streams (SSE, websocket) open at once in all; past it 503",
        number<std::size_t>([](config& c) -> std::size_t& { return c.http.max_event_streams; }, 1,
                            std::numeric_limits<std::size_t>::max()),
        "Event streams (`/api/events`: Server-Sent Events and websockets) open at once in all; "
        "past it a new stream gets 503 with `Retry-After: 5`."));
  add(f(http, "--http-max-event-streams-per-client", "",
        "HTTP: event streams open at once per client IP address (IPv6: per /64); past it 429",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.http.max_event_streams_per_client; }, 1,
            std::numeric_limits<std::size_t>::max())));
  add(f(http, "--block-remote-css-and-fonts", "MP_BLOCK_REMOTE_CSS_AND_FONTS",
        "Mailpit: /view/{ID}.html loads no remote stylesheets or fonts",
        on([](config& c) -> bool& { return c.http.api.block_remote_css_and_fonts; })));
  add(f(http, "--allow-untrusted-tls", "MP_ALLOW_UNTRUSTED_TLS",
        "Mailpit: the link check does not verify certificates",
        on([](config& c) -> bool& { return c.http.api.link_check.allow_untrusted_tls; })));
  add(f(http, "--allow-internal-http-requests", "MP_ALLOW_INTERNAL_HTTP_REQUESTS",
        "Mailpit: the link check may reach loopback, private and reserved addresses",
        on([](config& c) -> bool& { return c.http.api.link_check.allow_internal; })));
  add(f(http, "--disable-link-check-rate-limit", "MP_DISABLE_LINK_CHECK_RATE_LIMIT",
        "Mailpit: no rate limit on the link check (inletd's has none but --api-rate-limit)",
        already(),
        "Accepted: inletd's link check has no limit of its own; `--api-rate-limit` applies to "
        "it as to every API request, and each check is bounded (100 links, 8 at once, 5 s "
        "each)."));
  add(f(http, "--disable-version-check", "MP_DISABLE_VERSION_CHECK",
        "Mailpit: no check for a newer release (inletd never makes one)", already(),
        "Accepted: inletd never contacts anything to look for a newer release."));
  add(f(http, "--enable-prometheus", "MP_ENABLE_PROMETHEUS",
        "Mailpit: true (Mailpit's metric names on /metrics), false, or HOST:PORT (a listener "
        "of its own)",
        {"true|false|HOST:PORT", false, false, false,
         [](config& c, const std::string& v) {
           std::string mode = v;
           for (auto& ch : mode) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
           c.prometheus_listen.reset();
           c.http.api.mailpit_metrics = false;
           if (mode == "false" || mode.empty()) return;
           c.http.api.mailpit_metrics = true;
           if (mode == "true") return;
           host_port hp;
           if (!parse_host_port(v, hp)) bad("expected true, false or HOST:PORT, got '" + v + "'");
           c.prometheus_listen = hp;
         },
         [](config&) { return std::string("false"); }},
        "`/metrics` (Prometheus text, always served with inlet's own `inlet_*` metrics) also "
        "carries Mailpit's metric names (`mailpit_messages`, `mailpit_messages_unread`, "
        "`mailpit_smtp_accepted_total`, `mailpit_tag_messages`, ...), so its dashboards "
        "keep working. `HOST:PORT`: besides, a listener of its own that answers `GET /metrics` "
        "without authentication and nothing else, as Mailpit's separate Prometheus server."));
  add(f(http, "--hide-delete-all-button", "MP_HIDE_DELETE_ALL_BUTTON",
        "Mailpit: the page offers no \"Delete all\" (/api/v1/webui says so)",
        on([](config& c) -> bool& { return c.http.api.hide_delete_all_button; })));
  add(f(http, "--disable-http-compression", "MP_DISABLE_HTTP_COMPRESSION",
        "Mailpit: no gzip in HTTP answers",
        on([](config& c) -> bool& { return c.http.api.disable_http_compression; }),
        "No answer is gzip'd. By default, as Mailpit's, the page's assets and every JSON or "
        "text answer of 1 KiB or more go gzip'd to a client whose `Accept-Encoding` takes it "
        "(zlib's fastest level; raw messages and parts go as stored)."));
  add(f(http, "--enable-spamassassin", "MP_ENABLE_SPAMASSASSIN",
        "Mailpit: spamd's address (HOST:PORT or unix:/path) for /api/v1/message/{ID}/sa-check",
        {"HOST:PORT", false, false, false,
         [](config& c, const std::string& v) {
           if (v == "postmark")
             bad("postmark: inletd does not send messages to Postmark's "
                 "public API; give a spamd address (HOST:PORT or unix:/path)");
           if (v.starts_with("unix:")) {
             if (v.size() == 5) bad("unix: needs a socket path");
           } else if (!v.empty()) {
             host_port hp;
             if (!parse_host_port(v, hp)) bad("expected HOST:PORT or unix:/path, got '" + v + "'");
           }
           c.http.api.spam_check.spamassassin = v;
         },
         {}},
        "The spamd (SpamAssassin's daemon) that `GET /api/v1/message/{ID}/sa-check` asks: a "
        "SPAMC/1.5 `REPORT` over TCP (`HOST:PORT`) or a Unix socket (`unix:/path`), on the API's "
        "worker threads, within 8 s; the answer is Mailpit's `SpamAssassinResponse`. Mailpit's "
        "`postmark` (Postmark's public API) is refused: inletd sends no message to the internet. "
        "Unset: the route answers 400."));
  add(f(http, "--enable-rspamd", "MP_ENABLE_RSPAMD",
        "Mailpit: rspamd's URL or HOST:PORT for /api/v1/message/{ID}/rspamd-check",
        {"URL", false, false, false,
         [](config& c, const std::string& v) {
           if (v.empty()) {
             c.http.api.spam_check.rspamd.clear();
             return;
           }
           if (auto why = inlet::http::parse_rspamd_service(v, c.http.api.spam_check); !why.empty())
             bad(why);
         },
         {}},
        "The rspamd that `GET /api/v1/message/{ID}/rspamd-check` asks (`POST /checkv2`, on the "
        "API's worker threads, within 8 s); the answer is Mailpit's `RspamdResponse`. A URL "
        "(`http://host:11333`) or `HOST:PORT` (http assumed); a controller password as the URL's "
        "user information (`http://:secret@host:11333`), sent as rspamd's `Password` header and "
        "never shown. Unset: the route answers 400."));
  add(f(http, "--mailhog-api", "",
        "GET/DELETE /api/v1/messages answer as MailHog's API v1, not Mailpit's",
        on([](config& c) -> bool& { return c.http.api.mailhog_v1; }),
        "`GET`/`DELETE /api/v1/messages` answer as MailHog's API v1 (an array of "
        "`data.Message`) instead of Mailpit's; turned on by MailHog's own `MH_*` variables and "
        "flags (docs/api.md, \"MailHog's and MailDev's APIs\")."));
  add(f(http, "--mailhog-jim", "",
        "MailHog's Jim, invited with these settings (-invite-jim sets it)",
        text([](config& c) -> std::string& { return c.mailhog_jim; }, "LIST"),
        "Invites MailHog's Jim at start with `Name:value,...` in its JSON field names (e.g. "
        "`RejectSenderChance:0.5`; unnamed settings take MailHog's defaults); MailHog's "
        "`-invite-jim` and `-jim-*` flags set it. Jim's rejection chances become the chaos "
        "triggers; `/api/v2/jim` reads and changes them (docs/api.md, \"Jim\").",
        "none"));
  add(f(http, "--enable-chaos", "MP_ENABLE_CHAOS",
        "Mailpit: allow SMTP failure triggers (/api/v1/chaos)",
        on([](config& c) -> bool& { return c.chaos.enabled; }),
        "Allow SMTP failure triggers (`/api/v1/chaos`): `Sender`, `Recipient` and "
        "`Authentication` fail `MAIL`, `RCPT` and `AUTH` with their code and probability."));
  add(f(http, "--chaos-triggers", "MP_CHAOS_TRIGGERS",
        "Mailpit: initial triggers, e.g. Sender:451:10,Recipient:550:5 (enables chaos)",
        text([](config& c) -> std::string& { return c.chaos.triggers; }, "LIST"),
        "Initial triggers, e.g. `Sender:451:10,Recipient:550:5` (stage:code:probability %); "
        "given alone, enables chaos, as in Mailpit.",
        "none"));

  // ---- Message release ----
  add(f(relay, "--smtp-relay-config", "MP_SMTP_RELAY_CONFIG",
        "Mailpit: relay configuration (YAML) for message release",
        file([](config& c) -> std::string& { return c.relay_file; }),
        "Mailpit's relay file (keys above); wins over the flags below.", "none"));
  add(f(relay, "--relay", "",
        "SMTP relay for message release (password only from the file or MP_SMTP_RELAY_PASSWORD)",
        endpoint(
            [](config& c, const host_port& hp) {
              c.relay.host = hp.host;
              c.relay.port = hp.port;
            },
            [](config&) { return std::string(); }),
        "The relay.", "none"));
  add(f(relay, "--relay-starttls", "", "release: require STARTTLS",
        on([](config& c) -> bool& { return c.relay.starttls; })));
  add(f(relay, "--relay-tls", "", "release: TLS from the start (SMTPS)",
        on([](config& c) -> bool& { return c.relay.tls; })));
  add(f(relay, "--relay-allow-insecure", "", "release: do not verify the relay's certificate",
        on([](config& c) -> bool& { return c.relay.allow_insecure; })));
  add(f(relay, "--relay-user", "", "release: SMTP AUTH user name",
        text([](config& c) -> std::string& { return c.relay.username; }, "NAME")));
  add(f(relay, "--relay-return-path", "", "release: MAIL FROM and Return-Path of released mail",
        text([](config& c) -> std::string& { return c.relay.return_path; }, "ADDRESS")));
  add(f(relay, "--relay-allowed-recipients", "", "release: only to addresses matching (regex)",
        text([](config& c) -> std::string& { return c.relay.allowed_recipients; }, "REGEX"), "",
        "any"));
  add(f(relay, "--relay-blocked-recipients", "", "release: never to addresses matching (regex)",
        text([](config& c) -> std::string& { return c.relay.blocked_recipients; }, "REGEX"), "",
        "none"));

  add(f(relay, "--smtp-relay-all", "MP_SMTP_RELAY_ALL",
        "Mailpit: relay every new message to its recipients through the relay",
        on([](config& c) -> bool& { return c.auto_relay.all; }),
        "Every new message also goes on to its envelope recipients through the relay above "
        "(not those matching the relay's `blocked-recipients`), with its `override-from` and "
        "`subject-prefix`. After the message is stored and answered, from a queue of its own "
        "(docs/outbound.md); a relay that fails is logged and counted "
        "(`inlet_relay_failed_total`), the SMTP client still got its 250. A recipient the "
        "relay refuses is skipped; with `forward-smtp-errors: true` in the relay file the "
        "message is relayed before it is stored and the relay's refusal is the client's "
        "reply, as in Mailpit. The relay's `allowed-recipients` limits release only."));
  add(f(relay, "--smtp-relay-matching", "MP_SMTP_RELAY_MATCHING",
        "Mailpit: relay new messages to the recipients matching this regular expression",
        text([](config& c) -> std::string& { return c.auto_relay.matching; }, "REGEX"),
        "As `--smtp-relay-all`, to the recipients matching this regular expression only "
        "(ignored with `--smtp-relay-all`, as in Mailpit).",
        "none"));
  add(f(relay, "--smtp-forward-config", "MP_SMTP_FORWARD_CONFIG",
        "Mailpit: forward a copy of every new message (YAML: to, host, port, ...)",
        file([](config& c) -> std::string& { return c.forward_file; }),
        "A copy of every new message to fixed addresses through another SMTP server: a YAML "
        "file of `to` (comma-separated), `host`, `port`, `starttls`, `tls`, `allow-insecure`, "
        "`auth`, `username`, `password`/`secret`, `return-path`, `override-from`, "
        "`subject-prefix`; or the `MP_SMTP_FORWARD_*` variables of the same names (`TO`, "
        "`HOST`, ...), and `forward-smtp-errors`. Sent as auto-relay is, from a queue of its "
        "own (`inlet_forward_*_total`).",
        "off"));

  // ---- Webhooks ----
  add(f(outbound, "--webhook-url", "MP_WEBHOOK_URL",
        "Mailpit: POST each new message's summary (JSON) to this URL",
        text([](config& c) -> std::string& { return c.webhook.url; }, "URL"),
        "POST each new message's summary (the API's `MessageSummary` JSON) to this URL "
        "(docs/outbound.md).",
        "off"));
  add(f(outbound, "--webhook-limit", "MP_WEBHOOK_LIMIT",
        "Mailpit: webhook requests a second at most (0: no limit)",
        number<int>([](config& c) -> int& { return c.webhook.limit; }, 0, 1000000)));
  add(f(outbound, "--webhook-delay", "MP_WEBHOOK_DELAY",
        "Mailpit: seconds to wait before each webhook request",
        seconds([](config& c) -> std::chrono::seconds& { return c.webhook.delay; })));

  // ---- POP3 ----
  add(f(pop3, "--pop3", "MP_POP3_BIND_ADDR",
        "Mailpit: POP3 listener (on when POP3 credentials are given)",
        endpoint(
            [](config& c, const host_port& hp) {
              c.pop3.server.address = hp.host;
              c.pop3.server.port = hp.port;
              c.pop3.listen_given = true;
            },
            [](config& c) {
              return c.pop3.server.address + ":" + std::to_string(c.pop3.server.port);
            }),
        "POP3 listener (RFC 1939: USER/PASS, UIDL, TOP, CAPA). As in Mailpit it runs only when "
        "POP3 credentials are given (`--pop3-auth-file` or `MP_POP3_AUTH`) and serves the "
        "newest 100 messages; messages deleted over POP3 are deleted from the store at QUIT. "
        "Port 0 picks a free port (printed at start). See docs/pop3.md."));
  add(f(pop3, "--pop3-auth-file", "MP_POP3_AUTH_FILE",
        "Mailpit: POP3 password file (enables POP3)",
        file([](config& c) -> std::string& { return c.pop3.auth_file; }),
        "Password file (the format of `--ui-auth-file`); enables the POP3 server. "
        "`MP_POP3_AUTH` (`user:password` pairs separated by spaces) gives the same inline.",
        "off"));
  add(f(pop3, "--pop3-tls-cert", "MP_POP3_TLS_CERT",
        "Mailpit: PEM certificate (or sans:NAME,...) for POP3: implicit TLS (POP3S)",
        cert_file([](config& c) -> std::string& { return c.pop3.server.tls_cert; }),
        "PEM certificate chain for POP3; with `--pop3-tls-key` the listener speaks TLS from "
        "the first byte, as Mailpit's does (unless `--pop3-stls`). `sans:NAME,...` makes a "
        "throwaway certificate at start, as for `--tls-cert`.",
        "off"));
  add(f(pop3, "--pop3-tls-key", "MP_POP3_TLS_KEY", "Mailpit: PEM private key for --pop3-tls-cert",
        cert_file([](config& c) -> std::string& { return c.pop3.server.tls_key; }), {}, "off"));
  add(f(pop3, "--pop3-stls", "",
        "with --pop3-tls-cert: clear text with STLS (RFC 2595) instead of implicit TLS",
        {"", true, false, false,
         [](config& c, const std::string& v) {
           if (truthy(v)) c.pop3.server.tls = inlet::pop3::tls_mode::stls;
         },
         [](config&) { return std::string("off"); }},
        "With `--pop3-tls-cert`: the listener speaks clear text and offers STLS (RFC 2595) "
        "instead of Mailpit's implicit TLS."));
  add(f(pop3, "--pop3-max-connections-per-ip", "", "POP3 connections per client IP",
        number<std::size_t>(
            [](config& c) -> std::size_t& { return c.pop3.server.admission.max_per_ip; }, 1,
            std::numeric_limits<std::size_t>::max()),
        "POP3 connections from one client address at once; past it `-ERR [SYS/TEMP] too many "
        "connections from your address` and the connection is closed (1,000 in all)."));

  // ---- Mailpit's deprecated spellings ----
  add(deprecated("--db-file", "MP_DATA_FILE", "--database",
                 text([](config& c) -> std::string& { return c.store.file.path; }, "FILE")));
  add(deprecated("--smtp-ssl-cert", "MP_SMTP_SSL_CERT", "--smtp-tls-cert",
                 cert_file([](config& c) -> std::string& { return c.smtp.tls_cert; })));
  add(deprecated("--smtp-ssl-key", "MP_SMTP_SSL_KEY", "--smtp-tls-key",
                 cert_file([](config& c) -> std::string& { return c.smtp.tls_key; })));
  add(deprecated("--ui-ssl-cert", "MP_UI_SSL_CERT", "--ui-tls-cert",
                 cert_file([](config& c) -> std::string& { return c.http.tls_cert; })));
  add(deprecated("--ui-ssl-key", "MP_UI_SSL_KEY", "--ui-tls-key",
                 cert_file([](config& c) -> std::string& { return c.http.tls_key; })));
  add(deprecated("--smtp-tls-required", "MP_SMTP_TLS_REQUIRED", "--smtp-require-starttls",
                 on([](config& c) -> bool& { return c.smtp.session.require_starttls; })));
  {
    flag x = deprecated("--disable-html-check", "MP_DISABLE_HTML_CHECK", "nothing",
                        {"", true, false, false, [](config&, const std::string&) {},
                         [](config&) { return std::string("off"); }});
    x.help = "Mailpit (deprecated, no longer used)";
    x.doc = "Deprecated and unused in Mailpit too; named at start.";
    add(std::move(x));
  }

  return t;
}

}  // namespace

const std::vector<flag>& table() {
  static const std::vector<flag> t = make_table();
  return t;
}

std::string long_name(const flag& x) {
  std::string_view rest = x.names;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view n = rest.substr(0, comma);
    if (n.starts_with("--")) return std::string(n);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return x.names;
}

}  // namespace inletd::flags
