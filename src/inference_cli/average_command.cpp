// `trafo average`: the mean of the weights of several checkpoints of one run, saved as a
// checkpoint for translation (the usual last step before deploying: a free BLEU gain).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "trafo/inference_cli/commands.h"
#include "trafo/checkpoint/average.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

namespace fs = std::filesystem;

struct AverageOptions {
  std::vector<std::string> inputs;  // checkpoints, or one run folder with --last
  int64_t last = 0;                 // average the run folder's last N numbered checkpoints
  bool last_given = false;          // --last was given (any value, 0 included, is then checked)
  std::string out;
  bool force = false;               // replace an existing --out
};

int run_average(const AverageOptions& options) {
  std::vector<fs::path> paths(options.inputs.begin(), options.inputs.end());
  if (options.last_given) {
    if (options.last < 1) {
      throw InputError("--last must be 1 or more, not " + std::to_string(options.last) +
                       ": the number of newest numbered checkpoints to average");
    }
    if (paths.size() != 1) throw InputError("--last N takes one run folder, not " + std::to_string(paths.size()) + " paths");
    paths = checkpoint::last_numbered(paths.front(), options.last);
  }
  const fs::path out = options.out;
  std::vector<util::NamedPath> inputs;
  for (const auto& path : paths) inputs.push_back({"averaged checkpoint", path});
  util::refuse_overwriting("--out", out, inputs);
  if (fs::exists(fs::symlink_status(out)) && !options.force) {
    throw InputError(out.string() + " exists; use --force to replace it");
  }
  const auto averaged = checkpoint::average(paths);
  checkpoint::save(out, averaged);
  spdlog::info("wrote {}: the mean of {} checkpoints", out.string(), paths.size());
  for (const auto& path : paths) spdlog::info("  {}", path.string());
  return 0;
}

}  // namespace

CommandRunner add_average_command(CLI::App& app) {
  auto options = std::make_shared<AverageOptions>();
  CLI::App* command = app.add_subcommand(
      "average",
      "average the weights of checkpoints of one model into a new checkpoint for translation "
      "(trafo average --out avg.pt CKPT... or --last N RUN_DIR)");
  command->add_option("inputs", options->inputs, "checkpoints, or with --last one run folder")->required();
  auto* last =
      command->add_option("--last", options->last, "average the last N numbered checkpoints (checkpoint-STEP.pt) of RUN_DIR");
  command->add_option("--out,-o", options->out, "the checkpoint to write")->required();
  command->add_flag("--force", options->force, "replace --out when it exists");
  return [options, last] {
    options->last_given = last->count() > 0;
    return run_average(*options);
  };
}

}  // namespace trafo::cli
