// splitmix64's finaliser (Steele, Lea and Flood 2014): 64 well-mixed bits from any 64, for draws
// that must come from a few numbers alone (a seed, an epoch, a step) and not from a generator's state.
#pragma once

#include <cstdint>

namespace trafo::util {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;  // 2^64 / the golden ratio

inline uint64_t mix(uint64_t value) {
  value += kGolden;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

}  // namespace trafo::util
