// `trafo score-pairs` through the binary: one score per pair, the same whatever the batch, and summed
// over the lines it is `trafo eval`'s teacher-forced loss.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_support.h"
#include "run_support.h"

namespace trafo::testing {
namespace {

struct Scored {
  double score = 0.0;
  std::vector<double> pieces;
};

std::vector<Scored> parse_scores(const std::string& output) {
  std::vector<Scored> scores;
  for (const auto& line : lines_of(output)) {
    std::istringstream in(line);
    Scored scored;
    in >> scored.score;
    std::string bar;
    if (in >> bar) {
      for (double piece; in >> piece;) scored.pieces.push_back(piece);
    }
    scores.push_back(scored);
  }
  return scores;
}

TEST(ScorePairs, EqualsEvalsLossSummedPerLineWhateverTheBatch) {
  const auto root = make_temp_dir("score-pairs");
  write_synthetic_corpus(root, "train", 150, 1);
  write_synthetic_corpus(root, "dev", 30, 2);
  const auto run = root / "run";
  const auto trained = run_trafo("train --data-dir " + quoted(root) + " --src-lang en --tgt-lang de --run-dir " +
                                 quoted(run) +
                                 " --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1"
                                 " --d-ff 64 --batch-tokens 200 --threads 1 --max-steps 6 --valid-every 6 --lr 3e-3"
                                 " --warmup-steps 3");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  // fp32 in every run: auto times the model at start and may pick differently from one run to the next.
  const std::string model =
      " -c " + quoted(run / "checkpoint-last.pt") + " --threads 1 --precision fp32 --src " + quoted(root / "dev.en");
  const auto big = run_trafo("score-pairs" + model + " --tgt " + quoted(root / "dev.de") + " --word-scores");
  ASSERT_EQ(big.exit_code, 0) << big.errors;
  const auto small = run_trafo("score-pairs" + model + " --tgt " + quoted(root / "dev.de") + " --batch-tokens 1");
  ASSERT_EQ(small.exit_code, 0) << small.errors;
  const auto normalized = run_trafo("score-pairs" + model + " --tgt " + quoted(root / "dev.de") + " --normalize");
  ASSERT_EQ(normalized.exit_code, 0) << normalized.errors;
  const auto a = parse_scores(big.output), b = parse_scores(small.output), n = parse_scores(normalized.output);
  ASSERT_EQ(a.size(), 30u);
  ASSERT_EQ(b.size(), 30u);
  ASSERT_EQ(n.size(), 30u);
  double sum = 0.0;
  int64_t pieces = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LT(a[i].score, 0.0);
    EXPECT_NEAR(a[i].score, b[i].score, 1e-5) << "line " << i + 1;
    double piece_sum = 0.0;
    for (const double piece : a[i].pieces) piece_sum += piece;
    EXPECT_NEAR(piece_sum, a[i].score, 1e-4) << "line " << i + 1;
    EXPECT_NEAR(n[i].score, a[i].score / static_cast<double>(a[i].pieces.size()), 1e-5) << "line " << i + 1;
    sum += a[i].score;
    pieces += static_cast<int64_t>(a[i].pieces.size());
  }
  const auto eval = run_trafo("eval" + model + " --ref " + quoted(root / "dev.de") + " --json");
  ASSERT_EQ(eval.exit_code, 0) << eval.errors;
  const auto fresh = nlohmann::json::parse(eval.output);
  EXPECT_EQ(fresh["target_tokens"].get<int64_t>(), pieces);
  EXPECT_NEAR(-sum / static_cast<double>(pieces), fresh["loss"].get<double>(), 1e-5);
  EXPECT_NEAR(-sum, fresh["loss"].get<double>() * static_cast<double>(pieces), 1e-4 * static_cast<double>(pieces));

  // Bad input as in eval: line counts that differ name both.
  write_text(root / "short.de", "one line\n");
  const auto mismatched = run_trafo("score-pairs" + model + " --tgt " + quoted(root / "short.de"));
  EXPECT_EQ(mismatched.exit_code, 2);
  EXPECT_NE(mismatched.errors.find("has 30 lines"), std::string::npos) << mismatched.errors;
  EXPECT_NE(mismatched.errors.find("has 1"), std::string::npos) << mismatched.errors;
}

}  // namespace
}  // namespace trafo::testing
