// Batch shapes padded to a few buckets, so that a captured CUDA graph (train/step_graphs.h) can
// replay the training step of every batch of a bucket. A length goes up to the next step of a ladder:
// multiples of 2 up to 16, of 4 up to 64, of 8 up to 128, then steps of about 3% (multiples of 8);
// the rows go up the same way. Padding adds a few percent to each side of an ordinary batch (the
// synthetic batches of `trafo bench`: about 6% more positions) and never a target token: an added
// row has one eos as its source, bos as its decoder input and only padding to predict, and added
// columns are padding.
#pragma once

#include <cstdint>
#include <tuple>

#include "trafo/data/batcher.h"

namespace trafo::train {

struct BatchShape {
  int64_t rows = 0;
  int64_t source = 0;  // source length, eos included
  int64_t target = 0;  // decoder input length (= output length)
  bool operator<(const BatchShape& o) const {
    return std::tie(rows, source, target) < std::tie(o.rows, o.source, o.target);
  }
  bool operator==(const BatchShape& o) const { return rows == o.rows && source == o.source && target == o.target; }
};

BatchShape shape_of(const data::Batch& batch);

// The smallest step of the ladder that holds `n` (n ≥ 1).
int64_t bucket_size(int64_t n);

// Each side of `shape` up to its bucket.
BatchShape bucket_of(const BatchShape& shape);

// `batch` padded to `shape`, which must hold it (each side no smaller); the same batch when it fits
// exactly. Token counts, pairs and positions stay the batch's own.
data::Batch padded_to(const data::Batch& batch, const BatchShape& shape);

}  // namespace trafo::train
