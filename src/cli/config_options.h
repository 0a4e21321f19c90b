// Binds `trafo train`'s options (the rows of train::config_keys()) to CLI11, and the number
// checks every command's options share.
#pragma once

#include <functional>
#include <set>
#include <string>

namespace CLI {
class App;
}

namespace trafo::train {
struct ConfigKey;
struct TrainConfig;
}  // namespace trafo::train

namespace trafo::cli {

// One option --NAME per row of train::config_keys() for which `take` is true (all when empty),
// writing into `config` with the same conversion as config files; a bad value is a CLI11
// validation error naming the option.
void bind_config_keys(CLI::App& command, train::TrainConfig& config,
                      const std::function<bool(const train::ConfigKey&)>& take = {});

// The keys of the bound rows that the command line gave (they win over a config file's).
std::set<std::string> given_config_keys(const CLI::App& command);

// Makes every integer option of `command` and its subcommands take plain decimal numbers
// (no octal or hex, no minus sign on an unsigned one) and every floating one finite values;
// call it once the options are added.
void add_number_checks(CLI::App& command);

}  // namespace trafo::cli
