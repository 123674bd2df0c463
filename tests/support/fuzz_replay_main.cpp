// Replays a fuzz target's corpus (every file of the directories given) through its
// LLVMFuzzerTestOneInput, without libFuzzer: the ctest that keeps the corpus passing in every
// build. Exits 1 if a directory is missing or empty.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(argv[i], error)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++inputs;
    }
    if (error) {
      std::fprintf(stderr, "fuzz replay: cannot read %s\n", argv[i]);
      return 1;
    }
  }
  std::printf("fuzz replay: %zu inputs, no crash\n", inputs);
  return inputs > 0 ? 0 : 1;
}
