// inletd's filter stage: the term list in force (inlet::filter::filter_registry, reloaded
// on SIGHUP or when the file changes), the action and the threshold.
#pragma once

#include <inlet/filter/registry.hpp>

#include <memory>
#include <string>

namespace inlet::mail {

class content_filter {
 public:
  /// Loads and compiles `path`; null with `error` set when the file is bad.
  static std::unique_ptr<content_filter> create(const std::string& path, bool reject,
                                              double threshold, std::string& error);

  /// Reloads the file; the list in force stays when the new one is bad. Returns a line
  /// for the log.
  std::string reload();

  bool reject() const noexcept { return reject_; }
  double threshold() const noexcept { return threshold_; }
  inlet::filter::filter_registry& registry() noexcept { return registry_; }

 private:
  content_filter(const std::string& path, bool reject, double threshold);
  static std::string describe(const inlet::filter::reload_status& s);

  inlet::filter::filter_registry registry_;
  bool reject_;
  double threshold_;
};

}  // namespace inlet::mail
