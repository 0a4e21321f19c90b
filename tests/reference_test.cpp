// trafo against PyTorch Python fed the same weights and batches (llm.c's style of reference test):
// tests/reference/transformer_reference.py rebuilds the model from torch.nn pieces in float64 and
// reports differences; the tolerances, and why, are the constants below. Per variant:
//   - logits of one batch with padding;
//   - the label-smoothed loss the trainer backpropagates, and the gradient of every parameter after
//     one backward: through the fused output projection and loss that batch_loss runs on the CPU
//     in fp32, so its hand-written gradient is checked against autograd through F.cross_entropy;
//   - 10 training steps by train::TrainStep, the trainer's own update (Adam or AdamW, clipping, the
//     warmup schedule), against torch.optim: the loss of each step, the parameters after the last.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model_support.h"
#include "test_support.h"
#include "trafo/bench/synthetic.h"
#include "trafo/data/batcher.h"
#include "trafo/model/transformer.h"
#include "trafo/train/optimizer.h"
#include "trafo/run_config/options.h"
#include "trafo/train/schedule.h"
#include "trafo/train/train_step.h"

namespace trafo::model {
namespace {

using trafo::testing::run_command;
using Named = c10::Dict<std::string, at::Tensor>;
using Record = c10::impl::GenericDict;  // str -> anything

Record make_record() { return Record(c10::StringType::get(), c10::AnyType::get()); }

constexpr int kReferenceSteps = 10;
constexpr int64_t kBatchTokens = 300;  // rows × longest ≤ 300, lengths 4 to 52, with padding

// Tolerances. trafo computes in fp32 (unit roundoff u = 6e-8), the reference in float64, so a
// difference is trafo's rounding (or a bug). Largest seen over the variants in brackets; the test
// prints the share of each tolerance used.
// Logits, O(1): sums of 32 to 64 products through 4 layers [1.4e-6].
constexpr double kLogits = 1e-5;  // max |Δ| over real target positions
// Losses: fp32 sums over ~300 target tokens, bounded by 300u = 2e-5, typically √300·u = 1e-6
// [1.7e-7 one batch; 3e-7 over the steps]. Fairseq's smoothing (ε/(V−1) on the other tokens, not
// ε/V on all) moves the loss by 1.5e-5, and every gradient by up to 24 times its tolerance.
constexpr double kLoss = 1e-5;  // |Δ| / loss, of the one batch and of each training step
// trafo's definition of the smoothed loss (docs/design.md "Loss and perplexity") is PyTorch's: both in float64.
constexpr double kDefinition = 1e-12;
// Gradients, against each parameter's largest [1.5e-6]: every gradient 0.1% off fails (by 10
// times the tolerance), as does fairseq's smoothing in the fused loss gradient (above).
constexpr double kGradient = 1e-4;  // max |Δ| / max |gradient|, per parameter
// Parameters after the steps, against how far they moved (2-norms per parameter): Adam's steps
// are about lr whatever the gradient's size, so rounding in a nearly cancelling gradient element
// shows in its step; PyTorch's own fp32 run differs from float64 as much [1.4e-4, both].
constexpr double kParameter = 1e-3;  // ‖Δ‖ / ‖movement over the steps‖, per parameter

struct Case {
  std::string norm;
  std::string activation;
  bool tie;
  std::string optimizer;  // the training steps': adam | adamw
  double weight_decay;
  std::string name() const { return norm + "_" + activation + (tie ? "_tied_" : "_untied_") + optimizer; }
};
void PrintTo(const Case& c, std::ostream* out) { *out << c.name() << " weight_decay " << c.weight_decay; }

// A tiny model: d_model 32, 4 heads, 2+2 layers, vocabulary 64, no dropout.
ModelConfig model_config(const Case& c) {
  auto config = trafo::testing::tiny_model_config(64);
  config.d_model = 32;
  config.heads = 4;
  config.d_ff = 64;
  config.norm = c.norm;
  config.activation = c.activation;
  config.tie_embeddings = c.tie;
  return config;
}

// The trainer's defaults (run_config/options.h: betas 0.9 and 0.98, eps 1e-9, clip 1, label smoothing
// 0.1), but a warmup of 4 steps to a peak of 3e-3, so that the steps run through warmup and decay.
// (At 1e-2 post-norm ReLU units die within the 10 steps and fp32 runs, PyTorch's too, stray 1e-3.)
run_config::TrainConfig training_config(const Case& c) {
  run_config::TrainConfig config;
  config.optim.optimizer = c.optimizer;
  config.optim.weight_decay = c.weight_decay;
  config.optim.lr = 3e-3;
  config.optim.warmup_steps = 4;
  return config;
}

Named cloned(const torch::OrderedDict<std::string, at::Tensor>& tensors) {
  Named out;
  for (const auto& item : tensors) out.insert(item.key(), item.value().detach().clone());
  return out;
}

Named gradients(const Transformer& model) {
  Named out;
  for (const auto& item : model->named_parameters()) out.insert(item.key(), item.value().grad().clone());
  return out;
}

Named tensors_of(const bench::SyntheticBatch& batch) {
  Named tensors;
  tensors.insert("src", batch.source);
  tensors.insert("tgt_in", batch.target_input);
  tensors.insert("tgt_out", batch.target_output);
  return tensors;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(Transformer& model, const run_config::TrainConfig& c) {
  return train::make_optimizer(c.optim.optimizer, model->parameters(), c.optim.lr, c.optim.adam_beta1,
                               c.optim.adam_beta2, c.optim.adam_eps, c.optim.weight_decay);
}

// trafo's logits, loss per target token and gradients on one batch. The gradients are those of the
// trainer's update (TrainStep, on the CPU in fp32: batch_loss's fused path), unclipped, with lr 0
// so that the weights stay.
Record one_batch(Transformer& model, const bench::SyntheticBatch& batch, const run_config::TrainConfig& c) {
  auto record = make_record();
  for (const auto& item : tensors_of(batch)) record.insert(item.key(), item.value());
  {
    torch::NoGradGuard no_grad;
    model->eval();
    record.insert("logits", model(batch.source, batch.target_input));
    model->train();
  }
  const auto weights = cloned(model->named_parameters());
  auto optimizer = make_optimizer(model, c);
  train::TrainStep step(model, *optimizer, torch::kCPU, train::StepOptions{c.optim.label_smoothing, /*clip_norm=*/0.0});
  const auto update = step.run({bench::as_batch(batch)}, /*lr=*/0.0);
  EXPECT_TRUE(update.applied());
  for (const auto& item : model->named_parameters()) EXPECT_TRUE(torch::equal(item.value(), weights.at(item.key())));
  record.insert("smoothed", update.loss() / static_cast<double>(update.target_tokens));
  record.insert("gradients", gradients(model));
  model->zero_grad(true);
  return record;
}

// Trains `model` on `batches`, one TrainStep each with the trainer's options and the schedule's lr
// (as train::Trainer does): the hyper-parameters, the batches, each step's loss per target token
// (before its update) and the parameters after.
Record training(Transformer& model, const std::vector<bench::SyntheticBatch>& batches, const run_config::TrainConfig& c) {
  auto record = make_record();
  record.insert("optimizer", c.optim.optimizer);
  record.insert("lr", c.optim.lr);
  record.insert("warmup_steps", c.optim.warmup_steps);
  record.insert("beta1", c.optim.adam_beta1);
  record.insert("beta2", c.optim.adam_beta2);
  record.insert("eps", c.optim.adam_eps);
  record.insert("weight_decay", c.optim.weight_decay);
  record.insert("clip_norm", c.optim.clip_norm);
  record.insert("label_smoothing", c.optim.label_smoothing);
  auto optimizer = make_optimizer(model, c);
  train::TrainStep step(model, *optimizer, torch::kCPU, train::StepOptions{c.optim.label_smoothing, c.optim.clip_norm});
  std::vector<double> losses;
  c10::List<Named> inputs;
  for (size_t i = 0; i < batches.size(); ++i) {
    inputs.push_back(tensors_of(batches[i]));
    const double lr = train::inverse_sqrt_lr(i + 1, c.optim.lr, c.optim.warmup_steps);
    const auto update = step.run({bench::as_batch(batches[i])}, lr);
    EXPECT_TRUE(update.applied()) << "step " << i + 1;
    losses.push_back(update.loss() / static_cast<double>(update.target_tokens));
  }
  record.insert("batches", inputs);
  record.insert("losses", torch::tensor(losses, torch::kDouble));
  record.insert("parameters", cloned(model->named_parameters()));
  return record;
}

// Runs the reference on `record`; its report of differences.
nlohmann::json reference_report(const Record& record, const ModelConfig& config) {
  const auto dir = trafo::testing::make_temp_dir("reference");
  const auto bytes = torch::pickle_save(c10::IValue(record));
  trafo::testing::write_text(dir / "case.pt", std::string(bytes.begin(), bytes.end()));
  trafo::testing::write_text(dir / "config.json", to_json(config).dump());
  const auto result = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                  "/tests/reference/transformer_reference.py' '" + (dir / "case.pt").string() + "' '" +
                                  (dir / "config.json").string() + "'");
  EXPECT_EQ(result.exit_code, 0) << result.errors;
  return result.exit_code == 0 ? nlohmann::json::parse(result.output) : nlohmann::json::object();
}

double relative(const nlohmann::json& pair) {
  const double reference = pair.at("reference").get<double>();
  return std::abs(pair.at("trafo").get<double>() - reference) / std::abs(reference);
}

bool has_padding(const at::Tensor& tokens) { return tokens.eq(0).any().item<bool>(); }

// Expects each difference within its tolerance; keeps, per check, the largest share of it used.
class Checks {
 public:
  void expect(const std::string& check, double difference, double tolerance, const std::string& what = "") {
    EXPECT_LE(difference, tolerance) << check << " " << what;
    used_[check] = std::max(used_[check], difference / tolerance);
  }
  std::string summary() const {
    std::string line = "share of each tolerance used:";
    for (const auto& [check, used] : used_) line += " " + check + " " + std::to_string(used);
    return line;
  }

 private:
  std::map<std::string, double> used_;
};

class ReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceTest, LogitsLossGradientsAndTrainingStepsMatchPyTorch) {
  TRAFO_REQUIRE_PYTHON_MODULE("torch");
  at::set_num_threads(1);
  const auto config = model_config(GetParam());
  const auto train_config = training_config(GetParam());
  const auto batches = bench::synthetic_batches(kReferenceSteps + 1, kBatchTokens, config.vocab_size, /*seed=*/5);
  ASSERT_EQ(batches.size(), static_cast<size_t>(kReferenceSteps + 1));
  ASSERT_TRUE(has_padding(batches[0].source) && has_padding(batches[0].target_output));
  torch::manual_seed(11);
  Transformer model(config);

  auto record = make_record();
  record.insert("weights", cloned(model->named_parameters()));
  record.insert("buffers", cloned(model->named_buffers()));
  record.insert("batch", one_batch(model, batches[0], train_config));
  record.insert("training", training(model, {batches.begin() + 1, batches.end()}, train_config));
  const auto report = reference_report(record, config);
  ASSERT_FALSE(report.empty());
  // Every parameter of trafo has its counterpart, and no other parameter trains in the reference.
  ASSERT_EQ(report.at("missing").size() + report.at("extra").size(), 0u) << report.dump();
  ASSERT_EQ(report.at("gradients").size(), model->named_parameters().size());
  ASSERT_EQ(report.at("steps").size(), static_cast<size_t>(kReferenceSteps));

  Checks checks;
  checks.expect("logits", report.at("logits").get<double>(), kLogits);
  checks.expect("loss", relative(report.at("smoothed")), kLoss, report.at("smoothed").dump());
  checks.expect("definition", report.at("definition").get<double>(), kDefinition);
  for (const auto& [name, gradient] : report.at("gradients").items()) {
    checks.expect("gradients", gradient.at("difference").get<double>(), kGradient * gradient.at("scale").get<double>(),
                  name + " " + gradient.dump());
  }
  for (size_t step = 0; step < kReferenceSteps; ++step) {
    const auto& losses = report.at("steps")[step];
    checks.expect("step_losses", relative(losses), kLoss, "step " + std::to_string(step + 1) + " " + losses.dump());
  }
  for (const auto& [name, parameter] : report.at("parameters").items()) {
    checks.expect("parameters", parameter.at("difference").get<double>(),
                  kParameter * parameter.at("movement").get<double>(), name + " " + parameter.dump());
  }
  // The key biases, left out above (see key_bias_rows in the script): Adam moves a parameter by
  // at most about lr a step, whatever its gradient.
  const auto& key_biases = report.at("key_biases");
  checks.expect("key_biases", key_biases.at("difference").get<double>(), 2 * key_biases.at("sum_of_lr").get<double>());
  std::cout << checks.summary() << "\n";
}

INSTANTIATE_TEST_SUITE_P(Variants, ReferenceTest,
                         ::testing::Values(Case{"pre", "relu", true, "adam", 0.0},
                                           Case{"post", "relu", true, "adamw", 0.1},
                                           Case{"pre", "gelu", false, "adam", 0.01}),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace trafo::model
