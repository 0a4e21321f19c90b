#include "trafo/data/batcher.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/data/corpus.h"
#include "trafo/data/piece_links.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/test_hooks.h"
#include "trafo/util/mix.h"

namespace trafo::data {
namespace {

std::vector<Segmentations> one_segmentation_each(const std::vector<const Corpus*>& corpora) {
  std::vector<Segmentations> each;
  for (const Corpus* corpus : corpora) each.push_back({corpus});
  return each;
}

}  // namespace

int choose_corpus(const std::vector<double>& given_weights, const StreamPosition& position, uint64_t seed) {
  if (given_weights.size() == 1) return 0;
  const auto weights = scaled_weights(given_weights);  // sums that cannot overflow
  double total_weight = 0.0;
  int64_t total_pairs = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    total_weight += weights[i];
    total_pairs += position.pairs[i];
  }
  // Corpora behind their share (at least one always is), drawn by weight.
  std::vector<double> behind(weights.size(), 0.0);
  double candidates = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double share = weights[i] / total_weight * static_cast<double>(total_pairs);
    if (static_cast<double>(position.pairs[i]) <= share) behind[i] = weights[i];
    candidates += behind[i];
  }
  const double draw = static_cast<double>(util::mix(seed ^ util::mix(static_cast<uint64_t>(position.batches))) >> 11) *
                      0x1.0p-53 * candidates;
  double sum = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) {
    sum += behind[i];
    if (behind[i] > 0 && draw < sum) return static_cast<int>(i);
  }
  for (size_t i = weights.size(); i-- > 0;) {
    if (behind[i] > 0) return static_cast<int>(i);
  }
  return 0;
}

Batch make_batch(const Corpus& corpus, const std::vector<int64_t>& pairs) {
  Batch batch;
  batch.pairs = pairs;
  const auto rows = static_cast<int64_t>(pairs.size());
  int64_t source_width = 0, target_width = 0;
  for (const int64_t i : pairs) {
    source_width = std::max(source_width, corpus.source_length(i) + 1);
    target_width = std::max(target_width, corpus.target_length(i) + 1);
  }
  auto source = torch::zeros({rows, source_width}, torch::kLong);         // [B,S]
  auto target_input = torch::zeros({rows, target_width}, torch::kLong);   // [B,T]
  auto target_output = torch::zeros({rows, target_width}, torch::kLong);  // [B,T]
  auto* src = source.data_ptr<int64_t>();
  auto* tin = target_input.data_ptr<int64_t>();
  auto* tout = target_output.data_ptr<int64_t>();
  std::vector<std::pair<int64_t, int64_t>> lengths;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = pairs[r];
    const int64_t s = corpus.source_length(i), t = corpus.target_length(i);
    lengths.emplace_back(s, t);
    std::copy(corpus.source(i), corpus.source(i) + s, src + r * source_width);
    src[r * source_width + s] = Tokenizer::kEos;
    tin[r * target_width] = Tokenizer::kBos;
    std::copy(corpus.target(i), corpus.target(i) + t, tin + r * target_width + 1);
    std::copy(corpus.target(i), corpus.target(i) + t, tout + r * target_width);
    tout[r * target_width + t] = Tokenizer::kEos;
    batch.source_tokens += s + 1;
    batch.target_tokens += t + 1;
  }
  batch.source = source;
  batch.target_input = target_input;
  batch.target_output = target_output;
  batch.global_target_tokens = batch.target_tokens;
  if (const auto* links = corpus.links()) batch.alignment = links->matrix(pairs, lengths, target_width, source_width);
  return batch;
}

std::vector<int64_t> shard_rows(const std::vector<int64_t>& pairs, int shard, int shards) {
  std::vector<int64_t> share;
  for (size_t r = static_cast<size_t>(shard); r < pairs.size(); r += static_cast<size_t>(shards)) share.push_back(pairs[r]);
  return share;
}

Batcher::Batcher(const Corpus& corpus, BatcherOptions options, BatchPosition start)
    : Batcher(std::vector<const Corpus*>{&corpus}, {1.0}, options, StreamPosition{{start}, {0}, 0}) {}

Batcher::Batcher(std::vector<const Corpus*> corpora, std::vector<double> weights, BatcherOptions options,
                 StreamPosition start)
    : Batcher(one_segmentation_each(corpora), std::move(weights), options, std::move(start)) {}

Batcher::Batcher(std::vector<Segmentations> corpora, std::vector<double> weights, BatcherOptions options,
                 StreamPosition start)
    : options_(options), weights_(std::move(weights)), cursor_(std::move(start)) {
  if (options_.batch_tokens <= 0) throw InputError("batch-tokens must be positive");
  if (options_.shards < 1 || options_.shard < 0 || options_.shard >= options_.shards) {
    throw InputError("batch shard " + std::to_string(options_.shard) + " of " + std::to_string(options_.shards));
  }
  if (corpora.empty() || corpora.size() != weights_.size()) throw InputError("one weight per corpus is needed");
  if (cursor_.corpora.empty()) cursor_.corpora.assign(corpora.size(), BatchPosition{});
  if (cursor_.pairs.empty()) cursor_.pairs.assign(corpora.size(), 0);
  if (cursor_.corpora.size() != corpora.size() || cursor_.pairs.size() != corpora.size()) {
    throw InputError("the saved data position is for " + std::to_string(cursor_.corpora.size()) + " corpora, not " +
                     std::to_string(corpora.size()));
  }
  streams_.reserve(corpora.size());
  for (size_t i = 0; i < corpora.size(); ++i) {
    streams_.emplace_back(std::move(corpora[i]), options_, static_cast<int>(i), cursor_.corpora[i]);
    cursor_.corpora[i] = streams_.back().position();
  }
  const auto batches = [](const CorpusStream& stream) {
    return static_cast<double>(stream.batches_in_first_window() * stream.windows());
  };
  first_batches_per_epoch_ = static_cast<int64_t>(batches(streams_.front()));
  // corpus i serves weight_i / weight_0 pairs for each of the first's, size_i / batches_i to a batch
  const double first_pairs = static_cast<double>(streams_.front().corpus(0).size());
  double in_all = 0.0;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const double pairs = static_cast<double>(streams_[i].corpus(0).size());
    if (pairs > 0) in_all += first_pairs * (weights_[i] / weights_[0]) * batches(streams_[i]) / pairs;
  }
  // The weights are checked before (each corpus at least a small share): this holds any count.
  if (!std::isfinite(in_all) || in_all > 1e15) {
    throw InputError("the corpora's weights give " + std::to_string(in_all) + " batches per epoch of the first corpus");
  }
  batches_per_epoch_ = std::llround(in_all);
  if (options_.prefetch > 0) worker_ = std::thread([this] { produce(); });
}

int64_t Batcher::skipped_too_long() const {
  int64_t skipped = 0;
  for (const auto& stream : streams_) skipped += stream.skipped_too_long();
  return skipped;
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Batch Batcher::build() {
  const int corpus = choose_corpus(weights_, cursor_, options_.seed);
  auto& stream = streams_[static_cast<size_t>(corpus)];
  BatchPosition position;
  const auto pairs = stream.next(position);
  // Test hook (tests/batcher_test.cpp): building batch N of an epoch throws, as a failed
  // allocation would.
  const int64_t fail_at = test_hooks().batch_fails_at;
  if (fail_at >= 0 && position.index == fail_at) throw RunError("test: building a batch failed");
  const Corpus& source = stream.corpus(position.epoch);  // next() may have moved the stream on to the next epoch
  Batch batch;
  if (options_.shards == 1) {
    batch = make_batch(source, pairs);
  } else {
    batch = make_batch(source, shard_rows(pairs, options_.shard, options_.shards));
    batch.global_target_tokens = 0;
    for (const int64_t i : pairs) batch.global_target_tokens += source.target_length(i) + 1;
  }
  batch.corpus = corpus;
  batch.position = position;
  cursor_.corpora[static_cast<size_t>(corpus)] = stream.position();
  cursor_.pairs[static_cast<size_t>(corpus)] += static_cast<int64_t>(pairs.size());
  ++cursor_.batches;
  batch.next = cursor_;
  return batch;
}

void Batcher::produce() {
  try {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || static_cast<int>(ready_.size()) < options_.prefetch; });
        if (stopping_) return;
      }
      Batch batch = build();  // streams_ and cursor_ belong to this thread once it runs
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.push_back(std::move(batch));
      }
      changed_.notify_all();
    }
  } catch (...) {
    // An exception leaving a thread ends the process (std::terminate); next() rethrows it on the
    // training thread instead, where the command reports it in one line.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = std::current_exception();
    }
    changed_.notify_all();
  }
}

Batch Batcher::next() {
  if (options_.prefetch <= 0) return build();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || failure_; });
  if (ready_.empty()) std::rethrow_exception(failure_);
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return batch;
}

}  // namespace trafo::data
