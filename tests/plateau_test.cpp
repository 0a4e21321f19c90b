// Early stopping on a plateau, not on noise (train::watch_plateau): the count of validations
// without improvement follows the mean of the last three, so one lucky validation does not end a
// run that is still improving on average, while a real plateau still stops it. The window goes
// through a checkpoint's training state, so that a resumed run counts on where it stood.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "trafo/train/optimizer.h"
#include "trafo/train/training_state.h"

namespace trafo::train {
namespace {

constexpr int64_t kPatience = 8;

// The validation at which a run with patience kPatience stops (1-based), or 0 when it never does.
int stops_at(const std::vector<double>& values, const std::string& metric = "bleu") {
  Progress progress;
  for (size_t i = 0; i < values.size(); ++i) {
    watch_plateau(progress, metric, values[i]);
    const bool raw_best = progress.best_step < 0 ||
                          (metric == "loss" ? values[i] < progress.best_metric : values[i] > progress.best_metric);
    if (raw_best) {
      progress.best_metric = values[i];
      progress.best_step = static_cast<int64_t>(i);
    }
    if (progress.bad_validations >= kPatience) return static_cast<int>(i) + 1;
  }
  return 0;
}

// A lucky validation early on (+3 over the trend), then dev BLEU rising by 0.2 a validation: counting
// from the raw best would stop the run at the eleventh validation (the trend passes 33 at the
// nineteenth); the mean of three is beaten again by the eleventh.
TEST(Plateau, ALuckyValidationDoesNotStopARunStillImproving) {
  std::vector<double> bleu = {29.0, 30.0, 33.0};
  for (int i = 1; i <= 20; ++i) bleu.push_back(30.0 + 0.2 * i);
  EXPECT_EQ(stops_at(bleu), 0);
}

// Noise of ±1 around a flat line, and a loss that stops falling: both stop within the patience
// and the window.
TEST(Plateau, APlateauWithNoiseStillStops) {
  std::vector<double> bleu;
  for (int i = 0; i < 40; ++i) bleu.push_back(30.0 + (i % 2 == 0 ? -1.0 : 1.0));
  const int stopped = stops_at(bleu);
  EXPECT_GT(stopped, static_cast<int>(kPatience));
  EXPECT_LE(stopped, static_cast<int>(kPatience + kSmoothedValidations + 1));

  std::vector<double> loss = {5.0, 4.0, 3.5, 3.2, 3.1};
  for (int i = 0; i < 30; ++i) loss.push_back(3.1 + (i % 3) * 0.05);
  EXPECT_GT(stops_at(loss, "loss"), 5);
  EXPECT_LE(stops_at(loss, "loss"), 5 + static_cast<int>(kPatience + kSmoothedValidations));
  EXPECT_EQ(stops_at({5.0, 4.0, 3.0, 2.0, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1}, "loss"), 0);
}

TEST(Plateau, TheWindowGoesThroughATrainingState) {
  auto weight = torch::zeros({2}, torch::requires_grad());
  auto optimizer = make_optimizer("adam", {weight}, 1e-3, 0.9, 0.98, 1e-9, 0.0);
  Progress progress;
  for (const double value : {30.0, 31.0, 29.5, 30.2}) {
    watch_plateau(progress, "bleu", value);
    if (progress.best_step < 0 || value > progress.best_metric) {
      progress.best_metric = value;
      progress.best_step = 1;
    }
  }
  const NamedParameters named = {{"w", weight}};
  const auto back = unpack_training_state(pack_training_state(progress, *optimizer, named), *optimizer, named);
  EXPECT_EQ(back.recent, progress.recent);
  EXPECT_EQ(back.best_smoothed, progress.best_smoothed);
  EXPECT_EQ(back.bad_validations, progress.bad_validations);
  EXPECT_EQ(back.recent, (std::vector<double>{31.0, 29.5, 30.2}));
}

}  // namespace
}  // namespace trafo::train
