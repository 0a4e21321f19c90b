// Token-budget batches of similar lengths, shuffled per epoch from a seed, resumable, built on a
// background thread (docs/design.md "Token budget"), from one corpus or several sampled by weight.
// Memory stays bounded whatever a corpus's size: an epoch is planned a window of pairs at a time
// (docs/design.md "Windows").
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
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
  // Pairs planned together: an epoch is a random order of blocks of 4096 neighbouring pairs, cut
  // into windows of this many pairs, each shuffled, sorted by length and cut into batches apart.
  // A corpus no larger than one window is shuffled whole.
  int64_t window_pairs = int64_t{1} << 20;
};

inline constexpr int64_t kBlockPairs = 4096;

struct BatchPosition {
  int64_t epoch = 0;  // 0-based
  int64_t index = 0;  // batch within the epoch
  bool operator==(const BatchPosition& other) const { return epoch == other.epoch && index == other.index; }
};

// Where a stream over several corpora stands: each corpus's position, the pairs taken from each
// (which steer the sampling by weight) and the batches served in all.
struct StreamPosition {
  std::vector<BatchPosition> corpora;
  std::vector<int64_t> pairs;
  int64_t batches = 0;
};

struct Batch {
  at::Tensor source;            // [B,S] ids + eos, padded with 0
  at::Tensor target_input;      // [B,T] bos + ids, padded
  at::Tensor target_output;     // [B,T] ids + eos, padded
  // Guided alignment, when the corpus has links: [B,T,S] fp32, row t of pair b the source pieces that
  // target piece t is linked to, each 1 / their number (all zeros: no link). Undefined otherwise.
  at::Tensor alignment;
  std::vector<int64_t> pairs;   // corpus indices of the rows
  int64_t source_tokens = 0;    // real (non-padding) tokens
  int64_t target_tokens = 0;
  int64_t global_target_tokens = 0;  // of the whole global batch this share belongs to
  int corpus = 0;               // which corpus it came from
  BatchPosition position;       // where this batch sits in its corpus's stream
  StreamPosition next;          // where the stream goes on after it
  int64_t cost() const { return source.size(0) * std::max(source.size(1), target_input.size(1)); }
};

// The batches of the pairs `order` as lists of corpus indices, in the order they are served: shuffled
// by `rng` (unless options.shuffle is false), sorted by length, cut at the budget, batches shuffled.
std::vector<std::vector<int64_t>> plan_batches(const Corpus& corpus, std::vector<int64_t> order,
                                               const BatcherOptions& options, uint64_t rng_seed,
                                               int64_t* skipped_too_long = nullptr);

// The batches of one epoch of the whole corpus planned at once (evaluation, tests).
std::vector<std::vector<int64_t>> plan_epoch(const Corpus& corpus, const BatcherOptions& options, int64_t epoch,
                                             int64_t* skipped_too_long = nullptr);

// Pads the pairs `pairs` of `corpus` into a Batch.
Batch make_batch(const Corpus& corpus, const std::vector<int64_t>& pairs);

// Rows shard, shard + shards, ... of `pairs`: one process's share of a global batch.
std::vector<int64_t> shard_rows(const std::vector<int64_t>& pairs, int shard, int shards);

// One corpus as the batches take it: the same pairs, in the same order, under one or more
// segmentations (subword regularisation); epoch e takes segmentation e % size().
using Segmentations = std::vector<const Corpus*>;

// The batches of one corpus, epoch after epoch, planned a window at a time.
class CorpusStream {
 public:
  // `stream` tells corpora apart in the random draws (0 for the first).
  CorpusStream(Segmentations segmentations, const BatcherOptions& options, int stream, BatchPosition start);
  // The next batch's pairs; `at` gets its position.
  std::vector<int64_t> next(BatchPosition& at);
  BatchPosition position() const { return {epoch_, index_}; }
  int64_t windows() const { return windows_; }
  int64_t batches_in_first_window() const { return first_window_batches_; }
  int64_t skipped_too_long() const { return skipped_too_long_; }  // pairs over the budget alone
  const Corpus& corpus(int64_t epoch) const {  // the segmentation epoch `epoch` takes
    return *segmentations_[static_cast<size_t>(epoch) % segmentations_.size()];
  }

 private:
  void start_epoch(int64_t epoch);
  void plan_window(int64_t window);
  void release_window();

  Segmentations segmentations_;
  BatcherOptions options_;
  int stream_ = 0;
  int64_t windows_ = 0, first_window_batches_ = 0, skipped_too_long_ = 0;
  int64_t epoch_ = 0, index_ = 0;         // the next batch's position
  int64_t window_ = 0, in_window_ = 0;    // its window, and its index there
  std::vector<int64_t> blocks_;           // this epoch's order of blocks
  std::vector<std::vector<int64_t>> plan_;  // the window's batches
};

// Which corpus the next batch comes from: among those that have not yet had their share of the pairs
// served (weights normalised), one drawn by weight, from `seed` and the batches served so far.
int choose_corpus(const std::vector<double>& weights, const StreamPosition& position, uint64_t seed);

class Batcher {
 public:
  Batcher(const Corpus& corpus, BatcherOptions options, BatchPosition start = {});
  // Several corpora sampled by `weights` (positive); `start` empty: all at their beginning.
  Batcher(std::vector<const Corpus*> corpora, std::vector<double> weights, BatcherOptions options,
          StreamPosition start = {});
  // The same, each corpus under its segmentations. (A braced list of corpus pointers is ambiguous
  // between the two: name its type.)
  Batcher(std::vector<Segmentations> corpora, std::vector<double> weights, BatcherOptions options,
          StreamPosition start = {});
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  Batch next();  // endless: epochs follow each other; rethrows what stopped the background thread
  // The batches served while the first corpus goes through one epoch (an epoch of a run of several
  // corpora is the first's), each corpus serving its share of the pairs in batches of its own size;
  // the first corpus's own batches in it. Exact for one corpus planned in one window, else estimated
  // from each corpus's first window.
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t first_corpus_batches_per_epoch() const { return first_batches_per_epoch_; }
  int64_t skipped_too_long() const;  // pairs over the budget alone, all corpora

 private:
  void produce();
  Batch build();

  BatcherOptions options_;
  std::vector<double> weights_;
  std::vector<CorpusStream> streams_;  // the background thread's once it runs
  StreamPosition cursor_;
  int64_t batches_per_epoch_ = 0, first_batches_per_epoch_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  bool stopping_ = false;
  std::exception_ptr failure_;  // what ended produce(), once the batches built before it are taken
  std::thread worker_;
};

}  // namespace trafo::data
