#include "trafo/util/numbers.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <type_traits>

#include "trafo/errors.h"

namespace trafo::util {
namespace {

// Decimal digits after an optional sign; leading zeros are decimal (CLI11 alone reads 010 as 8).
template <typename Integer>
void parse_integer_as(const std::string& text, Integer& out) {
  const bool negative = !text.empty() && text[0] == '-';
  if (negative && std::is_unsigned_v<Integer>) throw InputError("must not be negative, not " + text);
  const size_t sign = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (sign == text.size() || text.find_first_not_of("0123456789", sign) != std::string::npos) {
    throw InputError("'" + text + "' is not a whole decimal number");
  }
  // from_chars takes a minus sign but no plus sign.
  const char* first = text.data() + (text[0] == '+' ? 1 : 0);
  Integer value{};
  const auto parsed = std::from_chars(first, text.data() + text.size(), value);
  if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) {
    throw InputError("'" + text + "' is out of range");
  }
  out = value;
}

}  // namespace

void parse_finite(const std::string& text, double& out) {
  const bool decimal = !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string::npos;
  char* end = nullptr;
  const double value = decimal ? std::strtod(text.c_str(), &end) : 0.0;
  if (!decimal || end != text.c_str() + text.size() || !std::isfinite(value)) {
    throw InputError("'" + text + "' is not a finite decimal number");
  }
  // Below the smallest normal double, digits are lost, and 1e-400 reads as 0: never silently.
  const bool nonzero = text.find_first_of("123456789") < text.find_first_of("eE");
  if ((value == 0.0 && nonzero) || std::fpclassify(value) == FP_SUBNORMAL) {
    throw InputError("'" + text + "' is too close to 0 to be held (the smallest is about 2.2e-308)");
  }
  out = value;
}

void parse_decimal(const std::string& text, int& out) { parse_integer_as(text, out); }
void parse_decimal(const std::string& text, int64_t& out) { parse_integer_as(text, out); }
void parse_decimal(const std::string& text, uint64_t& out) { parse_integer_as(text, out); }

}  // namespace trafo::util
