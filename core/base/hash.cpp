#include "core/base/hash.h"

#include <cstdio>

namespace replisim::core {

std::string fnv1a_hex(const std::string& bytes) {
  const uint64_t hash = fnv1a(kFnv1aBasis, bytes.data(), bytes.size());
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace replisim::core
