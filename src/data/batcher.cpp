#include "trafo/data/batcher.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"

namespace trafo::data {
namespace {

// Positions a pair occupies in a padded batch: source + eos, bos + target.
int64_t padded_width(const Corpus& corpus, int64_t i) {
  return std::max(corpus.source_length(i), corpus.target_length(i)) + 1;
}

}  // namespace

std::vector<std::vector<int64_t>> plan_epoch(const Corpus& corpus, const BatcherOptions& options, int64_t epoch,
                                             int64_t* skipped_too_long) {
  // Deterministic per (seed, epoch) on every platform: mt19937_64 is fully specified, std::shuffle
  // is not, so the permutation is drawn here (Fisher-Yates).
  std::mt19937_64 rng(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch));
  auto shuffle = [&rng](auto& items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng() % i]);
  };
  std::vector<int64_t> order(corpus.size());
  std::iota(order.begin(), order.end(), 0);
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
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = pairs[r];
    const int64_t s = corpus.source_length(i), t = corpus.target_length(i);
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
  return batch;
}

std::vector<int64_t> shard_rows(const std::vector<int64_t>& pairs, int shard, int shards) {
  std::vector<int64_t> share;
  for (size_t r = static_cast<size_t>(shard); r < pairs.size(); r += static_cast<size_t>(shards)) share.push_back(pairs[r]);
  return share;
}

Batcher::Batcher(const Corpus& corpus, BatcherOptions options, BatchPosition start)
    : corpus_(corpus), options_(options), cursor_(start) {
  if (options_.batch_tokens <= 0) throw InputError("batch-tokens must be positive");
  if (options_.shards < 1 || options_.shard < 0 || options_.shard >= options_.shards) {
    throw InputError("batch shard " + std::to_string(options_.shard) + " of " + std::to_string(options_.shards));
  }
  plan_ = plan_epoch(corpus_, options_, cursor_.epoch, &skipped_too_long_);
  batches_per_epoch_ = static_cast<int64_t>(plan_.size());
  if (batches_per_epoch_ == 0) {
    throw InputError("no sentence pair fits into --batch-tokens " + std::to_string(options_.batch_tokens));
  }
  if (cursor_.index >= batches_per_epoch_) {
    // A resume with other --batch-tokens, --seed or ranks plans fewer batches than the saved position.
    spdlog::warn("the saved data position, batch {} of epoch {}, lies past this epoch's {} batches (other batch "
                 "options than the run's): going on at the start of epoch {}",
                 cursor_.index, cursor_.epoch, batches_per_epoch_, cursor_.epoch + 1);
    cursor_ = {cursor_.epoch + 1, 0};
    plan_ = plan_epoch(corpus_, options_, cursor_.epoch);
  }
  if (options_.prefetch > 0) worker_ = std::thread([this] { produce(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Batch Batcher::build(BatchPosition& cursor, std::vector<std::vector<int64_t>>& plan) {
  // Test hook (tests/batcher_test.cpp): building batch N of an epoch throws, as a failed
  // allocation would.
  static const char* fail_at = std::getenv("TRAFO_TEST_BATCH_FAILS_AT");
  if (fail_at != nullptr && cursor.index == std::atoll(fail_at)) throw RunError("test: building a batch failed");
  const auto& pairs = plan[cursor.index];
  Batch batch;
  if (options_.shards == 1) {
    batch = make_batch(corpus_, pairs);
  } else {
    batch = make_batch(corpus_, shard_rows(pairs, options_.shard, options_.shards));
    batch.global_target_tokens = 0;
    for (const int64_t i : pairs) batch.global_target_tokens += corpus_.target_length(i) + 1;
  }
  batch.position = cursor;
  if (++cursor.index == static_cast<int64_t>(plan.size())) {
    cursor = {cursor.epoch + 1, 0};
    plan = plan_epoch(corpus_, options_, cursor.epoch);
  }
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
      Batch batch = build(cursor_, plan_);  // cursor_ and plan_ belong to this thread once it runs
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
  if (options_.prefetch <= 0) return build(cursor_, plan_);
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
