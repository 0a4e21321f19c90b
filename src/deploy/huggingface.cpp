#include "trafo/deploy/huggingface.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "export_support.h"
#include "marian_layers.h"
#include "trafo/checkpoint/safetensors.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/model/positions.h"

namespace trafo::deploy {
namespace {

// The transformers class a model exports to: MarianMT for post-norm, Pegasus for pre-norm (its
// layers normalise before each block, and each stack ends in a LayerNorm, as trafo's do).
struct ModelClass {
  const char* model_type;
  const char* architecture;
};

ModelClass model_class(const model::ModelConfig& c) {
  if (model::norm_position(c) == model::NormPosition::kPost) return {"marian", "MarianMTModel"};
  return {"pegasus", "PegasusForConditionalGeneration"};
}

// tokenizer_config.json's target_lang: a model of several targets names them all as OPUS-MT does
// ("fr+es+it"), a model of one its language.
std::string target_lang(const checkpoint::InferenceInfo& info) {
  const auto codes = info.target_languages();
  if (codes.size() < 2) return info.tgt_lang;
  std::string joined;
  for (const auto& code : codes) joined += (joined.empty() ? "" : "+") + code;
  return joined;
}

// What neither class can express, with what to train instead; empty when one can.
std::string unsupported(const model::ModelConfig& c) {
  if (model::norm_position(c) == model::NormPosition::kPre && !c.tie_embeddings) {
    return "--norm pre with --tie-embeddings false (Pegasus, the pre-norm class, shares one embedding between "
           "encoder and decoder): train with --tie-embeddings true, or --norm post to export as MarianMT";
  }
  if (c.d_model % 2 != 0) return "an odd --d-model (" + std::to_string(c.d_model) + "): train with an even one";
  if (c.positions != "sinusoidal" && c.positions != "sinusoidal-halves") {
    return "--positions " + c.positions + ": train with --positions sinusoidal or sinusoidal-halves";
  }
  return "";
}

const char* activation_name(const model::ModelConfig& c) {
  switch (model::activation_of(c)) {
    case model::Activation::kGelu: return "gelu";  // transformers' "gelu" is the exact, erf form, as trafo's
    case model::Activation::kSwish: return "swish";
    case model::Activation::kRelu: return "relu";
  }
  return "relu";
}

// The exported vocabulary: exported id i is trafo's row rows[i]. Identity, but for a model imported
// from one that started decoding from pad (OPUS-MT, Tokenizer::start_is_pad): trafo keeps that piece
// twice, as pad (0) and as bos (2), and the export joins them again, as the folder had it: id 0 is
// pad and the decoder's start, its rows trafo's bos rows (the start that trafo trained), and every
// later id one lower. The export then has the imported folder's shapes.
struct Ids {
  std::vector<int64_t> rows;
  bool joined = false;  // pad and the start joined
  int64_t pad = data::Tokenizer::kPad, unk = data::Tokenizer::kUnk, start = data::Tokenizer::kBos,
          eos = data::Tokenizer::kEos;

  Ids(const data::Tokenizer& tokenizer, int64_t vocab_size) : joined(tokenizer.start_is_pad()) {
    using data::Tokenizer;
    if (joined) rows = {Tokenizer::kBos, Tokenizer::kUnk, Tokenizer::kEos};  // as pad/start, unk, eos
    for (auto id = static_cast<int64_t>(joined ? Tokenizer::kEos + 1 : 0); id < vocab_size; ++id) rows.push_back(id);
    if (!joined) return;
    start = pad;
    eos = 2;
  }
  int64_t size() const { return static_cast<int64_t>(rows.size()); }
  // The piece an exported id has: the joined id keeps pad's name.
  int64_t trafo_id(int64_t id) const { return joined && id == pad ? data::Tokenizer::kPad : rows[id]; }
};

// trafo's weight names -> MarianMTModel's state dict (fused projections split into q, k and v).
//
// Interleaved positions become MarianMT's halves by one fixed permutation of the model dimension: the
// residual stream's coordinate j goes to place perm⁻¹(j), perm = (0, 2, 4, ..., 1, 3, 5, ...). Every
// weight that reads the stream is permuted along its input, every one that writes it along its
// output, and the LayerNorms along theirs (mean and variance do not depend on the order): the function
// is unchanged, and the interleaved table becomes the halves one exactly.
class ExportedStateDict {
 public:
  ExportedStateDict(const checkpoint::Checkpoint& checkpoint, bool interleaved) : weights_(checkpoint.weights) {
    const int64_t d = checkpoint.model_config.d_model;
    if (interleaved) permutation_ = torch::cat({torch::arange(0, d, 2), torch::arange(1, d, 2)});
  }

  // A tensor whose dimension `dim` is the residual stream's (-1: none).
  void stream(const std::string& to, const std::string& from, int64_t dim) {
    tensors[to] = permuted(weight(from), dim).contiguous();
  }
  // A linear layer that reads the stream (`reads`) or writes it.
  void linear(const std::string& to, const std::string& from, bool reads) {
    stream(to + ".weight", from + ".weight", reads ? 1 : 0);
    stream(to + ".bias", from + ".bias", reads ? -1 : 0);
  }
  void norm(const std::string& to, const std::string& from) {
    stream(to + ".weight", from + ".weight", 0);
    stream(to + ".bias", from + ".bias", 0);
  }
  // A fused projection [n·d, d] that reads the stream, split into its parts `to` (q, k, v or k, v), in
  // that order.
  void split(const std::vector<std::string>& to, const std::string& from) {
    const auto parts = static_cast<int64_t>(to.size());
    const auto weights = permuted(weight(from + ".weight"), 1).chunk(parts, 0);
    const auto biases = weight(from + ".bias").chunk(parts, 0);
    for (size_t i = 0; i < to.size(); ++i) {
      tensors[to[i] + ".weight"] = weights[i].contiguous();
      tensors[to[i] + ".bias"] = biases[i].contiguous();
    }
  }

  std::map<std::string, at::Tensor> tensors;

  const at::Tensor& weight(const std::string& name) const { return checkpoint_weight(weights_, name); }

 private:
  at::Tensor permuted(const at::Tensor& tensor, int64_t dim) const {
    if (dim < 0 || !permutation_.defined()) return tensor;
    return tensor.index_select(dim, permutation_);
  }

  const std::map<std::string, at::Tensor>& weights_;
  at::Tensor permutation_;  // undefined: the positions are in halves already
};

// An encoder or decoder layer's weights, by the table import reads too.
void export_layer(ExportedStateDict& dict, const std::string& to, const std::string& from, bool decoder) {
  for (const auto& weight : layer_weights(decoder)) {
    const auto source = from + "." + weight.trafo;
    if (weight.norm) {
      dict.norm(to + "." + weight.marian.front(), source);
    } else if (weight.marian.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& part : weight.marian) parts.push_back(to + "." + part);
      dict.split(parts, source);
    } else {
      dict.linear(to + "." + weight.marian.front(), source, weight.reads_stream);
    }
  }
}

std::string model_safetensors(const checkpoint::Checkpoint& checkpoint, const Ids& ids) {
  const auto& c = checkpoint.model_config;
  ExportedStateDict dict(checkpoint, /*interleaved=*/c.positions == "sinusoidal");
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    export_layer(dict, "model.encoder.layers." + std::to_string(i), "encoder_layers." + std::to_string(i), false);
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    export_layer(dict, "model.decoder.layers." + std::to_string(i), "decoder_layers." + std::to_string(i), true);
  }
  if (model::norm_position(c) == model::NormPosition::kPre) {  // each stack's final LayerNorm
    dict.norm("model.encoder.layer_norm", "encoder_norm");
    dict.norm("model.decoder.layer_norm", "decoder_norm");
  }
  const char* table = model::position_kind(c.positions).ctranslate2_table;
  dict.stream("model.encoder.embed_positions.weight", table, 1);
  dict.stream("model.decoder.embed_positions.weight", table, 1);
  // The output bias, tied (output_bias) or the projection's, is the class's final_logits_bias [1,V].
  const auto logits_bias = [&](const std::string& name) {
    return dict.weight(name).reshape({1, c.vocab_size}).contiguous();
  };
  const std::vector<std::string> by_piece = {"model.shared.weight", "model.encoder.embed_tokens.weight",
                                             "model.decoder.embed_tokens.weight", "lm_head.weight"};
  if (c.tie_embeddings) {
    // The one matrix once, as transformers saves a tied model: both stacks' embed_tokens and lm_head
    // are tied to it on loading (tie_word_embeddings).
    dict.stream("model.shared.weight", "source_embedding.embedding.weight", 1);
    dict.tensors["final_logits_bias"] = c.output_bias ? logits_bias("output_bias") : torch::zeros({1, c.vocab_size});
  } else {  // untied MarianMT has no shared matrix
    dict.stream("model.encoder.embed_tokens.weight", "source_embedding.embedding.weight", 1);
    dict.stream("model.decoder.embed_tokens.weight", "target_embedding.embedding.weight", 1);
    dict.stream("lm_head.weight", "output_projection.weight", 1);
    dict.tensors["final_logits_bias"] = logits_bias("output_projection.bias");
  }
  if (ids.joined) {  // each matrix's rows, and the bias's columns, in the exported ids' order
    const auto rows = torch::tensor(ids.rows, torch::kLong);
    for (const auto& name : by_piece) {
      if (const auto found = dict.tensors.find(name); found != dict.tensors.end()) {
        found->second = found->second.index_select(0, rows);
      }
    }
    auto& bias = dict.tensors.at("final_logits_bias");
    bias = bias.index_select(1, rows);
  }
  checkpoint::Safetensors file;
  file.metadata["format"] = "pt";  // transformers refuses a safetensors file without it
  for (auto& [name, tensor] : dict.tensors) file.tensors[name] = tensor.to(torch::kFloat32);
  return checkpoint::to_safetensors(file);
}

nlohmann::json hf_model_config(const model::ModelConfig& c, const Ids& ids) {
  const auto kind = model_class(c);
  nlohmann::json config = {{"architectures", {kind.architecture}},
                           {"model_type", kind.model_type},
                           {"vocab_size", ids.size()},
                           {"d_model", c.d_model},
                           {"encoder_layers", c.encoder_layers},
                           {"decoder_layers", c.decoder_layers},
                           {"encoder_attention_heads", c.heads},
                           {"decoder_attention_heads", c.heads},
                           {"encoder_ffn_dim", c.d_ff},
                           {"decoder_ffn_dim", c.d_ff},
                           {"activation_function", activation_name(c)},
                           {"max_position_embeddings", c.max_positions},
                           {"scale_embedding", true},
                           {"tie_word_embeddings", c.tie_embeddings},
                           {"dropout", c.dropout},
                           {"attention_dropout", model::attention_dropout_rate(c)},
                           {"activation_dropout", model::activation_dropout_rate(c)},
                           {"encoder_layerdrop", c.encoder_layerdrop},
                           {"decoder_layerdrop", c.decoder_layerdrop},
                           {"init_std", 0.02},
                           {"is_encoder_decoder", true},
                           {"pad_token_id", ids.pad},
                           {"eos_token_id", ids.eos},
                           {"bos_token_id", ids.start},
                           {"decoder_start_token_id", ids.start},
                           {"forced_eos_token_id", ids.eos},
                           {"torch_dtype", "float32"}};
  if (std::string(kind.model_type) == "marian") {
    config.update({{"decoder_vocab_size", ids.size()},
                   {"share_encoder_decoder_embeddings", c.tie_embeddings},
                   {"static_position_embeddings", true},
                   {"normalize_embedding", false}});
  }
  return config;
}

// Greedy by default, as `trafo translate`; pad and the start are never produced, as in trafo's decoders.
nlohmann::json generation_config(const model::ModelConfig& c, const Ids& ids) {
  auto never = nlohmann::json::array({{ids.pad}});
  if (ids.start != ids.pad) never.push_back({ids.start});
  return {{"decoder_start_token_id", ids.start},
          {"bos_token_id", ids.start},
          {"eos_token_id", ids.eos},
          {"forced_eos_token_id", ids.eos},
          {"pad_token_id", ids.pad},
          {"bad_words_ids", never},
          {"max_length", c.max_positions},
          {"num_beams", 1}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> huggingface_files(const checkpoint::Checkpoint& checkpoint,
                                                                   const std::string& quantization) {
  if (quantization != "float32") throw InputError("--format huggingface takes --quantization float32 only");
  const auto& c = checkpoint.model_config;
  if (const auto why = unsupported(c); !why.empty()) throw InputError("no Hugging Face form for " + why);
  const auto tokenizer = data::Tokenizer::from_bytes(checkpoint.tokenizer);
  // One id table for both SentencePiece models: trafo's ids (its own pieces' SentencePiece ids, or an
  // imported vocabulary's table), pad and the start joined where the imported folder had them so.
  const Ids ids(tokenizer, c.vocab_size);
  nlohmann::json vocab = nlohmann::json::object(), target_vocab = nlohmann::json::object();
  for (int64_t id = 0; id < ids.size(); ++id) {
    vocab[tokenizer.piece(static_cast<int>(ids.trafo_id(id)))] = id;
    target_vocab[tokenizer.target_piece(static_cast<int>(ids.trafo_id(id)))] = id;
  }
  const bool separate = tokenizer.has_target_table();  // an imported model's separate vocabularies
  const auto& info = checkpoint.inference;
  // Every special piece generate() puts in its output is declared, so that skip_special_tokens drops it:
  // the decoder's start (bos) too. Left out, it is decoded as text wherever the SentencePiece model lacks
  // it as a control piece (an imported OPUS-MT model's has no <s>): "<s>" before every translation.
  // MarianTokenizer adds only eos to its inputs, so declaring bos changes no encoding. Joined with pad,
  // the start is pad, declared already.
  nlohmann::json special = {{"eos_token", tokenizer.piece(data::Tokenizer::kEos)},
                            {"unk_token", tokenizer.piece(data::Tokenizer::kUnk)},
                            {"pad_token", tokenizer.piece(data::Tokenizer::kPad)}};
  if (!ids.joined) special["bos_token"] = tokenizer.piece(data::Tokenizer::kBos);
  nlohmann::json tokenizer_config = special;
  tokenizer_config.update({{"tokenizer_class", "MarianTokenizer"},
                           {"source_lang", info.src_lang},
                           {"target_lang", target_lang(info)},
                           {"separate_vocabs", separate},
                           {"model_max_length", c.max_positions},
                           // Text that spells a special piece ("<s>", "</s>") is cut by SentencePiece, as trafo
                           // cuts it, not read as that piece.
                           {"split_special_tokens", true},
                           {"clean_up_tokenization_spaces", false}});
  std::vector<std::pair<std::string, std::string>> files = {{"config.json", json_text(hf_model_config(c, ids))},
          {"generation_config.json", json_text(generation_config(c, ids))},
          {"model.safetensors", model_safetensors(checkpoint, ids)},
          {"vocab.json", json_text(vocab)},
          {"source.spm", tokenizer.source_model()},
          {"target.spm", tokenizer.target_model()},
          {"tokenizer_config.json", json_text(tokenizer_config)},
          {"special_tokens_map.json", json_text(special)}};
  if (separate) files.emplace_back("target_vocab.json", json_text(target_vocab));
  return files;
}

}  // namespace trafo::deploy
