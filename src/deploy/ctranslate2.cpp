#include "trafo/deploy/ctranslate2.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "export_support.h"
#include "model_bin.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/model/positions.h"

namespace trafo::deploy {
namespace {

constexpr uint32_t kTransformerSpecRevision = 7;
constexpr int8_t kRelu = 0, kSwish = 2, kGelu = 3;  // CTranslate2's ActivationType (GELU: the exact, erf form)

// trafo's weight names -> CTranslate2's TransformerSpec variable names.
class SpecBuilder {
 public:
  SpecBuilder(const checkpoint::Checkpoint& checkpoint, ModelBin& bin) : weights_(checkpoint.weights), bin_(bin) {}

  void linear(const std::string& to, const std::string& from) {
    bin_.add(to + "/weight", weight(from + ".weight"));
    bin_.add(to + "/bias", weight(from + ".bias"));
  }
  void layer_norm(const std::string& to, const std::string& from) {
    bin_.add(to + "/gamma", weight(from + ".weight"));
    bin_.add(to + "/beta", weight(from + ".bias"));
  }
  void tensor(const std::string& to, const std::string& from) { bin_.add(to, weight(from)); }
  // A layer's self-attention (fused QKV, output) with the norm of its residual block.
  void self_attention(const std::string& to, const std::string& from, const std::string& residual) {
    layer_norm(to + "/self_attention/layer_norm", from + "." + residual + ".norm");
    linear(to + "/self_attention/linear_0", from + ".self_attention.qkv_proj");
    linear(to + "/self_attention/linear_1", from + ".self_attention.out_proj");
  }
  void feed_forward(const std::string& to, const std::string& from) {
    layer_norm(to + "/ffn/layer_norm", from + ".feed_forward_residual.norm");
    linear(to + "/ffn/linear_0", from + ".feed_forward.linear1");
    linear(to + "/ffn/linear_1", from + ".feed_forward.linear2");
  }

 private:
  const at::Tensor& weight(const std::string& name) const { return checkpoint_weight(weights_, name); }
  const std::map<std::string, at::Tensor>& weights_;
  ModelBin& bin_;
};

// The flags both stacks share: heads, norm position, activation, √d embedding scale.
void stack_flags(ModelBin& bin, const std::string& stack, const model::ModelConfig& c) {
  bin.add_int16(stack + "/num_heads", static_cast<int16_t>(c.heads));
  bin.add_int8(stack + "/pre_norm", model::norm_position(c) == model::NormPosition::kPre ? 1 : 0);
  const auto activation = model::activation_of(c);
  bin.add_int8(stack + "/activation", activation == model::Activation::kGelu    ? kGelu
                                      : activation == model::Activation::kSwish ? kSwish
                                                                                 : kRelu);
  bin.add_int8(stack + "/scale_embeddings", 1);
}

ModelBin transformer_spec(const checkpoint::Checkpoint& checkpoint) {
  const auto& c = checkpoint.model_config;
  if (c.heads > std::numeric_limits<int16_t>::max()) throw InputError("too many heads for CTranslate2");
  ModelBin bin("TransformerSpec", kTransformerSpecRevision);
  SpecBuilder spec(checkpoint, bin);
  const bool pre_norm = model::norm_position(c) == model::NormPosition::kPre;

  stack_flags(bin, "encoder", c);
  bin.add_int8("encoder/embeddings_merge", 0);
  bin.add_int8("encoder/multi_query_attention", 0);
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    const auto to = "encoder/layer_" + std::to_string(i);
    const auto from = "encoder_layers." + std::to_string(i);
    spec.self_attention(to, from, "attention_residual");
    spec.feed_forward(to, from);
  }

  stack_flags(bin, "decoder", c);
  // A guided head: its layer, head 1 of it (CTranslate2 reads the first alignment_heads heads); else
  // CTranslate2's default, the last layer.
  bin.add_int16("decoder/alignment_layer", static_cast<int16_t>(c.alignment_layer >= 0 ? c.alignment_layer : -1));
  bin.add_int16("decoder/alignment_heads", 1);
  for (const auto* flag : {"alibi", "alibi_use_positive_positions", "scale_alibi", "start_from_zero_embedding"}) {
    bin.add_int8(std::string("decoder/") + flag, 0);
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    const auto to = "decoder/layer_" + std::to_string(i);
    const auto from = "decoder_layers." + std::to_string(i);
    spec.self_attention(to, from, "self_residual");
    spec.layer_norm(to + "/attention/layer_norm", from + ".cross_residual.norm");
    spec.linear(to + "/attention/linear_0", from + ".cross_attention.q_proj");
    spec.linear(to + "/attention/linear_1", from + ".cross_attention.kv_proj");
    spec.linear(to + "/attention/linear_2", from + ".cross_attention.out_proj");
    spec.feed_forward(to, from);
  }
  // Post-norm stacks end in their last layer's norm; pre-norm ones in a final norm each.
  if (pre_norm) {
    spec.layer_norm("encoder/layer_norm", "encoder_norm");
    spec.layer_norm("decoder/layer_norm", "decoder_norm");
  }

  // One explicit table (the sinusoidal kind's: trafo interleaves sin and cos) for both stacks.
  const char* table = model::position_kind(c.positions).ctranslate2_table;
  if (table == nullptr) throw InputError("CTranslate2 export takes no '" + c.positions + "' positions");
  spec.tensor("decoder/position_encodings/encodings", table);
  bin.alias("encoder/position_encodings/encodings", "decoder/position_encodings/encodings");
  // Tied: one matrix for both embeddings and the output projection, with the output bias where the
  // model has one (CTranslate2's projection takes an optional bias, as its MarianMT converter writes).
  spec.tensor("decoder/embeddings/weight", c.tie_embeddings ? "source_embedding.embedding.weight"
                                                             : "target_embedding.embedding.weight");
  if (c.tie_embeddings) {
    bin.alias("encoder/embeddings_0/weight", "decoder/embeddings/weight");
    bin.alias("decoder/projection/weight", "decoder/embeddings/weight");
    if (c.output_bias) spec.tensor("decoder/projection/bias", "output_bias");
  } else {
    spec.tensor("encoder/embeddings_0/weight", "source_embedding.embedding.weight");
    spec.linear("decoder/projection", "output_projection");
  }
  return bin;
}

// Source: pieces + </s> (trafo's batcher); target: <s> first, decoding ends at </s>.
nlohmann::json ct2_model_config(const data::Tokenizer& tokenizer) {
  return {{"add_source_bos", false},
          {"add_source_eos", true},
          {"bos_token", tokenizer.target_piece(data::Tokenizer::kBos)},
          {"decoder_start_token", tokenizer.target_piece(data::Tokenizer::kBos)},
          {"eos_token", tokenizer.target_piece(data::Tokenizer::kEos)},
          {"unk_token", tokenizer.piece(data::Tokenizer::kUnk)},
          {"layer_norm_epsilon", 1e-5},  // torch::nn::LayerNorm's
          {"multi_query_attention", false}};
}

// checkpoint::load has checked that the tokenizer has as many pieces as the model has rows.
nlohmann::json vocabulary(const data::Tokenizer& tokenizer, bool target) {
  auto pieces = nlohmann::json::array();
  for (int id = 0; id < tokenizer.vocab_size(); ++id) pieces.push_back(target ? tokenizer.target_piece(id) : tokenizer.piece(id));
  return pieces;
}

}  // namespace

Quantization parse_quantization(const std::string& name) {
  if (name == "int8" || name == "int8_float32") return Quantization::kInt8;
  if (name == "bfloat16") return Quantization::kBFloat16;
  if (name == "float32") return Quantization::kFloat32;
  throw InputError("--quantization must be int8, int8_float32, bfloat16 or float32, not '" + name + "'");
}

std::string ctranslate2_model_bin(const checkpoint::Checkpoint& checkpoint, Quantization quantization) {
  return transformer_spec(checkpoint).serialize(quantization);
}

std::vector<std::pair<std::string, std::string>> ctranslate2_files(const checkpoint::Checkpoint& checkpoint,
                                                                   const std::string& quantization) {
  const auto tokenizer = data::Tokenizer::from_bytes(checkpoint.tokenizer);
  std::vector<std::pair<std::string, std::string>> files = {
      {"model.bin", ctranslate2_model_bin(checkpoint, parse_quantization(quantization))},
      {"config.json", json_text(ct2_model_config(tokenizer))}};
  if (tokenizer.has_target_table()) {  // separate vocabularies
    files.emplace_back("source_vocabulary.json", json_text(vocabulary(tokenizer, /*target=*/false)));
    files.emplace_back("target_vocabulary.json", json_text(vocabulary(tokenizer, /*target=*/true)));
  } else {
    files.emplace_back("shared_vocabulary.json", json_text(vocabulary(tokenizer, /*target=*/false)));
  }
  if (tokenizer.has_table()) {  // an imported vocabulary: its models per side, as CTranslate2's MarianMT folders
    files.emplace_back("source.spm", tokenizer.source_model());
    files.emplace_back("target.spm", tokenizer.target_model());
  } else {
    files.emplace_back("sentencepiece.model", checkpoint.tokenizer);
  }
  return files;
}

}  // namespace trafo::deploy
