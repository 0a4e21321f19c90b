// Token-budget batching: budget, coverage, determinism, resume, padding.
#include <cstdio>
#include <cstdlib>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_support.h"
#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/test_hooks.h"
#include "trafo/toy/toy_corpus.h"

namespace trafo::data {
namespace {

using testing::corpus_of_lengths;

TEST(Batcher, NeverExceedsTheBudgetAndServesEveryPairOncePerEpoch) {
  const auto corpus = corpus_of_lengths(1000, 1);
  BatcherOptions options;
  options.batch_tokens = 256;
  const auto plan = plan_epoch(corpus, options, 0);
  std::multiset<int64_t> seen;
  for (const auto& pairs : plan) {
    const auto batch = make_batch(corpus, pairs);
    EXPECT_LE(batch.cost(), options.batch_tokens);
    seen.insert(pairs.begin(), pairs.end());
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 1000u);
}

// A batch that fails to build on the background thread (a failed allocation, say) reaches the
// caller of next() as the exception, after the batches built before it: not std::terminate.
TEST(Batcher, AFailureOnTheBackgroundThreadReachesNext) {
  TestHooks hooks;
  hooks.batch_fails_at = 3;
  const TestHooksScope failing(hooks);  // restored at the end: the other tests of this process build batches too
  const auto corpus = corpus_of_lengths(1000, 1);
  BatcherOptions options;
  options.batch_tokens = 256;
  options.prefetch = 2;
  Batcher batcher(corpus, options);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(batcher.next().position.index, i);
  EXPECT_THROW(batcher.next(), RunError);
  EXPECT_THROW(batcher.next(), RunError) << "and again, not a hang";
}

TEST(Batcher, PairLongerThanTheBudgetIsSkippedAndCounted) {
  Corpus corpus;
  corpus.add(std::vector<int>(10, 5), std::vector<int>(10, 6), 1);
  corpus.add(std::vector<int>(100, 5), std::vector<int>(3, 6), 2);
  BatcherOptions options;
  options.batch_tokens = 50;
  int64_t skipped = 0;
  const auto plan = plan_epoch(corpus, options, 0, &skipped);
  EXPECT_EQ(skipped, 1);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0], std::vector<int64_t>{0});
}

TEST(Batcher, SameSeedSameOrderOtherSeedOtherOrder) {
  const auto corpus = corpus_of_lengths(500, 2);
  BatcherOptions a, b;
  a.batch_tokens = b.batch_tokens = 300;
  b.seed = 2;
  EXPECT_EQ(plan_epoch(corpus, a, 0), plan_epoch(corpus, a, 0));
  EXPECT_NE(plan_epoch(corpus, a, 0), plan_epoch(corpus, b, 0));
  EXPECT_NE(plan_epoch(corpus, a, 0), plan_epoch(corpus, a, 1));  // reshuffled every epoch
}

TEST(Batcher, ResumesAtAPositionToTheSameSequence) {
  const auto corpus = corpus_of_lengths(300, 3);
  BatcherOptions options;
  options.batch_tokens = 200;
  std::vector<Batch> uninterrupted;
  {
    Batcher batcher(corpus, options);
    for (int i = 0; i < 3 * batcher.batches_per_epoch(); ++i) uninterrupted.push_back(batcher.next());
  }
  const BatchPosition resume_at = uninterrupted[uninterrupted.size() / 2 + 1].position;
  Batcher resumed(corpus, options, resume_at);
  for (size_t i = uninterrupted.size() / 2 + 1; i < uninterrupted.size(); ++i) {
    const auto batch = resumed.next();
    EXPECT_EQ(batch.pairs, uninterrupted[i].pairs) << i;
    EXPECT_EQ(batch.position.epoch, uninterrupted[i].position.epoch);
    EXPECT_TRUE(torch::equal(batch.source, uninterrupted[i].source));
  }
}

// A resume with a larger --batch-tokens plans fewer batches than the saved position: the next epoch
// starts, as an uninterrupted run with those options would begin it.
TEST(Batcher, APositionPastTheEpochsBatchesGoesOnAtTheNextEpoch) {
  const auto corpus = corpus_of_lengths(300, 3);
  BatcherOptions options;
  options.batch_tokens = 800;
  Batcher fresh(corpus, options, BatchPosition{3, 0});
  Batcher resumed(corpus, options, BatchPosition{2, fresh.batches_per_epoch() + 5});
  const auto expected = fresh.next(), batch = resumed.next();
  EXPECT_EQ(batch.position.epoch, 3);
  EXPECT_EQ(batch.position.index, 0);
  EXPECT_EQ(batch.pairs, expected.pairs);
}

TEST(Batcher, BatchTensorsCarryEosBosAndPadding) {
  Corpus corpus;
  corpus.add({10, 11, 12}, {20, 21}, 1);
  corpus.add({13}, {22, 23, 24, 25}, 2);
  const auto batch = make_batch(corpus, {0, 1});
  EXPECT_TRUE(torch::equal(batch.source, torch::tensor({{10, 11, 12, 3}, {13, 3, 0, 0}}, torch::kLong)));
  EXPECT_TRUE(torch::equal(batch.target_input, torch::tensor({{2, 20, 21, 0, 0}, {2, 22, 23, 24, 25}}, torch::kLong)));
  EXPECT_TRUE(torch::equal(batch.target_output, torch::tensor({{20, 21, 3, 0, 0}, {22, 23, 24, 25, 3}}, torch::kLong)));
  EXPECT_EQ(batch.source_tokens, 6);
  EXPECT_EQ(batch.target_tokens, 8);
  EXPECT_EQ(batch.cost(), 10);
}

TEST(Batcher, PaddingOnTheToyCorpusStaysUnderTenPercent) {
  const auto dir = trafo::testing::make_temp_dir("toy-padding");
  ToyCorpusOptions toy;
  toy.train = 50000;  // the default size: denser length groups than a small sample
  toy.dev = toy.test = 10;
  write_toy_corpus(dir, toy);
  TokenizerOptions vocab;
  vocab.vocab_size = 1000;
  const auto tokenizer = Tokenizer::train({dir / "train.en", dir / "train.de"}, vocab);
  const auto corpus = Corpus::load(dir / "train.en", dir / "train.de", tokenizer, {});
  BatcherOptions options;
  options.batch_tokens = 2048;
  int64_t slots = 0, real = 0;
  for (const auto& pairs : plan_epoch(corpus, options, 0)) {
    const auto batch = make_batch(corpus, pairs);
    slots += batch.source.numel() + batch.target_input.numel();
    real += batch.source_tokens + batch.target_tokens;
  }
  const double padding = 1.0 - static_cast<double>(real) / static_cast<double>(slots);
  std::printf("toy corpus padding fraction (50,000 pairs, 2048-token batches): %.2f%%\n", 100.0 * padding);
  EXPECT_LT(padding, 0.10);
}

}  // namespace
}  // namespace trafo::data
