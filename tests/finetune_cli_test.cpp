// `trafo train --init-from CKPT` through the binary: a new run from a checkpoint's weights, tokenizer and
// model with a fresh optimizer, validated before its first step as `trafo eval` sees the checkpoint.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_support.h"
#include "run_support.h"

namespace trafo::testing {
namespace {

const char* kFinetuneTraining =
    " --batch-tokens 200 --threads 1 --valid-max-sentences 5 --log-every 1 --early-stopping 0 --lr 3e-3"
    " --warmup-steps 10";
const char* kFinetuneModel = " --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64";

class FineTune : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = make_temp_dir("finetune");
    data_ = root_ / "data";
    std::filesystem::create_directories(data_);
    write_synthetic_corpus(data_, "train", 200, 1);
    write_synthetic_corpus(data_, "dev", 20, 2);
    write_synthetic_corpus(data_, "other", 200, 3);
  }
  std::string run(const std::string& name) const {
    return "train --data-dir " + quoted(data_) + " --src-lang en --tgt-lang de --run-dir " + quoted(root_ / name) +
           kFinetuneTraining;
  }
  std::string on_other() const {
    return " --train-src " + quoted(data_ / "other.en") + " --train-tgt " + quoted(data_ / "other.de");
  }
  std::vector<nlohmann::json> valid_events(const std::string& name) const {
    std::vector<nlohmann::json> events;
    for (const auto& event : read_jsonl(root_ / name / "metrics.jsonl")) {
      if (event["event"] == "valid") events.push_back(event);
    }
    return events;
  }
  std::filesystem::path root_, data_;
};

TEST_F(FineTune, StartsFromTheCheckpointAndBeatsTheSameStepsFromScratch) {
  const auto pre = run_trafo(run("pre") + kFinetuneModel + " --max-steps 60 --valid-every 60");
  ASSERT_EQ(pre.exit_code, 0) << pre.errors;
  const auto initial = root_ / "pre" / "checkpoint-last.pt";

  const auto tuned = run_trafo(run("tuned") + on_other() + " --init-from " + quoted(initial) +
                               " --max-steps 10 --valid-every 10");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.errors;
  EXPECT_NE(tuned.errors.find("fine-tuning from " + initial.string()), std::string::npos) << tuned.errors;
  const auto scratch = run_trafo(run("scratch") + kFinetuneModel + on_other() + " --max-steps 10 --valid-every 10");
  ASSERT_EQ(scratch.exit_code, 0) << scratch.errors;

  const auto tuned_valid = valid_events("tuned"), scratch_valid = valid_events("scratch");
  ASSERT_EQ(tuned_valid.size(), 2u);
  EXPECT_EQ(tuned_valid[0]["step"], 0);
  EXPECT_EQ(tuned_valid[1]["step"], 10);
  ASSERT_EQ(scratch_valid.size(), 1u);
  EXPECT_LT(tuned_valid[1]["loss"].get<double>(), scratch_valid[0]["loss"].get<double>());

  // The validation before the first step is a fresh eval of the checkpoint it started from, in the
  // precision that validation used (auto times the model at start and may pick differently here).
  const std::string precision =
      read_jsonl(root_ / "tuned" / "metrics.jsonl").front().value("validation_precision", "fp32");
  const auto fresh = run_trafo("eval -c " + quoted(initial) + " --src " + quoted(data_ / "dev.en") + " --ref " +
                               quoted(data_ / "dev.de") + " --threads 1 --batch-tokens 256 --precision " + precision +
                               " --json");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.errors;
  EXPECT_NEAR(tuned_valid[0]["loss"].get<double>(), nlohmann::json::parse(fresh.output)["loss"].get<double>(), 1e-5);

  // Its config is the checkpoint's model, its tokenizer the checkpoint's, and the start event names it.
  const auto config = read_text(root_ / "tuned" / "config.toml");
  EXPECT_NE(config.find("d-model=32"), std::string::npos) << config;
  for (const auto& event : read_jsonl(root_ / "tuned" / "metrics.jsonl")) {
    if (event["event"] == "start") {
      EXPECT_EQ(event["init_from"], initial.string());
    }
  }

  // Running it again resumes it, saying so; another --init-from over it is refused.
  const auto again = run_trafo(run("tuned") + on_other() + " --init-from " + quoted(initial) + " --max-steps 12");
  EXPECT_EQ(again.exit_code, 0) << again.errors;
  EXPECT_NE(again.errors.find("holds a run started from"), std::string::npos) << again.errors;
  const auto other = run_trafo(run("tuned") + on_other() + " --init-from " +
                               quoted(root_ / "scratch" / "checkpoint-last.pt") + " --max-steps 14");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.errors.find("init-from"), std::string::npos) << other.errors;
}

TEST_F(FineTune, ModelOrTokenizerOptionsThatDifferFromTheCheckpointAreNamed) {
  const auto pre = run_trafo(run("pre") + kFinetuneModel + " --max-steps 2 --valid-every 2");
  ASSERT_EQ(pre.exit_code, 0) << pre.errors;
  const auto initial = quoted(root_ / "pre" / "checkpoint-last.pt");
  const auto conflict = run_trafo(run("c") + " --init-from " + initial + " --d-model 64 --vocab-size 500 --max-steps 2");
  EXPECT_EQ(conflict.exit_code, 2);
  EXPECT_NE(conflict.errors.find("d-model 64 vs 32"), std::string::npos) << conflict.errors;
  EXPECT_NE(conflict.errors.find("vocab-size 500 vs 300"), std::string::npos) << conflict.errors;
  EXPECT_FALSE(std::filesystem::exists(root_ / "c" / "checkpoint-last.pt"));
  // The checkpoint's own values, given again, are no conflict; dropout may change.
  const auto same = run_trafo(run("d") + " --init-from " + initial + " --d-model 32 --dropout 0.3 --max-steps 1");
  EXPECT_EQ(same.exit_code, 0) << same.errors;
  const auto missing = run_trafo(run("e") + " --init-from " + quoted(root_ / "nope.pt") + " --max-steps 1");
  EXPECT_EQ(missing.exit_code, 2);
}

}  // namespace
}  // namespace trafo::testing
