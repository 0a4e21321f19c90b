// `trafo train` with two data-parallel ranks (Gloo on loopback, one thread each, dropout 0):
// the same weights as one process on the same global batches, resuming with another rank
// count, torchrun, and a lost rank stopping the others with one line.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_support.h"
#include "trafo/checkpoint/checkpoint.h"

namespace trafo::testing {
namespace {

// --adam-eps 1e-6: the gradient of attention's key bias is zero in exact arithmetic (softmax
// ignores a shift shared by all keys), so it holds only rounding noise, which Adam with eps 1e-9
// would scale up to full-size steps that differ between any two summation orders. fp32 whatever
// auto would pick: bf16 rounds those orders' differences up to ~5e-3.
const char* kDistRun =
    " --precision fp32 --adam-eps 1e-6 --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 "
    "--d-ff 64 --dropout 0"
    " --batch-tokens 300 --lr 1e-3 --warmup-steps 1 --valid-max-sentences 4 --valid-samples 0 --log-every 1"
    " --early-stopping 0";

class DistTrain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new std::filesystem::path(make_temp_dir("dist-train-data"));
    write_synthetic_corpus(*data_, "train", 120, 1);
    write_synthetic_corpus(*data_, "dev", 6, 2);
  }
  static std::string train(const std::filesystem::path& run) {
    return "train --data-dir '" + data_->string() + "' --src-lang en --tgt-lang de --run-dir '" + run.string() + "'" +
           kDistRun;
  }
  static std::filesystem::path* data_;
};
std::filesystem::path* DistTrain::data_ = nullptr;

// Largest absolute difference between two checkpoints' weights.
double weight_difference(const std::filesystem::path& a, const std::filesystem::path& b) {
  const auto x = checkpoint::load(a), y = checkpoint::load(b);
  double worst = 0.0;
  for (const auto& [name, tensor] : x.weights) {
    worst = std::max(worst, (tensor - y.weights.at(name)).abs().max().item<double>());
  }
  return worst;
}

TEST_F(DistTrain, TwoRanksTrainLikeOneProcessAndResumeAsOne) {
  const auto root = make_temp_dir("dist-train");
  auto one = run_trafo(train(root / "one") + " --threads 1 --max-steps 20 --valid-every 20");
  ASSERT_EQ(one.exit_code, 0) << one.errors;
  auto two = run_trafo(train(root / "two") + " --nproc 2 --threads 2 --max-steps 20 --valid-every 20");
  ASSERT_EQ(two.exit_code, 0) << two.errors;
  const double moved = weight_difference(root / "one" / "checkpoint-last.pt", root / "two" / "checkpoint-last.pt");
  EXPECT_LT(moved, 1e-4);

  // Half the run on two ranks, the rest on one: the same weights again.
  auto first = run_trafo(train(root / "resumed") + " --nproc 2 --threads 2 --max-steps 10 --valid-every 10");
  ASSERT_EQ(first.exit_code, 0) << first.errors;
  auto rest = run_trafo(train(root / "resumed") + " --threads 1 --max-steps 20 --valid-every 20");
  ASSERT_EQ(rest.exit_code, 0) << rest.errors;
  EXPECT_NE(rest.errors.find("resuming"), std::string::npos) << rest.errors;
  EXPECT_LT(weight_difference(root / "one" / "checkpoint-last.pt", root / "resumed" / "checkpoint-last.pt"), 1e-4);

  // The weights did move: a run of 10 steps is far from one of 20.
  auto short_run = run_trafo(train(root / "short") + " --threads 1 --max-steps 10 --valid-every 10");
  ASSERT_EQ(short_run.exit_code, 0) << short_run.errors;
  EXPECT_GT(weight_difference(root / "one" / "checkpoint-last.pt", root / "short" / "checkpoint-last.pt"), 1e-3);
}

TEST_F(DistTrain, RunsUnderTorchrun) {
  const auto root = make_temp_dir("dist-torchrun");
  const auto result = run_command(std::string(TRAFO_PYTHON) + " -m torch.distributed.run --no-python --nproc-per-node 2 "
                                  "--master-addr 127.0.0.1 --master-port " + std::to_string(free_port()) + " '" +
                                  TRAFO_BINARY + "' " + train(root / "run") + " --threads 1 --max-steps 6 --valid-every 6");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto metrics = read_text(root / "run" / "metrics.jsonl");
  EXPECT_NE(metrics.find("\"world_size\":2"), std::string::npos) << metrics.substr(0, 300);
  EXPECT_NE(metrics.find("\"allreduce_s\""), std::string::npos);
  EXPECT_NE(metrics.find("\"gradient_allreduce_s\""), std::string::npos);
  EXPECT_NO_THROW(checkpoint::load(root / "run" / "checkpoint-last.pt"));
}

// Starts two ranks of a long run, waits for rank 0's first checkpoint, then does `harm` to
// rank `victim`; the other rank must exit 1 within the timeout, naming the victim.
void expect_lost_rank_stops_the_other(const std::string& base, const std::filesystem::path& run, int victim,
                                      int harm) {
  const int port = free_port();
  const double timeout_s = 8;
  std::vector<int> pids;
  for (int rank = 0; rank < 2; ++rank) {
    pids.push_back(spawn_command("env RANK=" + std::to_string(rank) + " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                                 std::to_string(port) + " '" + TRAFO_BINARY + "' " + base +
                                 " --threads 1 --max-steps 100000 --valid-every 5 --dist-timeout 8 2>'" +
                                 (run.parent_path() / ("stderr-" + std::to_string(rank))).string() + "'"));
  }
  const auto started = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(run / "checkpoint-last.pt") &&
         std::chrono::steady_clock::now() - started < std::chrono::seconds(120)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(std::filesystem::exists(run / "checkpoint-last.pt"));
  const int survivor = 1 - victim;
  ::kill(pids[victim], harm);
  const auto harmed = std::chrono::steady_clock::now();
  const int code = wait_for_exit(pids[survivor], timeout_s + 20);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - harmed).count();
  ::kill(pids[victim], SIGKILL);
  wait_for_exit(pids[victim], 10);
  EXPECT_EQ(code, 1) << "after " << seconds << " s";
  const auto errors = read_text(run.parent_path() / ("stderr-" + std::to_string(survivor)));
  const auto last_line = errors.substr(errors.rfind('\n', errors.size() - 2) + 1);
  EXPECT_NE(last_line.find("lost rank " + std::to_string(victim)), std::string::npos) << errors;
  EXPECT_EQ(errors.find("frame #"), std::string::npos) << "no stack traces: " << errors;
  EXPECT_NO_THROW(checkpoint::load(run / "checkpoint-last.pt"));
}

// Bad input is found before the ranks start: one line and exit 2, not one line per rank.
TEST_F(DistTrain, BadInputIsOneLineNotOnePerRank) {
  const auto root = make_temp_dir("dist-bad-input");
  const auto result = run_trafo("train --data-dir '" + (root / "nope").string() +
                                "' --src-lang en --tgt-lang de --nproc 2 --max-steps 1 --run-dir '" +
                                (root / "run").string() + "'" + kDistRun);
  EXPECT_EQ(result.exit_code, 2) << result.errors;
  EXPECT_EQ(std::count(result.errors.begin(), result.errors.end(), '\n'), 1) << result.errors;
  EXPECT_NE(result.errors.find("train.en"), std::string::npos) << result.errors;
}

TEST_F(DistTrain, AKilledRankStopsTheOtherWithOneLine) {
  const auto root = make_temp_dir("dist-kill");
  expect_lost_rank_stops_the_other(train(root / "a"), root / "a", 1, SIGKILL);
  const auto other = make_temp_dir("dist-kill0");
  expect_lost_rank_stops_the_other(train(other / "b"), other / "b", 0, SIGKILL);
}

TEST_F(DistTrain, AHungRankStopsTheOtherWithinTheTimeout) {
  const auto root = make_temp_dir("dist-hang");
  expect_lost_rank_stops_the_other(train(root / "a"), root / "a", 1, SIGSTOP);
}

}  // namespace
}  // namespace trafo::testing
