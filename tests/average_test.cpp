// `trafo average` and checkpoint::average: the mean of checkpoints' weights as a checkpoint for
// translation; copies of one checkpoint average to it exactly; other models are refused in one line.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/average.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/tokenizer.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

class Average : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(make_temp_dir("average"));
    write_synthetic_corpus(*dir_, "train", 200);
    data::TokenizerOptions options;
    options.vocab_size = 300;
    tokenizer_ = new std::string(data::Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, options).to_bytes());
    vocab_ = data::Tokenizer::from_bytes(*tokenizer_).vocab_size();
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete tokenizer_;
  }

  // A random model of `config` saved as NAME.pt (with a training state, as trafo train writes).
  static fs::path save_model(const std::string& name, int seed, model::ModelConfig config) {
    torch::manual_seed(seed);
    model::Transformer model(config);
    checkpoint::TrainingState training{{{"adam.step", torch::ones({1})}}, "{\"step\": 7}"};
    const auto path = *dir_ / (name + ".pt");
    checkpoint::save(path, checkpoint::Checkpoint{config, checkpoint::model_weights(model), *tokenizer_,
                                                  "seed = " + std::to_string(seed) + "\n", training, {}});
    return path;
  }
  static fs::path save_model(const std::string& name, int seed) { return save_model(name, seed, config()); }
  static model::ModelConfig config() { return tiny_model_config(vocab_); }

  static fs::path* dir_;
  static std::string* tokenizer_;
  static int64_t vocab_;
};
fs::path* Average::dir_ = nullptr;
std::string* Average::tokenizer_ = nullptr;
int64_t Average::vocab_ = 0;

TEST_F(Average, CopiesOfOneCheckpointGiveItBackExactly) {
  const auto a = save_model("a", 1);
  const auto averaged = checkpoint::average({a, a, a});
  const auto original = checkpoint::load(a);
  ASSERT_EQ(averaged.weights.size(), original.weights.size());
  for (const auto& [name, weight] : original.weights) {
    EXPECT_TRUE(torch::equal(averaged.weights.at(name), weight)) << name;
  }
  EXPECT_FALSE(averaged.training.has_value());  // a checkpoint for translation
  EXPECT_EQ(averaged.tokenizer, original.tokenizer);
  EXPECT_EQ(averaged.config, original.config);
}

TEST_F(Average, TwoCheckpointsGiveTheirMeanThroughTheCli) {
  const auto a = save_model("mean-a", 2), b = save_model("mean-b", 3);
  const auto out = *dir_ / "mean.pt";
  const auto result = run_trafo("average --out " + quoted(out) + " " + quoted(a) + " " + quoted(b));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto averaged = checkpoint::load(out);
  const auto first = checkpoint::load(a), second = checkpoint::load(b);
  const std::string name = "decoder_layers.0.feed_forward.linear1.weight";
  const auto expected = (first.weights.at(name) + second.weights.at(name)) / 2;
  EXPECT_TRUE(torch::allclose(averaged.weights.at(name), expected, 0, 1e-7));
  EXPECT_FALSE(torch::equal(averaged.weights.at(name), first.weights.at(name)));
  // It translates like any checkpoint.
  write_text(*dir_ / "in.txt", "the cat sees a dog\n");
  const auto translated = run_trafo("translate --threads 1 --max-length-b 3 --checkpoint " + quoted(out) + " --input " +
                                    quoted(*dir_ / "in.txt"));
  EXPECT_EQ(translated.exit_code, 0) << translated.errors;
}

TEST_F(Average, LastNumberedCheckpointsOfARunFolder) {
  const auto run = *dir_ / "run";
  fs::create_directories(run);
  for (const int step : {5, 10, 15, 20}) fs::copy_file(save_model("step" + std::to_string(step), step), run / ("checkpoint-" + std::to_string(step) + ".pt"));
  fs::copy_file(save_model("other", 99), run / "checkpoint-last.pt");
  const auto last = checkpoint::last_numbered(run, 2);
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0].filename(), "checkpoint-15.pt");
  EXPECT_EQ(last[1].filename(), "checkpoint-20.pt");

  const auto out = *dir_ / "last2.pt";
  const auto result = run_trafo("average --out " + quoted(out) + " --last 2 " + quoted(run));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto expected = checkpoint::average(last);
  for (const auto& [name, weight] : expected.weights) EXPECT_TRUE(torch::equal(checkpoint::load(out).weights.at(name), weight)) << name;

  const auto too_many = run_trafo("average --out " + quoted(*dir_ / "x.pt") + " --last 5 " + quoted(run));
  EXPECT_EQ(too_many.exit_code, 2);
  EXPECT_NE(too_many.errors.find("fewer than the 5"), std::string::npos) << too_many.errors;
}

TEST_F(Average, RefusesOtherModelsAndKeepsFilesInOneLine) {
  const auto a = save_model("ref-a", 4);
  auto wider = config();
  wider.d_ff = 48;
  const auto b = save_model("ref-wider", 5, wider);
  const auto mismatch = run_trafo("average --out " + quoted(*dir_ / "m.pt") + " " + quoted(a) + " " + quoted(b));
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_NE(mismatch.errors.find("d_ff"), std::string::npos) << mismatch.errors;
  EXPECT_EQ(std::count(mismatch.errors.begin(), mismatch.errors.end(), '\n'), 1) << mismatch.errors;
  EXPECT_FALSE(fs::exists(*dir_ / "m.pt"));

  // --out one of the inputs, or an existing file without --force: refused, the file unchanged.
  const auto before = read_text(a);
  const auto onto_input = run_trafo("average --out " + quoted(a) + " " + quoted(a) + " " + quoted(save_model("ref-c", 6)));
  EXPECT_EQ(onto_input.exit_code, 2) << onto_input.errors;
  const auto existing = *dir_ / "existing.pt";
  write_text(existing, "keep me");
  const auto exists = run_trafo("average --out " + quoted(existing) + " " + quoted(a) + " " + quoted(a));
  EXPECT_EQ(exists.exit_code, 2) << exists.errors;
  EXPECT_EQ(read_text(existing), "keep me");
  EXPECT_EQ(read_text(a), before);
  const auto forced = run_trafo("average --force --out " + quoted(existing) + " " + quoted(a) + " " + quoted(a));
  EXPECT_EQ(forced.exit_code, 0) << forced.errors;
}

}  // namespace
}  // namespace trafo::testing
