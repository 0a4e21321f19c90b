// trafo distill: the teacher's translations, filtered, and a student trained on them (distill/).
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "trafo/distill/distill.h"
#include "trafo/run_config/options.h"

namespace trafo::cli {

CommandRunner add_distill_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "distill",
      "train a student on a teacher's translations: the teacher translates every training source with beam search "
      "(kept in chunks, resumed after a kill), its least likely translations are dropped, and the student "
      "(--preset student-tiny unless told) trains on the rest; the same command again resumes at the stage it "
      "stopped in");
  const auto bound = bind_train_options(*cmd);
  auto options = std::make_shared<distill::DistillOptions>();
  cmd->add_option("--teacher", options->teachers,
                  "the teacher's checkpoint; several (repeated, or comma-separated) are an ensemble")
      ->delimiter(',')
      ->group("Distillation")
      ->type_name("CKPT[,CKPT...]");
  cmd->add_option("--distill-beam", options->beam, "the teacher's beam")->group("Distillation")->capture_default_str();
  cmd->add_option("--distill-filter", options->filter,
                  "share of the distilled pairs dropped: those the teacher finds least likely (log-probability per "
                  "piece, as score-pairs --normalize)")
      ->group("Distillation")
      ->capture_default_str();
  cmd->add_option("--distill-mix", options->mix,
                  "none, or original: the original pairs too, as a second corpus of weight --distill-mix-weight")
      ->group("Distillation")
      ->capture_default_str();
  cmd->add_option("--distill-mix-weight", options->mix_weight, "the original pairs' weight with --distill-mix original")
      ->group("Distillation")
      ->capture_default_str();
  cmd->add_option("--distill-chunk-lines", options->chunk_lines,
                  "source lines the teacher translates per chunk: a kill loses at most one chunk")
      ->group("Distillation")
      ->capture_default_str();
  cmd->add_option("--teacher-precision", options->precision,
                  "the teacher's decoding precision, as translate's --precision: fp32, bf16 or auto (timed once a run)")
      ->group("Distillation")
      ->capture_default_str();
  return [cmd, bound, options]() -> int {
    if (!bound.settle(*cmd)) return 0;
    options->device = bound.config->machine.device;
    stop_on_signals();
    const auto result = distill::distill(*bound.config, *options, stop_flag());
    if (result.reason == "signal" && result.last_checkpoint.empty()) {
      spdlog::info("stopped by signal while the teacher translated; the chunks written are kept for the next run");
    } else {
      log_result(result);
    }
    return 0;
  };
}

}  // namespace trafo::cli
