// `trafo import`: a Hugging Face MarianMT folder (the OPUS-MT models) as a trafo checkpoint, so that
// every command that takes a checkpoint takes it, and `train --init-from` fine-tunes it
// (docs/guide-deploying.md "Importing a MarianMT model").
//
// What MarianMT is, in trafo's terms: post-norm, no final LayerNorm, √d_model embedding scale,
// sinusoidal positions from 0 in halves ("sinusoidal-halves"), relu, gelu or swish, and an output
// bias (final_logits_bias): tied with output_bias where the source and target embeddings and the
// output projection are one matrix (OPUS-MT), else untied. Its ids differ from trafo's fixed pad 0, unk 1, bos 2,
// eos 3 (OPUS-MT: eos 0, unk 1, pad the last, decoding starts from pad): the import reorders the
// vocabulary's rows to trafo's ids, the start row as bos and again as pad (its output lowered by 30,
// so that the softmax is MarianMT's). The tokenizer becomes data::Tokenizer's table kind: source.spm
// and target.spm with vocab.json's pieces in the new order (and target_vocab.json's for separate
// vocabularies, whose shorter table grows to the longer's length with rows no text gives).
#pragma once

#include <filesystem>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::deploy {

// Reads config.json, the weights (model.safetensors, else pytorch_model.bin: torch.save's zip form
// through LibTorch's unpickler, the form before PyTorch 1.6 through torch_legacy.h's; neither runs
// code), vocab.json, source.spm, target.spm and, when there, target_vocab.json and
// tokenizer_config.json. trafo::InputError, in one line, for a
// missing or unreadable file, a config the weights disagree with, and what trafo's model cannot
// express.
checkpoint::Checkpoint import_marian(const std::filesystem::path& folder);

}  // namespace trafo::deploy
