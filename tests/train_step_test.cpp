// The update that never waits for the host (train/train_step.h): its norm, clipping and NaN guard
// stay on the device and agree with LibTorch's clip_grad_norm_ and with an update never taken; and,
// where a CUDA device is present, the same update on CUDA and on the CPU.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "model_support.h"
#include "trafo/bench/synthetic.h"
#include "trafo/model/transformer.h"
#include "trafo/model/loss.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/shape_buckets.h"
#include "trafo/train/step_graphs.h"
#include "trafo/train/train_step.h"

namespace trafo::train {
namespace {

constexpr int64_t kVocab = 64;

data::Batch batch(int seed) { return bench::as_batch(bench::synthetic_batches(1, 300, kVocab, seed).front()); }

std::vector<torch::Tensor> copies(const model::Transformer& model) {
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

struct Trained {
  model::Transformer model{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

Trained fresh(const c10::Device& device = torch::kCPU, double dropout = 0.0) {
  torch::manual_seed(5);
  auto config = testing::tiny_model_config(kVocab);
  config.dropout = dropout;
  Trained t{model::Transformer(config), nullptr};
  t.model->to(device);
  t.model->train();
  t.optimizer = make_optimizer("adam", t.model->parameters(), 1e-3, 0.9, 0.98, 1e-9, 0.0);
  return t;
}

TEST(TrainStep, NormAndClippingAreClipGradNorms) {
  auto clipped = fresh(), plain = fresh();
  const auto b = batch(1);
  // lr 0: the weights stay, the gradients are left as the update saw them after clipping.
  const auto update = TrainStep(clipped.model, *clipped.optimizer, torch::kCPU, StepOptions{0.1, 0.5}).run({b}, 0.0);
  TrainStep(plain.model, *plain.optimizer, torch::kCPU, StepOptions{0.1, 0.0}).run({b}, 0.0);
  const double norm = torch::nn::utils::clip_grad_norm_(plain.model->parameters(), 0.5);
  ASSERT_TRUE(update.applied());
  EXPECT_GT(norm, 0.5);  // clipping did something
  EXPECT_NEAR(update.grad_norm(), norm, 1e-5 * norm);
  const auto a = clipped.model->parameters(), p = plain.model->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i].grad(), p[i].grad(), 1e-5, 1e-8)) << "parameter " << i;
  }
}

// A non-finite loss: nothing changes, the device said so, and the next update is Adam's first.
TEST(TrainStep, NonFiniteUpdateIsSkippedOnTheDeviceAndNotCounted) {
  auto t = fresh();
  TrainStep step(t.model, *t.optimizer, torch::kCPU, StepOptions{0.1, 1.0});
  auto first = t.model->parameters().front();
  const auto kept = first.detach().clone();
  {
    torch::NoGradGuard no_grad;
    first.fill_(std::numeric_limits<float>::quiet_NaN());
  }
  const auto before = copies(t.model);
  const auto skipped = step.run({batch(2)}, 1e-3);
  EXPECT_FALSE(skipped.applied());
  EXPECT_EQ(skipped.loss(), 0.0);
  EXPECT_FALSE(std::isfinite(skipped.grad_norm()));
  const auto after = copies(t.model);
  for (size_t i = 1; i < after.size(); ++i) EXPECT_TRUE(torch::equal(after[i], before[i])) << "parameter " << i;
  EXPECT_TRUE(after[0].isnan().all().item<bool>());

  // Restored, the run goes on as if the skipped update had never been tried.
  {
    torch::NoGradGuard no_grad;
    first.copy_(kept);
  }
  auto twin = fresh();
  const auto b = batch(3);
  const auto applied = step.run({b}, 1e-3);
  const auto reference = TrainStep(twin.model, *twin.optimizer, torch::kCPU, StepOptions{0.1, 1.0}).run({b}, 1e-3);
  ASSERT_TRUE(applied.applied());
  EXPECT_EQ(applied.loss(), reference.loss());
  const auto ours = copies(t.model), theirs = copies(twin.model);
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "parameter " << i;
  const auto state = optimizer_state(*t.optimizer, named_parameters(*t.model));
  for (const auto& [name, tensor] : state) {
    if (name.rfind("step/", 0) == 0) {
      EXPECT_EQ(tensor.item<int64_t>(), 1) << name;
    }
  }
}

// Figures read after later updates were queued are those of their own update.
TEST(TrainStep, FiguresReadLateAreTheirUpdates) {
  auto late = fresh(), early = fresh();
  TrainStep late_step(late.model, *late.optimizer, torch::kCPU, StepOptions{});
  TrainStep early_step(early.model, *early.optimizer, torch::kCPU, StepOptions{});
  std::vector<StepResult> queued;
  std::vector<double> read_at_once;
  for (int i = 0; i < 3; ++i) {
    queued.push_back(late_step.run({batch(10 + i)}, 1e-3));
    read_at_once.push_back(early_step.run({batch(10 + i)}, 1e-3).loss());
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(queued[i].loss(), read_at_once[i]) << "update " << i;
  EXPECT_TRUE(queued.back().figures.ready());
}

TEST(ShapeBuckets, LadderHoldsEveryLengthWithLittlePadding) {
  EXPECT_EQ(bucket_size(1), 2);
  EXPECT_EQ(bucket_size(5), 6);
  EXPECT_EQ(bucket_size(17), 20);
  EXPECT_EQ(bucket_size(64), 64);
  EXPECT_EQ(bucket_size(65), 72);
  EXPECT_EQ(bucket_size(129), 136);  // 128 + 4, rounded up to 8
  EXPECT_EQ(bucket_size(137), 144);
  int64_t steps = 0;
  for (int64_t n = 1; n <= 4096; ++n) {
    const int64_t b = bucket_size(n);
    EXPECT_GE(b, n);
    if (n > 64) {
      EXPECT_LE(b, n + n / 16 + 8) << n;  // about 3% a step, rounded to 8
    }
    if (b == n) ++steps;
  }
  EXPECT_LT(steps, 160);  // some 150 buckets for any length up to 4096
}

TEST(ShapeBuckets, PaddingAddsRowsAndColumnsButNoTargetToken) {
  const auto b = batch(4);
  const auto shape = bucket_of(shape_of(b));
  const auto padded = padded_to(b, shape);
  EXPECT_EQ(shape_of(padded), shape);
  EXPECT_EQ(padded.target_output.ne(0).sum().item<int64_t>(), b.target_output.ne(0).sum().item<int64_t>());
  EXPECT_EQ(padded.target_tokens, b.target_tokens);
  // Every added row has something to attend to.
  EXPECT_TRUE(padded.source.ne(0).any(1).all().item<bool>());
  EXPECT_TRUE(torch::equal(padded.source.narrow(0, 0, b.source.size(0)).narrow(1, 0, b.source.size(1)), b.source));
}

// A batch padded to its bucket trains as the batch itself; so does the loss over every row (CUDA's
// way) against the loss over the rows chosen on the host (the CPU's).
TEST(ShapeBuckets, PaddedBatchGivesTheSameUpdate) {
  const auto b = batch(5);
  ASSERT_FALSE(bucket_of(shape_of(b)) == shape_of(b));
  auto padded = fresh(), plain = fresh();
  StepOptions pad_options{0.1, 1.0};
  pad_options.pad_to_buckets = true;
  // lr 0: the gradients are compared (after Adam, a gradient near zero moves its weight by lr either
  // way, so weights would only show the order of additions).
  const auto with_padding = TrainStep(padded.model, *padded.optimizer, torch::kCPU, pad_options).run({b}, 0.0);
  const auto without = TrainStep(plain.model, *plain.optimizer, torch::kCPU, StepOptions{0.1, 1.0}).run({b}, 0.0);
  EXPECT_NEAR(with_padding.loss(), without.loss(), 1e-5 * without.loss());
  EXPECT_NEAR(with_padding.grad_norm(), without.grad_norm(), 1e-4 * without.grad_norm());
  const auto a = padded.model->parameters(), p = plain.model->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i].grad(), p[i].grad(), 1e-4, 1e-7)) << "parameter " << i;
  }

  auto model = fresh().model;
  const auto all_rows = model::batch_loss(model, b.source, b.target_input, b.target_output, 0.1, false);
  const auto chosen = model::batch_loss(model, b.source, b.target_input, b.target_output, 0.1, true);
  EXPECT_NEAR(all_rows.smoothed.item<double>(), chosen.smoothed.item<double>(), 1e-5 * chosen.smoothed.item<double>());
}

// On a CUDA device (none here: skipped): the update's loss, norm and weights are the CPU's within
// fp32 tolerance, and three queued updates read late agree with the CPU's.
TEST(TrainStep, CudaUpdateMatchesTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto cpu = fresh(), cuda = fresh(torch::kCUDA);
  TrainStep cpu_step(cpu.model, *cpu.optimizer, torch::kCPU, StepOptions{0.1, 1.0});
  TrainStep cuda_step(cuda.model, *cuda.optimizer, torch::kCUDA, StepOptions{0.1, 1.0});
  std::vector<StepResult> on_cuda, on_cpu;
  for (int i = 0; i < 3; ++i) {
    on_cuda.push_back(cuda_step.run({batch(20 + i)}, 1e-3));
    on_cpu.push_back(cpu_step.run({batch(20 + i)}, 1e-3));
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(on_cuda[i].applied());
    EXPECT_NEAR(on_cuda[i].loss(), on_cpu[i].loss(), 1e-4 * on_cpu[i].loss()) << "update " << i;
    EXPECT_NEAR(on_cuda[i].grad_norm(), on_cpu[i].grad_norm(), 1e-4 * on_cpu[i].grad_norm()) << "update " << i;
  }
  // Adam moves a weight by about lr whatever its gradient's size: where a gradient is all rounding
  // (the key biases: softmax ignores them) the two devices may move it either way.
  const auto a = copies(cuda.model), b = copies(cpu.model);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i].cpu(), b[i], 0.0, 6 * 1e-3)) << i;
}

// CUDA graphs (none here: skipped): two batches taken in turn, each bucket captured the second time it
// comes and replayed after; the losses and weights are those of eager steps.
TEST(StepGraphs, ReplaysTrainAsEagerStepsDo) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(StepGraphs::built());
  auto graphed = fresh(torch::kCUDA), eager = fresh(torch::kCUDA);
  StepOptions with_graphs{0.1, 1.0};
  with_graphs.cuda_graphs = true;
  StepOptions padded{0.1, 1.0};
  padded.pad_to_buckets = true;
  TrainStep graph_step(graphed.model, *graphed.optimizer, torch::kCUDA, with_graphs);
  TrainStep eager_step(eager.model, *eager.optimizer, torch::kCUDA, padded);
  const std::vector<data::Batch> batches = {batch(30), batch(31)};
  for (int i = 0; i < 6; ++i) {
    const auto& b = batches[static_cast<size_t>(i % 2)];
    const auto g = graph_step.run({b}, 1e-3), e = eager_step.run({b}, 1e-3);
    EXPECT_TRUE(g.applied()) << "update " << i;
    EXPECT_NEAR(g.loss(), e.loss(), 1e-4 * e.loss()) << "update " << i;
  }
  ASSERT_NE(graph_step.graphs(), nullptr);
  EXPECT_EQ(graph_step.graphs()->failure(), "");
  const int64_t buckets = bucket_of(shape_of(batches[0])) == bucket_of(shape_of(batches[1])) ? 1 : 2;
  EXPECT_EQ(graph_step.graphs()->captured(), buckets);
  EXPECT_EQ(graph_step.graphs()->replays(), 6 - buckets);
  const auto a = copies(graphed.model), b = copies(eager.model);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-4, 1e-5)) << "parameter " << i;
}

// Dropout under replay draws new masks: with lr 0 the weights stay, and the same batch's loss still
// changes from one replay to the next.
TEST(StepGraphs, ReplaysDrawNewDropoutMasks) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto t = fresh(torch::kCUDA, /*dropout=*/0.3);
  StepOptions options{0.1, 1.0};
  options.cuda_graphs = true;
  TrainStep step(t.model, *t.optimizer, torch::kCUDA, options);
  const auto b = batch(40);
  std::vector<double> losses;
  for (int i = 0; i < 4; ++i) losses.push_back(step.run({b}, 0.0).loss());
  ASSERT_EQ(step.graphs()->replays(), 3);
  EXPECT_NE(losses[2], losses[3]);
  EXPECT_NE(losses[1], losses[2]);
}

}  // namespace
}  // namespace trafo::train
