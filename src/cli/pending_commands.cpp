// Subcommands not written yet: they say so.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "trafo/errors.h"

namespace trafo::cli {
namespace {
CommandRunner pending(CLI::App& app, const char* name) {
  app.add_subcommand(name, std::string(name) + " (not available yet)");
  return [name]() -> int { throw InputError(std::string(name) + " is not available yet"); };
}
}  // namespace
CommandRunner add_train_command(CLI::App& app) { return pending(app, "train"); }
CommandRunner add_eval_command(CLI::App& app) { return pending(app, "eval"); }
CommandRunner add_translate_command(CLI::App& app) { return pending(app, "translate"); }
}  // namespace trafo::cli
