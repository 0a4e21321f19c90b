// Token-budget batches of similar lengths, shuffled per epoch from a seed, resumable,
// built on a background thread (docs/design.md "Token budget").
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <ATen/core/Tensor.h>

namespace trafo::data {

class Corpus;

struct BatcherOptions {
  int64_t batch_tokens = 4096;  // B × max(padded source, padded target length) never exceeds this
  uint64_t seed = 1;            // order of batches (and of equal-length pairs) per epoch
  bool shuffle = true;          // false: batches in length order (evaluation)
  int prefetch = 4;             // batches built ahead on the background thread (0: none)
  // Data parallelism: each batch of the plan is a global batch; this process serves rows
  // shard, shard + shards, ... of it (disjoint shares that together are the whole batch).
  int shard = 0;
  int shards = 1;
};

struct BatchPosition {
  int64_t epoch = 0;  // 0-based
  int64_t index = 0;  // batch within the epoch
};

struct Batch {
  at::Tensor source;            // [B,S] ids + eos, padded with 0
  at::Tensor target_input;      // [B,T] bos + ids, padded
  at::Tensor target_output;     // [B,T] ids + eos, padded
  std::vector<int64_t> pairs;   // corpus indices of the rows
  int64_t source_tokens = 0;    // real (non-padding) tokens
  int64_t target_tokens = 0;
  int64_t global_target_tokens = 0;  // of the whole global batch this share belongs to
  BatchPosition position;       // where this batch sits in the stream
  int64_t cost() const { return source.size(0) * std::max(source.size(1), target_input.size(1)); }
};

// The batches of one epoch as lists of corpus indices, in the order they are served.
std::vector<std::vector<int64_t>> plan_epoch(const Corpus& corpus, const BatcherOptions& options, int64_t epoch,
                                             int64_t* skipped_too_long = nullptr);

// Pads the pairs `pairs` of `corpus` into a Batch.
Batch make_batch(const Corpus& corpus, const std::vector<int64_t>& pairs);

// Rows shard, shard + shards, ... of `pairs`: one process's share of a global batch.
std::vector<int64_t> shard_rows(const std::vector<int64_t>& pairs, int shard, int shards);

class Batcher {
 public:
  Batcher(const Corpus& corpus, BatcherOptions options, BatchPosition start = {});
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  Batch next();  // endless: epochs follow each other; rethrows what stopped the background thread
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t skipped_too_long() const { return skipped_too_long_; }  // pairs over the budget alone

 private:
  void produce();
  Batch build(BatchPosition& cursor, std::vector<std::vector<int64_t>>& plan);

  const Corpus& corpus_;
  BatcherOptions options_;
  int64_t batches_per_epoch_ = 0;
  int64_t skipped_too_long_ = 0;
  BatchPosition cursor_;
  std::vector<std::vector<int64_t>> plan_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  bool stopping_ = false;
  std::exception_ptr failure_;  // what ended produce(), once the batches built before it are taken
  std::thread worker_;
};

}  // namespace trafo::data
