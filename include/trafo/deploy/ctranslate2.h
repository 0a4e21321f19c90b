// `trafo export --format ctranslate2`: a checkpoint as a CTranslate2 model folder, written here in
// C++ from CTranslate2's documented format (model.bin binary version 6, TransformerSpec revision 7):
// model.bin, config.json, shared_vocabulary.json and the SentencePiece model beside them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::deploy {

// How the weights are stored: int8 (= int8_float32: int8 matrices with a float32 scale per row,
// everything else float32), bfloat16 (every float), float32.
enum class Quantization { kFloat32, kBFloat16, kInt8 };

// "int8" | "int8_float32" | "bfloat16" | "float32"; throws trafo::InputError otherwise.
Quantization parse_quantization(const std::string& name);

// The files of the CTranslate2 model folder of `checkpoint` (as checkpoint::load returns it):
// model.bin, config.json, shared_vocabulary.json, and sentencepiece.model (trafo's vocabulary) or
// source.spm and target.spm (an imported one). `quantization` as above.
std::vector<std::pair<std::string, std::string>> ctranslate2_files(const checkpoint::Checkpoint& checkpoint,
                                                                   const std::string& quantization);

// The model.bin bytes alone (tests).
std::string ctranslate2_model_bin(const checkpoint::Checkpoint& checkpoint, Quantization quantization);

}  // namespace trafo::deploy
