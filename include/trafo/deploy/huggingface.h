// `trafo export --format huggingface`: a checkpoint as a Hugging Face MarianMT folder that
// transformers' AutoModelForSeq2SeqLM and AutoTokenizer load without custom code, and that
// translates as trafo does (docs/guide-deploying.md "Hugging Face transformers").
//
// MarianMTModel is post-norm with no final LayerNorm, scales embeddings by √d_model, and adds
// sinusoidal positions with the sines in the first half of each vector and the cosines in the second:
// trafo models trained with `--norm post --positions sinusoidal-halves` (any --activation, tied
// embeddings or not) are exactly that. Other architectures are refused in one line naming the
// options to train with instead.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::deploy {

// config.json, generation_config.json, model.safetensors (float32), vocab.json, source.spm and
// target.spm (trafo's one SentencePiece model), tokenizer_config.json and special_tokens_map.json.
// `quantization` must be "float32". trafo::InputError for an architecture MarianMT cannot express.
std::vector<std::pair<std::string, std::string>> huggingface_files(const checkpoint::Checkpoint& checkpoint,
                                                                   const std::string& quantization);

}  // namespace trafo::deploy
