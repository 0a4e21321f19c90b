// The checkpoint file (format 3, safetensors): other tools read it, every fault in it is refused
// before anything is made of it, it holds nothing but its tensors and a small header, and the
// checkpoints trafo wrote before (format 2, tests/fixtures/checkpoints) still load, translate exactly
// as they did and resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/checkpoint/safetensors.h"
#include "trafo/errors.h"
#include "trafo/model/config.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/training_state.h"

namespace trafo::testing {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(TRAFO_SOURCE_DIR) / "tests" / "fixtures" / "checkpoints";

// A trained run's checkpoint, with its training state: made once for the file.
class CheckpointFile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("checkpoint-file"));
    const auto made = run_trafo("toy-corpus --out " + quoted(*dir_ / "toy") + " --train 300 --dev 5 --test 5");
    ASSERT_EQ(made.exit_code, 0) << made.errors;
    const auto trained = run_trafo("train --data-dir " + quoted(*dir_ / "toy") + " --run-dir " + quoted(*dir_ / "run") +
                                   " --d-model 16 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 32"
                                   " --vocab-size 400 --max-positions 64 --threads 1 --max-steps 2 --valid-every 2"
                                   " --valid-max-sentences 2 --ema 0.9");
    ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::filesystem::path last() { return *dir_ / "run" / "checkpoint-last.pt"; }
  static std::filesystem::path* dir_;
};
std::filesystem::path* CheckpointFile::dir_ = nullptr;

TEST_F(CheckpointFile, PyPIsSafetensorsReadsEveryWeightByNameAndShape) {
  TRAFO_REQUIRE_PYTHON_MODULE("safetensors");
  const auto saved = checkpoint::load(last());
  nlohmann::json expected = nlohmann::json::object();
  for (const auto& [name, tensor] : saved.weights) expected[name] = tensor.sizes().vec();
  write_text(*dir_ / "expected.json", expected.dump());
  const auto script = *dir_ / "read.py";
  write_text(script, R"(import json, sys
from safetensors import safe_open
expected = json.load(open(sys.argv[2]))
with safe_open(sys.argv[1], framework="numpy") as f:
    names = set(f.keys())
    for name, shape in expected.items():
        assert name in names, name
        assert list(f.get_tensor(name).shape) == shape, (name, f.get_tensor(name).shape, shape)
        assert str(f.get_tensor(name).dtype) == "float32", name
    meta = f.metadata()
    assert meta["format"] == "trafo-checkpoint" and meta["format_version"] == "3", meta.keys()
    assert json.loads(meta["model_config"])["d_model"] == 16
    assert json.loads(meta["training"])["step"] == 2
    inference = json.loads(meta["inference"])
    assert sorted(inference) == ["language_id", "src_lang", "tags", "tgt_lang"], meta["inference"]
    assert (inference["src_lang"], inference["tgt_lang"], inference["tags"]) == ("en", "de", []), meta["inference"]
    assert sorted(inference["language_id"]["languages"]) == ["de", "en"], inference["language_id"].keys()
    others = sorted(n for n in names if n not in expected)
    assert all(n.startswith("training/") for n in others), others
    assert any(n.startswith("training/optimizer/exp_avg/") for n in others), others
    assert any(n.startswith("training/raw_weights/") for n in others), others
print(len(expected))
)");
  const auto result = run_command("'" + std::string(TRAFO_PYTHON) + "' " + quoted(script) + " " + quoted(last()) + " " +
                                  quoted(*dir_ / "expected.json"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_EQ(std::stoul(result.output), saved.weights.size());
}

// The file is its tensors and one header: the weights, Adam's two moments and the EMA's raw weights,
// the tokenizer in base64 (a third more than its bytes), the configs, the language identifier (its
// JSON, each quote escaped once), and little else.
TEST_F(CheckpointFile, HoldsItsTensorsAndASmallHeaderOnly) {
  const auto saved = checkpoint::load(last());
  ASSERT_FALSE(saved.inference.language_id.empty());
  size_t tensor_bytes = 0;
  for (const auto& [name, tensor] : saved.weights) tensor_bytes += tensor.nbytes();
  for (const auto& [name, tensor] : saved.training->tensors) tensor_bytes += tensor.nbytes();
  const auto& id = saved.inference.language_id;
  const size_t id_bytes = id.size() + static_cast<size_t>(std::count(id.begin(), id.end(), '"'));
  const size_t header_ceiling = saved.tokenizer.size() * 4 / 3 + saved.config.size() + id_bytes + 64 * 1024;
  EXPECT_LE(std::filesystem::file_size(last()), tensor_bytes + header_ceiling);
}

// Tensors are views of the mapped file, copy-on-write: changing one in memory leaves the file as it was.
TEST_F(CheckpointFile, LoadedTensorsMayBeChangedWithoutTouchingTheFile) {
  const auto copy = *dir_ / "copy.pt";
  std::filesystem::copy_file(last(), copy, std::filesystem::copy_options::overwrite_existing);
  const auto before = read_text(copy);
  {
    auto loaded = checkpoint::load(copy);
    for (auto& [name, tensor] : loaded.weights) tensor.add_(1.0);
  }
  EXPECT_EQ(read_text(copy), before);
  const auto again = checkpoint::load(copy);
  const auto first = checkpoint::load(last());
  for (const auto& [name, tensor] : first.weights) EXPECT_TRUE(torch::equal(tensor, again.weights.at(name))) << name;
}

// A header written to pass the checksum but otherwise wrong: each fault is one InputError.
std::string safetensors_file(const nlohmann::json& header, const std::string& data) {
  std::string text = header.dump();
  std::string out(8, '\0');
  const uint64_t size = text.size();
  std::memcpy(out.data(), &size, 8);  // little-endian on every machine trafo builds on
  return checkpoint::with_checksum(out + text + data);
}

TEST(SafetensorsReader, FaultsPastTheChecksumAreRefused) {
  const auto dir = make_temp_dir("safetensors-faults");
  const nlohmann::json metadata = {{"checksum", "0000000000000000"}, {"format", "x"}};
  auto tensor = [](const std::string& dtype, std::vector<int64_t> shape, uint64_t begin, uint64_t end) {
    return nlohmann::json{{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
  };
  const std::string data(16, '\1');
  struct Case {
    std::string name;
    nlohmann::json header;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"past the end", {{"__metadata__", metadata}, {"a", tensor("F32", {8}, 0, 32)}}, "do not fit"},
      {"shape", {{"__metadata__", metadata}, {"a", tensor("F32", {3}, 0, 16)}}, "do not fit"},
      {"overlap",
       {{"__metadata__", metadata}, {"a", tensor("F32", {2}, 0, 8)}, {"b", tensor("F32", {3}, 4, 16)}},
       "overlap"},
      {"gap", {{"__metadata__", metadata}, {"a", tensor("F32", {2}, 0, 8)}}, "no tensor names"},
      {"dtype", {{"__metadata__", metadata}, {"a", tensor("Q4", {4}, 0, 16)}}, "no dtype"},
      {"huge shape", {{"__metadata__", metadata}, {"a", tensor("U8", {1LL << 40, 1LL << 40}, 0, 16)}}, "shape"},
      {"metadata", {{"__metadata__", {{"checksum", "0000000000000000"}, {"n", 3}}}, {"a", tensor("U8", {16}, 0, 16)}},
       "not a string"},
  };
  for (const auto& c : cases) {
    const auto path = dir / "f.safetensors";
    write_text(path, safetensors_file(c.header, data));
    try {
      checkpoint::read_safetensors(path);
      ADD_FAILURE() << c.name << ": read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << c.name << ": " << e.what();
    }
  }
  // A header length past the file, and no checksum at all, before anything is parsed.
  std::string claims(8, '\xff');
  write_text(dir / "g.safetensors", claims + "{}");
  EXPECT_THROW(checkpoint::read_safetensors(dir / "g.safetensors"), InputError);
  std::string plain(8, '\0');
  plain[0] = 2;
  write_text(dir / "h.safetensors", plain + "{}");
  EXPECT_THROW(checkpoint::read_safetensors(dir / "h.safetensors"), InputError);
  // A well-formed file that is no trafo checkpoint.
  write_text(dir / "i.pt", safetensors_file({{"__metadata__", metadata}, {"a", tensor("U8", {16}, 0, 16)}}, data));
  EXPECT_THROW(checkpoint::load(dir / "i.pt"), InputError);
}

TEST(SafetensorsReader, WritesAndReadsBackEveryDtypeTrafoUses) {
  const auto dir = make_temp_dir("safetensors-round");
  checkpoint::Safetensors contents;
  contents.metadata = {{"note", "ünïcode and \"quotes\" and \"checksum\":\"x\""}};
  contents.tensors = {{"f", torch::randn({3, 5})}, {"i", torch::arange(7, torch::kLong)},
                      {"u", torch::randint(0, 255, {11}, torch::kByte)}, {"empty", torch::zeros({0, 4})},
                      {"scalar", torch::tensor(5, torch::kLong)}};
  write_text(dir / "r.safetensors", checkpoint::to_safetensors(contents));
  const auto back = checkpoint::read_safetensors(dir / "r.safetensors");
  EXPECT_EQ(back.metadata, contents.metadata);
  ASSERT_EQ(back.tensors.size(), contents.tensors.size());
  for (const auto& [name, tensor] : contents.tensors) {
    EXPECT_EQ(back.tensors.at(name).scalar_type(), tensor.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(back.tensors.at(name), tensor)) << name;
  }
}

TEST(ModelConfigJson, AKeyAConfigLacksTakesItsDefaultAndANewerVersionIsRefused) {
  model::ModelConfig config;
  config.d_model = 64;
  config.heads = 2;
  auto json = model::to_json(config);
  EXPECT_EQ(json.at("version"), model::kModelConfigVersion);
  json.erase("version");  // as checkpoints before versions
  json.erase("max_positions");
  const auto read = model::model_config_from_json(json);
  EXPECT_EQ(read.d_model, 64);
  EXPECT_EQ(read.max_positions, model::ModelConfig{}.max_positions);
  json["version"] = model::kModelConfigVersion + 1;
  try {
    model::model_config_from_json(json);
    ADD_FAILURE() << "read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("newer trafo"), std::string::npos) << e.what();
  }
}

// The checkpoints of format 2 translate exactly as the trafo that wrote them did.
// What inference reads (languages, corpus tags) is stored beside the model config and read back; a file
// without it (written before, or by code that leaves it empty) gets it from its training config's text.
TEST_F(CheckpointFile, InferenceInfoIsStoredBesideTheModelAndReadFromTheConfigOfOlderFiles) {
  const std::string toml = "src-lang=\"en\"\ntgt-lang='fr' # comment\nd-model=16\n\n[[corpus]]\nsrc=\"a\"\ntag=\"<bt>\"\n"
                           "[[corpus]]\ntag = \"<x>\"\n[[corpus]]\ntag=\"<bt>\"\n[[corpus]]\nsrc=\"b\"\n";
  const auto from_config = checkpoint::inference_from_config(toml);
  EXPECT_EQ(from_config.src_lang, "en");
  EXPECT_EQ(from_config.tgt_lang, "fr");
  EXPECT_EQ(from_config.tags, (std::vector<std::string>{"<bt>", "<x>"}));
  EXPECT_TRUE(checkpoint::inference_from_config("not = [a config\n").empty());

  auto saved = checkpoint::load(last(), /*with_training_state=*/false);
  EXPECT_EQ(saved.inference.src_lang, "en");
  EXPECT_EQ(saved.inference.tgt_lang, "de");
  EXPECT_TRUE(saved.inference.tags.empty());
  saved.inference = checkpoint::InferenceInfo{};
  saved.inference.src_lang = "de";
  saved.inference.tgt_lang = "en";
  saved.inference.tags = {"<ft>"};
  checkpoint::save(*dir_ / "stored.pt", saved);
  const auto stored = checkpoint::load(*dir_ / "stored.pt");
  EXPECT_EQ(stored.inference.src_lang, "de");
  EXPECT_EQ(stored.inference.tgt_lang, "en");
  EXPECT_EQ(stored.inference.tags, std::vector<std::string>{"<ft>"});

  saved.inference = {};
  saved.config = toml;
  checkpoint::save(*dir_ / "older.pt", saved);
  EXPECT_EQ(checkpoint::read_safetensors(*dir_ / "older.pt").metadata.count("inference"), 0u);
  const auto older = checkpoint::load(*dir_ / "older.pt");
  EXPECT_EQ(older.inference.tgt_lang, "fr");
  EXPECT_EQ(older.inference.tags, (std::vector<std::string>{"<bt>", "<x>"}));
}

TEST(Format2Checkpoints, TranslateExactlyAsBefore) {
  for (const std::string model : {"toy", "tiny"}) {
    for (const std::string beam : {"1", "4"}) {
      const auto result = run_trafo("translate --checkpoint " + quoted(kFixtures / (model + "-format2.pt")) +
                                    " --beam " + beam + " --precision fp32 --threads 1 --input " +
                                    quoted(kFixtures / "src.txt"));
      ASSERT_EQ(result.exit_code, 0) << result.errors;
      EXPECT_EQ(result.output, read_text(kFixtures / (model + "-beam" + beam + ".txt"))) << model << ", beam " << beam;
    }
  }
}

// A format 2 training state (the optimizer's own archive, the generator as a tensor) resumes, and
// saved again it is format 3 with the same moments.
TEST(Format2Checkpoints, TrainingStateResumesAndSavesAsFormat3) {
  const auto saved = checkpoint::load(kFixtures / "tiny-format2.pt");
  ASSERT_TRUE(saved.training);
  auto model = checkpoint::make_model(saved, c10::kCPU);
  auto optimizer = train::make_optimizer("adam", model->parameters(), 1e-3, 0.9, 0.98, 1e-9, 0.0);
  const auto parameters = train::named_parameters(*model);
  const auto progress = train::unpack_training_state(*saved.training, *optimizer, parameters);
  EXPECT_EQ(progress.step, 5);
  const auto moments = train::optimizer_state(*optimizer, parameters);
  EXPECT_EQ(moments.size(), 3 * parameters.size());
  EXPECT_EQ(moments.at("step/" + parameters.front().first).item<int64_t>(), 5);

  const auto dir = make_temp_dir("format2-resume");
  auto resaved = saved;
  resaved.training = train::pack_training_state(progress, *optimizer, parameters);
  checkpoint::save(dir / "c.pt", resaved);
  const auto again = checkpoint::load(dir / "c.pt");
  auto other = train::make_optimizer("adam", model->parameters(), 1e-3, 0.9, 0.98, 1e-9, 0.0);
  EXPECT_EQ(train::unpack_training_state(*again.training, *other, parameters).step, 5);
  for (const auto& [name, tensor] : train::optimizer_state(*other, parameters)) {
    EXPECT_TRUE(torch::equal(tensor, moments.at(name))) << name;
  }
}

}  // namespace
}  // namespace trafo::testing
