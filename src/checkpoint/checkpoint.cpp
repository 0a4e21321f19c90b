#include "trafo/checkpoint/checkpoint.h"

#include <algorithm>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "legacy_format.h"
#include "trafo/checkpoint/safetensors.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/util/base64.h"
#include "trafo/util/files.h"

namespace trafo::checkpoint {
namespace {

// Names in the safetensors file: the weights under their own names (as the model's
// named_parameters and named_buffers give them), the training state's tensors under this prefix.
const std::string kTrainingPrefix = "training/";
constexpr char kFormatName[] = "trafo-checkpoint";

const std::string& metadata_entry(const Safetensors& file, const std::string& key, const std::string& path) {
  const auto found = file.metadata.find(key);
  if (found == file.metadata.end()) throw InputError("checkpoint " + path + " has no " + key + " in its metadata");
  return found->second;
}

std::string inference_json(const InferenceInfo& info) {
  nlohmann::json json = {{"src_lang", info.src_lang}, {"tgt_lang", info.tgt_lang}, {"tags", info.tags}};
  // An object in the JSON, not a string of JSON: escaped twice over (here and in the file's header),
  // its quotes would grow the header by a third.
  if (!info.language_id.empty()) json["language_id"] = nlohmann::json::parse(info.language_id);
  return json.dump();
}

InferenceInfo inference_from_json(const std::string& text, const std::string& path) {
  try {
    const auto json = parse_json(text, "checkpoint " + path);
    InferenceInfo info;
    info.src_lang = json.at("src_lang").get<std::string>();
    info.tgt_lang = json.at("tgt_lang").get<std::string>();
    info.tags = json.at("tags").get<std::vector<std::string>>();
    if (const auto id = json.find("language_id"); id != json.end())
      info.language_id = id->is_string() ? id->get<std::string>() : id->dump();  // a string: written before
    return info;
  } catch (const nlohmann::json::exception&) {
    throw InputError("checkpoint " + path + ": its inference info is not {src_lang, tgt_lang, tags} JSON");
  }
}

// The safetensors layout of a checkpoint (format 3): docs/design.md "Checkpoint".
Checkpoint read_safetensors_checkpoint(const std::filesystem::path& path, bool with_training_state) {
  const std::string name = path.string();
  auto file = read_safetensors(path);
  if (file.metadata["format"] != kFormatName) throw InputError("not a trafo checkpoint: " + name);
  if (metadata_entry(file, "format_version", name) != std::to_string(kFormatVersion)) {
    throw InputError("checkpoint " + name + " has format version " + file.metadata["format_version"] +
                     "; this trafo reads versions 2 and " + std::to_string(kFormatVersion));
  }
  Checkpoint checkpoint;
  try {
    checkpoint.model_config = model::model_config_from_json(parse_json(metadata_entry(file, "model_config", name), "checkpoint " + name));
  } catch (const nlohmann::json::exception&) {
    throw InputError("checkpoint " + name + ": its model config is not JSON");
  }
  checkpoint.tokenizer = util::from_base64(metadata_entry(file, "tokenizer", name), "checkpoint " + name + "'s tokenizer");
  checkpoint.config = metadata_entry(file, "config", name);
  if (const auto inference = file.metadata.find("inference"); inference != file.metadata.end()) {
    checkpoint.inference = inference_from_json(inference->second, name);
  }
  const auto training = file.metadata.find("training");
  if (training != file.metadata.end() && with_training_state) checkpoint.training.emplace().json = training->second;
  for (auto& [key, tensor] : file.tensors) {
    if (key.rfind(kTrainingPrefix, 0) != 0) {
      checkpoint.weights.emplace(key, std::move(tensor));
    } else if (checkpoint.training) {
      checkpoint.training->tensors.emplace(key.substr(kTrainingPrefix.size()), std::move(tensor));
    }
  }
  return checkpoint;
}

// The tokenizer is a SentencePiece model of as many pieces as the model's vocabulary.
void check_tokenizer(const Checkpoint& checkpoint, const std::string& path) {
  if (checkpoint.tokenizer.empty()) return;
  int pieces = 0;
  try {
    pieces = data::Tokenizer::from_bytes(checkpoint.tokenizer).vocab_size();
  } catch (const InputError& e) {
    throw InputError("checkpoint " + path + ": " + e.what());
  }
  if (pieces != checkpoint.model_config.vocab_size) {
    throw InputError("checkpoint " + path + " is inconsistent: its model has " +
                     std::to_string(checkpoint.model_config.vocab_size) + " pieces, its tokenizer " +
                     std::to_string(pieces));
  }
}

std::string shape_text(c10::IntArrayRef shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Every weight its model config expects, with that shape and as fp32; none it does not expect.
void check_weights(const Checkpoint& checkpoint, const std::string& path) {
  const auto expected = model::weight_shapes(checkpoint.model_config);
  for (const auto& [name, shape] : expected) {
    const auto found = checkpoint.weights.find(name);
    if (found == checkpoint.weights.end()) {
      throw InputError("checkpoint " + path + " lacks weight " + name + " (shape " + shape_text(shape) +
                       " in its model config)");
    }
    if (found->second.sizes() != c10::IntArrayRef(shape)) {
      throw InputError("checkpoint " + path + ": weight " + name + " has shape " + shape_text(found->second.sizes()) +
                       ", its model config expects " + shape_text(shape));
    }
    if (found->second.scalar_type() != at::kFloat) {
      throw InputError("checkpoint " + path + ": weight " + name + " is " +
                       std::string(c10::toString(found->second.scalar_type())) + ", not float32");
    }
  }
  for (const auto& [name, tensor] : checkpoint.weights) {
    if (expected.count(name) == 0) {
      throw InputError("checkpoint " + path + " holds weight " + name + " " + shape_text(tensor.sizes()) +
                       " that its model config does not have");
    }
  }
}

}  // namespace

std::map<std::string, at::Tensor> model_weights(const model::Transformer& model) {
  std::map<std::string, at::Tensor> weights;
  for (const auto& p : model->named_parameters()) weights.emplace(p.key(), p.value().detach().cpu().clone());
  for (const auto& b : model->named_buffers()) weights.emplace(b.key(), b.value().detach().cpu().clone());
  return weights;
}

void save(const std::filesystem::path& path, const Checkpoint& checkpoint, util::Special special) {
  Safetensors file;
  file.metadata = {{"format", kFormatName},
                   {"format_version", std::to_string(kFormatVersion)},
                   {"model_config", model::to_json(checkpoint.model_config).dump()},
                   {"config", checkpoint.config},
                   {"tokenizer", util::to_base64(checkpoint.tokenizer)}};
  if (!checkpoint.inference.empty()) file.metadata["inference"] = inference_json(checkpoint.inference);
  file.tensors = checkpoint.weights;
  if (checkpoint.training) {
    file.metadata["training"] = checkpoint.training->json;
    for (const auto& [key, tensor] : checkpoint.training->tensors) file.tensors.emplace(kTrainingPrefix + key, tensor);
  }
  util::write_file_atomically(path, to_safetensors(file), special);
}

namespace {

Checkpoint read_and_check(const std::filesystem::path& path, bool with_training_state) {
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, error))) {
    throw InputError("checkpoint not found: " + path.string());
  }
  util::check_regular_file(path);  // before the first read: a pipe may never answer; names a dangling link
  std::string prefix(64, '\0');
  {
    std::ifstream in(path, std::ios::binary);
    in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()));
    prefix.resize(static_cast<size_t>(in.gcount()));
  }
  Checkpoint checkpoint;
  if (detail::is_legacy_checkpoint(prefix)) {
    checkpoint = detail::read_legacy_checkpoint(util::read_file(path), path.string(), with_training_state);
  } else if (looks_like_safetensors(prefix)) {
    checkpoint = read_safetensors_checkpoint(path, with_training_state);
  } else if (prefix.compare(0, 4, "PK\x03\x04") == 0) {
    throw InputError("checkpoint " + path.string() + " has format 1 (an archive without a checksum, from early trafo "
                     "builds), which this trafo no longer reads");
  } else {
    throw InputError("not a trafo checkpoint: " + path.string());
  }
  check_tokenizer(checkpoint, path.string());
  check_weights(checkpoint, path.string());
  return checkpoint;
}

}  // namespace

Checkpoint load(const std::filesystem::path& path, bool with_training_state) {
  // Every command loads its checkpoints here: a reason found inside the file (its model config, its
  // tokenizer, its layout) that does not say which file is given the file's name here, once.
  try {
    auto checkpoint = read_and_check(path, with_training_state);
    if (checkpoint.inference.empty()) checkpoint.inference = inference_from_config(checkpoint.config);
    return checkpoint;
  } catch (const InputError& e) {
    const std::string reason = e.what();
    if (reason.find(path.string()) != std::string::npos) throw;
    throw InputError(path.string() + ": " + reason);
  }
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

std::vector<std::pair<int64_t, std::filesystem::path>> numbered_checkpoints(const std::filesystem::path& dir) {
  static const std::regex pattern(R"(checkpoint-(\d{1,18})\.pt)");
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::smatch match;
    const auto name = entry.path().filename().string();
    if (std::regex_match(name, match, pattern)) found.emplace_back(std::stoll(match[1].str()), entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace trafo::checkpoint
