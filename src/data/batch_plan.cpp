// Planning a corpus's batches: an epoch's order of blocks of neighbouring pairs, windows of it
// shuffled, sorted by length and cut into batches of at most --batch-tokens (plan_batches,
// plan_epoch), and one corpus's stream of them, window after window (CorpusStream). batcher.cpp
// serves the batches of several corpora from these streams.
#include "trafo/data/batcher.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/util/mix.h"

namespace trafo::data {
namespace {

// Positions a pair occupies in a padded batch: source + eos, bos + target.
int64_t padded_width(const Corpus& corpus, int64_t i) {
  return std::max(corpus.source_length(i), corpus.target_length(i)) + 1;
}

// The generator of a window's plan: for the first corpus's first window, the one the whole-epoch plan
// has always used, so that a corpus planned in one window keeps its order.
uint64_t window_seed(uint64_t seed, int64_t epoch, int stream, int64_t window) {
  uint64_t value = seed * util::kGolden + static_cast<uint64_t>(epoch);
  if (stream != 0 || window != 0) {
    value += util::mix(static_cast<uint64_t>(stream) << 32 ^ static_cast<uint64_t>(window));
  }
  return value;
}

}  // namespace

std::vector<std::vector<int64_t>> plan_batches(const Corpus& corpus, std::vector<int64_t> order,
                                               const BatcherOptions& options, uint64_t rng_seed,
                                               int64_t* skipped_too_long) {
  // Deterministic per seed on every platform: mt19937_64 is fully specified, std::shuffle is not,
  // so the permutation is drawn here (Fisher-Yates).
  std::mt19937_64 rng(rng_seed);
  auto shuffle = [&rng](auto& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng() % i]);
  };
  if (options.shuffle) shuffle(order);
  // Similar lengths side by side: by target length, then by source length running up and down
  // in turn (a snake), so that a batch straddling two target lengths also has similar sources.
  // Ties keep their shuffled order.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const int64_t ta = corpus.target_length(a), tb = corpus.target_length(b);
    if (ta != tb) return ta < tb;
    const int64_t sa = corpus.source_length(a), sb = corpus.source_length(b);
    return ta % 2 == 0 ? sa < sb : sa > sb;
  });

  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> current;
  int64_t current_width = 0, skipped = 0;
  for (const int64_t i : order) {
    const int64_t width = padded_width(corpus, i);
    if (width > options.batch_tokens) {
      ++skipped;
      continue;
    }
    const int64_t new_width = std::max(current_width, width);
    if (!current.empty() && new_width * static_cast<int64_t>(current.size() + 1) > options.batch_tokens) {
      batches.push_back(std::move(current));
      current.clear();
      current_width = width;
    } else {
      current_width = new_width;
    }
    current.push_back(i);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  if (options.shuffle) shuffle(batches);
  if (skipped_too_long != nullptr) *skipped_too_long = skipped;
  return batches;
}

std::vector<std::vector<int64_t>> plan_epoch(const Corpus& corpus, const BatcherOptions& options, int64_t epoch,
                                             int64_t* skipped_too_long) {
  std::vector<int64_t> order(corpus.size());
  std::iota(order.begin(), order.end(), 0);
  return plan_batches(corpus, std::move(order), options, window_seed(options.seed, epoch, 0, 0), skipped_too_long);
}

CorpusStream::CorpusStream(Segmentations segmentations, const BatcherOptions& options, int stream, BatchPosition start)
    : segmentations_(std::move(segmentations)), options_(options), stream_(stream) {
  if (segmentations_.empty()) throw std::invalid_argument("a corpus stream needs a segmentation");
  const Corpus& first_segmentation = *segmentations_.front();
  for (const Corpus* segmentation : segmentations_) {
    if (segmentation->size() != first_segmentation.size()) {
      throw std::invalid_argument("the segmentations of a corpus hold different numbers of pairs");
    }
  }
  const int64_t blocks = (first_segmentation.size() + kBlockPairs - 1) / kBlockPairs;
  const int64_t blocks_per_window = std::max<int64_t>(1, options_.window_pairs / kBlockPairs);
  windows_ = (blocks + blocks_per_window - 1) / blocks_per_window;
  // Pairs too long for the budget alone (in the first segmentation), counted once, a block at a time.
  for (int64_t first = 0; first < first_segmentation.size(); first += kBlockPairs) {
    const int64_t last = std::min(first_segmentation.size(), first + kBlockPairs);
    for (int64_t i = first; i < last; ++i) {
      skipped_too_long_ += padded_width(first_segmentation, i) > options_.batch_tokens;
    }
    if (windows_ > 1) first_segmentation.release(first, last);
  }
  if (skipped_too_long_ == first_segmentation.size()) {
    throw InputError("no sentence pair fits into --batch-tokens " + std::to_string(options_.batch_tokens));
  }
  start_epoch(start.epoch);
  first_window_batches_ = static_cast<int64_t>(plan_.size());
  // Forward to the saved position, a window at a time.
  int64_t before = 0;
  while (start.index >= before + static_cast<int64_t>(plan_.size()) && window_ + 1 < windows_) {
    before += static_cast<int64_t>(plan_.size());
    release_window();
    plan_window(window_ + 1);
  }
  if (start.index >= before + static_cast<int64_t>(plan_.size())) {
    // A resume with other --batch-tokens, --seed or ranks plans fewer batches than the saved position.
    spdlog::warn("the saved data position, batch {} of epoch {}, lies past this epoch's {} batches (other batch "
                 "options than the run's): going on at the start of epoch {}",
                 start.index, start.epoch, before + static_cast<int64_t>(plan_.size()), start.epoch + 1);
    release_window();
    start_epoch(start.epoch + 1);
    return;
  }
  index_ = start.index;
  in_window_ = start.index - before;
}

void CorpusStream::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  index_ = 0;
  const int64_t blocks = (corpus(epoch_).size() + kBlockPairs - 1) / kBlockPairs;
  blocks_.resize(static_cast<size_t>(blocks));
  std::iota(blocks_.begin(), blocks_.end(), 0);
  if (options_.shuffle && windows_ > 1) {
    std::mt19937_64 rng(util::mix(window_seed(options_.seed, epoch, stream_, -1)));
    for (size_t i = blocks_.size(); i > 1; --i) std::swap(blocks_[i - 1], blocks_[rng() % i]);
  }
  plan_window(0);
}

void CorpusStream::plan_window(int64_t window) {
  window_ = window;
  in_window_ = 0;
  const int64_t blocks_per_window = std::max<int64_t>(1, options_.window_pairs / kBlockPairs);
  std::vector<int64_t> order;
  const Corpus& pairs = corpus(epoch_);
  const auto first = static_cast<size_t>(window * blocks_per_window);
  const auto last = std::min(blocks_.size(), first + static_cast<size_t>(blocks_per_window));
  for (size_t b = first; b < last; ++b) {
    for (int64_t i = blocks_[b] * kBlockPairs; i < std::min(pairs.size(), (blocks_[b] + 1) * kBlockPairs); ++i) {
      order.push_back(i);
    }
  }
  plan_ = plan_batches(pairs, std::move(order), options_, window_seed(options_.seed, epoch_, stream_, window));
}

// A mapped corpus planned in several windows gives back the pages of a window it is done with.
void CorpusStream::release_window() {
  if (windows_ <= 1) return;
  const int64_t blocks_per_window = std::max<int64_t>(1, options_.window_pairs / kBlockPairs);
  const auto first = static_cast<size_t>(window_ * blocks_per_window);
  const auto last = std::min(blocks_.size(), first + static_cast<size_t>(blocks_per_window));
  const Corpus& pairs = corpus(epoch_);
  for (size_t b = first; b < last; ++b) {
    pairs.release(blocks_[b] * kBlockPairs, std::min(pairs.size(), (blocks_[b] + 1) * kBlockPairs));
  }
}

std::vector<int64_t> CorpusStream::next(BatchPosition& at) {
  // A window may hold no batch (every pair too long): skip to one that does.
  while (in_window_ >= static_cast<int64_t>(plan_.size())) {
    release_window();
    if (window_ + 1 < windows_) {
      plan_window(window_ + 1);
    } else {
      start_epoch(epoch_ + 1);
    }
  }
  at = {epoch_, index_};
  auto pairs = std::move(plan_[static_cast<size_t>(in_window_)]);
  ++in_window_;
  ++index_;
  // The position after it: past the epoch's last batch is the next epoch's first.
  if (in_window_ == static_cast<int64_t>(plan_.size()) && window_ + 1 == windows_) {
    release_window();
    start_epoch(epoch_ + 1);
  }
  return pairs;
}

}  // namespace trafo::data
