// What `trafo translate` and `trafo eval` share: the decoding flags, the device and thread
// flags, and loading a checkpoint for translation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/model/transformer.h"

namespace CLI {
class App;
}

namespace trafo::cli {

struct RuntimeOptions {
  std::string checkpoint;       // the model file (trafo train's checkpoint-*.pt): the first --checkpoint
  std::vector<std::string> ensemble;  // further --checkpoint files (an ensemble), where the command takes them
  std::string device = "auto";  // cpu | cuda | auto (cuda when available)
  int threads = 0;              // CPU threads for LibTorch; 0: all cores
  std::string precision = "auto";  // fp32 | bf16 | auto (runtime/precision.h: decoding timed in both)
  std::string tag;              // a corpus tag of the model's training, put before every source ("": none)
};

// --beam, --length-penalty, [--n-best,] --max-length-a, --max-length-b, --batch-tokens.
void add_decode_flags(CLI::App& command, decode::DecodeOptions& options, bool with_n_best);
// --sampling-topk, --sampling-topp, --sampling-temperature, --seed (translate: back-translation).
void add_sampling_flags(CLI::App& command, decode::DecodeOptions& options);
// --checkpoint, --device, --threads and, `with_precision`, --precision and --tag.
// `ensemble`: --checkpoint may be given more than once (translate, eval).
void add_runtime_flags(CLI::App& command, RuntimeOptions& options, bool with_precision = true, bool ensemble = false);

struct LoadedModel {
  model::Transformer model;  // in eval mode on the chosen device
  std::vector<model::Transformer> ensemble;  // the further checkpoints' models, same tokenizer
  data::Tokenizer tokenizer;
  bool bf16 = false;  // --precision resolved: run the model under bf16 autocast
  int tag = -1;       // --tag's piece (-1: none)
  checkpoint::InferenceInfo inference;  // the first checkpoint's languages and corpus tags
  std::vector<model::Transformer> models() const;  // model, then the ensemble's
};

// The model's corpus tags that its tokenizer keeps as one piece, and those pieces: the tags --tag
// (and a served request's "tag") may name.
std::map<std::string, int> corpus_tag_ids(const checkpoint::InferenceInfo& info, const data::Tokenizer& tokenizer);

// Sets the thread count, picks the device, loads the checkpoint without its training state and picks
// the decoding precision (auto times the loaded model); throws InputError for an unusable device or
// checkpoint.
LoadedModel load_for_translation(const RuntimeOptions& options);

// `options` with the loaded model's precision and tag.
inline decode::DecodeOptions with_precision(decode::DecodeOptions options, const LoadedModel& loaded) {
  options.bf16 = loaded.bf16;
  options.source_tag = loaded.tag;
  return options;
}

}  // namespace trafo::cli
