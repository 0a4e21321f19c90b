// `trafo train` end to end through the binary: run folder, metrics.jsonl, configs, bad input.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_support.h"
#include "run_support.h"

namespace trafo::testing {
namespace {

const char* kTinyModel =
    " --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
    " --batch-tokens 200 --threads 1 --valid-max-sentences 5 --log-every 1";

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = make_temp_dir("train-cli-data");
    write_synthetic_corpus(data_, "train", 80, 1);
    write_synthetic_corpus(data_, "dev", 6, 2);
    run_ = make_temp_dir("train-cli-run") / "run";
  }
  std::string base() const {
    return "train --data-dir '" + data_.string() + "' --src-lang en --tgt-lang de --run-dir '" + run_.string() +
           "'" + kTinyModel;
  }
  std::filesystem::path data_, run_;
};

TEST_F(TrainCli, TrainsAndWritesTheRunFolder) {
  const auto result = run_trafo(base() + " --max-steps 4 --valid-every 2 --tensorboard");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_TRUE(result.output.empty()) << "logs belong on stderr";
  for (const char* name : {"checkpoint-last.pt", "checkpoint-best.pt", "checkpoint-2.pt", "checkpoint-4.pt",
                           "metrics.jsonl", "config.toml", "train.log"}) {
    EXPECT_TRUE(std::filesystem::exists(run_ / name)) << name;
  }
  const auto events = read_jsonl(run_ / "metrics.jsonl");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front()["event"], "start");
  EXPECT_EQ(events.back()["event"], "end");
  EXPECT_EQ(events.back()["reason"], "steps");
  // The loop's pace: seconds spent queueing the 4 steps (on a CPU, running them) and waiting for them,
  // within the run's time.
  const double queue_s = events.back()["queue_s"].get<double>(), wait_s = events.back()["device_wait_s"].get<double>();
  EXPECT_GT(queue_s, 0.0);
  EXPECT_GE(wait_s, 0.0);
  EXPECT_LT(queue_s + wait_s, events.back()["time_s"].get<double>());
  int train = 0, valid = 0;
  for (const auto& e : events) {
    for (const char* key : {"event", "step", "epoch", "time_s"}) EXPECT_TRUE(e.contains(key)) << e.dump();
    if (e["event"] == "train") {
      ++train;
      for (const char* key : {"loss", "lr", "grad_norm", "tgt_tokens_per_s", "skipped_updates"}) {
        EXPECT_TRUE(e.contains(key)) << key;
      }
    }
    if (e["event"] == "valid") {
      ++valid;
      for (const char* key : {"loss", "ppl", "bleu", "chrf", "samples"}) EXPECT_TRUE(e.contains(key)) << key;
      EXPECT_NEAR(std::exp(e["loss"].get<double>()), e["ppl"].get<double>(), 1e-6 * e["ppl"].get<double>());
    }
  }
  EXPECT_EQ(train, 4);
  ASSERT_TRUE(std::filesystem::is_directory(run_ / "tensorboard"));
  bool has_events = false;
  for (const auto& entry : std::filesystem::directory_iterator(run_ / "tensorboard")) {
    has_events |= entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  }
  EXPECT_TRUE(has_events);
  EXPECT_NE(read_text(run_ / "train.log").find("valid step 4"), std::string::npos);
  EXPECT_EQ(valid, 2);
}

TEST_F(TrainCli, ResumesByDefaultAndRefusesToOverwriteWithoutPermission) {
  ASSERT_EQ(run_trafo(base() + " --max-steps 2").exit_code, 0);
  const auto resumed = run_trafo(base() + " --max-steps 3");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming"), std::string::npos) << resumed.errors;
  const auto refused = run_trafo(base() + " --max-steps 3 --no-resume");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.errors.find("--overwrite"), std::string::npos) << refused.errors;
  EXPECT_EQ(run_trafo(base() + " --max-steps 1 --no-resume --overwrite").exit_code, 0);
}

TEST_F(TrainCli, ConfigFileThenCommandLine) {
  const auto dir = make_temp_dir("config");
  write_text(dir / "a.toml", "lr = 0.5\nwarmup-steps = 7\n");
  auto dump = run_trafo(base() + " --config '" + (dir / "a.toml").string() + "' --dump-config");
  ASSERT_EQ(dump.exit_code, 0) << dump.errors;
  EXPECT_NE(dump.output.find("lr=0.5"), std::string::npos) << dump.output;
  EXPECT_NE(dump.output.find("warmup-steps=7"), std::string::npos) << dump.output;
  dump = run_trafo(base() + " --config '" + (dir / "a.toml").string() + "' --lr 0.25 --dump-config");
  EXPECT_NE(dump.output.find("lr=0.25"), std::string::npos) << dump.output;
  // The dump reads back unchanged.
  write_text(dir / "dumped.toml", dump.output);
  const auto again = run_trafo("train --config '" + (dir / "dumped.toml").string() + "' --dump-config");
  ASSERT_EQ(again.exit_code, 0) << again.errors;
  EXPECT_EQ(again.output, dump.output);
  // A misspelled key is an error, never silently ignored.
  write_text(dir / "bad.toml", "learning-rate = 0.5\n");
  const auto bad = run_trafo(base() + " --config '" + (dir / "bad.toml").string() + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.errors.find("learning-rate"), std::string::npos) << bad.errors;
}

TEST_F(TrainCli, Bf16AutocastAndAccumulationTrain) {
  const auto result = run_trafo(base() + " --max-steps 2 --precision bf16 --accumulate 2 --valid-every 0");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto events = read_jsonl(run_ / "metrics.jsonl");
  int train = 0;
  for (const auto& e : events) {
    if (e["event"] != "train") continue;
    ++train;
    EXPECT_TRUE(std::isfinite(e["loss"].get<double>()));
    EXPECT_GT(e["loss"].get<double>(), 0.0);
  }
  EXPECT_EQ(train, 2);
}

TEST_F(TrainCli, EarlyStoppingEndsTheRun) {
  // BLEU of an untrained model stays 0: the second validation is no improvement.
  const auto result = run_trafo(base() + " --max-steps 50 --valid-every 1 --early-stopping 1 --lr 1e-9");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto events = read_jsonl(run_ / "metrics.jsonl");
  EXPECT_EQ(events.back()["reason"], "early-stop");
  EXPECT_EQ(events.back()["step"], 2);
}

TEST_F(TrainCli, BadInputIsOneLineAndExitTwo) {
  const std::vector<std::string> cases = {
      base() + " --max-steps -5",
      base() + " --heads 3",
      base() + " --no-such-option 1",
      base() + " --max-steps 1 --max-positions 10000000000",
      "train --data-dir /nonexistent --src-lang en --tgt-lang de --run-dir '" + run_.string() + "'",
      base() + " --max-time soon",
      base() + " --precision fp8",
  };
  for (const auto& arguments : cases) {
    const auto result = run_trafo(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.errors;
    EXPECT_NE(result.errors.find("error"), std::string::npos) << arguments;
    EXPECT_EQ(result.errors.find("Exception raised from"), std::string::npos) << result.errors;
  }
}

TEST_F(TrainCli, DivergenceStopsWithExitOneAndKeepsTheLastCheckpoint) {
  ASSERT_EQ(run_trafo(base() + " --max-steps 2").exit_code, 0);
  const auto result = run_trafo(base() + " --max-steps 40 --lr 1e30 --warmup-steps 0 --clip-norm 0");
  EXPECT_EQ(result.exit_code, 1) << result.errors;
  EXPECT_NE(result.errors.find("diverged"), std::string::npos) << result.errors;
  const auto events = read_jsonl(run_ / "metrics.jsonl");
  EXPECT_EQ(events.back()["reason"], "nan");
  EXPECT_EQ(run_trafo("translate --checkpoint '" + (run_ / "checkpoint-last.pt").string() + "' --threads 1 < /dev/null")
                .exit_code,
            0);
}

TEST_F(TrainCli, SigtermSavesCheckpointAndExitsZero) {
  const auto log = run_.parent_path() / "log.txt";
  const auto metrics = run_ / "metrics.jsonl";
  // Start a long run, wait for its first step, send SIGTERM, report its exit code.
  const std::string script = "'" + std::string(TRAFO_BINARY) + "' " + base() + " --max-steps 100000 --valid-every 0 2>'" +
                             log.string() + "' & pid=$!; i=0; while ! grep -q '\"train\"' '" + metrics.string() +
                             "' 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; kill -TERM $pid; "
                             "wait $pid; echo $?";
  const auto result = run_command(script);
  EXPECT_EQ(result.output, "0\n") << read_text(log);
  EXPECT_TRUE(std::filesystem::exists(run_ / "checkpoint-last.pt"));
  const auto events = read_jsonl(metrics);
  EXPECT_EQ(events.back()["reason"], "signal");
  EXPECT_NE(read_text(log).find("stopped by signal"), std::string::npos) << read_text(log);
}

}  // namespace
}  // namespace trafo::testing
