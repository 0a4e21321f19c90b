// One self-contained checkpoint file: everything needed to translate with a model or to
// resume its training exactly (docs/design.md "Checkpoint"). The format knows nothing of
// optimizers or schedules: training state is named tensors plus a JSON string that
// train/ packs and unpacks.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trafo/model/config.h"
#include "trafo/model/transformer.h"
#include "trafo/util/files.h"

namespace trafo::checkpoint {

// 3: a safetensors file (checkpoint/safetensors.h): the weights under their model names, the
// training state's tensors under "training/", and in its metadata the format, this version, the
// model config (JSON), the inference info (JSON), the effective config (TOML), the SentencePiece
// model (base64) and the training state's JSON. Version 2 (a LibTorch archive behind a checksum line) still loads.
inline constexpr int64_t kFormatVersion = 3;

struct TrainingState {
  std::map<std::string, at::Tensor> tensors;  // optimizer moments, RNG states, ...
  std::string json;                           // step, epoch, data position, schedule, best metric, ...
};

// What inference reads of how a model was trained, stored beside its model config, so that no
// command that translates parses the training config (which stays in the file as its record).
struct InferenceInfo {
  std::string src_lang, tgt_lang;  // the run's languages ("": unknown)
  std::vector<std::string> tags;   // the corpus tags it was trained with, each once, in config order
  // metrics::LanguageId's JSON, learned from its corpora's sides, source languages included (every
  // run of two or more languages), for language detection and the off-target rate ("": none).
  std::string language_id;
  bool empty() const { return src_lang.empty() && tgt_lang.empty() && tags.empty() && language_id.empty(); }
  // The codes of its target-language tags (">>fr<<" -> "fr"), in order: the targets of a model that
  // translates into several (two or more), as multilingual OPUS-MT models write them first in the
  // source. Empty for a model without such tags.
  std::vector<std::string> target_languages() const;
};

struct Checkpoint {
  model::ModelConfig model_config;
  std::map<std::string, at::Tensor> weights;  // the model's named parameters and buffers
  std::string tokenizer;                      // the SentencePiece model's bytes
  std::string config;                         // the full effective config (TOML text), a record only
  std::optional<TrainingState> training;      // absent in a checkpoint made for translation only
  // Saved in the metadata's "inference" entry unless empty. Loading fills it from that entry, or
  // from `config`'s text for files written before it (inference_from_config).
  InferenceInfo inference;
};

// The languages and corpus tags of a training config's TOML text (src-lang, tgt-lang and the tags
// of its [[corpus]] tables), read leniently: what cannot be read stays empty. For checkpoints
// written before InferenceInfo was stored.
InferenceInfo inference_from_config(const std::string& toml);

// Copies a model's parameters and buffers (to CPU) into a Checkpoint's weights.
std::map<std::string, at::Tensor> model_weights(const model::Transformer& model);

// Writes atomically: a temporary file in the same folder, flushed, then renamed over `path`; a
// device or pipe at `path` is written through or replaced as `special` says (util/files.h).
void save(const std::filesystem::path& path, const Checkpoint& checkpoint,
          util::Special special = util::Special::kWriteThrough);

// Reads and validates: the file's checksum, its format and version, the model config, the tokenizer
// (as many pieces as the vocabulary), and every weight the config implies, with its shape, as fp32,
// and no other. A missing, truncated or corrupt file, one that is no regular file (a folder,
// /dev/zero), or an unknown version throws trafo::InputError naming the file. The tensors of a
// version 3 file are copy-on-write views of the file mapped in memory.
// `with_training_state` false skips the training state (translation needs none of it).
Checkpoint load(const std::filesystem::path& path, bool with_training_state = true);

// The numbered checkpoints (checkpoint-STEP.pt) of folder `dir` with their steps, lowest step first.
std::vector<std::pair<int64_t, std::filesystem::path>> numbered_checkpoints(const std::filesystem::path& dir);

// A model of the checkpoint's config holding its weights, in eval mode, on `device`.
model::Transformer make_model(const Checkpoint& checkpoint, const at::Device& device);

}  // namespace trafo::checkpoint
