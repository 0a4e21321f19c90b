#include "trafo/train/training_state.h"

#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/train/optimizer.h"
#include "trafo/util/base64.h"

namespace trafo::train {
namespace {

at::Tensor bytes_to_tensor(const std::string& bytes) {
  auto tensor = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return tensor;
}

std::string tensor_to_bytes(const at::Tensor& tensor) {
  const auto contiguous = tensor.contiguous();
  return std::string(reinterpret_cast<const char*>(contiguous.data_ptr<uint8_t>()), contiguous.numel());
}

const std::string kOptimizer = "optimizer/";

// Format 2 checkpoints hold the optimizer's own archive and the generator's state as tensors.
void load_legacy_state(const checkpoint::TrainingState& state, torch::optim::Optimizer& optimizer,
                       at::Tensor& generator_state) {
  const std::string bytes = tensor_to_bytes(state.tensors.at("optimizer"));
  torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  optimizer.load(archive);
  generator_state = state.tensors.at("cpu_rng");
}

nlohmann::json data_position(const data::StreamPosition& position) {
  nlohmann::json corpora = nlohmann::json::array();
  for (size_t i = 0; i < position.corpora.size(); ++i) {
    corpora.push_back({{"epoch", position.corpora[i].epoch},
                       {"index", position.corpora[i].index},
                       {"pairs", i < position.pairs.size() ? position.pairs[i] : 0}});
  }
  return {{"corpora", corpora}, {"batches", position.batches}};
}

}  // namespace

checkpoint::TrainingState pack_training_state(const Progress& progress, torch::optim::Optimizer& optimizer,
                                              const NamedParameters& parameters) {
  checkpoint::TrainingState state;
  for (auto& [name, tensor] : optimizer_state(optimizer, parameters)) state.tensors[kOptimizer + name] = tensor;
  std::string rng;
  auto generator = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng = tensor_to_bytes(generator.get_state());
  }
  state.json = nlohmann::json{{"step", progress.step},
                              {"cpu_rng", util::to_base64(rng)},
                              {"next_epoch", progress.first_corpus().epoch},
                              {"next_index", progress.first_corpus().index},
                              {"data", data_position(progress.data)},
                              {"elapsed_s", progress.elapsed_s},
                              {"best_metric", progress.best_metric},
                              {"best_step", progress.best_step},
                              {"bad_validations", progress.bad_validations},
                              {"recent_metrics", progress.recent},
                              {"best_smoothed", progress.best_smoothed}}
                   .dump();
  return state;
}

Progress unpack_training_state(const checkpoint::TrainingState& state, torch::optim::Optimizer& optimizer,
                               const NamedParameters& parameters) {
  try {
    const auto json = parse_json(state.json, "the training state");
    Progress progress;
    progress.step = json.at("step").get<int64_t>();
    // Checkpoints before several corpora hold the one corpus's position alone.
    progress.data.corpora = {{json.at("next_epoch").get<int64_t>(), json.at("next_index").get<int64_t>()}};
    progress.data.pairs = {0};
    if (json.contains("data")) {
      const auto& data = json.at("data");
      progress.data.corpora.clear();
      progress.data.pairs.clear();
      for (const auto& corpus : data.at("corpora")) {
        progress.data.corpora.push_back({corpus.at("epoch").get<int64_t>(), corpus.at("index").get<int64_t>()});
        progress.data.pairs.push_back(corpus.at("pairs").get<int64_t>());
      }
      progress.data.batches = data.at("batches").get<int64_t>();
    }
    progress.elapsed_s = json.at("elapsed_s").get<double>();
    progress.best_metric = json.at("best_metric").get<double>();
    progress.best_step = json.at("best_step").get<int64_t>();
    progress.bad_validations = json.at("bad_validations").get<int64_t>();
    // States before smoothing start their window afresh, from the best they had.
    progress.best_smoothed = progress.best_metric;
    if (json.contains("recent_metrics")) {
      progress.recent = json.at("recent_metrics").get<std::vector<double>>();
      progress.best_smoothed = json.at("best_smoothed").get<double>();
    }
    at::Tensor generator_state;
    if (state.tensors.count("optimizer") != 0) {
      load_legacy_state(state, optimizer, generator_state);
    } else {
      std::map<std::string, torch::Tensor> moments;
      for (const auto& [name, tensor] : state.tensors) {
        if (name.rfind(kOptimizer, 0) == 0) moments.emplace(name.substr(kOptimizer.size()), tensor);
      }
      load_optimizer_state(optimizer, parameters, moments);
      generator_state = bytes_to_tensor(util::from_base64(json.at("cpu_rng").get<std::string>(), "the random state"));
    }
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(generator_state);
    return progress;
  } catch (const std::exception& e) {
    std::string reason = e.what();
    throw InputError("its training state is unreadable: " +
                     reason.substr(0, reason.find('\n')));
  }
}

bool watch_plateau(Progress& progress, const std::string& metric, double value) {
  auto& recent = progress.recent;
  recent.push_back(value);
  if (recent.size() > kSmoothedValidations) recent.erase(recent.begin());
  double smoothed = 0.0;
  for (const double each : recent) smoothed += each;
  smoothed /= static_cast<double>(recent.size());
  const bool first = progress.best_step < 0;  // the caller sets it after this, at the first validation
  const bool better = first || (metric == "loss" ? smoothed < progress.best_smoothed : smoothed > progress.best_smoothed);
  if (better) {
    progress.best_smoothed = smoothed;
    progress.bad_validations = 0;
  } else {
    ++progress.bad_validations;
  }
  return better;
}

}  // namespace trafo::train
