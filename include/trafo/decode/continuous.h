// Greedy decoding with continuous batching, for a server: sentences join a running batch between
// two steps and leave it the step they finish, so the batch stays full while requests come and go
// (Yu et al. 2022, "Orca", iteration-level scheduling).
//
// Each sentence gets the pieces and text that Translator gives it. Past the encoder, its score is
// the same bits as well: its rows of every product are computed as in any other batch (the packed
// GEMMs and the step-attention kernel are row-independent), its positions count from the step it
// joined, and its self-attention reads only its own keys, from where they begin
// (AttentionCache::starts). The encoder runs joining sentences end to end where Translator pads a
// batch to its longest sentence, and its attention's sums then run in another order: the score may
// differ in its last bits.
//
// A finished sentence's row stays in the batch until a new sentence takes its place, or until the
// finished rows are half of the batch; so joining rarely copies the caches. Sentences that join
// together are encoded end to end, in runs of at most kRunPositions pieces, so that none of the
// encoder's work is padding.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/model/transformer.h"

namespace trafo::decode {

class ContinuousDecoder {
 public:
  // `model` in eval mode on its device; `tokenizer` must outlive the decoder. Needs supports(options).
  ContinuousDecoder(model::Transformer model, const data::Tokenizer& tokenizer, const DecodeOptions& options);
  ~ContinuousDecoder();
  ContinuousDecoder(const ContinuousDecoder&) = delete;
  ContinuousDecoder& operator=(const ContinuousDecoder&) = delete;

  // Greedy search of the best pieces with the KV cache (no beam, no sampling, no language check).
  static bool supports(const DecodeOptions& options);

  // Tokenizes `sources` (source_ids) and adds them (add_ids).
  std::vector<int64_t> add(const std::vector<std::string>& sources);
  // Encodes sentences tokenized by source_ids (the tag included) into the batch; returns one ticket
  // per sentence, which step() returns with its translation. An empty one is finished at once (one
  // empty hypothesis).
  std::vector<int64_t> add_ids(const std::vector<std::vector<int>>& sources);
  // One decoding step of every sentence in the batch; the sentences that finished (at eos or at
  // their length limit), with their translation (text included).
  struct Finished {
    int64_t ticket;
    Hypothesis hypothesis;
  };
  std::vector<Finished> step();

  // Sentences added and not yet returned by step().
  int64_t sentences() const;
  // Their source pieces (eos included): what a token budget counts.
  int64_t source_pieces() const;
  const DecodeOptions& options() const { return options_; }

 private:
  struct Row;
  struct State;
  // The most source pieces one encoder call of joining sentences takes. They are encoded end to end
  // (TransformerImpl::join, as encode_packed): no padding, an attention over them all, and their
  // cross-attention keys and values computed for their pieces only. Against encoding each run
  // padded to its longest (the runs chosen by a cost model), this served 7% more sentences to 64
  // clients (bench/serve.sh's load, medians of six runs taken in turn, AMD Zen 3: 288.6 against 269.5
  // sentences/s), as that padding had added 30% to the encoder's positions. A run this short also
  // keeps the encoder on the fast inference kernels (model::kFastPackedPieces).
  static constexpr int64_t kRunPositions = model::kFastPackedPieces;
  // Encodes sentences `run` of `ids` (cut to the model's positions) into the batch as rows `joined[run]`.
  void join(const std::vector<std::vector<int>>& ids, const std::vector<size_t>& run, std::vector<Row>& joined);
  // Drops the rows of finished sentences once they are half the batch, and positions no row reads.
  void compact();
  std::unique_ptr<State> state_;
  DecodeOptions options_;
};

}  // namespace trafo::decode
