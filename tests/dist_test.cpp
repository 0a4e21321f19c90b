// Data parallelism on c10d (Gloo, loopback): two ranks sum gradients into those of one process
// on the same global batch; a bad environment is one line and exit 2. The ranks are this test
// binary started again in worker mode (TRAFO_DIST_TEST_OUT set).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model_support.h"
#include "test_support.h"
#include "trafo/data/batcher.h"
#include "trafo/dist/environment.h"
#include "trafo/dist/gradient_sync.h"
#include "trafo/dist/group.h"
#include "trafo/model/loss.h"
#include "trafo/model/transformer.h"
#include "trafo/train/schedule.h"

namespace trafo::testing {
namespace {

model::Transformer tiny_model() {
  torch::manual_seed(7);
  return model::Transformer(tiny_model_config(40));
}

// Two global batches (the second of one row, so rank 1's share of it is empty): random ids
// with some padding, the same on every rank.
struct GlobalBatch {
  torch::Tensor source, target_input, target_output;
};
std::vector<GlobalBatch> global_batches() {
  torch::manual_seed(11);
  std::vector<GlobalBatch> batches;
  for (int64_t rows : {5, 1}) {
    GlobalBatch b;
    b.source = torch::randint(4, 40, {rows, 7}, torch::kLong);
    b.target_input = torch::randint(4, 40, {rows, 6}, torch::kLong);
    b.target_output = torch::randint(4, 40, {rows, 6}, torch::kLong);
    b.source.index_put_({0, torch::indexing::Slice(5)}, 0);
    b.target_output.index_put_({0, torch::indexing::Slice(4)}, 0);
    batches.push_back(b);
  }
  return batches;
}

std::vector<int64_t> all_rows(const GlobalBatch& b) {
  std::vector<int64_t> rows(static_cast<size_t>(b.source.size(0)));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

int64_t target_tokens(const std::vector<GlobalBatch>& batches) {
  int64_t tokens = 0;
  for (const auto& b : batches) tokens += b.target_output.ne(0).sum().item<int64_t>();
  return tokens;
}

void accumulate_loss(model::Transformer& model, const GlobalBatch& b, const std::vector<int64_t>& rows, int64_t tokens) {
  if (rows.empty()) return;
  const auto index = torch::tensor(rows, torch::kLong);
  const auto logits = model(b.source.index_select(0, index), b.target_input.index_select(0, index));
  const auto loss = model::label_smoothed_loss(logits, b.target_output.index_select(0, index), 0.1, 0).smoothed;
  (loss / static_cast<double>(tokens)).backward();
}

std::vector<torch::Tensor> gradients(model::Transformer& model) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
  return grads;
}

// Worker mode: one rank of the gradient test; writes its summed gradients to TRAFO_DIST_TEST_OUT.
int run_worker(const std::string& out) {
  at::set_num_threads(1);
  const auto environment = dist::read_environment();
  dist::Group group(environment, torch::kCPU, std::chrono::seconds(60));
  auto model = tiny_model();
  dist::GradientSync sync(group, model->parameters(), /*bucket_bytes=*/4096);  // several buckets
  const auto batches = global_batches();
  const int64_t tokens = target_tokens(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    if (i + 1 == batches.size()) sync.arm();
    accumulate_loss(model, batches[i], data::shard_rows(all_rows(batches[i]), group.rank(), group.size()), tokens);
  }
  sync.finish();
  torch::save(gradients(model), out);
  return 0;
}

TEST(DataParallel, TwoRanksSumToTheGradientsOfOneProcess) {
  const auto dir = make_temp_dir("dist-grad");
  const int port = free_port();
  std::vector<int> pids;
  for (int rank = 0; rank < 2; ++rank) {
    pids.push_back(spawn_command("env RANK=" + std::to_string(rank) + " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                                 std::to_string(port) + " TRAFO_DIST_TEST_OUT='" + (dir / std::to_string(rank)).string() +
                                 "' /proc/" + std::to_string(::getpid()) + "/exe"));
  }
  for (int pid : pids) ASSERT_EQ(wait_for_exit(pid, 120), 0);

  auto model = tiny_model();
  const auto batches = global_batches();
  const int64_t tokens = target_tokens(batches);
  for (const auto& b : batches) accumulate_loss(model, b, all_rows(b), tokens);
  const auto expected = gradients(model);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<torch::Tensor> got;
    torch::load(got, (dir / std::to_string(rank)).string());
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], expected[i], 1e-5, 1e-5))
          << "rank " << rank << " parameter " << i << " differs by " << (got[i] - expected[i]).abs().max().item<float>();
    }
  }
}

TEST(DataParallel, ShardsAreDisjointAndCoverTheBatch) {
  const std::vector<int64_t> pairs = {10, 11, 12, 13, 14};
  EXPECT_EQ(data::shard_rows(pairs, 0, 2), (std::vector<int64_t>{10, 12, 14}));
  EXPECT_EQ(data::shard_rows(pairs, 1, 2), (std::vector<int64_t>{11, 13}));
  EXPECT_TRUE(data::shard_rows({10}, 1, 2).empty());
}

void expect_one_line_exit_2(const std::string& env, const std::string& arguments, const std::string& message) {
  const auto data = make_temp_dir("dist-env");
  const auto result = run_command("env " + env + " '" + std::string(TRAFO_BINARY) + "' train --data-dir '" +
                                  data.string() + "' --run-dir '" + (data / "run").string() + "' " + arguments);
  EXPECT_EQ(result.exit_code, 2) << result.errors;
  EXPECT_NE(result.errors.find(message), std::string::npos) << result.errors;
  EXPECT_EQ(std::count(result.errors.begin(), result.errors.end(), '\n'), 1) << result.errors;
}

TEST(DataParallel, ABadEnvironmentIsOneLineAndExit2) {
  expect_one_line_exit_2("WORLD_SIZE=2 RANK=0", "", "WORLD_SIZE is set but MASTER_ADDR is not");
  expect_one_line_exit_2("WORLD_SIZE=2 RANK=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1234", "", "RANK=2 is not below WORLD_SIZE=2");
  expect_one_line_exit_2("WORLD_SIZE=two RANK=0", "", "WORLD_SIZE=two is not an integer");
  expect_one_line_exit_2("WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1234", "--nproc 2",
                         "--nproc cannot be used under torchrun");
  expect_one_line_exit_2("", "--nproc 0", "nproc must be between 1 and 1024");
  expect_one_line_exit_2("", "--nproc 1000", "more ranks than this machine's");
}

TEST(DataParallel, APortInUseIsOneLineAndExit2) {
  int port = 0;
  const int fd = dist::listen_on("127.0.0.1", 0, &port);
  const auto data = make_temp_dir("dist-port");
  write_text(data / "train.en", "a\n");
  write_text(data / "train.de", "b\n");
  write_text(data / "dev.en", "a\n");
  write_text(data / "dev.de", "b\n");
  const auto result = run_command("env WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
                                  " '" + std::string(TRAFO_BINARY) + "' train --data-dir '" + data.string() +
                                  "' --run-dir '" + (data / "run").string() + "'");
  ::close(fd);
  EXPECT_EQ(result.exit_code, 2) << result.errors;
  EXPECT_NE(result.errors.find("MASTER_PORT=" + std::to_string(port) + " is already in use"), std::string::npos)
      << result.errors;
  EXPECT_EQ(std::count(result.errors.begin(), result.errors.end(), '\n'), 1) << result.errors;
}

}  // namespace
}  // namespace trafo::testing

int main(int argc, char** argv) {
  if (const char* out = std::getenv("TRAFO_DIST_TEST_OUT")) return trafo::testing::run_worker(out);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
