#include "model_state.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/train/optimizer.h"

namespace trafo::train {
using run_config::TrainConfig;
namespace {

// Rank 0's moving average with --ema: a resumed run's is its checkpoint's weights; a checkpoint saved
// without one starts it from the weights as they are.
std::optional<WeightAverage> make_average(const run_config::OptimOptions& optim, const ResumePoint& resume,
                                          const model::Transformer& model, bool main_rank) {
  if (optim.ema == 0 || !main_rank) return std::nullopt;
  std::optional<WeightAverage> average(std::in_place, *model, optim.ema);
  if (!resume.saved) return average;
  if (raw_weights(*resume.saved->training).empty()) {
    spdlog::info("{} was saved without --ema: the moving average starts from its weights", resume.path.string());
  } else {
    average->load(resume.saved->weights);
  }
  return average;
}

// Restores the optimizer's state and the random generator of a resumed run, then lets its checkpoint go.
Progress restore_progress(ResumePoint& resume, torch::optim::Optimizer& optimizer, const model::Transformer& model) {
  Progress progress;
  try {
    if (resume.saved) progress = unpack_training_state(*resume.saved->training, optimizer, named_parameters(*model));
  } catch (const InputError& e) {
    throw InputError("cannot resume from " + resume.path.string() + ": " + e.what());
  }
  resume.saved.reset();
  resume.initial.reset();
  if (!resume.path.empty()) spdlog::info("resuming from {}", resume.path.string());
  return progress;
}

}  // namespace

model::Transformer make_model(const TrainConfig& c, const ResumePoint& resume, const c10::Device& device,
                              Replicas& replicas) {
  torch::manual_seed(c.machine.seed);
  model::Transformer model = resume.saved     ? checkpoint::make_model(*resume.saved, device)
                             : resume.initial ? checkpoint::make_model(*resume.initial, device)
                                              : model::Transformer(c.model);
  model->to(device);
  if (resume.saved) {
    const auto raw = raw_weights(*resume.saved->training);
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      const auto found = raw.find(p.key());
      if (found != raw.end()) p.value().copy_(found->second);
    }
    if (!raw.empty() && c.optim.ema == 0) {
      spdlog::info("{} was saved with --ema: training goes on from its raw weights, without a moving average",
                   resume.path.string());
    }
  }
  model->train();
  replicas.replicate(model->parameters());
  return model;
}

OptimizerState::OptimizerState(const run_config::OptimOptions& optim, const model::Transformer& model,
                               ResumePoint& resume, bool main_rank)
    : average(make_average(optim, resume, model, main_rank)),
      optimizer(make_optimizer(optim.optimizer, model->parameters(), optim.lr, optim.adam_beta1, optim.adam_beta2,
                               optim.adam_eps, optim.weight_decay)),
      progress(restore_progress(resume, *optimizer, model)) {}

checkpoint::Checkpoint OptimizerState::checkpoint(const checkpoint::Checkpoint& about,
                                                  const model::Transformer& model, double elapsed_s) {
  checkpoint::Checkpoint ckpt = about;
  ckpt.weights = checkpoint::model_weights(model);
  progress.elapsed_s = elapsed_s;
  ckpt.training = pack_training_state(progress, *optimizer, named_parameters(*model));
  if (average) store_average(*average, ckpt);
  return ckpt;
}

}  // namespace trafo::train
