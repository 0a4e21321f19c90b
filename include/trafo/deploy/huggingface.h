// `trafo export --format huggingface`: a checkpoint as a Hugging Face folder that transformers'
// AutoModelForSeq2SeqLM and AutoTokenizer load without custom code (a MarianTokenizer on trafo's
// SentencePiece model), and that translates as trafo does (docs/guide-deploying.md "Hugging Face").
//
// Post-norm models export as MarianMTModel (post-norm, no final LayerNorm), pre-norm ones, trafo's
// default among them, as PegasusForConditionalGeneration (pre-norm, a final LayerNorm per stack).
// Both scale embeddings by √d_model and add sinusoidal positions from 0 with the sines in the first
// half of each vector and the cosines in the second: `--positions sinusoidal-halves` exports as it
// is, trafo's interleaved `sinusoidal` through one permutation of the model dimension that leaves
// the function unchanged. Pegasus shares one embedding between its stacks: a pre-norm model with
// untied embeddings is refused in one line naming the options to train with instead.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::deploy {

// config.json, generation_config.json, model.safetensors (float32), vocab.json, source.spm and
// target.spm (trafo's one SentencePiece model), tokenizer_config.json and special_tokens_map.json.
// `quantization` must be "float32". trafo::InputError for an architecture neither class can express.
std::vector<std::pair<std::string, std::string>> huggingface_files(const checkpoint::Checkpoint& checkpoint,
                                                                   const std::string& quantization);

}  // namespace trafo::deploy
