// Training under bf16 autocast: the bf16 variants of the CPU fast paths (hashed dropout, the fused
// output projection + loss) and one whole training step, against fp32. bf16 keeps 8 bits of
// mantissa: results agree with fp32 to about 2^-8 relative, never bit for bit.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model_support.h"
#include "trafo/bench/synthetic.h"
#include "trafo/model/cast_weights.h"
#include "trafo/model/dropout.h"
#include "trafo/model/linear.h"
#include "trafo/model/loss.h"
#include "trafo/model/transformer.h"
#include "trafo/ops/eligibility.h"
#include "trafo/util/autocast.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/train_step.h"

namespace trafo::train {
namespace {

// ‖a − b‖ / ‖b‖ in fp32.
double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const auto fa = a.to(torch::kFloat), fb = b.to(torch::kFloat);
  return ((fa - fb).norm() / fb.norm().clamp_min(1e-30)).item<double>();
}

// A translate call in bf16 inside a bf16 region (attention pictures) must leave the region in bf16.
TEST(Bf16, AutocastGuardsNestAndRestoreWhatTheyFound) {
  ASSERT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  {
    util::AutocastGuard outer(true, c10::DeviceType::CPU);
    {
      util::AutocastGuard inner(true, c10::DeviceType::CPU);
      util::AutocastGuard off(false, c10::DeviceType::CPU);  // a guard not asked for changes nothing
      EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(at::autocast::get_autocast_dtype(at::kCPU), at::kBFloat16);
    EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kFloat);
}

TEST(Bf16, DropoutDrawsTheFp32MaskAndRoundsItsProduct) {
  const double p = 0.2;
  const auto x = torch::rand({300, 257}) + 0.5;  // no zeros of its own; odd width: a ragged vector tail
  const auto x16 = x.to(torch::kBFloat16).requires_grad_();
  const int64_t runs_before = ops::runs(ops::Kernel::hashed_dropout);
  torch::manual_seed(21);
  const auto y = model::dropout(x, p, true);
  torch::manual_seed(21);
  const auto y16 = model::dropout(x16, p, true);
  EXPECT_EQ(ops::runs(ops::Kernel::hashed_dropout) - runs_before, 2);  // both hashed, neither at::dropout
  ASSERT_EQ(y16.scalar_type(), torch::kBFloat16);
  const auto kept = y.ne(0);
  EXPECT_TRUE(torch::equal(y16.ne(0), kept));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  // fp32 product of the bf16 input, rounded to nearest even: LibTorch's own rounding.
  const auto expected = (x16.detach().to(torch::kFloat) * kept.to(torch::kFloat) * scale).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(y16, expected));
  (y16.to(torch::kFloat) * 3.0).sum().backward();
  EXPECT_TRUE(torch::equal(x16.grad(), (kept.to(torch::kFloat) * (3.0f * scale)).to(torch::kBFloat16)));
}

TEST(Bf16, FusedLossUnderAutocastMatchesTheUnfusedAutocastPath) {
  torch::manual_seed(22);
  const int64_t pad = 0;
  auto target = torch::randint(1, 50, {37}, torch::kLong);
  target.index_put_({torch::tensor({3, 20})}, pad);
  const auto hidden = torch::randn({37, 24}, torch::requires_grad());
  const auto weight = (0.3 * torch::randn({50, 24})).requires_grad_();
  const auto bias = (0.1 * torch::randn({50})).requires_grad_();
  const auto inputs = std::vector<torch::Tensor>{hidden, weight, bias};

  util::AutocastGuard autocast(true, c10::DeviceType::CPU);
  ASSERT_TRUE(ops::fused_loss_applies(weight));
  const int64_t runs_before = ops::runs(ops::Kernel::fused_loss);
  const auto fused = model::projected_loss(hidden, weight, bias, target, 0.1, pad, /*chunk_rows=*/8);
  EXPECT_EQ(ops::runs(ops::Kernel::fused_loss) - runs_before, 1);
  const auto fused_grads = torch::autograd::grad({fused.smoothed}, inputs);
  const auto logits = torch::linear(hidden, weight, bias);  // bf16 under autocast
  ASSERT_EQ(logits.scalar_type(), torch::kBFloat16);
  const auto plain = model::label_smoothed_loss(logits, target, 0.1, pad);
  const auto plain_grads = torch::autograd::grad({plain.smoothed}, inputs);

  EXPECT_EQ(fused.smoothed.scalar_type(), torch::kFloat);
  EXPECT_NEAR(fused.smoothed.item<double>(), plain.smoothed.item<double>(), 1e-2 * plain.smoothed.item<double>());
  EXPECT_NEAR(fused.nll.item<double>(), plain.nll.item<double>(), 1e-2 * plain.nll.item<double>());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(fused_grads[i].scalar_type(), inputs[i].scalar_type()) << "input " << i;
    EXPECT_LT(relative_error(fused_grads[i], plain_grads[i]), 2e-2) << "input " << i;
  }
}

// On CUDA the fused loss runs trafo's own kernel (src/ops/cuda/): in fp32 and under bf16 autocast,
// in one chunk and in ragged ones, its sums and gradients are those of LibTorch's log-softmax of
// at::linear's logits, padding rows included.
TEST(Bf16, CudaFusedLossMatchesTheUnfusedPath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(24);
  const int64_t pad = 0, rows = 300, vocab = 3001;  // an odd vocabulary: no row is a multiple of a vector
  const auto on_gpu = torch::TensorOptions().device(torch::kCUDA);
  auto target = torch::randint(1, vocab, {rows}, torch::kLong);
  target.index_put_({torch::tensor({int64_t{3}, int64_t{20}, rows - 1})}, pad);
  target = target.cuda();
  const auto hidden = torch::randn({rows, 64}, on_gpu).requires_grad_();
  const auto weight = (0.3 * torch::randn({vocab, 64}, on_gpu)).requires_grad_();
  const auto bias = (0.1 * torch::randn({vocab}, on_gpu)).requires_grad_();
  const auto inputs = std::vector<torch::Tensor>{hidden, weight, bias};
  for (const bool bf16 : {false, true}) {
    util::AutocastGuard autocast(bf16, c10::DeviceType::CUDA);
    if (!ops::fused_loss_applies(weight)) GTEST_SKIP() << "this build has no CUDA kernels (no nvcc)";
    const auto logits = torch::linear(hidden, weight, bias);
    ASSERT_EQ(logits.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
    const auto plain = model::label_smoothed_loss(logits, target, 0.1, pad);
    const auto plain_grads = torch::autograd::grad({plain.smoothed}, inputs);
    const double tolerance = bf16 ? 2e-2 : 1e-5;
    for (const int64_t chunk_rows : {int64_t{0}, int64_t{64}}) {
      const auto fused = model::projected_loss(hidden, weight, bias, target, 0.1, pad, chunk_rows);
      const auto grads = torch::autograd::grad({fused.smoothed}, inputs);
      const auto where = std::string(bf16 ? "bf16" : "fp32") + ", chunk rows " + std::to_string(chunk_rows);
      EXPECT_NEAR(fused.smoothed.item<double>(), plain.smoothed.item<double>(),
                  tolerance * plain.smoothed.item<double>()) << where;
      EXPECT_NEAR(fused.nll.item<double>(), plain.nll.item<double>(), tolerance * plain.nll.item<double>()) << where;
      EXPECT_EQ(fused.tokens.item<int64_t>(), rows - 3) << where;
      for (size_t i = 0; i < inputs.size(); ++i) {
        EXPECT_EQ(grads[i].scalar_type(), torch::kFloat) << where << ", input " << i;
        EXPECT_LT(relative_error(grads[i], plain_grads[i]), bf16 ? 2e-2 : 1e-4) << where << ", input " << i;
      }
      EXPECT_EQ(grads[0][3].abs().sum().item<double>(), 0.0) << where;  // a padding row gets no gradient
    }
  }
}

// CastWeights keeps autocast's numbers: a forward and backward pass under bf16 autocast gives the
// same loss and the same gradient of every parameter with the Linear layers' weights cast together
// as with autocast casting each, for a tied model and an untied one (whose output projection is a
// Linear that the loss casts itself, and that the scope leaves out). Bit for bit on the CPU; on CUDA
// (where training casts so) within bf16's rounding, as cuBLAS may choose its kernels by the
// weights' addresses.
TEST(Bf16, WeightsCastTogetherGiveAutocastsLossAndGradients) {
  std::vector<c10::Device> devices{torch::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(torch::kCUDA);
  for (const auto& device : devices) {
    const auto src = torch::tensor({{4, 5, 6, 7, 3}, {8, 9, 3, 0, 0}}, torch::kLong).to(device);
    const auto tgt_in = torch::tensor({{2, 8, 9, 10}, {2, 11, 0, 0}}, torch::kLong).to(device);
    const auto tgt_out = torch::tensor({{8, 9, 10, 3}, {11, 3, 0, 0}}, torch::kLong).to(device);
    for (const bool tie : {true, false}) {
      auto config = testing::tiny_model_config(40);
      config.tie_embeddings = tie;
      torch::manual_seed(25);
      model::Transformer model(config);
      model->to(device);
      model->train();
      const auto pass = [&](bool together) {
        model->zero_grad();
        torch::Tensor loss;
        {
          util::AutocastGuard autocast(true, device.type());
          std::optional<model::CastWeights> cast;
          if (together) cast.emplace(*model, torch::kBFloat16, model->output_weight());
          loss = model::batch_loss(model, src, tgt_in, tgt_out, 0.1, !device.is_cuda()).smoothed;
        }
        loss.backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : model->parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
        return std::pair{loss.detach(), grads};
      };
      const auto [loss, grads] = pass(false);
      const auto [together_loss, together_grads] = pass(true);
      const auto where = device.str() + (tie ? ", tied" : ", untied");
      const auto names = model->named_parameters().keys();
      if (device.is_cpu()) {
        EXPECT_TRUE(torch::equal(together_loss, loss)) << together_loss << " against " << loss << ", " << where;
      } else {
        EXPECT_LT(relative_error(together_loss, loss), 1e-2) << where;
      }
      for (size_t i = 0; i < grads.size(); ++i) {
        ASSERT_TRUE(grads[i].defined() && together_grads[i].defined()) << names[i] << ", " << where;
        EXPECT_EQ(together_grads[i].scalar_type(), torch::kFloat) << names[i];
        if (device.is_cpu()) {
          EXPECT_TRUE(torch::equal(together_grads[i], grads[i])) << names[i] << ", " << where;
        } else {
          EXPECT_LT(relative_error(together_grads[i], grads[i]), 2e-2) << names[i] << ", " << where;
        }
      }
    }
  }
}

// A Linear that a pass does not use (a layer LayerDrop skipped) keeps no gradient under CastWeights,
// as under autocast's own casts, so that the optimizer leaves it alone.
TEST(Bf16, AWeightCastTogetherButUnusedGetsNoGradient) {
  struct Two : torch::nn::Module {
    model::Linear used{register_module("used", model::Linear(4, 3))};
    model::Linear unused{register_module("unused", model::Linear(4, 3))};
  } two;
  torch::Tensor y;
  {
    util::AutocastGuard autocast(true, c10::DeviceType::CPU);
    model::CastWeights cast(two, torch::kBFloat16, torch::Tensor());
    y = two.used->forward(torch::randn({2, 4}));
  }
  ASSERT_EQ(y.scalar_type(), torch::kBFloat16);
  y.to(torch::kFloat).sum().backward();
  ASSERT_TRUE(two.used->weight.grad().defined() && two.used->bias.grad().defined());
  EXPECT_EQ(two.used->weight.grad().scalar_type(), torch::kFloat);
  EXPECT_FALSE(two.unused->weight.grad().defined());
  EXPECT_FALSE(two.unused->bias.grad().defined());
}

// One TrainStep, the update `trafo train` runs, of two copies of a tiny model (dropout on), in fp32
// and under bf16 autocast, with a learning rate of 0: the loss and every parameter's gradient.
TEST(Bf16, TrainingStepMatchesFp32WithinBf16Tolerance) {
  auto config = testing::tiny_model_config(64);
  config.dropout = 0.1;
  const auto batch = bench::as_batch(bench::synthetic_batches(1, 400, config.vocab_size, 5).front());
  struct Run {
    double loss;
    std::vector<torch::Tensor> grads;
  };
  auto step = [&](bool bf16) {
    torch::manual_seed(23);
    model::Transformer model(config);
    auto optimizer = make_optimizer("adam", model->parameters(), 0.0, 0.9, 0.98, 1e-9, 0.0);
    model->train();
    TrainStep train_step(model, *optimizer, torch::kCPU, StepOptions{0.1, 0.0, bf16});
    torch::manual_seed(24);  // the same dropout masks in both runs
    const auto result = train_step.run({batch}, 0.0);
    EXPECT_TRUE(result.applied());
    Run run{result.loss() / static_cast<double>(result.target_tokens), {}};
    for (const auto& parameter : model->parameters()) run.grads.push_back(parameter.grad().clone());
    return run;
  };
  const int64_t dropout_runs = ops::runs(ops::Kernel::hashed_dropout);
  const int64_t loss_runs = ops::runs(ops::Kernel::fused_loss);
  const auto fp32 = step(false);
  const auto bf16 = step(true);
  EXPECT_GT(ops::runs(ops::Kernel::fused_loss) - loss_runs, 1);  // fused in both, no fallback under autocast
  EXPECT_GT(ops::runs(ops::Kernel::hashed_dropout) - dropout_runs, 2 * 10);

  EXPECT_NEAR(bf16.loss, fp32.loss, 1e-2 * fp32.loss);
  ASSERT_EQ(bf16.grads.size(), fp32.grads.size());
  std::vector<torch::Tensor> flat16, flat32;
  for (size_t i = 0; i < fp32.grads.size(); ++i) {
    EXPECT_EQ(bf16.grads[i].scalar_type(), torch::kFloat) << "parameter " << i;  // fp32 master gradients
    // Per parameter: the direction (a small gradient summed from large terms keeps less than 8 bits)
    const double cosine = torch::cosine_similarity(bf16.grads[i].flatten(), fp32.grads[i].flatten(), 0).item<double>();
    EXPECT_GT(cosine, 0.99) << "parameter " << i << ", relative error " << relative_error(bf16.grads[i], fp32.grads[i]);
    flat16.push_back(bf16.grads[i].flatten());
    flat32.push_back(fp32.grads[i].flatten());
  }
  // The whole gradient, as the optimizer and the clipping see it: 3% here, rounding to 8 bits through
  // 4 layers forward and back (2^-8 = 0.4% a rounding); a wrong mask, scale or cast would be O(1).
  EXPECT_LT(relative_error(torch::cat(flat16), torch::cat(flat32)), 5e-2);
}

}  // namespace
}  // namespace trafo::train
