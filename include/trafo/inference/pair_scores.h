// How likely a model finds each target line given its source line: the sum of log p of the target's
// pieces and eos under teacher forcing, the figure `trafo score-pairs` prints and by which noisy
// pairs are filtered. Summed over lines and divided by the pieces, it is `trafo eval`'s loss, negated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trafo/data/tokenizer.h"
#include "trafo/model/transformer.h"

namespace trafo::inference {

struct PairScore {
  double log_prob = 0.0;            // sum over the target's pieces and eos; NaN when not scored
  int64_t pieces = 0;               // target pieces + eos
  std::vector<double> piece_log_probs;  // each piece's, eos last (with `per_piece`)
  bool scored() const { return pieces > 0; }
};

struct PairScoreOptions {
  int64_t batch_tokens = 4096;  // padded pieces per batch (at least the model's positions)
  bool bf16 = false;            // under bf16 autocast (log-probs summed in fp32)
  int tag = -1;                 // a corpus tag's piece before every source (-1: none)
  bool per_piece = false;
};

// One score per line pair, in input order, whatever the batches. A pair whose source or target
// (+ eos or bos) is longer than the model's positions is not scored (pieces 0, log_prob NaN).
std::vector<PairScore> score_pairs(model::Transformer& model, const data::Tokenizer& tokenizer,
                                   const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                                   const PairScoreOptions& options);
// The same from the sources' pieces as the decoders read them (decode::source_ids: the tag's piece
// already first, so options.tag is not read), for a caller that has them: serve.
std::vector<PairScore> score_pairs(model::Transformer& model, const data::Tokenizer& tokenizer,
                                   const std::vector<std::vector<int>>& source_ids,
                                   const std::vector<std::string>& targets, const PairScoreOptions& options);

}  // namespace trafo::inference
