// FNV-1a, 64 bits (Fowler, Noll, Vo; the parameters of draft-eastlake-fnv): a fast,
// non-cryptographic hash for naming content (plans, scenarios) and for checksums of trace files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace replisim::core {

inline constexpr uint64_t kFnv1aBasis = 14695981039346656037ULL;  // offset basis 0xcbf29ce484222325
inline constexpr uint64_t kFnv1aPrime = 1099511628211ULL;         // 2^40 + 2^8 + 0xb3

// Continues `hash` over `size` bytes (start from kFnv1aBasis).
inline uint64_t fnv1a(uint64_t hash, const char* bytes, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= uint8_t(bytes[i]);
    hash *= kFnv1aPrime;
  }
  return hash;
}

// The hash of `bytes` as 16 lowercase hex digits.
std::string fnv1a_hex(const std::string& bytes);
// A hash as 16 lowercase hex digits.
std::string hex64(uint64_t hash);

}  // namespace replisim::core
