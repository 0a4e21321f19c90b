// `trafo train --ema`: the moving average's formula and warm-up, validation and checkpoints on the
// average, and resumes that stay exact (also when --ema is switched on or off at a resume).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/model/transformer.h"
#include "trafo/train/ema.h"

namespace trafo::testing {
namespace {

using train::WeightAverage;

// A tiny model whose weights moved (by noise) after its average was taken, then one update of that average.
struct MovedModel {
  MovedModel(double decay, int64_t step) : average(*model, decay) {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p));
    average.update(step);
  }
  model::Transformer model{tiny_model_config(40)};
  WeightAverage average;
};

TEST(EmaUpdate, DecayZeroEqualsTheRawWeightsAfterAStep) {
  MovedModel moved(0.0, 1);
  const auto averaged = moved.average.named();
  ASSERT_EQ(averaged.size(), moved.model->named_parameters().size());
  for (const auto& p : moved.model->named_parameters()) {
    EXPECT_TRUE(torch::equal(averaged.at(p.key()), p.value())) << p.key();
  }
}

TEST(EmaUpdate, FollowsTheFormulaWithItsDecayWarmedUp) {
  torch::nn::Module module;
  auto w = module.register_parameter("w", torch::tensor({0.0f, 1.0f, -2.0f, 100.0f}));
  WeightAverage average(module, 0.9);
  EXPECT_DOUBLE_EQ(average.decay_at(1), 2.0 / 11.0);  // (1 + t) / (10 + t) while it is below the decay
  EXPECT_DOUBLE_EQ(average.decay_at(79), 80.0 / 89.0);
  EXPECT_DOUBLE_EQ(average.decay_at(81), 0.9);
  EXPECT_DOUBLE_EQ(average.decay_at(100000), 0.9);

  std::vector<double> expected = {0.0, 1.0, -2.0, 100.0};
  const std::vector<std::vector<float>> steps = {{4, 5, 6, 7}, {-1, 0.5, 3, 8}, {2, 2, 2, 2}};
  const std::vector<int64_t> numbers = {1, 2, 500};
  for (size_t s = 0; s < steps.size(); ++s) {
    {
      torch::NoGradGuard no_grad;
      w.copy_(torch::tensor(steps[s]));
    }
    average.update(numbers[s]);
    const double d = std::min(0.9, (1.0 + numbers[s]) / (10.0 + numbers[s]));
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = d * expected[i] + (1 - d) * steps[s][i];
    const auto got = average.named().at("w");
    EXPECT_EQ(got.scalar_type(), torch::kFloat32);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(got[i].item<double>(), expected[i], 1e-4) << "update " << s << ", element " << i;
    }
  }
}

TEST(EmaUpdate, AppliedPutsTheAverageInAndTheRawWeightsBackBitForBit) {
  MovedModel moved(0.5, 100);
  std::map<std::string, torch::Tensor> raw;
  for (const auto& p : moved.model->named_parameters()) raw.emplace(p.key(), p.value().clone());
  const auto averaged = moved.average.named();
  {
    const WeightAverage::Applied applied(moved.average);
    for (const auto& p : moved.model->named_parameters()) {
      EXPECT_TRUE(torch::equal(p.value(), averaged.at(p.key()))) << p.key();
      EXPECT_FALSE(torch::equal(p.value(), raw.at(p.key()))) << p.key();
    }
  }
  for (const auto& p : moved.model->named_parameters()) {
    EXPECT_TRUE(torch::equal(p.value(), raw.at(p.key()))) << p.key();
  }
}

const char* kEmaRun =
    " --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --batch-tokens 200 --threads 1"
    " --valid-max-sentences 0 --log-every 1 --early-stopping 0";

std::string ema_train_command(const std::filesystem::path& data, const std::filesystem::path& run, int vocab_size) {
  return "train --data-dir " + quoted(data) + " --src-lang en --tgt-lang de --run-dir " + quoted(run) + kEmaRun +
         " --vocab-size " + std::to_string(vocab_size);
}

// The raw parameters a checkpoint keeps beside its average, checked to cover every parameter.
std::map<std::string, torch::Tensor> raw_of(const checkpoint::Checkpoint& saved) {
  auto raw = train::raw_weights(*saved.training);
  for (const auto& [name, tensor] : raw) EXPECT_EQ(tensor.sizes(), saved.weights.at(name).sizes()) << name;
  return raw;
}

void expect_same_tensors(const std::map<std::string, torch::Tensor>& a, const std::map<std::string, torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) EXPECT_TRUE(torch::equal(tensor, b.at(name))) << name;
}

// Validation runs on the average (the stale-weights trap of issue #15: packed copies must be made from
// the average, and training must go on from the raw weights), and checkpoints' weights are the average.
TEST(EmaTraining, ValidationAndCheckpointsUseTheAverage) {
  const auto toy = make_temp_dir("ema-toy");
  ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(toy) + " --train 300 --dev 10 --test 10").exit_code, 0);
  const auto run = make_temp_dir("ema-run") / "run";
  const auto trained = run_trafo(ema_train_command(toy, run, 400) +
                                 " --ema 0.9 --max-steps 20 --valid-every 10 --valid-samples 10"
                                 " --keep-checkpoints 5 --lr 1e-3 --warmup-steps 1 --dropout 0");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  EXPECT_NE(trained.errors.find("moving average of the weights (--ema 0.9)"), std::string::npos) << trained.errors;
  EXPECT_EQ(read_jsonl(run / "metrics.jsonl").front()["ema"], 0.9);

  EXPECT_EQ(expect_validations_equal_fresh_evals(run, toy).size(), 2u);

  const auto saved = checkpoint::load(run / "checkpoint-last.pt");
  const auto raw = raw_of(saved);
  const auto model = checkpoint::make_model(saved, torch::kCPU);
  ASSERT_EQ(raw.size(), model->named_parameters().size());
  for (const auto& p : model->named_parameters()) {
    EXPECT_FALSE(torch::equal(saved.weights.at(p.key()), raw.at(p.key()))) << p.key() << ": no average taken";
  }
  for (const auto& b : model->named_buffers()) EXPECT_EQ(raw.count(b.key()), 0u) << b.key();
}

TEST(EmaTraining, ResumeIsBitwiseExact) {
  const auto data = make_temp_dir("ema-resume-data");
  write_synthetic_corpus(data, "train", 120, 1);
  write_synthetic_corpus(data, "dev", 10, 2);
  const auto root = make_temp_dir("ema-resume-runs");
  // fp32 in every run: auto times the CPU at start, and the runs are compared bit for bit.
  const std::string options = " --ema 0.9 --dropout 0.1 --warmup-steps 4 --valid-every 3 --precision fp32";
  ASSERT_EQ(run_trafo(ema_train_command(data, root / "whole", 300) + options + " --max-steps 7").exit_code, 0);
  ASSERT_EQ(run_trafo(ema_train_command(data, root / "part", 300) + options + " --max-steps 3").exit_code, 0);
  const auto resumed = run_trafo(ema_train_command(data, root / "part", 300) + options + " --max-steps 7");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  ASSERT_NE(resumed.errors.find("resuming"), std::string::npos) << resumed.errors;

  const auto whole = checkpoint::load(root / "whole" / "checkpoint-last.pt");
  const auto part = checkpoint::load(root / "part" / "checkpoint-last.pt");
  expect_same_tensors(whole.weights, part.weights);  // the averages
  expect_same_tensors(raw_of(whole), raw_of(part));
}

// A run saved with --ema goes on without it from its raw weights; one saved without it starts the
// average from its weights. Each resume below takes no step: it validates and saves where it stands.
TEST(EmaTraining, SwitchingEmaOnOrOffAtAResume) {
  const auto data = make_temp_dir("ema-switch-data");
  write_synthetic_corpus(data, "train", 80, 1);
  write_synthetic_corpus(data, "dev", 6, 2);
  const auto run = make_temp_dir("ema-switch-run") / "run";
  const std::string command = ema_train_command(data, run, 300) + " --max-steps 4 --warmup-steps 1";
  ASSERT_EQ(run_trafo(command + " --ema 0.9").exit_code, 0);
  const auto with_ema = checkpoint::load(run / "checkpoint-last.pt");

  const auto off = run_trafo(command + " --ema 0");
  ASSERT_EQ(off.exit_code, 0) << off.errors;
  EXPECT_NE(off.errors.find("was saved with --ema: training goes on from its raw weights"), std::string::npos)
      << off.errors;
  const auto without_ema = checkpoint::load(run / "checkpoint-last.pt");
  EXPECT_TRUE(train::raw_weights(*without_ema.training).empty());
  auto expected = with_ema.weights;
  for (const auto& [name, tensor] : raw_of(with_ema)) expected[name] = tensor;
  expect_same_tensors(without_ema.weights, expected);

  const auto on = run_trafo(command + " --ema 0.9");
  ASSERT_EQ(on.exit_code, 0) << on.errors;
  EXPECT_NE(on.errors.find("was saved without --ema: the moving average starts from its weights"), std::string::npos)
      << on.errors;
  const auto restarted = checkpoint::load(run / "checkpoint-last.pt");
  expect_same_tensors(restarted.weights, without_ema.weights);
  EXPECT_EQ(raw_of(restarted).size(), model::Transformer(restarted.model_config)->named_parameters().size());
}

TEST(EmaTraining, DecayOutsideZeroToOneIsRefused) {
  for (const std::string decay : {"1", "-0.1", "1.5"}) {
    const auto result = run_trafo("train --data-dir /nonexistent --ema " + decay);
    EXPECT_EQ(result.exit_code, 2) << decay;
    EXPECT_NE(result.errors.find("ema must be in [0, 1)"), std::string::npos) << result.errors;
  }
}

}  // namespace
}  // namespace trafo::testing
