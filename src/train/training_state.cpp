#include "trafo/train/training_state.h"

#include <mutex>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "trafo/checkpoint/archive_check.h"
#include "trafo/errors.h"

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

}  // namespace

checkpoint::TrainingState pack_training_state(const Progress& progress, torch::optim::Optimizer& optimizer) {
  checkpoint::TrainingState state;
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  state.tensors["optimizer"] = bytes_to_tensor(bytes.str());
  auto generator = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    state.tensors["cpu_rng"] = generator.get_state();
  }
  state.json = nlohmann::json{{"step", progress.step},
                              {"next_epoch", progress.next_batch.epoch},
                              {"next_index", progress.next_batch.index},
                              {"elapsed_s", progress.elapsed_s},
                              {"best_metric", progress.best_metric},
                              {"best_step", progress.best_step},
                              {"bad_validations", progress.bad_validations}}
                   .dump();
  return state;
}

Progress unpack_training_state(const checkpoint::TrainingState& state, torch::optim::Optimizer& optimizer) {
  try {
    const auto json = nlohmann::json::parse(state.json);
    Progress progress;
    progress.step = json.at("step").get<int64_t>();
    progress.next_batch = {json.at("next_epoch").get<int64_t>(), json.at("next_index").get<int64_t>()};
    progress.elapsed_s = json.at("elapsed_s").get<double>();
    progress.best_metric = json.at("best_metric").get<double>();
    progress.best_step = json.at("best_step").get<int64_t>();
    progress.bad_validations = json.at("bad_validations").get<int64_t>();
    const std::string bytes = tensor_to_bytes(state.tensors.at("optimizer"));
    torch::serialize::InputArchive archive;
    checkpoint::check_archive(bytes.data(), bytes.size(), "optimizer state");
    archive.load_from(bytes.data(), bytes.size());
    optimizer.load(archive);
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state.tensors.at("cpu_rng"));
    return progress;
  } catch (const std::exception& e) {
    std::string reason = e.what();
    throw InputError("cannot resume: the checkpoint's training state is unreadable: " +
                     reason.substr(0, reason.find('\n')));
  }
}

}  // namespace trafo::train
