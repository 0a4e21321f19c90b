// --batch-tokens auto: on CUDA, the largest token budget whose training step on the corpus's longest
// sentences fits the GPU's memory (as Marian's --mini-batch-fit); on a CPU, the default budget. A
// budget the user or the preset gives is kept. The learning-rate schedule is the same whatever the
// budget (docs/guide-own-data.md "Batches on a GPU").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

namespace trafo::data {
struct CachedCorpus;
}
namespace trafo::model {
struct ModelConfig;
}
namespace trafo::run_config {
struct OptimOptions;
}

namespace trafo::train {

constexpr int64_t kAutoBatchTokens = 0;        // --batch-tokens auto, as the config holds it
constexpr int64_t kDefaultBatchTokens = 4096;  // auto on a CPU, and where a fit cannot be made
constexpr int64_t kFitStep = 1024;             // fitted budgets are multiples of this
constexpr int64_t kMaxFittedTokens = 262144;   // past this, a bigger batch buys no speed on one GPU
constexpr int64_t kMinUpdatesPerEpoch = 20;    // a small corpus keeps at least this many updates an epoch
// A budget fits when this much more of it does. A real run holds two steps' memory at once: the pool
// of the CUDA graphs keeps what the captured steps took while a bucket's first step runs eagerly
// beside it; besides, the allocator's fragments and the validation's decoder. (At 1.25 a fitted
// transformer-base on an H200 took 169k tokens, and its graphs' capture ran out of memory.)
constexpr double kFitHeadroom = 2.5;

// The largest multiple of `step` in [low, high] for which `fits` holds, assuming that a budget fits
// whenever a larger one does: doubling from `low`, then halving the gap. `low` when even it does not
// fit (the caller says so). Calls `fits` about log2(high / low) + log2(high / step) times.
int64_t largest_fitting(int64_t low, int64_t high, int64_t step, const std::function<bool(int64_t)>& fits);

// What a fit needs from the training data: its longest pair (pieces with <s> or </s>, at most the
// model's positions) and its tokens per epoch (each pair counted at its longer side).
struct CorpusExtent {
  int64_t longest = 0;
  int64_t epoch_tokens = 0;
};
CorpusExtent corpus_extent(const std::vector<data::CachedCorpus>& corpora, int64_t max_positions);

// The highest budget a fit may choose: kMaxFittedTokens, and an epoch of at least
// kMinUpdatesPerEpoch updates; never under kDefaultBatchTokens.
int64_t fit_ceiling(const CorpusExtent& extent);

struct FittedBudget {
  int64_t tokens = kDefaultBatchTokens;
  std::string reason;  // train.log's line ("" on a CPU without auto)
};

// --batch-tokens auto on `device`: training steps of a fresh model of `config`'s shape, with the optimizer
// and loss of the optimisation group `optim`, on sentences of the corpus's longest length, at budgets
// from kFitStep to fit_ceiling(extent) (each kFitHeadroom over), the largest that does not run out of
// memory. The random generators are left as they were, and the memory the probe took is given back.
// With the fit_tokens test hook, a budget fits where kFitHeadroom of it is at most the hook's tokens,
// and nothing runs. (`trafo train` and `trafo bench` both fit this way.)
FittedBudget fit_batch_tokens(const run_config::OptimOptions& optim, const model::ModelConfig& config,
                              const c10::Device& device, bool bf16, const CorpusExtent& extent);

}  // namespace trafo::train
