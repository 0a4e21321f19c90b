// SIGKILL at random moments, many inside checkpoint writes: after every kill the run folder holds
// only whole checkpoints, the rerun resumes from the newest, and the weights it finally reaches are
// bitwise those of a run that was never interrupted.
#include <signal.h>

#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/errors.h"

namespace trafo::testing {
namespace {

constexpr int kKills = 22;
constexpr int kKillSteps = 160;

// fp32 whatever auto would pick: each run times the CPU at start, and the runs are compared bit for bit.
std::string kill_train_command(const std::filesystem::path& data, const std::filesystem::path& run) {
  return "'" + std::string(TRAFO_BINARY) + "' train --data-dir '" + data.string() +
         "' --src-lang en --tgt-lang de --run-dir '" + run.string() +
         "' --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
         " --dropout 0.1 --batch-tokens 200 --threads 1 --valid-every 0 --checkpoint-every 1 --keep-checkpoints 2"
         " --log-every 10 --early-stopping 0 --precision fp32 --max-steps " +
         std::to_string(kKillSteps);
}

// Whether `run` holds a whole checkpoint (checkpoint-*.pt) written after `since`.
bool holds_checkpoint_since(const std::filesystem::path& run, std::filesystem::file_time_type since) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(run, error)) {
    if (entry.path().extension() == ".pt" && entry.last_write_time(error) > since) return true;
  }
  return false;
}

TEST(KillTest, EveryKillResumesAndTheFinalWeightsEqualAnUninterruptedRun) {
  const auto data = make_temp_dir("kill-data");
  write_synthetic_corpus(data, "train", 120, 1);
  write_synthetic_corpus(data, "dev", 6, 2);
  const auto root = make_temp_dir("kill-runs");

  const auto whole = run_command(kill_train_command(data, root / "whole"));
  ASSERT_EQ(whole.exit_code, 0) << whole.errors;

  // Every checkpoint write takes ~100 ms in 64 KB pieces, so most kills land inside one.
  const auto run = root / "killed";
  const std::string slow_command = "env TRAFO_TEST_HOOKS=slow_writes_ms=25 " + kill_train_command(data, run);
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> delay_ms(300, 2500), after_write_ms(0, 300);
  int kills = 0, inside_writes = 0;
  while (kills < kKills) {
    const auto log = root / ("attempt-" + std::to_string(kills) + ".log");
    const auto spawned = std::filesystem::file_time_type::clock::now();
    const int pid = spawn_command(slow_command + " 2>'" + log.string() + "'");
    // Even attempts die at a random moment after their start (a slow binary, ASan on a busy machine,
    // may still be starting); odd ones a moment after they have written a checkpoint of their own
    // (often inside the next write), so every other attempt makes progress however slow the binary.
    int exit_code = -1;
    if (kills % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
      exit_code = wait_for_exit(pid, 0);
    } else {
      for (int waited = 0; exit_code == -1 && !holds_checkpoint_since(run, spawned) && waited < 120000; waited += 20) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        exit_code = wait_for_exit(pid, 0);
      }
      if (exit_code == -1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(after_write_ms(rng)));
        exit_code = wait_for_exit(pid, 0);
      }
    }
    if (exit_code != -1) break;  // it finished before the kill
    ::kill(pid, SIGKILL);
    ASSERT_EQ(wait_for_exit(pid, 60), 128 + SIGKILL);
    ++kills;
    if (!std::filesystem::exists(run)) continue;  // killed before it made the folder (slow start, e.g. under ASan)
    // Whole checkpoints only; a killed write leaves a temporary, which the next run removes.
    for (const auto& entry : std::filesystem::directory_iterator(run)) {
      const auto name = entry.path().filename().string();
      if (name.find(".tmp-") != std::string::npos) {
        ++inside_writes;
      } else if (entry.path().extension() == ".pt") {
        EXPECT_NO_THROW(checkpoint::load(entry.path())) << name << " after kill " << kills;
      }
    }
  }
  EXPECT_EQ(kills, kKills) << "the run ended before every kill: raise kKillSteps";
  const auto last = run_command(kill_train_command(data, run));  // nothing is killed now: full-speed writes
  ASSERT_EQ(last.exit_code, 0) << last.errors;
  EXPECT_NE(last.errors.find("resuming from"), std::string::npos) << last.errors;
  EXPECT_GT(inside_writes, 0) << "no kill landed inside a checkpoint write";
  // --keep-checkpoints 2: the two of highest step, whatever the kills interrupted.
  const auto numbered = checkpoint::numbered_checkpoints(run);
  ASSERT_EQ(numbered.size(), 2u);
  EXPECT_EQ(numbered.back().first, kKillSteps);

  const auto a = checkpoint::load(root / "whole" / "checkpoint-last.pt");
  const auto b = checkpoint::load(run / "checkpoint-last.pt");
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (const auto& [name, tensor] : a.weights) EXPECT_TRUE(torch::equal(tensor, b.weights.at(name))) << name;
  EXPECT_EQ(a.tokenizer, b.tokenizer);
  std::cerr << kills << " kills, " << inside_writes << " inside checkpoint writes\n";
}

}  // namespace
}  // namespace trafo::testing
