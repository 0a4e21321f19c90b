// A run never changes silently, end to end through the binary: a resume that asks for another
// model, tokenizer or data is refused and writes nothing; another run's checkpoint in the folder is
// passed over; every command refuses a checkpoint whose weights disagree with its own config; and
// errors keep their reason.
#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/model/transformer.h"

namespace trafo::testing {
namespace {

const char* kIdentityModel =
    " --heads 2 --encoder-layers 1 --decoder-layers 1 --threads 1 --valid-max-sentences 4 --log-every 1 "
    "--early-stopping 0";

// Every file of a folder with its bytes: what "nothing written" is checked against.
std::map<std::string, std::string> snapshot(const std::filesystem::path& folder) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.is_regular_file() && entry.path().filename() != ".lock") {
      files[entry.path().filename().string()] = read_text(entry.path());
    }
  }
  return files;
}

class RunIdentity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new std::filesystem::path(make_temp_dir("identity-data"));
    write_synthetic_corpus(*data_, "train", 80, 1);
    write_synthetic_corpus(*data_, "dev", 8, 2);
  }
  static void TearDownTestSuite() { delete data_; }
  void SetUp() override { run_ = make_temp_dir("identity-run") / "run"; }

  // A tiny run in `run` with `extra` options, and the options of kDefaults that `extra` does not give.
  std::string train(const std::string& extra, const std::filesystem::path& run) const {
    std::string defaults;
    for (const auto& [name, value] : kDefaults) {
      if (extra.find(std::string(name) + " ") == std::string::npos) defaults += std::string(" ") + name + " " + value;
    }
    return "train --data-dir " + quoted(*data_) + " --run-dir " + quoted(run) + kIdentityModel + defaults + " " + extra;
  }
  static constexpr std::pair<const char*, const char*> kDefaults[] = {
      {"--src-lang", "en"}, {"--tgt-lang", "de"}, {"--d-model", "32"}, {"--d-ff", "64"},
      {"--vocab-size", "300"}, {"--batch-tokens", "200"}};
  static std::filesystem::path* data_;
  std::filesystem::path run_;
};
std::filesystem::path* RunIdentity::data_ = nullptr;

TEST_F(RunIdentity, AResumeThatAsksForAnotherModelTokenizerOrDataIsRefusedAndWritesNothing) {
  ASSERT_EQ(run_trafo(train("--max-steps 2 --valid-every 2", run_)).exit_code, 0);
  const auto before = snapshot(run_);
  struct Case {
    std::string options;
    std::vector<std::string> named;
  };
  const std::vector<Case> cases = {
      {"--vocab-size 500", {"vocab-size 300 vs 500"}},
      {"--vocab-type bpe", {"vocab-type \"unigram\" vs \"bpe\""}},
      {"--src-lang de --tgt-lang en", {"src-lang \"en\" vs \"de\"", "tgt-lang \"de\" vs \"en\"", "train-src"}},
      {"--d-model 64", {"d-model 32 vs 64"}},
      {"--max-length 20 --vocab-character-coverage 0.99", {"max-length 250 vs 20", "vocab-character-coverage 0.9995 vs 0.99"}},
      {"--train-src " + quoted(*data_ / "dev.en") + " --train-tgt " + quoted(*data_ / "dev.de"), {"train-src", "train-tgt"}},
  };
  for (const auto& c : cases) {
    const auto result = run_trafo(train("--max-steps 4 " + c.options, run_));
    EXPECT_EQ(result.exit_code, 2) << c.options;
    EXPECT_EQ(lines_of(result.errors).size(), 1u) << result.errors;
    for (const auto& name : c.named) EXPECT_NE(result.errors.find(name), std::string::npos) << result.errors;
    EXPECT_EQ(snapshot(run_), before) << c.options;
  }
  // The same data by another name, and the options a resume may change.
  const auto same = run_trafo("train --train-src " + quoted(*data_ / "." / "train.en") + " --train-tgt " +
                              quoted(*data_ / "train.de") + " --dev-src " + quoted(*data_ / "dev.en") + " --dev-tgt " +
                              quoted(*data_ / "dev.de") + " --run-dir " + quoted(run_) + kIdentityModel +
                              " --d-model 32 --d-ff 64 --vocab-size 300 --max-steps 4 --valid-every 4 --lr 5e-4"
                              " --dropout 0.2 --batch-tokens 150 --src-lang en --tgt-lang de");
  ASSERT_EQ(same.exit_code, 0) << same.errors;
  EXPECT_NE(same.errors.find("resuming from"), std::string::npos) << same.errors;
  EXPECT_EQ(read_jsonl(run_ / "metrics.jsonl").back()["step"], 4);
}

TEST_F(RunIdentity, AnotherRunsCheckpointInTheFolderIsPassedOver) {
  ASSERT_EQ(run_trafo(train("--max-steps 2 --valid-every 2", run_)).exit_code, 0);
  const auto other = run_.parent_path() / "other";
  ASSERT_EQ(run_trafo(train("--max-steps 6 --valid-every 6 --d-ff 48 --vocab-size 320", other)).exit_code, 0);
  std::filesystem::copy_file(other / "checkpoint-last.pt", run_ / "checkpoint-999.pt");  // the most steps
  for (const bool with_config : {true, false}) {
    if (!with_config) std::filesystem::remove(run_ / "config.toml");  // then held to the options given
    const auto resumed = run_trafo(train("--max-steps 4 --valid-every 100", run_));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
    EXPECT_NE(resumed.errors.find("cannot resume from " + (run_ / "checkpoint-999.pt").string() +
                                  ": it belongs to another run: its model differs"),
              std::string::npos)
        << resumed.errors;
    EXPECT_NE(resumed.errors.find("d_ff 48 vs 64"), std::string::npos) << resumed.errors;
    EXPECT_NE(resumed.errors.find("resuming from"), std::string::npos) << resumed.errors;
    const auto saved = checkpoint::load(run_ / "checkpoint-last.pt");
    EXPECT_EQ(saved.model_config.d_ff, 64);
    EXPECT_EQ(nlohmann::json::parse(saved.training->json)["step"], 4);
    std::filesystem::copy_file(other / "checkpoint-last.pt", run_ / "checkpoint-999.pt",
                               std::filesystem::copy_options::overwrite_existing);
  }
}

// Modification times do not survive a copy of the folder (cp -r, a restore): a run resumes from the
// checkpoint with the most steps done, here not the file written last.
TEST_F(RunIdentity, AFolderResumesFromItsMostStepsWhateverItsFilesTimes) {
  const auto first = run_trafo(train("--max-steps 3 --valid-every 100 --checkpoint-every 1", run_));
  ASSERT_EQ(first.exit_code, 0) << first.errors;
  ASSERT_TRUE(std::filesystem::exists(run_ / "checkpoint-1.pt"));
  std::filesystem::last_write_time(run_ / "checkpoint-1.pt",
                                   std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  const auto resumed = run_trafo(train("--max-steps 4 --valid-every 100", run_));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  std::vector<int64_t> trained, started;
  for (const auto& event : read_jsonl(run_ / "metrics.jsonl")) {
    if (event["event"] == "train") trained.push_back(event["step"]);
    if (event["event"] == "start") started.push_back(event["step"]);
  }
  EXPECT_EQ(started, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(trained, (std::vector<int64_t>{1, 2, 3, 4})) << "no step is trained twice";
}

// A file another tool wrote, or an average of one: a valid checksum, weights unlike its config.
TEST_F(RunIdentity, EveryCommandRefusesWeightsThatDisagreeWithTheirConfig) {
  ASSERT_EQ(run_trafo(train("--max-steps 1 --valid-every 1", run_)).exit_code, 0);
  const auto good = checkpoint::load(run_ / "checkpoint-last.pt", /*with_training_state=*/false);
  const std::string weight = "decoder_layers.0.feed_forward.linear1.weight";
  struct Case {
    std::string name, expected;
    std::function<void(checkpoint::Checkpoint&)> damage;
  };
  const std::vector<Case> cases = {
      {"shape.pt", "weight " + weight + " has shape [32, 32], its model config expects [64, 32]",
       [&](checkpoint::Checkpoint& c) { c.weights[weight] = torch::zeros({32, 32}); }},
      {"missing.pt", "lacks weight " + weight + " (shape [64, 32]",
       [&](checkpoint::Checkpoint& c) { c.weights.erase(weight); }},
      {"extra.pt", "holds weight extra.weight [3] that its model config does not have",
       [&](checkpoint::Checkpoint& c) { c.weights["extra.weight"] = torch::zeros({3}); }},
      {"vocabulary.pt", "its model config expects [" + std::to_string(good.model_config.vocab_size) + ", 32]",
       [&](checkpoint::Checkpoint& c) {
         c.weights["source_embedding.embedding.weight"] = torch::zeros({good.model_config.vocab_size + 23, 32});
       }},
      {"dtype.pt", "weight " + weight + " is Double, not float32",
       [&](checkpoint::Checkpoint& c) { c.weights[weight] = c.weights[weight].to(torch::kDouble); }},
  };
  const auto dir = run_.parent_path();
  write_text(dir / "src.txt", "the cat\n");
  for (const auto& c : cases) {
    auto damaged = good;
    c.damage(damaged);
    checkpoint::save(dir / c.name, damaged);
    const auto path = quoted(dir / c.name);
    for (const std::string& command :
         {"export --checkpoint " + path + " --out " + quoted(dir / (c.name + ".ct2")),
          "average --out " + quoted(dir / (c.name + ".avg")) + " " + path + " " + path,
          "translate --checkpoint " + path + " --input " + quoted(dir / "src.txt"),
          "eval --checkpoint " + path + " --src " + quoted(dir / "src.txt") + " --ref " + quoted(dir / "src.txt"),
          "attention --checkpoint " + path + " --src 'the cat' --json"}) {
      const auto result = run_trafo(command);
      EXPECT_EQ(result.exit_code, 2) << command;
      EXPECT_EQ(lines_of(result.errors).size(), 1u) << command << ": " << result.errors;
      EXPECT_NE(result.errors.find(c.expected), std::string::npos) << command << ": " << result.errors;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / (c.name + ".avg")));
    EXPECT_FALSE(std::filesystem::exists(dir / (c.name + ".ct2")));
  }
}

// The weights a config implies, as the model really holds them, for each kind of model.
TEST(WeightShapes, MatchTheModelsParametersAndBuffers) {
  for (const auto& [tied, bias] : std::vector<std::pair<bool, bool>>{{true, false}, {false, false}, {true, true}}) {
    for (const std::string norm : {"pre", "post"}) {
      auto config = tiny_model_config(40);
      config.decoder_layers = 3;
      config.norm = norm;
      config.tie_embeddings = tied;
      config.output_bias = bias;
      model::Transformer model(config);
      std::map<std::string, std::vector<int64_t>> actual;
      for (const auto& p : model->named_parameters()) actual[p.key()] = p.value().sizes().vec();
      for (const auto& b : model->named_buffers()) actual[b.key()] = b.value().sizes().vec();
      EXPECT_EQ(model::weight_shapes(config), actual) << "tied " << tied << ", bias " << bias << ", norm " << norm;
    }
  }
}

TEST_F(RunIdentity, ErrorsKeepTheirReason) {
  // Lines that end in CR alone: one line per file, which SentencePiece cannot learn from.
  const auto dir = run_.parent_path();
  std::string text;
  for (int i = 0; i < 50; ++i) text += "the small cat sees the big dog number " + std::to_string(i) + "\r";
  for (const char* name : {"cr.en", "cr.de"}) write_text(dir / name, text);
  const auto cr = run_trafo("train --train-src " + quoted(dir / "cr.en") + " --train-tgt " + quoted(dir / "cr.de") +
                            " --dev-src " + quoted(dir / "cr.en") + " --dev-tgt " + quoted(dir / "cr.de") +
                            " --run-dir " + quoted(run_) + kIdentityModel + " --d-model 32 --vocab-size 300");
  EXPECT_EQ(cr.exit_code, 2);
  EXPECT_NE(cr.errors.find("carriage return (CR) alone"), std::string::npos) << cr.errors;
  EXPECT_NE(cr.errors.find("convert them to line feeds"), std::string::npos) << cr.errors;

  // Lines too long to learn a vocabulary from (over 1 MiB, SentencePiece's limit as trafo sets it):
  // its reason, in words, with what to do.
  std::string longer;
  for (int i = 0; i < 180000; ++i) longer += "river ";
  for (const char* name : {"long.en", "long.de"}) write_text(dir / name, longer + "\n" + longer + "\n");
  const auto long_lines =
      run_trafo("train --train-src " + quoted(dir / "long.en") + " --train-tgt " + quoted(dir / "long.de") +
                " --dev-src " + quoted(dir / "long.en") + " --dev-tgt " + quoted(dir / "long.de") + " --run-dir " +
                quoted(run_) + kIdentityModel + " --d-model 32 --vocab-size 300");
  EXPECT_EQ(long_lines.exit_code, 2);
  EXPECT_NE(long_lines.errors.find("no line to learn from"), std::string::npos) << long_lines.errors;
  EXPECT_NE(long_lines.errors.find("over 1 MiB"), std::string::npos) << long_lines.errors;

  // A text option that is not UTF-8 cannot go into config.toml or a checkpoint's metadata.
  const auto bytes = run_trafo("train --data-dir $(printf '\\377') --run-dir " + quoted(run_));
  EXPECT_EQ(bytes.exit_code, 2);
  EXPECT_NE(bytes.errors.find("--data-dir is not valid UTF-8"), std::string::npos) << bytes.errors;

  // An option's own value is the problem, not the path after it.
  ASSERT_EQ(run_trafo(train("--max-steps 1 --valid-every 1 --no-resume --overwrite", run_)).exit_code, 0);
  for (const std::string last : {"0", "-2"}) {
    const auto average = run_trafo("average --last " + last + " " + quoted(run_) + " --out " + quoted(dir / "avg.pt"));
    EXPECT_EQ(average.exit_code, 2);
    EXPECT_NE(average.errors.find("--last must be 1 or more, not " + last), std::string::npos) << average.errors;
  }
}

}  // namespace
}  // namespace trafo::testing
