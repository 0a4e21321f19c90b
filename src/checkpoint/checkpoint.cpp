#include "trafo/checkpoint/checkpoint.h"

#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::checkpoint {
namespace {

void write_tensors(torch::serialize::OutputArchive& archive, const std::string& prefix,
                   const std::map<std::string, at::Tensor>& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    archive.write(prefix + "/" + name, tensor.detach().cpu(), /*is_buffer=*/true);
    names.push_back(name);
  }
  archive.write(prefix + "/names", c10::IValue(nlohmann::json(names).dump()));
}

std::map<std::string, at::Tensor> read_tensors(torch::serialize::InputArchive& archive, const std::string& prefix) {
  c10::IValue names_value;
  archive.read(prefix + "/names", names_value);
  std::map<std::string, at::Tensor> tensors;
  for (const auto& name : nlohmann::json::parse(names_value.toStringRef())) {
    at::Tensor tensor;
    archive.read(prefix + "/" + name.get<std::string>(), tensor, /*is_buffer=*/true);
    tensors.emplace(name.get<std::string>(), tensor);
  }
  return tensors;
}

std::string read_string(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  archive.read(key, value);
  return value.toStringRef();
}

}  // namespace

std::map<std::string, at::Tensor> model_weights(const model::Transformer& model) {
  std::map<std::string, at::Tensor> weights;
  for (const auto& p : model->named_parameters()) weights.emplace(p.key(), p.value().detach().cpu().clone());
  for (const auto& b : model->named_buffers()) weights.emplace(b.key(), b.value().detach().cpu().clone());
  return weights;
}

void save(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(kFormatVersion));
  archive.write("model_config", c10::IValue(model::to_json(checkpoint.model_config).dump()));
  archive.write("tokenizer", c10::IValue(checkpoint.tokenizer));
  archive.write("config", c10::IValue(checkpoint.config));
  write_tensors(archive, "weights", checkpoint.weights);
  archive.write("has_training_state", c10::IValue(checkpoint.training.has_value()));
  if (checkpoint.training) {
    write_tensors(archive, "training", checkpoint.training->tensors);
    archive.write("training_json", c10::IValue(checkpoint.training->json));
  }
  std::ostringstream bytes;
  archive.save_to(bytes);
  util::write_file_atomically(path, bytes.str());
}

Checkpoint load(const std::filesystem::path& path, bool with_training_state) {
  if (!std::filesystem::exists(path)) throw InputError("checkpoint not found: " + path.string());
  const std::string bytes = util::read_file(path);
  Checkpoint checkpoint;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    c10::IValue version;
    if (!archive.try_read("format_version", version) || !version.isInt()) {
      throw InputError("not a trafo checkpoint: " + path.string());
    }
    if (version.toInt() != kFormatVersion) {
      throw InputError("checkpoint " + path.string() + " has format version " + std::to_string(version.toInt()) +
                       "; this trafo reads version " + std::to_string(kFormatVersion));
    }
    checkpoint.model_config = model::model_config_from_json(nlohmann::json::parse(read_string(archive, "model_config")));
    checkpoint.tokenizer = read_string(archive, "tokenizer");
    checkpoint.config = read_string(archive, "config");
    checkpoint.weights = read_tensors(archive, "weights");
    c10::IValue has_training;
    archive.read("has_training_state", has_training);
    if (with_training_state && has_training.toBool()) {
      TrainingState state;
      state.tensors = read_tensors(archive, "training");
      state.json = read_string(archive, "training_json");
      checkpoint.training = std::move(state);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    // c10::Error's message carries a C++ backtrace: keep its first line only.
    std::string reason = e.what();
    reason = reason.substr(0, reason.find('\n'));
    throw InputError("corrupt or truncated checkpoint " + path.string() + ": " + reason);
  }
  return checkpoint;
}

model::Transformer make_model(const Checkpoint& checkpoint, const at::Device& device) {
  model::Transformer model(checkpoint.model_config);
  torch::NoGradGuard no_grad;
  auto assign = [&](const std::string& name, at::Tensor& target) {
    const auto found = checkpoint.weights.find(name);
    if (found == checkpoint.weights.end()) throw InputError("checkpoint lacks weight " + name);
    if (found->second.sizes() != target.sizes()) throw InputError("checkpoint weight " + name + " has the wrong shape");
    target.copy_(found->second);
  };
  for (auto& p : model->named_parameters()) assign(p.key(), p.value());
  for (auto& b : model->named_buffers()) assign(b.key(), b.value());
  model->to(device);
  model->eval();
  return model;
}

}  // namespace trafo::checkpoint
