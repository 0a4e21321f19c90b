// Numbers as options and config files give them: plain decimal integers (leading zeros are
// decimal, not octal as CLI11 alone reads 010; no minus sign for an unsigned one) and finite
// decimal floats (no inf, nan or hex). Each throws trafo::InputError saying what is wrong with the
// text; the caller names the option.
#pragma once

#include <cstdint>
#include <string>

namespace trafo::util {

void parse_decimal(const std::string& text, int& out);
void parse_decimal(const std::string& text, int64_t& out);
void parse_decimal(const std::string& text, uint64_t& out);
void parse_finite(const std::string& text, double& out);

}  // namespace trafo::util
