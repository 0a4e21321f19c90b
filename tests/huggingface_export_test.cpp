// `trafo export --format huggingface`, checked with the real transformers (PyPI, in .venv, which
// scripts/setup.sh installs): toy models of each activation, tied and untied, trained here and
// exported, load with AutoTokenizer and AutoModelForSeq2SeqLM, generate trafo's translation of every
// line greedily, and give each translation trafo's score-pairs log p (tests/huggingface_check.py).
// An architecture MarianMT cannot express is refused in one line that says what to train with.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "run_support.h"
#include "test_support.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

class HuggingFaceExport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(make_temp_dir("huggingface"));
    ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(*dir_ / "toy") + " --train 2000 --dev 40 --test 10").exit_code, 0);
  }
  static void TearDownTestSuite() { delete dir_; }

  // A toy model of `options` (2 encoder layers, 1 decoder layer), trained `steps` in `name`; its checkpoint.
  static fs::path train(const std::string& name, const std::string& options, int steps = 150) {
    const auto trained = run_trafo("train --data-dir " + quoted(*dir_ / "toy") + " --src-lang en --tgt-lang de --run-dir " +
                                   quoted(*dir_ / name) +
                                   " --d-model 32 --heads 2 --encoder-layers 2 --decoder-layers 1 --d-ff 64"
                                   " --vocab-size 400 --threads 1 --early-stopping 0 --lr 3e-3 --warmup-steps 30 --max-steps " +
                                   std::to_string(steps) + " --valid-every " + std::to_string(steps) + " " + options);
    EXPECT_EQ(trained.exit_code, 0) << trained.errors;
    return *dir_ / name / "checkpoint-last.pt";
  }

  static fs::path* dir_;
};
fs::path* HuggingFaceExport::dir_ = nullptr;

TEST_F(HuggingFaceExport, TransformersLoadsTheFolderAndTranslatesAsTrafo) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  const std::vector<std::pair<std::string, std::string>> models = {
      {"swish", "--activation swish"},
      {"relu-untied", "--activation relu --tie-embeddings false"},
      {"gelu", "--activation gelu"},
  };
  const auto sources = *dir_ / "toy" / "dev.en";
  for (const auto& [name, options] : models) {
    SCOPED_TRACE(name);
    const auto checkpoint = train(name, options + " --norm post --positions sinusoidal-halves");
    const auto folder = *dir_ / (name + "-hf");
    const auto exported =
        run_trafo("export --format huggingface --checkpoint " + quoted(checkpoint) + " --out " + quoted(folder));
    ASSERT_EQ(exported.exit_code, 0) << exported.errors;
    const std::string fp32 = " --threads 1 --precision fp32";
    const auto translations = *dir_ / (name + ".de"), scores = *dir_ / (name + ".scores");
    const auto translated = run_trafo("translate --checkpoint " + quoted(checkpoint) + " --input " + quoted(sources) +
                                      " --output " + quoted(translations) + fp32);
    ASSERT_EQ(translated.exit_code, 0) << translated.errors;
    const auto scored = run_trafo("score-pairs --checkpoint " + quoted(checkpoint) + " --src " + quoted(sources) +
                                  " --tgt " + quoted(translations) + fp32 + " > " + quoted(scores));
    ASSERT_EQ(scored.exit_code, 0) << scored.errors;
    const auto checked = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                     "/tests/huggingface_check.py' " + quoted(folder) + " " + quoted(sources) + " " +
                                     quoted(translations) + " " + quoted(scores));
    EXPECT_EQ(checked.exit_code, 0) << checked.output << checked.errors;
    EXPECT_NE(checked.output.find("ok"), std::string::npos) << checked.output;
  }
}

TEST_F(HuggingFaceExport, AnArchitectureMarianCannotExpressIsRefusedInOneLine) {
  const std::vector<std::pair<std::string, std::string>> models = {
      {"pre-norm", "--norm pre --positions sinusoidal-halves"},
      {"interleaved", "--norm post --positions sinusoidal"},
  };
  for (const auto& [name, options] : models) {
    const auto checkpoint = train(name, options, /*steps=*/1);
    const auto folder = *dir_ / (name + "-hf");
    const auto refused =
        run_trafo("export --format huggingface --checkpoint " + quoted(checkpoint) + " --out " + quoted(folder));
    EXPECT_EQ(refused.exit_code, 2) << name;
    EXPECT_EQ(lines_of(refused.errors).size(), 1u) << refused.errors;
    EXPECT_NE(refused.errors.find("train with --norm post --positions sinusoidal-halves"), std::string::npos)
        << refused.errors;
    EXPECT_FALSE(fs::exists(folder)) << name;
  }
}

}  // namespace
}  // namespace trafo::testing
