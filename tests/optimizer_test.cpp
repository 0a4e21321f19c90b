// The fused Adam/AdamW against LibTorch's own, and its state across save and load.
#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/training_state.h"

namespace trafo::train {
namespace {

constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.98;
constexpr double kEps = 1e-8;
constexpr int64_t kSteps = 20;

struct Variant {
  std::string name;  // adam or adamw
  double weight_decay;
};

void PrintTo(const Variant& v, std::ostream* out) { *out << v.name << " weight_decay=" << v.weight_decay; }

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return info.param.name + (info.param.weight_decay > 0 ? "_decay" : "_no_decay");
}

// Weights of a 5→6→3 tanh MLP, and one tensor the loss never uses (it gets no gradient).
std::vector<torch::Tensor> initial_weights() {
  torch::manual_seed(7);
  return {torch::randn({6, 5}) * 0.5, torch::randn({6}) * 0.1, torch::randn({3, 6}) * 0.5, torch::randn({3}) * 0.1,
          torch::randn({4})};
}

std::vector<torch::Tensor> trainable_copy(const std::vector<torch::Tensor>& weights) {
  std::vector<torch::Tensor> copy;
  for (const auto& w : weights) copy.push_back(w.detach().clone().requires_grad_(true));
  return copy;
}

// Changes every step, as the trainer's warm-up and decay do.
double lr_at(int64_t step) { return 1e-2 * (1.0 + 0.5 * std::sin(static_cast<double>(step))); }

// Steps [first, last) of a regression on batches fixed by the step number.
// With `skip_at`, the step of that number is tried and skipped on the device (SkippableStep), as the
// NaN guard skips a non-finite update.
void train(torch::optim::Optimizer& optimizer, int64_t first, int64_t last, int64_t skip_at = -1) {
  const auto& w = optimizer.param_groups().at(0).params();
  for (int64_t step = first; step < last; ++step) {
    for (auto& group : optimizer.param_groups()) group.options().set_lr(lr_at(step));
    torch::manual_seed(100 + step);
    const auto x = torch::randn({16, 5});  // [B,5]
    const auto y = torch::randn({16, 3});  // [B,3]
    const auto prediction = torch::linear(torch::tanh(torch::linear(x, w[0], w[1])), w[2], w[3]);
    optimizer.zero_grad(true);
    torch::mse_loss(prediction, y).backward();
    if (step == skip_at) {
      dynamic_cast<SkippableStep&>(optimizer).step_unless(torch::ones({}));
    } else {
      optimizer.step();
    }
  }
}

std::unique_ptr<torch::optim::Optimizer> fused(const Variant& v, std::vector<torch::Tensor> params) {
  return make_optimizer(v.name, std::move(params), lr_at(0), kBeta1, kBeta2, kEps, v.weight_decay);
}

std::unique_ptr<torch::optim::Optimizer> libtorch(const Variant& v, std::vector<torch::Tensor> params) {
  const auto betas = std::make_tuple(kBeta1, kBeta2);
  if (v.name == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        std::move(params), torch::optim::AdamWOptions(lr_at(0)).betas(betas).eps(kEps).weight_decay(v.weight_decay));
  }
  return std::make_unique<torch::optim::Adam>(
      std::move(params), torch::optim::AdamOptions(lr_at(0)).betas(betas).eps(kEps).weight_decay(v.weight_decay));
}

using MakeOptimizer = std::unique_ptr<torch::optim::Optimizer> (*)(const Variant&, std::vector<torch::Tensor>);

struct ResumeComparison {
  std::vector<torch::Tensor> uninterrupted;  // kSteps with `make`'s optimizer
  std::vector<torch::Tensor> resumed;        // kSteps/2 with it, then its state into a fresh fused one
};

// The resumed half goes through a checkpoint's training state, as the trainer's resume does.
ResumeComparison run_uninterrupted_and_resumed(MakeOptimizer make, const Variant& v) {
  ResumeComparison runs;
  runs.uninterrupted = trainable_copy(initial_weights());
  train(*make(v, runs.uninterrupted), 0, kSteps);

  const auto first_half = trainable_copy(initial_weights());
  auto interrupted = make(v, first_half);
  train(*interrupted, 0, kSteps / 2);
  runs.resumed = trainable_copy(first_half);
  auto resumed = fused(v, runs.resumed);
  auto named = [](const std::vector<torch::Tensor>& params) {
    NamedParameters out;
    for (size_t i = 0; i < params.size(); ++i) out.emplace_back("w" + std::to_string(i), params[i]);
    return out;
  };
  unpack_training_state(pack_training_state(Progress{}, *interrupted, named(first_half)), *resumed,
                        named(runs.resumed));
  train(*resumed, kSteps / 2, kSteps);
  return runs;
}

// Relative to the tensor's largest weight: the two differ by float rounding (the kernel's lerp and
// fused multiply-add against LibTorch's mul_, add_, addcdiv_), a few ulp per step, and an
// element-wise ratio is meaningless for a weight that passes near zero.
void expect_close(const std::vector<torch::Tensor>& actual, const std::vector<torch::Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    const auto difference = (actual[i] - expected[i]).abs().max() / expected[i].abs().max();
    EXPECT_LE(difference.item<double>(), 1e-6) << "weight " << i;
  }
}

void expect_equal(const std::vector<torch::Tensor>& actual, const std::vector<torch::Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_TRUE(torch::equal(actual[i], expected[i])) << "weight " << i;
}

class FusedAdamTest : public ::testing::TestWithParam<Variant> {};

TEST_P(FusedAdamTest, MatchesLibTorchOptimizer) {
  const auto start = initial_weights();
  auto fused_params = trainable_copy(start);
  auto libtorch_params = trainable_copy(start);
  auto fused_optimizer = fused(GetParam(), fused_params);
  auto libtorch_optimizer = libtorch(GetParam(), libtorch_params);
  train(*fused_optimizer, 0, kSteps);
  train(*libtorch_optimizer, 0, kSteps);
  expect_close(fused_params, libtorch_params);
  EXPECT_FALSE(torch::equal(fused_params[0], start[0]));
  EXPECT_TRUE(torch::equal(fused_params[4], start[4]));  // no gradient, no update, not even decay
}

TEST_P(FusedAdamTest, ResumedRunEqualsUninterruptedOne) {
  const auto runs = run_uninterrupted_and_resumed(&fused, GetParam());
  expect_equal(runs.resumed, runs.uninterrupted);
}

TEST_P(FusedAdamTest, LoadsStateSavedByLibTorchOptimizer) {
  const auto runs = run_uninterrupted_and_resumed(&libtorch, GetParam());
  expect_close(runs.resumed, runs.uninterrupted);
}

// A step the device skips changes no weight and no moment, and does not count: the run equals one
// that never tried it, and its checkpointed step counts are the applied steps.
TEST_P(FusedAdamTest, SkippedStepChangesNothingAndIsNotCounted) {
  auto skipping = trainable_copy(initial_weights()), plain = trainable_copy(initial_weights());
  auto skipping_optimizer = fused(GetParam(), skipping), plain_optimizer = fused(GetParam(), plain);
  train(*skipping_optimizer, 0, kSteps / 2);
  train(*plain_optimizer, 0, kSteps / 2);
  const auto before = trainable_copy(skipping);
  train(*skipping_optimizer, kSteps / 2, kSteps / 2 + 1, /*skip_at=*/kSteps / 2);
  expect_equal(skipping, before);
  train(*skipping_optimizer, kSteps / 2 + 1, kSteps);
  train(*plain_optimizer, kSteps / 2 + 1, kSteps);
  expect_equal(skipping, plain);
  NamedParameters named;
  for (size_t i = 0; i < skipping.size(); ++i) named.emplace_back("w" + std::to_string(i), skipping[i]);
  const auto state = optimizer_state(*skipping_optimizer, named);
  EXPECT_EQ(state.at("step/w0").item<int64_t>(), kSteps - 1);
  EXPECT_EQ(state.count("step/w4"), 0U);  // never had a gradient
}

INSTANTIATE_TEST_SUITE_P(Variants, FusedAdamTest,
                         ::testing::Values(Variant{"adam", 0.0}, Variant{"adam", 0.1}, Variant{"adamw", 0.0},
                                           Variant{"adamw", 0.1}),
                         variant_name);

TEST(MakeOptimizer, ReturnsLibTorchClassesAndRejectsOtherNames) {
  const auto params = trainable_copy(initial_weights());
  EXPECT_NE(dynamic_cast<torch::optim::Adam*>(make_optimizer("adam", params, 1e-3, 0.9, 0.98, 1e-9, 0).get()), nullptr);
  EXPECT_NE(dynamic_cast<torch::optim::AdamW*>(make_optimizer("adamw", params, 1e-3, 0.9, 0.98, 1e-9, 0).get()),
            nullptr);
  EXPECT_THROW(make_optimizer("sgd", params, 1e-3, 0.9, 0.98, 1e-9, 0), InputError);
}

}  // namespace
}  // namespace trafo::train
