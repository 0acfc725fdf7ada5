#include "inlet/store/error.hpp"

#include <string>

namespace inlet::store {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.store"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok:
        return "ok";
      case errc::too_large:
        return "message larger than the store's byte bound";
      case errc::not_found:
        return "no such message";
      case errc::unavailable:
        return "store unavailable";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::timeout:
        return "the store did not answer in time";
      case errc::corrupt:
        return "the store's file is damaged";
      case errc::foreign_file:
        return "the file is not a message store";
    }
    return "unknown inlet.store error";
  }
};

}  // namespace

const std::error_category& store_category() noexcept {
  static const category c;
  return c;
}

}  // namespace inlet::store
