// Repetition kept out at decoding time (--no-repeat-ngram, --repetition-penalty), as CTranslate2's
// no_repeat_ngram_size and repetition_penalty: each row's next-piece log-probabilities lowered by
// the pieces that row holds, and by nothing else, so a sentence's translation still does not depend
// on its batch. Internal to decode/.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "trafo/decode/translator.h"

namespace trafo::decode::detail {

inline bool guards_repetition(const DecodeOptions& options) {
  return options.no_repeat_ngram > 0 || options.repetition_penalty != 1.0;
}

// `log_probs` [R,V] (row r's next piece after the pieces `histories[r]`), lowered in place: with
// no_repeat_ngram N, a piece that would make an N-gram the row holds already is -inf; with
// repetition_penalty P, the log p of each piece the row holds is multiplied by P (more negative).
void guard_repetition(torch::Tensor& log_probs, const std::vector<const std::vector<int>*>& histories,
                      const DecodeOptions& options);

}  // namespace trafo::decode::detail
