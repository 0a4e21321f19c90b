// XXH3-64 digests as checkpoints write them: 16 lowercase hex digits. Internal to checkpoint/.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace trafo::checkpoint::detail {

inline std::string hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace trafo::checkpoint::detail
