#include "config_options.h"

#include <variant>

#include <CLI/CLI.hpp>

#include "trafo/errors.h"
#include "trafo/run_config/config_keys.h"

namespace trafo::cli {
void bind_config_keys(CLI::App& command, run_config::TrainConfig& config,
                      const std::function<bool(const run_config::ConfigKey&)>& take) {
  for (const auto& key : run_config::config_keys()) {
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
              run_config::parse_value(key, text, config);
            } catch (const InputError& e) {
              throw CLI::ValidationError(name, e.what());
            }
          },
          key.help);
      option->type_name(run_config::type_name(key));
      if (key.show_default) {
        const auto field = key.field(config);
        const auto* text = std::get_if<std::string*>(&field);
        option->default_str(text != nullptr ? **text : run_config::format_value(key, config));
      }
    }
    option->group(key.group);
  }
}

std::set<std::string> given_config_keys(const CLI::App& command) {
  std::set<std::string> given;
  for (const auto& key : run_config::config_keys()) {
    const CLI::Option* option = command.get_option_no_throw(std::string("--") + key.name);
    if (option != nullptr && option->count() > 0) given.insert(key.name);
  }
  return given;
}

}  // namespace trafo::cli
