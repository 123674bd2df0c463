// Stateless, seeded pseudo-random draws: the same (seed, keys) always gives the same number,
// whatever order draws are made in, so jitter is reproducible across backends and runs.
#pragma once

#include <cstdint>

namespace replisim::core {

// SplitMix64 finaliser (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number
// generators"): a bijective 64-bit mix with good avalanche.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from a seed and up to three keys (e.g. client, device, step).
inline double uniform01(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ a);
  h = splitmix64(h ^ (b * 0x9E3779B97F4A7C15ULL));
  h = splitmix64(h ^ (c * 0xC2B2AE3D27D4EB4FULL));
  return double(h >> 11) * 0x1.0p-53;
}

}  // namespace replisim::core
