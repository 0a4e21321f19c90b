#include "pace_check.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "trafo/run_config/presets.h"
#include "trafo/test_hooks.h"

namespace trafo::train {
namespace {

constexpr int64_t kWarmupSteps = 5;     // the first steps pay for first touches of memory and caches
constexpr int64_t kMeasuredSteps = 10;  // fewer than this before the first checkpoint: no look
// The measurement lasts a twentieth of the budget, within these bounds.
constexpr double kShortestLook = 3.0, kLongestLook = 60.0, kLookShare = 0.05;
// A run starts again only while at least this share of the budget is left.
constexpr double kShareLeftToStartAgain = 0.5;

}  // namespace

PaceCheck::PaceCheck(bool armed, std::string chosen, double max_time_s, int64_t first_save)
    : armed_(armed && max_time_s > 0 && (chosen == "small-short" || chosen == "small-long")),
      chosen_(std::move(chosen)),
      max_time_s_(max_time_s),
      first_save_(first_save) {}

std::optional<SecondLook> PaceCheck::observe(int64_t step, double epochs, double elapsed_s) {
  if (!armed_) return std::nullopt;
  if (step < kWarmupSteps) return std::nullopt;
  if (start_step_ < 0) {
    start_step_ = step;
    start_epochs_ = epochs;
    start_s_ = elapsed_s;
    return std::nullopt;
  }
  const double look_s = std::clamp(kLookShare * max_time_s_, kShortestLook, kLongestLook);
  const bool before_save = first_save_ <= 0 || step + 1 < first_save_;
  if (before_save && elapsed_s - start_s_ < look_s) return std::nullopt;
  armed_ = false;  // one look, whatever it finds
  const double measured_s = elapsed_s - start_s_;
  if (step - start_step_ < kMeasuredSteps || measured_s <= 0) return std::nullopt;
  const auto posed = test_hooks().run_epochs_per_s;
  const double epochs_per_s = posed ? *posed : (epochs - start_epochs_) / measured_s;
  const double remaining_s = std::max(0.0, max_time_s_ - elapsed_s);
  if (remaining_s < kShareLeftToStartAgain * max_time_s_) return std::nullopt;
  const double budget_epochs = epochs_per_s * remaining_s;
  const auto* other = run_config::second_look(chosen_, budget_epochs);
  if (other == nullptr) return std::nullopt;
  return SecondLook{other->name,
                    fmt::format("--preset auto, second look: this run went through {:.3f} epochs a minute{}, so the "
                                "{:.0f} s left of --max-time buy about {:.1f} epochs, {} {:.0f}; {} was the first look",
                                60.0 * epochs_per_s, posed ? " (posed)" : "", remaining_s, budget_epochs,
                                budget_epochs < run_config::kComputeStarvedEpochs ? "under" : "not under",
                                run_config::kComputeStarvedEpochs, chosen_)};
}

}  // namespace trafo::train
