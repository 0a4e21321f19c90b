// JSON read with a bounded depth (trafo/json.h): deeper JSON is refused in one line naming what was
// read, instead of a stack overflow when the value is copied, compared or printed.
#include <gtest/gtest.h>

#include <string>

#include "trafo/json.h"

namespace trafo {
namespace {

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

TEST(Json, DepthIsBounded) {
  const auto deepest = parse_json(nested(kMaxJsonDepth), "the body");
  const auto copy = deepest;  // copying recurses once per level
  EXPECT_EQ(copy, deepest);
  for (const bool exceptions : {true, false}) {
    for (const int depth : {kMaxJsonDepth + 1, 100000}) {
      try {
        parse_json("{\"q\": " + nested(depth) + "}", "the body", exceptions);
        ADD_FAILURE() << depth << " levels were read";
      } catch (const JsonTooDeep& e) {
        EXPECT_EQ(std::string(e.what()), "the body nests JSON more than 64 levels deep");
      }
    }
  }
  EXPECT_TRUE(parse_json("[1,", "x", false).is_discarded());  // malformed JSON as nlohmann has it
  EXPECT_THROW(parse_json("[1,", "x"), nlohmann::json::parse_error);
}

}  // namespace
}  // namespace trafo
