// The subcommands of the trafo binary. Each adds itself to the CLI11 app and returns
// the function that runs it once the command line is parsed; that function returns
// the exit code or throws trafo::InputError / trafo::RunError.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace trafo::cli {

using CommandRunner = std::function<int()>;

CommandRunner add_toy_corpus_command(CLI::App& app);
CommandRunner add_score_command(CLI::App& app);
CommandRunner add_score_pairs_command(CLI::App& app);
CommandRunner add_train_command(CLI::App& app);
CommandRunner add_eval_command(CLI::App& app);
CommandRunner add_translate_command(CLI::App& app);
CommandRunner add_report_command(CLI::App& app);
CommandRunner add_attention_command(CLI::App& app);
CommandRunner add_bench_command(CLI::App& app);
CommandRunner add_export_command(CLI::App& app);
CommandRunner add_average_command(CLI::App& app);

}  // namespace trafo::cli
