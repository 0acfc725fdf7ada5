// Replays fuzz corpus files through a libFuzzer entry point, with any compiler.
// Usage: <target>_replay FILE_OR_DIR...   (a missing directory counts as empty)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
int replay_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A copy into an exact-size heap block so ASan sees reads past the end.
  std::vector<std::uint8_t> exact(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(exact.data(), exact.size());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  LLVMFuzzerTestOneInput(nullptr, 0);
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) n += replay_file(e.path());
    } else if (std::filesystem::is_regular_file(p, ec)) {
      n += replay_file(p);
    }
  }
  std::printf("replayed %d inputs\n", n);
  return 0;
}
