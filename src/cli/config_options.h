// Binds `trafo train`'s options (the rows of run_config::config_keys()) to CLI11.
#pragma once

#include <functional>
#include <set>
#include <string>

namespace CLI {
class App;
}

namespace trafo::run_config {
struct ConfigKey;
struct TrainConfig;
}  // namespace trafo::run_config

namespace trafo::cli {

// One option --NAME per row of run_config::config_keys() for which `take` is true (all when empty),
// writing into `config` with the same conversion as config files; a bad value is a CLI11
// validation error naming the option.
void bind_config_keys(CLI::App& command, run_config::TrainConfig& config,
                      const std::function<bool(const run_config::ConfigKey&)>& take = {});

// The keys of the bound rows that the command line gave (they win over a config file's).
std::set<std::string> given_config_keys(const CLI::App& command);


}  // namespace trafo::cli
