// The inference commands of the trafo binary: everything that reads a trained checkpoint (translate,
// eval, score, score-pairs, attention, average, export, import, report). Their area may not use train/
// (CMakeLists.txt), so that what serves a model never links the trainer. Each command adds itself
// to the CLI11 app and returns the function that runs it once the command line is parsed; that
// function returns the exit code or throws trafo::InputError / trafo::RunError.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace trafo::cli {

using CommandRunner = std::function<int()>;

CommandRunner add_score_command(CLI::App& app);
CommandRunner add_score_pairs_command(CLI::App& app);
CommandRunner add_align_command(CLI::App& app);
CommandRunner add_eval_command(CLI::App& app);
CommandRunner add_translate_command(CLI::App& app);
CommandRunner add_report_command(CLI::App& app);
CommandRunner add_attention_command(CLI::App& app);
CommandRunner add_export_command(CLI::App& app);
CommandRunner add_import_command(CLI::App& app);
CommandRunner add_average_command(CLI::App& app);
CommandRunner add_serve_command(CLI::App& app);

// Makes every integer option of `command` and its subcommands take plain decimal numbers
// (no octal or hex, no minus sign on an unsigned one) and every floating one finite values;
// call it once the options are added.
void add_number_checks(CLI::App& command);

}  // namespace trafo::cli
