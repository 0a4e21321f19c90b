// The shape of a transformer encoder-decoder; stored inside every checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trafo/special_ids.h"

namespace trafo::model {

struct ModelConfig {
  int64_t vocab_size = 8000;       // joint source/target vocabulary (SentencePiece pieces)
  int64_t d_model = 256;           // width of every residual stream
  int64_t heads = 4;               // attention heads; must divide d_model
  int64_t encoder_layers = 3;      // encoder depth
  int64_t decoder_layers = 3;      // decoder depth
  int64_t d_ff = 1024;             // inner width of the feed-forward blocks
  double dropout = 0.1;            // embeddings, sublayer outputs; attention weights and FFN inner unless set below
  double attention_dropout = -1.0;   // attention weights; -1: as dropout
  double activation_dropout = -1.0;  // feed-forward inner activations; -1: as dropout
  double encoder_layerdrop = 0.0;    // share of encoder layers skipped at each training step (LayerDrop)
  double decoder_layerdrop = 0.0;    // the same for decoder layers
  std::string activation = "relu"; // feed-forward activation: relu | gelu | swish (SiLU)
  std::string norm = "pre";        // residual LayerNorm position: pre | post
  bool tie_embeddings = true;      // one matrix for source, target and output embeddings
  bool output_bias = false;        // tied only: a trained bias [V] on the logits (untied projections have one)
  int64_t max_positions = 1024;    // longest sequence the model takes (in pieces)
  std::string positions = "sinusoidal";  // position encoding: a row of model::position_kinds()
  int64_t pad_id = kPadId;         // padding id (special_ids.h)
  // Guided alignment: the decoder layer (0-based) whose cross-attention's first head was trained on
  // word alignments (train --guided-alignment), which `align` and translations' alignments then read;
  // -1: none. Set by training, not a shape: like the dropout rates, a resume or fine-tuning may change it.
  int64_t alignment_layer = -1;
};

// Upper limits far above any real translation model: they stop absurd sizes (a typo, a fuzzer)
// with a clear message before LibTorch tries to allocate them.
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 20;
inline constexpr int64_t kMaxDModel = 16384;
inline constexpr int64_t kMaxDFF = 65536;
inline constexpr int64_t kMaxHeads = 256;
inline constexpr int64_t kMaxLayers = 256;          // encoder and decoder each
inline constexpr int64_t kMaxPositions = 65536;
inline constexpr double kMaxParameters = 10e9;

// The residual LayerNorm's position and the feed-forward activation, as types: the one reading of
// `norm` and `activation` (trafo::InputError for any other text).
enum class NormPosition { kPre, kPost };
enum class Activation { kRelu, kGelu, kSwish };
NormPosition norm_position(const ModelConfig& config);
Activation activation_of(const ModelConfig& config);

// The rates attention weights and feed-forward activations drop at: their own where set (not -1), else
// dropout's (the rate every place used before they were options).
double attention_dropout_rate(const ModelConfig& config);
double activation_dropout_rate(const ModelConfig& config);

// The dropout rates (layer-drop's among them) and the guided head's layer are training knobs, not part
// of the model: a resume or a fine-tuning may change them. Whether `json_key` (a to_json key) is one;
// and `to` with `from`'s values of them.
bool is_dropout_key(const std::string& json_key);
void take_dropout_rates(ModelConfig& to, const ModelConfig& from);

// Throws trafo::InputError naming the first invalid field.
void validate(const ModelConfig& config);

// The version of the JSON form; a key added to ModelConfig raises it, and its default must be what
// models before it did, so that older checkpoints still load.
inline constexpr int64_t kModelConfigVersion = 6;  // 2: positions; 3: attention, activation dropout; 4: layer-drop;
                                                   // 5: output_bias; 6: alignment_layer

nlohmann::json to_json(const ModelConfig& config);
// Keys the JSON lacks keep ModelConfig's defaults; a version above kModelConfigVersion, a value of the
// wrong type or an invalid config throws trafo::InputError.
ModelConfig model_config_from_json(const nlohmann::json& json);

// The name and shape of every parameter and buffer a Transformer of `config` holds, as its
// named_parameters() and named_buffers() give them (model_test checks the two agree), without
// allocating any: checkpoint loading checks a file's weights against them.
std::map<std::string, std::vector<int64_t>> weight_shapes(const ModelConfig& config);

// "d_model 256 vs 512, heads 4 vs 8"; empty when the two describe the same model.
std::string describe_differences(const ModelConfig& a, const ModelConfig& b);

}  // namespace trafo::model
