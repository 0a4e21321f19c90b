#include "trafo/model/config.h"

#include <cmath>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "trafo/errors.h"
#include "trafo/model/positions.h"

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

NormPosition norm_position(const ModelConfig& c) {
  if (c.norm == "pre") return NormPosition::kPre;
  require(c.norm == "post", "norm must be pre or post");
  return NormPosition::kPost;
}

Activation activation_of(const ModelConfig& c) {
  if (c.activation == "relu") return Activation::kRelu;
  if (c.activation == "swish") return Activation::kSwish;
  require(c.activation == "gelu", "activation must be relu, gelu or swish");
  return Activation::kGelu;
}

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
  const auto rate_or_unset = [](double rate) { return rate == -1.0 || (rate >= 0.0 && rate < 1.0); };
  require(rate_or_unset(c.attention_dropout), "attention-dropout must be in [0, 1), or -1 for dropout's");
  require(rate_or_unset(c.activation_dropout), "activation-dropout must be in [0, 1), or -1 for dropout's");
  require(c.encoder_layerdrop >= 0.0 && c.encoder_layerdrop < 1.0, "encoder-layerdrop must be in [0, 1)");
  require(c.decoder_layerdrop >= 0.0 && c.decoder_layerdrop < 1.0, "decoder-layerdrop must be in [0, 1)");
  activation_of(c);
  norm_position(c);
  position_kind(c.positions);
  require_between(c.max_positions, 2, kMaxPositions, "max-positions");
  require(c.pad_id >= 0 && c.pad_id < c.vocab_size, "pad id outside the vocabulary");
  require(c.alignment_layer >= -1 && c.alignment_layer < c.decoder_layers,
          "alignment layer " + std::to_string(c.alignment_layer) + " is not a decoder layer (0-based; -1: none)");
  require(c.tie_embeddings || !c.output_bias,
          "output-bias is for tied embeddings (an untied output projection has a bias of its own)");
  const double parameters = approximate_parameters(c);
  require(parameters <= kMaxParameters, "the model would have about " + std::to_string(std::llround(parameters / 1e9)) +
                                            " billion parameters; at most " +
                                            std::to_string(std::llround(kMaxParameters / 1e9)) + " billion");
}

double attention_dropout_rate(const ModelConfig& c) { return c.attention_dropout >= 0.0 ? c.attention_dropout : c.dropout; }

double activation_dropout_rate(const ModelConfig& c) {
  return c.activation_dropout >= 0.0 ? c.activation_dropout : c.dropout;
}

bool is_dropout_key(const std::string& json_key) {
  return json_key == "dropout" || json_key == "attention_dropout" || json_key == "activation_dropout" ||
         json_key == "encoder_layerdrop" || json_key == "decoder_layerdrop" || json_key == "alignment_layer";
}

void take_dropout_rates(ModelConfig& to, const ModelConfig& from) {
  to.dropout = from.dropout;
  to.attention_dropout = from.attention_dropout;
  to.activation_dropout = from.activation_dropout;
  to.encoder_layerdrop = from.encoder_layerdrop;
  to.decoder_layerdrop = from.decoder_layerdrop;
  to.alignment_layer = from.alignment_layer;
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"version", kModelConfigVersion},
          {"vocab_size", c.vocab_size}, {"d_model", c.d_model},
          {"heads", c.heads},           {"encoder_layers", c.encoder_layers},
          {"decoder_layers", c.decoder_layers}, {"d_ff", c.d_ff},
          {"dropout", c.dropout},       {"activation", c.activation},
          {"attention_dropout", c.attention_dropout}, {"activation_dropout", c.activation_dropout},
          {"encoder_layerdrop", c.encoder_layerdrop}, {"decoder_layerdrop", c.decoder_layerdrop},
          {"norm", c.norm},             {"tie_embeddings", c.tie_embeddings},
          {"output_bias", c.output_bias},
          {"max_positions", c.max_positions}, {"positions", c.positions}, {"pad_id", c.pad_id},
          {"alignment_layer", c.alignment_layer}};
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  try {
    if (!j.is_object()) throw InputError("invalid model config: not a JSON object");
    // Checkpoints before versions were written are version 1. A key a config lacks keeps its default:
    // a key added later defaults to what the models before it did.
    const auto version = j.value("version", int64_t{1});
    if (version < 1 || version > kModelConfigVersion) {
      throw InputError("the model config has version " + std::to_string(version) + "; this trafo reads versions 1 to " +
                       std::to_string(kModelConfigVersion) + " (a newer trafo wrote it)");
    }
    ModelConfig c;
    auto read = [&](const char* key, auto& field) {
      if (j.contains(key)) field = j.at(key).get<std::decay_t<decltype(field)>>();
    };
    read("vocab_size", c.vocab_size);
    read("d_model", c.d_model);
    read("heads", c.heads);
    read("encoder_layers", c.encoder_layers);
    read("decoder_layers", c.decoder_layers);
    read("d_ff", c.d_ff);
    read("dropout", c.dropout);
    read("attention_dropout", c.attention_dropout);
    read("activation_dropout", c.activation_dropout);
    read("encoder_layerdrop", c.encoder_layerdrop);
    read("decoder_layerdrop", c.decoder_layerdrop);
    read("activation", c.activation);
    read("norm", c.norm);
    read("tie_embeddings", c.tie_embeddings);
    read("output_bias", c.output_bias);
    read("max_positions", c.max_positions);
    read("positions", c.positions);
    read("pad_id", c.pad_id);
    read("alignment_layer", c.alignment_layer);
    validate(c);
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("invalid model config: ") + e.what());
  }
}

std::map<std::string, std::vector<int64_t>> weight_shapes(const ModelConfig& c) {
  std::map<std::string, std::vector<int64_t>> shapes;
  const int64_t d = c.d_model;
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    shapes[name + ".weight"] = {out, in};
    shapes[name + ".bias"] = {out};
  };
  auto norm = [&](const std::string& name) {
    shapes[name + ".weight"] = {d};
    shapes[name + ".bias"] = {d};
  };
  auto feed_forward = [&](const std::string& layer) {
    linear(layer + "feed_forward.linear1", c.d_ff, d);
    linear(layer + "feed_forward.linear2", d, c.d_ff);
  };
  shapes["source_embedding.embedding.weight"] = {c.vocab_size, d};
  if (c.tie_embeddings && c.output_bias) shapes["output_bias"] = {c.vocab_size};
  if (!c.tie_embeddings) {
    shapes["target_embedding.embedding.weight"] = {c.vocab_size, d};
    linear("output_projection", c.vocab_size, d);
  }
  for (const auto& [name, shape] : position_kind(c.positions).weights(c)) shapes["positions." + name] = shape;
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    const std::string layer = "encoder_layers." + std::to_string(i) + ".";
    linear(layer + "self_attention.qkv_proj", 3 * d, d);
    linear(layer + "self_attention.out_proj", d, d);
    feed_forward(layer);
    for (const char* residual : {"attention_residual", "feed_forward_residual"}) norm(layer + residual + ".norm");
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    const std::string layer = "decoder_layers." + std::to_string(i) + ".";
    linear(layer + "self_attention.qkv_proj", 3 * d, d);
    linear(layer + "self_attention.out_proj", d, d);
    linear(layer + "cross_attention.q_proj", d, d);
    linear(layer + "cross_attention.kv_proj", 2 * d, d);
    linear(layer + "cross_attention.out_proj", d, d);
    feed_forward(layer);
    for (const char* residual : {"self_residual", "cross_residual", "feed_forward_residual"}) {
      norm(layer + residual + ".norm");
    }
  }
  if (norm_position(c) == NormPosition::kPre) {
    norm("encoder_norm");
    norm("decoder_norm");
  }
  return shapes;
}

std::string describe_differences(const ModelConfig& a, const ModelConfig& b) {
  // Dropout rates are training knobs, not part of the model's shape.
  const nlohmann::json ja = to_json(a), jb = to_json(b);
  std::string out;
  for (const auto& [key, value] : ja.items()) {
    if (is_dropout_key(key) || jb.at(key) == value) continue;
    if (!out.empty()) out += ", ";
    out += key + " " + value.dump() + " vs " + jb.at(key).dump();
  }
  return out;
}

}  // namespace trafo::model
