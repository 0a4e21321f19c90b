#include "run_report.h"

#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "trafo/errors.h"
#include "trafo/report/metrics_reader.h"
#include "trafo/report/run_advice.h"
#include "trafo/train/step_graphs.h"

namespace trafo::train {

nlohmann::json report_validation(int64_t step, const ValidationResult& result, bool best) {
  nlohmann::json fields = {{"loss", result.loss}, {"ppl", result.ppl}, {"bleu", result.bleu}, {"chrf", result.chrf},
                           {"repetition_loops", result.repetition_loops}, {"best", best}, {"samples", result.samples}};
  if (!result.directions.empty()) fields["directions"] = result.directions;
  spdlog::info("valid step {} | loss {:.4f} | ppl {:.2f} | bleu {:.2f} | chrf {:.2f} | loops {}{}{}", step, result.loss,
               result.ppl, result.bleu, result.chrf, result.repetition_loops,
               result.directions.empty() ? "" : " (macro average)", best ? " | best" : "");
  for (const auto& [name, figures] : result.directions.items()) {
    spdlog::info("  {} | loss {:.4f} | bleu {:.2f} | chrf {:.2f}", name, figures["loss"].get<double>(),
                 figures["bleu"].get<double>(), figures["chrf"].get<double>());
  }
  for (const auto& sample : result.samples) {
    spdlog::info("  src: {}\n  ref: {}\n  hyp: {}", sample["src"].get<std::string>(), sample["ref"].get<std::string>(),
                 sample["hyp"].get<std::string>());
  }
  return fields;
}

void report_advice(const std::filesystem::path& folder, nlohmann::json& end) {
  std::vector<std::string> advice;
  try {
    advice = report::run_advice(report::read_run(folder));
  } catch (const InputError&) {
    return;
  }
  for (const auto& sentence : advice) spdlog::info("{}", sentence);
  if (!advice.empty()) end["advice"] = advice;
}

void report_pace(double queue_s, double wait_s, bool cuda, const StepGraphs* graphs, int64_t steps,
                 nlohmann::json& end) {
  // On a CPU a step runs while it is queued, so there the wait is near 0 and says nothing.
  end["queue_s"] = queue_s;
  end["device_wait_s"] = wait_s;
  // Eager CUDA steps launch thousands of kernels, and a full launch queue blocks the host while it
  // queues: only where most steps were replayed graphs does the split say who set the pace.
  if (cuda && queue_s + wait_s > 0) {
    const double waited = wait_s / (queue_s + wait_s);
    const bool replayed = graphs != nullptr && 2 * graphs->replays() > steps;
    spdlog::info("the host spent {:.1f} s preparing and queueing steps and {:.1f} s waiting for the GPU ({:.0f}%){}",
                 queue_s, wait_s, 100.0 * waited,
                 !replayed         ? ""
                 : waited >= 0.5 ? ": the GPU set the pace"
                                 : ": the host set the pace (batching and queueing, not the GPU)");
  }
  if (graphs != nullptr) {
    spdlog::info("CUDA graphs: {} shape buckets captured, {} steps replayed{}", graphs->captured(), graphs->replays(),
                 graphs->failure().empty() ? "" : "; captures stopped: " + graphs->failure());
  }
}

}  // namespace trafo::train
