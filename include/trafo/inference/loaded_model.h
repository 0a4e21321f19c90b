// A model loaded for translation: the checkpoint (and an ensemble's further ones) on the chosen
// device, its tokenizer, the decoding precision and the corpus tag. What every front door
// (inference_cli's commands, serve) loads before it translates, scores or aligns.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/model/transformer.h"

namespace trafo::inference {

// What loading takes: the commands' --checkpoint, --device, --threads, --precision, --tag and --tgt-lang.
struct RuntimeOptions {
  std::string checkpoint;       // the model file (trafo train's checkpoint-*.pt): the first --checkpoint
  std::vector<std::string> ensemble;  // further --checkpoint files (an ensemble), where the command takes them
  std::string device = "auto";  // cpu | cuda | auto (cuda when available)
  int threads = 0;              // CPU threads for LibTorch; 0: all cores
  std::string precision = "auto";  // fp32 | bf16 | auto (runtime/precision.h: decoding timed in both)
  std::string tag;              // a corpus tag of the model's training, put before every source ("": none)
  std::string tgt_lang;         // the target language: on a model of several, its >>xx<< tag ("": --tag's)
};

struct LoadedModel {
  model::Transformer model;  // in eval mode on the chosen device
  std::vector<model::Transformer> ensemble;  // the further checkpoints' models, same tokenizer
  data::Tokenizer tokenizer;
  bool bf16 = false;  // --precision resolved: run the model under bf16 autocast
  int tag = -1;       // the piece --tag or --tgt-lang chose (-1: none)
  // A model of several target languages read without a choice: the >>xx<< codes one of which every
  // source must begin with (require_target); empty otherwise.
  std::vector<std::string> required_codes;
  checkpoint::InferenceInfo inference;  // the first checkpoint's languages and corpus tags
  std::vector<model::Transformer> models() const;  // model, then the ensemble's
};

// The model's corpus tags that its tokenizer keeps as one piece, and those pieces: the tags --tag
// (and a served request's "tag") may name.
std::map<std::string, int> corpus_tag_ids(const checkpoint::InferenceInfo& info, const data::Tokenizer& tokenizer);

// InputError naming `where` and the choices when `loaded` needs every source to begin with a target
// language code (required_codes) and `text`, not empty, does not.
void require_target(const LoadedModel& loaded, const std::string& text, const std::string& where);
// The same for every line of a file (`where`: "FILE line N").
void require_targets(const LoadedModel& loaded, const std::vector<std::string>& lines, const std::string& file);

// Sets the thread count, picks the device, loads the checkpoint without its training state and picks
// the decoding precision (auto times the loaded model); throws InputError for an unusable device or
// checkpoint, or a target it does not translate into. --tgt-lang on a model with >>xx<< tags picks
// the tag; on one without, it must be the model's target language (or the checkpoint names none).
LoadedModel load_for_translation(const RuntimeOptions& options);

// Whether the language identifier a checkpoint holds (`language_id`, its JSON; "" for none) knows
// every one of `languages`.
bool identifier_knows(const std::string& language_id, const std::vector<std::string>& languages);

// `options` with the loaded model's precision and tag and, where they ask for one (retry_off_target),
// its language check: that of a model of several target languages, made from its identifier
// (InputError for a model of one, or one without an identifier: the option would do nothing).
decode::DecodeOptions decoding_for(decode::DecodeOptions options, const LoadedModel& loaded);

}  // namespace trafo::inference
