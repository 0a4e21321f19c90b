// What --precision auto weighs for decoding (runtime/precision.h): decoding steps of the model itself.
#pragma once

#include "trafo/model/transformer.h"

namespace trafo::decode {

// bf16 / fp32 speed of greedy decoding on the model's device: kProbeSentences sentences of
// kProbeSourceLength pieces encoded, then kProbeSteps cached decoder steps with the search's own
// step code, best of 3 rounds each; the weights are packed (fp32) or cast (bf16) once, as in a
// translate call. The model's weights, its mode and the random generators stay as they were.
double bf16_decoding_speedup(model::Transformer& model);

inline constexpr int64_t kProbeSentences = 64;
inline constexpr int64_t kProbeSourceLength = 24;
inline constexpr int64_t kProbeSteps = 16;

}  // namespace trafo::decode
