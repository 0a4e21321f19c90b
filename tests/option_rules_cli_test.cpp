// Where options meet a checkpoint, through the binary: an option given is an option taken, whatever its
// value (--init-from, a resume), and one left out takes the checkpoint's or the run's value; a run resumes
// from what it has (its own checkpoints, not the file it was fine-tuned from; past a checkpoint whose
// training state does not unpack); a [[corpus]] table without its files is refused.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data_support.h"
#include "run_support.h"
#include "trafo/checkpoint/checkpoint.h"

namespace trafo::testing {
namespace {

const char* kOptionRulesTraining =
    " --batch-tokens 200 --threads 1 --valid-max-sentences 5 --log-every 1 --early-stopping 0 --lr 3e-3"
    " --warmup-steps 10";
const char* kOptionRulesModel =
    " --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64";

// The line of `text` holding `needle`, or "" when none does.
std::string line_with(const std::string& text, const std::string& needle) {
  for (const auto& line : lines_of(text)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

class OptionRules : public ::testing::Test {
 protected:
  // One tiny bpe model (not the built-in defaults: d-model 256, heads 4, unigram) for every test.
  static void SetUpTestSuite() {
    root_ = new std::filesystem::path(make_temp_dir("option-rules"));
    std::filesystem::create_directories(data());
    write_synthetic_corpus(data(), "train", 200, 1);
    write_synthetic_corpus(data(), "dev", 20, 2);
    const auto pre = run_trafo(run("pre") + kOptionRulesModel + " --vocab-type bpe --max-steps 2 --valid-every 2");
    ASSERT_EQ(pre.exit_code, 0) << pre.errors;
  }
  static void TearDownTestSuite() { delete root_; }

  static std::filesystem::path data() { return *root_ / "data"; }
  static std::filesystem::path initial() { return *root_ / "pre" / "checkpoint-last.pt"; }
  static std::filesystem::path folder(const std::string& name) { return *root_ / name; }
  static std::string run(const std::string& name) {
    return "train --data-dir " + quoted(data()) + " --src-lang en --tgt-lang de --run-dir " + quoted(folder(name)) +
           kOptionRulesTraining;
  }
  // A resume that gives the run folder and the training knobs only: every defining option is left out.
  static std::string resume(const std::string& name) {
    return "train --run-dir " + quoted(folder(name)) + kOptionRulesTraining;
  }
  static double train_loss(const std::string& name, int64_t step) {
    for (const auto& event : read_jsonl(folder(name) / "metrics.jsonl")) {
      if (event["event"] == "train" && event["step"] == step) return event["loss"].get<double>();
    }
    ADD_FAILURE() << name << " has no train event at step " << step;
    return NAN;
  }
  static int64_t last_step(const std::string& name) { return read_jsonl(folder(name) / "metrics.jsonl").back()["step"]; }

  static std::filesystem::path* root_;
};
std::filesystem::path* OptionRules::root_ = nullptr;

TEST_F(OptionRules, InitFromHoldsAnOptionGivenAtItsDefaultValueToTheCheckpoint) {
  const auto config = folder("d-model.toml");
  write_text(config, "d-model = 256\n");
  struct Case {
    std::string options, named;
  };
  const std::vector<Case> cases = {
      {" --d-model 256", "d-model 256 vs 32"},
      {" --heads 4", "heads 4 vs 2"},
      {" --vocab-type unigram", "vocab-type \"unigram\" vs \"bpe\""},
      {" --config " + quoted(config), "d-model 256 vs 32"},
  };
  for (const auto& c : cases) {
    const auto result = run_trafo(run("refused") + " --init-from " + quoted(initial()) + c.options + " --max-steps 1");
    EXPECT_EQ(result.exit_code, 2) << c.options << ": " << result.errors;
    EXPECT_EQ(lines_of(result.errors).size(), 1u) << result.errors;
    EXPECT_NE(result.errors.find(c.named), std::string::npos) << result.errors;
    EXPECT_FALSE(std::filesystem::exists(folder("refused") / "checkpoint-last.pt")) << c.options;
  }
  // Left out, they are the checkpoint's.
  const auto taken = run_trafo(run("taken") + " --init-from " + quoted(initial()) + " --max-steps 1");
  ASSERT_EQ(taken.exit_code, 0) << taken.errors;
  const auto written = read_text(folder("taken") / "config.toml");
  for (const char* line : {"d-model=32", "heads=2", "vocab-type=\"bpe\""}) {
    EXPECT_NE(written.find(line), std::string::npos) << line << " in\n" << written;
  }
}

TEST_F(OptionRules, TheDropoutGivenIsTheDropoutTrainedWith) {
  // A new run from --init-from: the same first step, with and without dropout.
  for (const std::string dropout : {"0", "0.5"}) {
    const auto tuned = run_trafo(run("tuned-" + dropout) + " --init-from " + quoted(initial()) + " --dropout " +
                                 dropout + " --max-steps 1 --valid-every 0");
    ASSERT_EQ(tuned.exit_code, 0) << tuned.errors;
    EXPECT_NE(read_text(folder("tuned-" + dropout) / "config.toml").find("dropout=" + dropout), std::string::npos);
    const auto saved = checkpoint::load(folder("tuned-" + dropout) / "checkpoint-last.pt", false);
    EXPECT_EQ(saved.model_config.dropout, std::stod(dropout));
  }
  EXPECT_GT(std::abs(train_loss("tuned-0", 1) - train_loss("tuned-0.5", 1)), 1e-4)
      << "the checkpoint's dropout was trained with, not the one given";

  // A resume: the same step from copies of one run, with the dropout given, and left out (the run's: 0).
  // fp32 in each: auto times the CPU at start and may pick differently from one run to the next.
  for (const std::string name : {"resumed-0", "resumed-0.5", "resumed"}) {
    std::filesystem::copy(folder("tuned-0"), folder(name), std::filesystem::copy_options::recursive);
    const std::string dropout = name == "resumed" ? "" : " --dropout " + name.substr(8);
    const auto resumed = run_trafo(resume(name) + dropout + " --precision fp32 --max-steps 2 --valid-every 0");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
    EXPECT_NE(resumed.errors.find("resuming from"), std::string::npos) << resumed.errors;
  }
  EXPECT_GT(std::abs(train_loss("resumed-0", 2) - train_loss("resumed-0.5", 2)), 1e-4)
      << "the checkpoint's dropout was trained with, not the one given";
  EXPECT_EQ(train_loss("resumed", 2), train_loss("resumed-0", 2));
}

// --attention-dropout and --activation-dropout are knobs as --dropout is: the ones given are taken at
// --init-from and at a resume, where one left out is the run's.
TEST_F(OptionRules, AttentionAndActivationDropoutAndLayerDropAreKnobsAsDropoutIs) {
  const auto tuned = run_trafo(run("knobs") + " --init-from " + quoted(initial()) +
                               " --attention-dropout 0.3 --activation-dropout 0.2 --encoder-layerdrop 0.25"
                               " --decoder-layerdrop 0.15 --max-steps 1 --valid-every 0");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.errors;
  const auto written = read_text(folder("knobs") / "config.toml");
  EXPECT_NE(written.find("attention-dropout=0.3"), std::string::npos) << written;
  EXPECT_NE(written.find("encoder-layerdrop=0.25"), std::string::npos) << written;
  auto saved = checkpoint::load(folder("knobs") / "checkpoint-last.pt", false);
  EXPECT_EQ(saved.model_config.attention_dropout, 0.3);
  EXPECT_EQ(saved.model_config.activation_dropout, 0.2);
  EXPECT_EQ(saved.model_config.encoder_layerdrop, 0.25);
  EXPECT_EQ(saved.model_config.decoder_layerdrop, 0.15);
  const auto resumed = run_trafo(resume("knobs") +
                                 " --attention-dropout 0.1 --decoder-layerdrop 0.05 --max-steps 2 --valid-every 0");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming from"), std::string::npos) << resumed.errors;
  saved = checkpoint::load(folder("knobs") / "checkpoint-last.pt", false);
  EXPECT_EQ(saved.model_config.attention_dropout, 0.1);
  EXPECT_EQ(saved.model_config.activation_dropout, 0.2);
  EXPECT_EQ(saved.model_config.encoder_layerdrop, 0.25);
  EXPECT_EQ(saved.model_config.decoder_layerdrop, 0.05);
}

TEST_F(OptionRules, AResumeTakesTheRunsValuesOfTheDefiningOptionsLeftOut) {
  ASSERT_EQ(run_trafo(run("r") + kOptionRulesModel + " --vocab-type bpe --max-length 100 --max-steps 2").exit_code, 0);
  // No data, model or vocabulary option: the run's, from its config.toml.
  const auto resumed = run_trafo(resume("r") + " --max-steps 3");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming from"), std::string::npos) << resumed.errors;
  EXPECT_EQ(last_step("r"), 3);
  // Given, even at the built-in default, they are held to the run's.
  struct Case {
    std::string options, named;
  };
  const std::vector<Case> cases = {
      {" --d-model 256", "d-model 32 vs 256"},
      {" --vocab-type unigram", "vocab-type \"bpe\" vs \"unigram\""},
      {" --max-length 250", "max-length 100 vs 250"},
      {" --src-lang de --tgt-lang en", "src-lang \"en\" vs \"de\""},
  };
  for (const auto& c : cases) {
    const auto refused = run_trafo(resume("r") + c.options + " --max-steps 4");
    EXPECT_EQ(refused.exit_code, 2) << c.options << ": " << refused.errors;
    EXPECT_EQ(lines_of(refused.errors).size(), 1u) << refused.errors;
    EXPECT_NE(refused.errors.find(c.named), std::string::npos) << refused.errors;
  }
  EXPECT_EQ(last_step("r"), 3);
}

TEST_F(OptionRules, AFineTunedRunResumesWithoutTheFileItStartedFrom) {
  const auto init = folder("init.pt");
  std::filesystem::copy_file(initial(), init);
  ASSERT_EQ(run_trafo(run("ft") + " --init-from " + quoted(init) + " --max-steps 2 --valid-every 2").exit_code, 0);
  std::filesystem::remove(init);
  // The same command again, then without --init-from: its own checkpoints are all a resume needs.
  auto resumed = run_trafo(run("ft") + " --init-from " + quoted(init) + " --max-steps 3");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("holds a run started from " + init.string()), std::string::npos) << resumed.errors;
  EXPECT_EQ(last_step("ft"), 3);
  resumed = run_trafo(run("ft") + " --max-steps 4");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming from"), std::string::npos) << resumed.errors;
  EXPECT_EQ(last_step("ft"), 4);
  // A new run from the missing file is refused, naming it.
  const auto missing = run_trafo(run("ft-new") + " --init-from " + quoted(init) + " --max-steps 1");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.errors.find(init.string()), std::string::npos) << missing.errors;
}

TEST_F(OptionRules, InitFromIntoAFolderThatHoldsAnotherRunIsOneClearLine) {
  ASSERT_EQ(run_trafo(run("plain") + kOptionRulesModel + " --max-steps 2").exit_code, 0);
  const auto result = run_trafo(run("plain") + " --init-from " + quoted(initial()) + " --max-steps 3");
  EXPECT_EQ(result.exit_code, 2) << result.errors;
  EXPECT_EQ(lines_of(result.errors).size(), 1u) << result.errors;
  EXPECT_NE(result.errors.find("init-from \"\" vs \"" + initial().string() + "\""), std::string::npos)
      << result.errors;
  EXPECT_EQ(result.errors.find("filesystem error"), std::string::npos) << result.errors;
  EXPECT_EQ(last_step("plain"), 2);
}

// A checkpoint whose checksum is right but whose optimizer state does not fit the model.
void break_training_state(const std::filesystem::path& path) {
  auto saved = checkpoint::load(path);
  ASSERT_TRUE(saved.training);
  for (auto& [name, tensor] : saved.training->tensors) {
    if (name.rfind("optimizer/exp_avg/", 0) == 0) {
      tensor = torch::zeros({3});
      checkpoint::save(path, saved);
      return;
    }
  }
  FAIL() << path << " holds no optimizer moments";
}

TEST_F(OptionRules, AnUnreadableTrainingStateIsPassedOverForTheNextCheckpoint) {
  ASSERT_EQ(run_trafo(run("s") + kOptionRulesModel +
                      " --max-steps 4 --checkpoint-every 2 --keep-checkpoints 5 --valid-every 0")
                .exit_code,
            0);
  std::filesystem::remove(folder("s") / "checkpoint-best.pt");
  const auto last = folder("s") / "checkpoint-last.pt";
  break_training_state(last);  // now the newest
  const auto resumed = run_trafo(resume("s") + " --max-steps 6 --checkpoint-every 2 --keep-checkpoints 5");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  const auto warning = line_with(resumed.errors, "cannot resume from " + last.string());
  EXPECT_NE(warning.find("training state is unreadable"), std::string::npos) << resumed.errors;
  EXPECT_NE(warning.find("does not fit"), std::string::npos) << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming from " + (folder("s") / "checkpoint-4.pt").string()), std::string::npos)
      << resumed.errors;
  EXPECT_EQ(last_step("s"), 6);

  // A training state whose record is damaged (no step) sorts last: passed over, and named.
  ASSERT_EQ(run_trafo(run("d") + kOptionRulesModel +
                      " --max-steps 4 --checkpoint-every 2 --keep-checkpoints 5 --valid-every 0")
                .exit_code,
            0);
  std::filesystem::remove(folder("d") / "checkpoint-best.pt");
  const auto damaged = folder("d") / "checkpoint-last.pt";
  {
    auto saved = checkpoint::load(damaged);
    ASSERT_TRUE(saved.training);
    saved.training->json = "{\"damaged\": true}";
    checkpoint::save(damaged, saved);
  }
  const auto passed = run_trafo(resume("d") + " --max-steps 6 --checkpoint-every 2 --keep-checkpoints 5");
  ASSERT_EQ(passed.exit_code, 0) << passed.errors;
  EXPECT_NE(line_with(passed.errors, "cannot resume from " + damaged.string()).find("records no step"),
            std::string::npos)
      << passed.errors;
  EXPECT_NE(passed.errors.find("resuming from " + (folder("d") / "checkpoint-4.pt").string()), std::string::npos)
      << passed.errors;

  // With no other checkpoint: refused, the error naming the file and the cause, the file left as it was.
  ASSERT_EQ(run_trafo(run("t") + kOptionRulesModel + " --max-steps 2 --valid-every 0").exit_code, 0);
  for (const auto& entry : std::filesystem::directory_iterator(folder("t"))) {
    if (entry.path().extension() == ".pt" && entry.path().filename() != "checkpoint-last.pt") {
      std::filesystem::remove(entry.path());
    }
  }
  const auto only = folder("t") / "checkpoint-last.pt";
  break_training_state(only);
  const auto bytes = read_text(only);
  const auto refused = run_trafo(resume("t") + " --max-steps 4");
  EXPECT_EQ(refused.exit_code, 2) << refused.errors;
  const auto error = line_with(refused.errors, "trafo: error:");
  EXPECT_NE(error.find(only.string() + ": its training state is unreadable"), std::string::npos) << refused.errors;
  EXPECT_EQ(read_text(only), bytes);
}

TEST_F(OptionRules, ACorpusTableWithoutItsFilesIsRefusedWithItsLine) {
  const std::string full = "[[corpus]]\nsrc = \"" + (data() / "train.en").string() + "\"\ntgt = \"" +
                           (data() / "train.de").string() + "\"\n";
  struct Case {
    std::string text;
    int line;  // of the table at fault
  };
  const std::vector<Case> cases = {
      {"max-steps = 1\n" + full + "\n[[corpus]]\n", 6},                          // the last, empty
      {"max-steps = 1\n" + full + "[[corpus]]\n# none\n", 5},                    // the last, a comment only
      {"max-steps = 1\n" + full + "[[corpus]]\nsrc = \"x.en\"\nweight = 2\n", 5},  // without tgt
      {"[[corpus]]\n" + full, 1},                                                // the first, empty
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto config = folder("corpora-" + std::to_string(i) + ".toml");
    write_text(config, cases[i].text);
    const auto result = run_trafo("train --config " + quoted(config) + " --dev-src " + quoted(data() / "dev.en") +
                                  " --dev-tgt " + quoted(data() / "dev.de") + " --run-dir " +
                                  quoted(folder("corpora")) + kOptionRulesModel + kOptionRulesTraining);
    EXPECT_EQ(result.exit_code, 2) << cases[i].text << result.errors;
    EXPECT_EQ(lines_of(result.errors).size(), 1u) << result.errors;
    EXPECT_NE(result.errors.find(config.string() + ":" + std::to_string(cases[i].line) + ": [[corpus]]"),
              std::string::npos)
        << cases[i].text << result.errors;
    EXPECT_NE(result.errors.find("needs src and tgt"), std::string::npos) << result.errors;
    EXPECT_FALSE(std::filesystem::exists(folder("corpora") / "checkpoint-last.pt"));
  }
}

}  // namespace
}  // namespace trafo::testing
