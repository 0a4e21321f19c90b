#include "config_options.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <variant>

#include <CLI/CLI.hpp>

#include "trafo/errors.h"
#include "trafo/train/config_keys.h"

namespace trafo::cli {
namespace {

// Whether `text` is a decimal integer; drops its leading zeros, which CLI11 would read as octal.
bool plain_integer(std::string& text, bool with_sign) {
  const size_t sign = with_sign && !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (sign == text.size()) return false;
  for (size_t i = sign; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  const auto first = text.find_first_not_of('0', sign);
  text.erase(sign, (first == std::string::npos ? text.size() - 1 : first) - sign);
  return true;
}

}  // namespace

void bind_config_keys(CLI::App& command, train::TrainConfig& config,
                      const std::function<bool(const train::ConfigKey&)>& take) {
  for (const auto& key : train::config_keys()) {
    if (take && !take(key)) continue;
    const std::string name = std::string("--") + key.name;
    CLI::Option* option = nullptr;
    if (key.flag) {
      option = command.add_flag(name, *std::get<bool*>(key.field(config)), key.help);
    } else {
      option = command.add_option_function<std::string>(
          name,
          [&config, &key, name](const std::string& text) {
            try {
              train::parse_value(key, text, config);
            } catch (const InputError& e) {
              throw CLI::ValidationError(name, e.what());
            }
          },
          key.help);
      option->type_name(train::type_name(key));
      if (key.show_default) {
        const auto field = key.field(config);
        const auto* text = std::get_if<std::string*>(&field);
        option->default_str(text != nullptr ? **text : train::format_value(key, config));
      }
    }
    option->group(key.group);
  }
}

std::set<std::string> given_config_keys(const CLI::App& command) {
  std::set<std::string> given;
  for (const auto& key : train::config_keys()) {
    const CLI::Option* option = command.get_option_no_throw(std::string("--") + key.name);
    if (option != nullptr && option->count() > 0) given.insert(key.name);
  }
  return given;
}

void add_number_checks(CLI::App& command) {
  // CLI11 2.1 reads integers with base detection (010 is 8, 0x10 is 16), "-1" into an unsigned
  // as 2^64 - 1, and floats including inf and nan; options take plain decimal numbers only
  // (010 is 10).
  const CLI::Validator integer(
      [](std::string& text) {
        return plain_integer(text, true) ? std::string() : "'" + text + "' is not a whole decimal number";
      },
      "");
  const CLI::Validator unsigned_integer(
      [](std::string& text) {
        if (!text.empty() && text[0] == '-') return "must not be negative, not " + text;
        return plain_integer(text, false) ? std::string() : "'" + text + "' is not a whole decimal number";
      },
      "");
  const CLI::Validator finite(
      [](std::string& text) {
        const bool decimal = !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string::npos;
        char* end = nullptr;
        const double value = decimal ? std::strtod(text.c_str(), &end) : 0.0;
        const bool ok = decimal && end == text.c_str() + text.size() && std::isfinite(value);
        return ok ? std::string() : "'" + text + "' is not a finite decimal number";
      },
      "");
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
