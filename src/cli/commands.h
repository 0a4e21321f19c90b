// The training commands of the trafo binary (train, bench, toy-corpus); the inference commands
// are their own area (trafo/inference_cli/commands.h).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "trafo/inference_cli/commands.h"

namespace trafo::run_config {
struct TrainConfig;
}
namespace trafo::train {
struct TrainResult;
}

namespace trafo::cli {

CommandRunner add_toy_corpus_command(CLI::App& app);
CommandRunner add_train_command(CLI::App& app);
CommandRunner add_distill_command(CLI::App& app);
CommandRunner add_bench_command(CLI::App& app);

// `trafo train`'s options, which `trafo distill` takes too: every config key, --config,
// --dump-config and --corpus, bound into `config`.
struct TrainOptions {
  std::shared_ptr<run_config::TrainConfig> config;
  std::shared_ptr<std::string> config_path;
  std::shared_ptr<bool> print_config;
  // Once parsed: the keys given (command line, then --config file) into config->given; with
  // --dump-config prints the config and returns false (nothing else to do).
  bool settle(const CLI::App& command) const;
};
TrainOptions bind_train_options(CLI::App& command);

// The last line of a training run: how it ended and its best checkpoint.
void log_result(const train::TrainResult& result);

// SIGINT and SIGTERM set the flag a run polls (stop_flag) and end the process at the second one.
void stop_on_signals();
const std::atomic<bool>* stop_flag();

}  // namespace trafo::cli
