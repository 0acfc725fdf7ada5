// The flag table: every flag of inletd once, as data. Each entry names the flag (CLI11
// syntax, inletd's and Mailpit's spellings together), its Mailpit variable, its group, its
// help and its binding: how a value given as text lands in `config` and how the default
// reads. The parser (config.cpp), `--help` and docs/configuration.md are made from it.
//
// Design note: a binding is a pair of functions over `config&` rather than a pointer to
// a field, so a flag may set more than one field (--timeout: greeting and command
// timeouts), check a value against the others' units (MiB, durations), or compile it
// once (a regular expression), while the table stays one line per concern.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config.hpp"

namespace inletd::flags {

enum class origin : std::uint8_t {
  inlet,        ///< inletd's own flag
  mailpit,      ///< Mailpit's flag, or both's
  deprecated,   ///< Mailpit's deprecated spelling: takes effect, named at start
  unsupported,  ///< Mailpit's flag inletd has no equivalent of yet: named at start
};

/// How a flag's value reaches the configuration. `set` throws std::invalid_argument with
/// a message for a bad value. A switch gets "true" or "false".
struct binding {
  std::string unit;  ///< "HOST:PORT", "N", "FILE", ...; empty for a switch
  bool is_switch = false;
  bool repeatable = false;
  bool existing_file = false;  ///< the value names a file that must exist
  std::function<void(config&, const std::string&)> set;
  std::function<std::string(config&)> show;  ///< the default as text; empty: none
};

struct flag {
  std::string group;
  std::string names;  ///< "-s,--smtp": the first long name is the config key and INLET_ name
  std::string env;    ///< Mailpit's MP_* variable, or empty
  std::string help;   ///< one line for --help
  std::string doc;    ///< docs/configuration.md's meaning; empty: help
  origin from = origin::inlet;
  binding bind;
  std::string default_text;  ///< the default as the docs say it; empty: bind.show()
  std::string instead;       ///< deprecated: the spelling to use now
};

/// Every flag, in --help and documentation order; groups appear in first-use order.
const std::vector<flag>& table();

/// The long name a flag is known by ("--smtp" for "-s,--smtp").
std::string long_name(const flag& f);

}  // namespace inletd::flags
