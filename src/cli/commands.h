// The training commands of the trafo binary (train, bench, toy-corpus); the inference commands
// are their own area (trafo/inference_cli/commands.h).
#pragma once

#include "trafo/inference_cli/commands.h"

namespace trafo::cli {

CommandRunner add_toy_corpus_command(CLI::App& app);
CommandRunner add_train_command(CLI::App& app);
CommandRunner add_bench_command(CLI::App& app);

}  // namespace trafo::cli
