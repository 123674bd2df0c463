#include "core/base/hash.h"

#include <cstdio>

namespace replisim::core {

std::string fnv1a_hex(const std::string& bytes) {
  return hex64(fnv1a(kFnv1aBasis, bytes.data(), bytes.size()));
}

std::string hex64(uint64_t hash) {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace replisim::core
