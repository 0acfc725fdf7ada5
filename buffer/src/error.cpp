#include <inlet/buffer/error.hpp>

#include <string>

namespace inlet::buffer {
namespace {
class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.buffer"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok: return "ok";
      case errc::out_of_range: return "range outside the buffer's data";
      case errc::scratch_too_small: return "token straddles fragments and exceeds the scratch area";
      case errc::max_size_exceeded: return "buffer would exceed its maximum size";
    }
    return "unknown inlet.buffer error";
  }
};
}  // namespace

const std::error_category& buffer_category() noexcept {
  static const category c;
  return c;
}
}  // namespace inlet::buffer
