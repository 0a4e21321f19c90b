// Number checks every command's options share: plain decimal integers and finite floats.
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "trafo/errors.h"
#include "trafo/inference_cli/commands.h"
#include "trafo/util/numbers.h"

namespace trafo::cli {
namespace {

// A CLI11 check through util's conversion of `Value`: its message, or "" when the text converts.
// Integers are rewritten as the plain decimal CLI11 then reads (010 → 10, which CLI11 reads as 8).
template <typename Value>
CLI::Validator through(void (*parse)(const std::string&, Value&)) {
  return CLI::Validator(
      [parse](std::string& text) {
        try {
          Value value{};
          parse(text, value);
          if constexpr (std::is_integral_v<Value>) text = std::to_string(value);
          return std::string();
        } catch (const InputError& e) {
          return std::string(e.what());
        }
      },
      "");
}

}  // namespace

void add_number_checks(CLI::App& command) {
  // CLI11 2.1 reads integers with base detection (010 is 8, 0x10 is 16), "-1" into an unsigned
  // as 2^64 - 1, and floats including inf and nan; options take plain decimal numbers only
  // (010 is 10).
  const auto integer = through<int64_t>(util::parse_decimal);
  const auto unsigned_integer = through<uint64_t>(util::parse_decimal);
  const auto finite = through<double>(util::parse_finite);
  for (CLI::Option* option : command.get_options()) {
    const std::string type = option->get_type_name();
    auto is = [&](const std::string& name) { return type == name || type.rfind(name + ":", 0) == 0; };
    if (is("INT")) option->transform(integer);  // a transform may rewrite the text: 010 → 10
    if (is("UINT")) option->transform(unsigned_integer);
    if (is("FLOAT")) option->check(finite);
  }
  for (CLI::App* subcommand : command.get_subcommands({})) add_number_checks(*subcommand);
}

}  // namespace trafo::cli
