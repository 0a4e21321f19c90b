// The small tokenizer and random model that the corpus and translate harnesses share,
// made once per process.
#pragma once

#include "trafo/data/tokenizer.h"
#include "trafo/model/transformer.h"

namespace trafo::fuzz {

// A 400-piece SentencePiece model (byte fallback) trained on 2000 toy-corpus sentences.
const data::Tokenizer& small_tokenizer();

// A random model of `config` (seed 1), in eval mode, on the CPU.
model::Transformer tiny_random_model(const model::ModelConfig& config);

}  // namespace trafo::fuzz
