#include "trafo/model/config.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "trafo/errors.h"

namespace trafo::model {
namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw InputError("invalid model config: " + message);
}

// "d-model must be between 1 and 16384, not 0".
void require_between(int64_t value, int64_t low, int64_t high, const std::string& name) {
  require(value >= low && value <= high, name + " must be between " + std::to_string(low) + " and " +
                                             std::to_string(high) + ", not " + std::to_string(value));
}

// Weights of the matrices and embeddings, biases and norms left out: close enough for a limit.
double approximate_parameters(const ModelConfig& c) {
  const auto d = static_cast<double>(c.d_model), ff = static_cast<double>(c.d_ff);
  const double embeddings = static_cast<double>(c.vocab_size) * d * (c.tie_embeddings ? 1.0 : 3.0);
  const double encoder_layer = 4 * d * d + 2 * d * ff;  // self-attention, feed-forward
  const double decoder_layer = 8 * d * d + 2 * d * ff;  // self- and cross-attention, feed-forward
  return embeddings + static_cast<double>(c.encoder_layers) * encoder_layer +
         static_cast<double>(c.decoder_layers) * decoder_layer;
}

}  // namespace

void validate(const ModelConfig& c) {
  require_between(c.vocab_size, 5, kMaxVocabSize, "vocab-size");  // pad, unk, bos, eos and one piece at least
  require_between(c.d_model, 1, kMaxDModel, "d-model");
  require_between(c.heads, 1, kMaxHeads, "heads");
  require(c.d_model % c.heads == 0, "heads (" + std::to_string(c.heads) + ") must divide d-model (" +
                                        std::to_string(c.d_model) + ")");
  require_between(c.encoder_layers, 1, kMaxLayers, "encoder-layers");
  require_between(c.decoder_layers, 1, kMaxLayers, "decoder-layers");
  require_between(c.d_ff, 1, kMaxDFF, "d-ff");
  require(c.dropout >= 0.0 && c.dropout < 1.0, "dropout must be in [0, 1)");
  require(c.activation == "relu" || c.activation == "gelu", "activation must be relu or gelu");
  require(c.norm == "pre" || c.norm == "post", "norm must be pre or post");
  require_between(c.max_positions, 2, kMaxPositions, "max-positions");
  require(c.pad_id >= 0 && c.pad_id < c.vocab_size, "pad id outside the vocabulary");
  const double parameters = approximate_parameters(c);
  require(parameters <= kMaxParameters, "the model would have about " + std::to_string(std::llround(parameters / 1e9)) +
                                            " billion parameters; at most " +
                                            std::to_string(std::llround(kMaxParameters / 1e9)) + " billion");
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"d_model", c.d_model},
          {"heads", c.heads},           {"encoder_layers", c.encoder_layers},
          {"decoder_layers", c.decoder_layers}, {"d_ff", c.d_ff},
          {"dropout", c.dropout},       {"activation", c.activation},
          {"norm", c.norm},             {"tie_embeddings", c.tie_embeddings},
          {"max_positions", c.max_positions}, {"pad_id", c.pad_id}};
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  try {
    ModelConfig c;
    c.vocab_size = j.at("vocab_size").get<int64_t>();
    c.d_model = j.at("d_model").get<int64_t>();
    c.heads = j.at("heads").get<int64_t>();
    c.encoder_layers = j.at("encoder_layers").get<int64_t>();
    c.decoder_layers = j.at("decoder_layers").get<int64_t>();
    c.d_ff = j.at("d_ff").get<int64_t>();
    c.dropout = j.at("dropout").get<double>();
    c.activation = j.at("activation").get<std::string>();
    c.norm = j.at("norm").get<std::string>();
    c.tie_embeddings = j.at("tie_embeddings").get<bool>();
    c.max_positions = j.at("max_positions").get<int64_t>();
    c.pad_id = j.at("pad_id").get<int64_t>();
    validate(c);
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("invalid model config: ") + e.what());
  }
}

std::string describe_differences(const ModelConfig& a, const ModelConfig& b) {
  // Dropout is a training knob, not part of the model's shape.
  const nlohmann::json ja = to_json(a), jb = to_json(b);
  std::string out;
  for (const auto& [key, value] : ja.items()) {
    if (key == "dropout" || jb.at(key) == value) continue;
    if (!out.empty()) out += ", ";
    out += key + " " + value.dump() + " vs " + jb.at(key).dump();
  }
  return out;
}

}  // namespace trafo::model
