// --batch-tokens auto (train/batch_fit.h): the search for the largest budget that fits, its ceiling
// from the corpus, and a run whose budget is fitted against a posed GPU (the fit_tokens test hook):
// the budget train.log states is the one the batches use, and training still learns.
#include <gtest/gtest.h>

#include <fstream>

#include "data_support.h"
#include "run_support.h"
#include "test_support.h"
#include "trafo/data/token_cache.h"
#include "trafo/train/batch_fit.h"

namespace trafo::testing {
namespace {

using train::largest_fitting;

TEST(BatchFit, FindsTheLargestMultipleThatFitsInFewTries) {
  for (const int64_t limit : {1024, 5000, 20000, 65536, 100000, 262144}) {
    int calls = 0;
    const auto found = largest_fitting(1024, 262144, 1024, [&](int64_t budget) {
      ++calls;
      return budget <= limit;
    });
    EXPECT_EQ(found, limit / 1024 * 1024) << limit;
    EXPECT_LE(calls, 2 * 9) << limit;  // log2(256) doublings and as many halvings at most
  }
  EXPECT_EQ(largest_fitting(1024, 8192, 1024, [](int64_t) { return true; }), 8192);
  EXPECT_EQ(largest_fitting(1024, 8192, 1024, [](int64_t) { return false; }), 1024);  // the caller says so
  EXPECT_EQ(largest_fitting(3000, 9999, 1024, [](int64_t) { return true; }), 9216);   // multiples only
}

TEST(BatchFit, ACorpusKeepsTwentyUpdatesAnEpochAndTheLongestPairIsMeasured) {
  data::CachedCorpus cached;
  cached.corpus.add(std::vector<int>(9, 5), std::vector<int>(3, 5), 1);
  cached.corpus.add(std::vector<int>(2, 5), std::vector<int>(40, 5), 2);
  cached.corpus.add(std::vector<int>(700, 5), std::vector<int>(1, 5), 3);
  std::vector<data::CachedCorpus> corpora;
  corpora.push_back(std::move(cached));
  const auto extent = train::corpus_extent(corpora, 512);
  EXPECT_EQ(extent.longest, 512);                     // capped at the model's positions
  EXPECT_EQ(extent.epoch_tokens, 10 + 41 + 512);      // each pair at its longer side, with </s>
  EXPECT_EQ(train::fit_ceiling(extent), train::kDefaultBatchTokens);  // never under the default
  EXPECT_EQ(train::fit_ceiling({100, 20 * 50000}), 50000);
  EXPECT_EQ(train::fit_ceiling({100, int64_t{1} << 40}), train::kMaxFittedTokens);
}

class BatchFitRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    toy_ = new std::filesystem::path(make_temp_dir("batch-fit") / "toy");
    ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(*toy_) + " --train 20000 --dev 20 --test 10").exit_code, 0);
  }
  static void TearDownTestSuite() { delete toy_; }

  static CommandResult train(const std::filesystem::path& run, const std::string& hooks, const std::string& extra) {
    return run_command((hooks.empty() ? "" : "TRAFO_TEST_HOOKS=" + hooks + " ") + "'" + std::string(TRAFO_BINARY) +
                       "' train --data-dir " + quoted(*toy_) + " --src-lang en --tgt-lang de --run-dir " + quoted(run) +
                       " --vocab-size 400 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
                       " --threads 1 --valid-every 1000 --lr 3e-3 --warmup-steps 20 --early-stopping 0 " + extra);
  }

  static std::filesystem::path* toy_;
};
std::filesystem::path* BatchFitRun::toy_ = nullptr;

// A posed GPU that holds 10,000 tokens: 3,072 is the largest multiple of 1,024 that fits 2.5x over.
// train.log says so, the batches are that large, and the loss falls as at the default budget.
TEST_F(BatchFitRun, AFittedBudgetIsStatedUsedAndTrains) {
  const auto run = make_temp_dir("batch-fit-run") / "run";
  const auto result = train(run, "fit_tokens=10000", "--max-steps 300 --log-every 50");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto log = read_text(run / "train.log");
  EXPECT_NE(log.find("--batch-tokens auto: 3072 tokens, the largest multiple of 1024 up to"), std::string::npos) << log;
  double first = 0, last = 0;
  for (const auto& event : read_jsonl(run / "metrics.jsonl")) {
    if (event.value("event", "") == "start") {
      EXPECT_EQ(event.at("batch_tokens"), 3072) << event;
    }
    if (event.value("event", "") != "train") continue;
    if (first == 0) first = event.at("loss").get<double>();
    last = event.at("loss").get<double>();
  }
  EXPECT_GT(first, 0.0);
  EXPECT_LT(last, 0.75 * first) << "first " << first << ", last " << last;
}

// A budget given is kept; auto on a CPU is the default budget; a posed GPU too small for any budget
// is said in one line.
TEST_F(BatchFitRun, AGivenBudgetIsKeptAndACpuTakesTheDefault) {
  const auto given = make_temp_dir("batch-fit-given") / "run";
  ASSERT_EQ(train(given, "fit_tokens=10000", "--max-steps 2 --batch-tokens 2048").exit_code, 0);
  EXPECT_NE(read_text(given / "train.log").find("--batch-tokens 2048 (given)"), std::string::npos);
  const auto cpu = make_temp_dir("batch-fit-cpu") / "run";
  const auto on_cpu = train(cpu, "", "--max-steps 2 --batch-tokens auto");
  ASSERT_EQ(on_cpu.exit_code, 0) << on_cpu.errors;
  EXPECT_NE(read_text(cpu / "train.log").find("--batch-tokens auto: 4096 on a CPU"), std::string::npos);
  const auto small = make_temp_dir("batch-fit-small") / "run";
  ASSERT_EQ(train(small, "fit_tokens=100", "--max-steps 2").exit_code, 0);
  EXPECT_NE(read_text(small / "train.log").find("did not fit the GPU's memory even at this budget"), std::string::npos);
  const auto bad = train(make_temp_dir("batch-fit-bad") / "run", "", "--max-steps 2 --batch-tokens -5");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.errors.find("batch-tokens must be auto or between 1 and"), std::string::npos) << bad.errors;
}

}  // namespace
}  // namespace trafo::testing
