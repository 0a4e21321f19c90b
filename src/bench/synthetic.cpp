#include "trafo/bench/synthetic.h"

#include <algorithm>
#include <numeric>

#include <torch/torch.h>

#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"

namespace trafo::bench {
namespace {

using data::Tokenizer;

constexpr int64_t kFirstId = 4;  // ids below are pad, unk, bos, eos

int64_t draw_source_pieces(SplitMix64& rng) { return 3 + rng.uniform(25) + rng.uniform(25); }

int64_t width(const PairLengths& pair) { return std::max(pair.source, pair.target); }

// Pads the rows of one batch and draws their ids.
SyntheticBatch fill_batch(const std::vector<PairLengths>& pairs, int64_t vocab_size, SplitMix64& rng) {
  SyntheticBatch batch;
  batch.pairs = pairs;
  int64_t max_source = 0, max_target = 0;
  for (const auto& pair : pairs) {
    max_source = std::max(max_source, pair.source);
    max_target = std::max(max_target, pair.target);
    batch.source_tokens += pair.source;
    batch.target_tokens += pair.target;
  }
  const auto rows = static_cast<int64_t>(pairs.size());
  batch.source = torch::zeros({rows, max_source}, torch::kLong);         // [B,S]
  batch.target_input = torch::zeros({rows, max_target}, torch::kLong);   // [B,T]
  batch.target_output = torch::zeros({rows, max_target}, torch::kLong);  // [B,T]
  auto source = batch.source.accessor<int64_t, 2>();
  auto input = batch.target_input.accessor<int64_t, 2>();
  auto output = batch.target_output.accessor<int64_t, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t s = pairs[r].source - 1, t = pairs[r].target - 1;  // pieces
    for (int64_t i = 0; i < s; ++i) source[r][i] = kFirstId + rng.uniform(vocab_size - kFirstId);
    source[r][s] = Tokenizer::kEos;
    input[r][0] = Tokenizer::kBos;
    for (int64_t i = 0; i < t; ++i) {
      const int64_t id = kFirstId + rng.uniform(vocab_size - kFirstId);
      input[r][i + 1] = id;
      output[r][i] = id;
    }
    output[r][t] = Tokenizer::kEos;
  }
  return batch;
}

// Step 1 of the recipe: the pool's real lengths, drawn from `rng`.
std::vector<PairLengths> draw_pool(SplitMix64& rng) {
  std::vector<PairLengths> pool(kPoolPairs);
  for (auto& pair : pool) {
    const int64_t s = draw_source_pieces(rng);
    const int64_t t = std::max<int64_t>(1, s + rng.uniform(9) - 4);
    pair = {s + 1, t + 1};
  }
  return pool;
}

void check_vocabulary(int64_t vocab_size) {
  if (vocab_size <= kFirstId) {
    throw InputError("synthetic batches need a vocabulary of more than " + std::to_string(kFirstId) + " pieces");
  }
}

}  // namespace

uint64_t SplitMix64::next() {
  state_ += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::vector<SyntheticBatch> synthetic_batches(int64_t count, int64_t batch_tokens, int64_t vocab_size, uint64_t seed) {
  check_vocabulary(vocab_size);
  if (count < 1 || batch_tokens < 1) throw InputError("synthetic batches need a count and a token budget of 1 or more");
  SplitMix64 rng(seed);
  const auto pool = draw_pool(rng);
  std::vector<int64_t> order(pool.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return width(pool[a]) < width(pool[b]); });

  std::vector<std::vector<PairLengths>> packed;
  std::vector<PairLengths> current;
  int64_t current_width = 0;
  for (const int64_t i : order) {
    const int64_t w = std::max(current_width, width(pool[i]));
    if (!current.empty() && w * static_cast<int64_t>(current.size() + 1) > batch_tokens) {
      packed.push_back(std::move(current));
      current.clear();
      current_width = 0;
    }
    current.push_back(pool[i]);
    current_width = std::max(current_width, width(pool[i]));
  }
  if (!current.empty()) packed.push_back(std::move(current));

  const auto n = static_cast<int64_t>(packed.size());
  count = std::min(count, n);
  std::vector<SyntheticBatch> batches;
  for (int64_t k = 0; k < count; ++k) batches.push_back(fill_batch(packed[(2 * k + 1) * n / (2 * count)], vocab_size, rng));
  return batches;
}

int64_t synthetic_longest_side(uint64_t seed) {
  SplitMix64 rng(seed);
  int64_t widest = 0;
  for (const auto& pair : draw_pool(rng)) widest = std::max(widest, width(pair));
  return widest;
}

std::vector<std::vector<int>> synthetic_sentences(int64_t count, int64_t vocab_size, uint64_t seed) {
  check_vocabulary(vocab_size);
  SplitMix64 rng(seed + 1);
  std::vector<std::vector<int>> sentences(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (auto& sentence : sentences) {
    sentence.resize(static_cast<size_t>(draw_source_pieces(rng)));
    for (auto& id : sentence) id = static_cast<int>(kFirstId + rng.uniform(vocab_size - kFirstId));
  }
  return sentences;
}

data::Batch as_batch(const SyntheticBatch& synthetic) {
  data::Batch batch;
  batch.source = synthetic.source;
  batch.target_input = synthetic.target_input;
  batch.target_output = synthetic.target_output;
  batch.source_tokens = synthetic.source_tokens;
  batch.target_tokens = batch.global_target_tokens = synthetic.target_tokens;
  return batch;
}

}  // namespace trafo::bench
