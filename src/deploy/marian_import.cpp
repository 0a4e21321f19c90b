#include "trafo/deploy/marian_import.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "marian_layers.h"
#include "marian_vocab.h"
#include "state_dict_files.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/util/files.h"
#include "trafo/util/language_tag.h"

namespace trafo::deploy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& path) {
  const auto text = util::read_file(path);
  const auto parsed = parse_json(text, path.string(), /*allow_exceptions=*/false);
  if (!parsed.is_object()) throw InputError(path.string() + " is not a JSON object");
  return parsed;
}

// A config value of the type asked; `fallback` when the key is absent or null.
template <class T>
T value_of(const json& config, const char* key, T fallback, const fs::path& path) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  try {
    return config[key].get<T>();
  } catch (const json::exception&) {
    throw InputError(path.string() + ": " + key + " has the wrong type");
  }
}

// The MarianMT state dict, read by trafo's names.
class ImportedStateDict {
 public:
  ImportedStateDict(std::map<std::string, at::Tensor> weights, fs::path folder)
      : weights_(std::move(weights)), folder_(std::move(folder)), file_(state_dict_file(folder_)) {}

  // `name` must have `shape` (what config.json gives): checked before any arithmetic, so that a
  // wrong file is named with the tensor and both shapes, not met as LibTorch's error inside a cat.
  void expect(const std::string& name, const std::vector<int64_t>& shape) const {
    const auto& tensor = get(name);
    if (tensor.sizes() == at::IntArrayRef(shape)) return;
    const auto text = [](at::IntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); };
    throw InputError(fmt::format("{}: {} has shape {}, not {} as config.json gives", file_.string(), name,
                                 text(tensor.sizes()), text(shape)));
  }

  bool has(const std::string& name) const { return find(name) != nullptr; }
  void drop_inputs() { weights_.clear(); }  // once `out` holds what is needed of them
  // `name` with or without the "model." prefix (MarianMTModel's or MarianModel's state dict).
  const at::Tensor& get(const std::string& name) const {
    if (const auto* tensor = find(name)) return *tensor;
    throw InputError(folder_.string() + ": the weights lack " + name);
  }

  // Sets trafo's `to`.weight and .bias from HF's projections or LayerNorm `from` (concatenated along
  // the output).
  void linear(const std::string& to, const std::vector<std::string>& from) {
    std::vector<at::Tensor> weights, biases;
    for (const auto& name : from) {
      weights.push_back(get(name + ".weight"));
      biases.push_back(get(name + ".bias"));
    }
    out[to + ".weight"] = torch::cat(weights, 0);
    out[to + ".bias"] = torch::cat(biases, 0);
  }

  std::map<std::string, at::Tensor> out;  // trafo's names

 private:
  const at::Tensor* find(const std::string& name) const {
    for (const auto& key : {name, "model." + name}) {
      if (const auto found = weights_.find(key); found != weights_.end()) return &found->second;
    }
    return nullptr;
  }
  std::map<std::string, at::Tensor> weights_;
  fs::path folder_;
  fs::path file_;  // the weights file, for messages
};

// An encoder or decoder layer's weights, by the table export reads too, each checked against `c`.
void import_layer(ImportedStateDict& dict, const std::string& to, const std::string& from, bool decoder,
                  const model::ModelConfig& c) {
  for (const auto& weight : layer_weights(decoder)) {
    std::vector<std::string> parts;
    for (const auto& part : weight.marian) {
      const auto name = from + "." + part;
      // A LayerNorm is d wide; fc1 goes from d to d_ff, fc2 back; every other projection is d by d.
      const int64_t rows = weight.norm ? c.d_model : part == "fc1" ? c.d_ff : c.d_model;
      if (weight.norm) {
        dict.expect(name + ".weight", {rows});
      } else {
        dict.expect(name + ".weight", {rows, part == "fc2" ? c.d_ff : c.d_model});
      }
      dict.expect(name + ".bias", {rows});
      parts.push_back(name);
    }
    dict.linear(to + "." + weight.trafo, parts);
  }
}

// trafo's ModelConfig for MarianMT's config.json; InputError for what trafo cannot express.
model::ModelConfig marian_model_config(const json& config, const fs::path& path) {
  const auto type = value_of<std::string>(config, "model_type", "", path);
  if (type != "marian") throw InputError(path.string() + ": model_type '" + type + "', not 'marian' (MarianMT)");
  const auto number = [&](const char* key) {
    if (!config.contains(key)) throw InputError(path.string() + " lacks " + key);
    return value_of<int64_t>(config, key, 0, path);
  };
  model::ModelConfig c;
  c.vocab_size = number("vocab_size");
  if (c.vocab_size < 5 || c.vocab_size >= model::kMaxVocabSize) {  // before tables of that size are made
    throw InputError(path.string() + ": vocab_size " + std::to_string(c.vocab_size) + " is not in 5 .. " +
                     std::to_string(model::kMaxVocabSize - 1));
  }
  c.d_model = number("d_model");
  c.heads = number("encoder_attention_heads");
  c.encoder_layers = number("encoder_layers");
  c.decoder_layers = number("decoder_layers");
  c.d_ff = number("encoder_ffn_dim");
  c.max_positions = value_of<int64_t>(config, "max_position_embeddings", 512, path);
  c.dropout = value_of<double>(config, "dropout", 0.1, path);
  c.attention_dropout = value_of<double>(config, "attention_dropout", 0.0, path);
  c.activation_dropout = value_of<double>(config, "activation_dropout", 0.0, path);
  c.encoder_layerdrop = value_of<double>(config, "encoder_layerdrop", 0.0, path);
  c.decoder_layerdrop = value_of<double>(config, "decoder_layerdrop", 0.0, path);
  c.norm = "post";
  c.positions = "sinusoidal-halves";
  const auto activation = value_of<std::string>(config, "activation_function", "swish", path);
  if (activation == "swish" || activation == "silu") {
    c.activation = "swish";
  } else if (activation == "relu" || activation == "gelu") {
    c.activation = activation;
  } else {
    throw InputError(path.string() + ": activation_function '" + activation + "' (trafo has relu, gelu and swish)");
  }
  const auto refuse = [&](const std::string& what) {
    throw InputError(path.string() + ": " + what + ", which trafo's model does not have");
  };
  if (number("decoder_attention_heads") != c.heads) refuse("encoder and decoder with different heads");
  if (number("decoder_ffn_dim") != c.d_ff) refuse("encoder and decoder with different ffn dims");
  if (!value_of<bool>(config, "scale_embedding", true, path)) refuse("unscaled embeddings (scale_embedding false)");
  if (value_of<bool>(config, "normalize_embedding", false, path)) refuse("a LayerNorm on the embeddings");
  if (value_of<bool>(config, "normalize_before", false, path)) refuse("pre-norm layers (normalize_before)");
  return c;
}

// The folder's vocabularies as the model's two sides (vocab.json for the source, target_vocab.json
// for the target, as MarianTokenizer reads them; else vocab.json for both) with their special ids,
// grown to one row count, which becomes c.vocab_size.
struct Vocabularies {
  json tokenizer_config = json::object();
  fs::path tokenizer_config_path;
  bool separate = false;
  int64_t source_rows = 0, target_size = 0;  // the folder's own: source pieces, decoder_vocab_size
  int64_t pad = 0, start = 0;                // the target side's pad, and the id decoding starts from
  Side source, target;
};

Vocabularies read_vocabularies(const fs::path& folder, const json& config, const fs::path& config_path,
                               model::ModelConfig& c) {
  std::error_code error;
  Vocabularies v;
  v.tokenizer_config_path = folder / "tokenizer_config.json";
  if (fs::exists(v.tokenizer_config_path, error)) v.tokenizer_config = read_json(v.tokenizer_config_path);
  const auto token = [&](const char* key, const char* fallback) {
    return value_of<std::string>(v.tokenizer_config, key, fallback, v.tokenizer_config_path);
  };
  v.separate = value_of<bool>(v.tokenizer_config, "separate_vocabs", false, v.tokenizer_config_path) ||
               fs::exists(folder / "target_vocab.json", error);
  const auto source_path = folder / "vocab.json", target_path = v.separate ? folder / "target_vocab.json" : source_path;
  const auto source_vocab = read_json(source_path), target_vocab = v.separate ? read_json(target_path) : source_vocab;
  v.target_size = value_of<int64_t>(config, "decoder_vocab_size", c.vocab_size, config_path);
  if (v.target_size < 5 || v.target_size >= model::kMaxVocabSize) {
    throw InputError(config_path.string() + ": decoder_vocab_size " + std::to_string(v.target_size) + " is not in 5 .. " +
                     std::to_string(model::kMaxVocabSize - 1));
  }
  if (!v.separate && v.target_size != c.vocab_size) {
    throw InputError(config_path.string() + ": decoder_vocab_size " + std::to_string(v.target_size) +
                     " is not vocab_size " + std::to_string(c.vocab_size) + ", and there is no target_vocab.json");
  }
  const auto source_pieces = pieces_by_id(source_vocab, c.vocab_size, source_path);
  const auto target_pieces = pieces_by_id(target_vocab, v.target_size, target_path);
  v.source_rows = static_cast<int64_t>(source_pieces.size());
  // The target side's special ids are the model config's (decoding uses them); the source side's
  // its vocabulary's pieces of the tokenizer's special names.
  const auto config_id = [&](const char* key, const json& vocab, const std::string& piece, const fs::path& path) {
    if (config.contains(key) && config[key].is_number_integer()) return config[key].get<int64_t>();
    return piece_id(vocab, piece, path);
  };
  v.pad = config_id("pad_token_id", target_vocab, token("pad_token", "<pad>"), target_path);
  const int64_t eos = config_id("eos_token_id", target_vocab, token("eos_token", "</s>"), target_path);
  v.start = value_of<int64_t>(config, "decoder_start_token_id", v.pad, config_path);
  v.target = side_of(target_pieces, v.pad, piece_id(target_vocab, token("unk_token", "<unk>"), target_path), v.start,
                     eos, config_path);
  v.source = v.target;
  if (v.separate) {
    const int64_t source_pad = piece_id(source_vocab, token("pad_token", "<pad>"), source_path);
    v.source = side_of(source_pieces, source_pad, piece_id(source_vocab, token("unk_token", "<unk>"), source_path),
                       source_pad, piece_id(source_vocab, token("eos_token", "</s>"), source_path), source_path);
  }
  // One row count for both sides: the shorter side's table grows with pieces no text gives, their
  // rows zero (and, on the target side, their output below every real one's).
  const auto rows = std::max(v.source.table.size(), v.target.table.size());
  grow(v.source, rows);
  grow(v.target, rows);
  c.vocab_size = static_cast<int64_t>(rows);
  return v;
}

// MarianMT's weights under trafo's names in `dict.out`: the layers, checked against `c`, and the
// embeddings and output projection reordered to the vocabularies' rows; `c` says whether they are
// tied.
void map_weights(ImportedStateDict& dict, const Vocabularies& v, model::ModelConfig& c, const fs::path& folder) {
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    import_layer(dict, "encoder_layers." + std::to_string(i), "encoder.layers." + std::to_string(i), false, c);
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    import_layer(dict, "decoder_layers." + std::to_string(i), "decoder.layers." + std::to_string(i), true, c);
  }
  // The embeddings and the output projection: each the first of its names the file holds (a tied
  // model's file may keep one of them).
  const auto first = [&](std::vector<std::string> names) -> at::Tensor {
    for (const auto& name : names) {
      if (dict.has(name)) return dict.get(name);
    }
    return dict.get(names.front());  // throws, naming it
  };
  const auto source_embedding = first({"encoder.embed_tokens.weight", "shared.weight"});
  auto target_embedding = first({"decoder.embed_tokens.weight", "shared.weight", "encoder.embed_tokens.weight"});
  // transformers makes the decoder's embedding vocab_size rows long even where decoder_vocab_size is
  // less; the rows past the target vocabulary are never read.
  if (target_embedding.dim() == 2 && target_embedding.size(0) > v.target_size) {
    target_embedding = target_embedding.narrow(0, 0, v.target_size);
  }
  const auto output = first({"lm_head.weight", "decoder.embed_tokens.weight", "shared.weight"});
  const auto bias = dict.has("final_logits_bias") ? dict.get("final_logits_bias").reshape({-1})
                                                  : torch::zeros({v.target_size});
  const auto check_rows = [&](const at::Tensor& tensor, int64_t size, const char* what) {
    if (tensor.dim() != 2 || tensor.size(0) != size || tensor.size(1) != c.d_model) {
      throw InputError(folder.string() + ": the " + std::string(what) + "'s shape does not match config.json");
    }
  };
  check_rows(source_embedding, v.source_rows, "source embedding");
  check_rows(target_embedding, v.target_size, "target embedding");
  check_rows(output, v.target_size, "output projection");
  if (bias.numel() != v.target_size) {
    throw InputError(folder.string() + ": final_logits_bias's size does not match config.json");
  }
  // Tied where the folder's three matrices are one (OPUS-MT's tied-embeddings-all): one vocabulary,
  // and the same numbers in each. The model keeps MarianMT's shapes then, the final_logits_bias as
  // its output_bias; a folder that really is untied imports untied, the bias the projection's.
  const bool tied =
      !v.separate && torch::equal(source_embedding, target_embedding) && torch::equal(source_embedding, output);
  c.tie_embeddings = tied;
  c.output_bias = tied;
  // Where decoding starts from pad (OPUS-MT), trafo's pad row repeats the start row (in the one matrix
  // when tied, in each matrix when not), and its bias is lowered by 30: its probability (e^-30 of the
  // start row's) then leaves every other one as MarianMT has it, in float32, while a fine-tuning's
  // label smoothing still sees a finite log p there. The bias alone does this, so tied or untied
  // alike. Rows grown on the target side (separate vocabularies, so untied) are zero, with a bias 30
  // below the lowest.
  const auto real = static_cast<int64_t>(v.target.rows.size());
  auto output_bias = reordered(bias.unsqueeze(1), v.target, c.vocab_size).squeeze(1);
  if (v.start == v.pad) output_bias[0] -= 30.0;
  if (real < c.vocab_size) output_bias.narrow(0, real, c.vocab_size - real).fill_(bias.min().item<float>() - 30.0F);
  dict.out["source_embedding.embedding.weight"] = reordered(source_embedding, v.source, c.vocab_size);
  if (tied) {
    dict.out["output_bias"] = output_bias;
  } else {
    dict.out["target_embedding.embedding.weight"] = reordered(target_embedding, v.target, c.vocab_size);
    dict.out["output_projection.weight"] = reordered(output, v.target, c.vocab_size);
    dict.out["output_projection.bias"] = output_bias;
  }
  dict.drop_inputs();
}

// A model of the config (its buffers, the position table, are its own) holding `weights`, each
// checked for its shape; `weights` is emptied as they go in.
model::Transformer filled_model(const model::ModelConfig& c, std::map<std::string, at::Tensor>& weights,
                                const fs::path& folder) {
  model::Transformer model(c);
  torch::NoGradGuard no_grad;
  for (auto& parameter : model->named_parameters()) {
    const auto found = weights.find(parameter.key());
    if (found == weights.end()) throw InputError(folder.string() + ": no weight for trafo's " + parameter.key());
    if (found->second.sizes() != parameter.value().sizes()) {
      throw InputError(folder.string() + ": the weight for " + parameter.key() + " has the wrong shape");
    }
    parameter.value().copy_(found->second);
    weights.erase(found);  // memory: the model's copy is the one kept
  }
  return model;
}

// The record of how it was made, in the keys `train --init-from` reads for the model and vocabulary.
std::string import_record(const fs::path& folder, const model::ModelConfig& c, const checkpoint::InferenceInfo& info) {
  std::string record = "# imported by trafo import from the MarianMT folder " + folder.string() + "\n" +
                       "vocab-size = " + std::to_string(c.vocab_size) + "\n" +
                       "d-model = " + std::to_string(c.d_model) + "\n" +
                       "heads = " + std::to_string(c.heads) + "\n" +
                       "encoder-layers = " + std::to_string(c.encoder_layers) + "\n" +
                       "decoder-layers = " + std::to_string(c.decoder_layers) + "\n" +
                       "d-ff = " + std::to_string(c.d_ff) + "\n" +
                       "activation = \"" + c.activation + "\"\n" +
                       "norm = \"post\"\n" +
                       "tie-embeddings = " + (c.tie_embeddings ? "true" : "false") + "\n" +
                       "output-bias = " + (c.output_bias ? "true" : "false") + "\n" +
                       "max-positions = " + std::to_string(c.max_positions) + "\n" +
                       "positions = \"sinusoidal-halves\"\n";
  if (!info.src_lang.empty()) record += "src-lang = " + json(info.src_lang).dump() + "\n";
  if (!info.tgt_lang.empty()) record += "tgt-lang = " + json(info.tgt_lang).dump() + "\n";
  return record;
}

checkpoint::Checkpoint import_folder(const fs::path& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error)) throw InputError(folder.string() + " is not a folder");
  const auto config_path = folder / "config.json";
  const auto config = read_json(config_path);
  auto c = marian_model_config(config, config_path);
  try {  // before any weight is read: a config trafo's model cannot take is config.json's fault
    model::validate(c);
  } catch (const InputError& e) {
    throw InputError(config_path.string() + ": " + e.what());
  }
  const auto vocabularies = read_vocabularies(folder, config, config_path, c);
  ImportedStateDict dict(read_state_dict(folder), folder);
  map_weights(dict, vocabularies, c, folder);
  model::validate(c);

  checkpoint::Checkpoint result;
  result.model_config = c;
  result.weights = checkpoint::model_weights(filled_model(c, dict.out, folder));
  // Each SentencePiece model is checked by its file's name first.
  const auto spm = [&](const char* name) {
    auto model = util::read_file(folder / name);
    data::Tokenizer::check_model(model, (folder / name).string());
    return model;
  };
  const auto& v = vocabularies;
  result.tokenizer = data::Tokenizer::from_table(spm("source.spm"), spm("target.spm"), v.source.table,
                                                 v.separate ? v.target.table : std::vector<std::string>{},
                                                 /*start_is_pad=*/v.start == v.pad)
                         .to_bytes();
  result.inference.src_lang = value_of<std::string>(v.tokenizer_config, "source_lang", "", folder);
  result.inference.tgt_lang = value_of<std::string>(v.tokenizer_config, "target_lang", "", folder);
  for (const auto& piece : v.source.table) {  // a multilingual model's target-language codes, usable as --tag
    if (!util::tag_language(piece).empty()) result.inference.tags.push_back(piece);
  }
  result.config = import_record(folder, c, result.inference);
  return result;
}

}  // namespace

checkpoint::Checkpoint import_marian(const fs::path& folder) {
  // Every reason names the file at fault; one from deeper down (a weight's reader) gets the folder.
  try {
    return import_folder(folder);
  } catch (const InputError& e) {
    const std::string reason = e.what();
    if (reason.find(folder.string()) != std::string::npos) throw;
    throw InputError(folder.string() + ": " + reason);
  }
}

}  // namespace trafo::deploy
