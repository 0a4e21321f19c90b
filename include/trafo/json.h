// JSON read with a bounded depth. nlohmann's parser reads any depth, but copying, comparing or
// printing a value recurses once per level: 100,000 nested arrays (a 200 KB request body) overflow
// the stack. trafo's own JSON nests a few levels, and so does every JSON it reads from elsewhere
// (requests, an imported model's config.json, checkpoints' metadata, metrics.jsonl).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trafo/errors.h"

namespace trafo {

inline constexpr int kMaxJsonDepth = 64;

// JSON nested deeper than kMaxJsonDepth: an InputError whose message names what was read.
class JsonTooDeep : public InputError {
 public:
  using InputError::InputError;
};

// nlohmann::json::parse(text, nullptr, allow_exceptions), but JsonTooDeep ("WHAT nests JSON more
// than 64 levels deep") for text nested past kMaxJsonDepth, whatever allow_exceptions says.
inline nlohmann::json parse_json(std::string_view text, const std::string& what, bool allow_exceptions = true) {
  const auto bounded = [&what](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth >= kMaxJsonDepth) {  // depth counts from 0: more than kMaxJsonDepth levels
      throw JsonTooDeep(what + " nests JSON more than " + std::to_string(kMaxJsonDepth) + " levels deep");
    }
    return true;
  };
  return nlohmann::json::parse(text, bounded, allow_exceptions);
}

}  // namespace trafo
