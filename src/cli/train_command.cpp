// trafo train: binds TrainConfig to the command line and to TOML config files.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "config_options.h"
#include "trafo/dist/environment.h"
#include "trafo/errors.h"
#include "trafo/train/config_file.h"
#include "trafo/train/trainer.h"

namespace trafo::cli {
namespace {

std::atomic<bool> stop_requested{false};

extern "C" void request_stop(int signal_number) {
  stop_requested.store(true);
  std::signal(signal_number, SIG_DFL);  // a second Ctrl-C ends the process at once
}

}  // namespace

CommandRunner add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train a model on parallel text");
  auto config = std::make_shared<train::TrainConfig>();
  auto config_path = std::make_shared<std::string>();
  auto print_config = std::make_shared<bool>(false);
  cmd->add_option("--config", *config_path, "TOML config file; keys are the long option names, the command line wins");
  cmd->add_flag("--dump-config", *print_config, "print the effective config (TOML) and exit");
  bind_config_keys(*cmd, *config);
  return [cmd, config, config_path, print_config]() -> int {
    if (cmd->count("--config") > 0) {  // --config "" is an error too
      train::read_config_file(*config_path, *config, given_config_keys(*cmd));
    }
    if (*print_config) {
      std::cout << train::to_toml(*config);
      return 0;
    }
    if (config->nproc > 1 && !dist::read_environment().launched) {
      dist::check_local_launch(config->nproc);
      train::check_before_launch(*config);
      return dist::launch_local(config->nproc, config->dist_timeout + 30.0);
    }
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    train::Trainer trainer(*config, &stop_requested);
    const auto result = trainer.run();
    if (result.reason == "signal") {
      spdlog::info("stopped by signal at step {}; checkpoint saved: {}", result.step, result.last_checkpoint);
    } else {
      spdlog::info("done ({}) at step {}; best checkpoint: {}", result.reason, result.step,
                   result.best_checkpoint.empty() ? result.last_checkpoint : result.best_checkpoint);
    }
    return 0;
  };
}

}  // namespace trafo::cli
