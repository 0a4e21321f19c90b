#include "trafo/report/run_advice.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

namespace trafo::report {
namespace {

struct Validation {
  int64_t step = 0;
  double loss = 0.0, bleu = 0.0;
  bool best = false;
};

std::vector<Validation> validations_of(const RunMetrics& run) {
  std::vector<Validation> found;
  for (const auto& event : run.events) {
    if (event["event"] != "valid" || !event.contains("loss") || !event["loss"].is_number()) continue;
    Validation v;
    v.step = event["step"].get<int64_t>();
    v.loss = event["loss"].get<double>();
    v.bleu = event.contains("bleu") && event["bleu"].is_number() ? event["bleu"].get<double>() : 0.0;
    v.best = event.contains("best") && event["best"].is_boolean() && event["best"].get<bool>();
    found.push_back(v);
  }
  return found;
}

// The mean training loss of the `train` events logged at steps in (after, until]; none when none was.
std::optional<double> mean_train_loss(const RunMetrics& run, int64_t after, int64_t until) {
  double sum = 0.0;
  int count = 0;
  for (const auto& event : run.events) {
    if (event["event"] != "train" || !event.contains("loss") || !event["loss"].is_number()) continue;
    const auto step = event["step"].get<int64_t>();
    if (step <= after || step > until) continue;
    sum += event["loss"].get<double>();
    ++count;
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

std::optional<std::string> still_improving(const std::vector<Validation>& v) {
  if (v.size() < 3 || !v.back().best) return std::nullopt;
  const auto& last = v.back();
  const auto& before = v[v.size() - 3];
  return fmt::format(
      "the run ended while still improving: its last validation (step {}: BLEU {:.2f}, dev loss {:.4f}) was its "
      "best, against BLEU {:.2f} and dev loss {:.4f} at step {}; more training would likely help: resume it with a "
      "higher --max-steps, --max-time or --max-epochs",
      last.step, last.bleu, last.loss, before.bleu, before.loss, before.step);
}

std::optional<std::string> overfitting(const RunMetrics& run, const std::vector<Validation>& v) {
  size_t rises = 0;  // validations in a row, up to the last, whose dev loss rose
  while (rises + 1 < v.size() && v[v.size() - 1 - rises].loss > v[v.size() - 2 - rises].loss) ++rises;
  if (rises < 3) return std::nullopt;
  const auto& first = v[v.size() - 1 - rises];  // the validation before the rises began
  const auto& last = v.back();
  const auto earlier = mean_train_loss(run, v.size() > rises + 1 ? v[v.size() - 2 - rises].step : -1, first.step);
  const auto later = mean_train_loss(run, v[v.size() - 2].step, last.step);
  if (!earlier || !later || *later >= *earlier) return std::nullopt;
  int64_t best_step = -1;
  for (const auto& validation : v) {
    if (validation.best) best_step = validation.step;
  }
  return fmt::format(
      "the run has gone on too long: dev loss rose at each of the last {} validations ({:.4f} at step {} to {:.4f} "
      "at step {}) while the training loss fell ({:.4f} to {:.4f}): the model is learning its training data by "
      "heart; checkpoint-best.pt ({}) is the one to use, and stronger regularisation (--dropout, "
      "--label-smoothing) or more data would help",
      rises, first.loss, first.step, last.loss, last.step, *earlier, *later,
      best_step >= 0 ? "step " + std::to_string(best_step) : std::string("none yet"));
}

}  // namespace

std::vector<std::string> run_advice(const RunMetrics& run) {
  const auto v = validations_of(run);
  std::vector<std::string> advice;
  if (auto sentence = still_improving(v)) advice.push_back(std::move(*sentence));
  if (auto sentence = overfitting(run, v)) advice.push_back(std::move(*sentence));
  return advice;
}

}  // namespace trafo::report
