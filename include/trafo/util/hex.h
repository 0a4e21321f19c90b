// A 64-bit hash as 16 lowercase hex digits, as checkpoints and token caches write their XXH3 digests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace trafo::util {

inline std::string hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace trafo::util
