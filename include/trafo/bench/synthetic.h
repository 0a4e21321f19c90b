// Synthetic batches for `trafo bench` and bench/pytorch_reference.py: both build the very same
// batches from the recipe below, so their figures compare like for like.
//
// Random numbers: SplitMix64 (Steele et al. 2014) seeded with `seed`; u(n) = next() mod n.
// Training batches (`synthetic_batches`):
//   1. A pool of 4096 pairs; pair i draws, in order, s = 3 + u(25) + u(25) source pieces
//      (3..51, triangular, mean 27) and t = max(1, s + u(9) − 4) target pieces.
//      Real lengths: S = s + 1 (eos), T = t + 1 (bos / eos).
//   2. Pairs sorted by max(S, T), ties by pool index, and packed in that order: a pair joins the
//      batch unless (rows + 1) × max(width, its width) would exceed `batch_tokens` (docs/design.md
//      "Token budget"), where width is the batch's largest max(S, T).
//   3. `count` of those batches, evenly spread over lengths: batch ⌊(2k + 1) × n / (2 × count)⌋ for
//      k = 0 … count − 1 of the n packed batches.
//   4. Token ids, drawn after the shapes, batch by batch, row by row: the s source ids, then the
//      t target ids, each 4 + u(vocab − 4) (never pad, unk, bos or eos).
//   source = ids + eos, target_input = bos + ids, target_output = ids + eos, padded with 0.
// Decoding sentences (`synthetic_sentences`): SplitMix64 seeded with seed + 1; sentence i draws
// s = 3 + u(25) + u(25), then its s ids 4 + u(vocab − 4); no eos (the Translator adds it).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trafo/bench/flops.h"
#include "trafo/data/batcher.h"

namespace trafo::bench {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  int64_t uniform(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }  // 0 … n−1

 private:
  uint64_t state_;
};

struct SyntheticBatch {
  at::Tensor source;                // [B,S] ids + eos, padded with 0
  at::Tensor target_input;          // [B,T] bos + ids, padded
  at::Tensor target_output;         // [B,T] ids + eos, padded
  std::vector<PairLengths> pairs;   // real lengths of each row
  int64_t source_tokens = 0;        // real tokens
  int64_t target_tokens = 0;
};

// `batch` as the data::Batch the trainer's step takes (train::TrainStep), its target tokens the
// global ones (one process).
data::Batch as_batch(const SyntheticBatch& batch);

constexpr int64_t kPoolPairs = 4096;

// `count` batches (fewer when the pool packs into fewer) under `batch_tokens`; see the recipe above.
std::vector<SyntheticBatch> synthetic_batches(int64_t count, int64_t batch_tokens, int64_t vocab_size, uint64_t seed);

// The widest side (max(S, T)) of the pool of pairs that `synthetic_batches` draws with `seed`, without
// making a batch: what `trafo bench --batch-tokens auto` fits the budget against.
int64_t synthetic_longest_side(uint64_t seed);

// `count` source sentences (ids without eos); see the recipe above.
std::vector<std::vector<int>> synthetic_sentences(int64_t count, int64_t vocab_size, uint64_t seed);

}  // namespace trafo::bench
