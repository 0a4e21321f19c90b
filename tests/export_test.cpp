// `trafo export --format ctranslate2`, checked with the real CTranslate2 runtime (the PyPI
// ctranslate2 wheel in .venv, which scripts/setup.sh installs): a toy model trained here, exported,
// translates the toy test set greedily to the same text as `trafo translate`, with the same BLEU;
// int8 within 1 BLEU. Both converter paths: pre-norm ReLU with tied embeddings, post-norm GELU
// with separate embeddings and an output projection with bias.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/tokenizer.h"
#include "trafo/deploy/export.h"
#include "trafo/errors.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

// Both decoders stop at the same length: CTranslate2's limit is absolute (max_decoding_length),
// trafo's A x source + B, so A = 0 here.
constexpr int kMaxLength = 200;

struct ExportVariant {
  const char* norm;
  const char* activation;
  bool tied;
  bool bias = false;  // tied with an output bias (an imported MarianMT model's)
};

// An untrained model of the variant (1+2 or 2+1 layers) with a tokenizer trained in `dir`.
fs::path random_checkpoint(const fs::path& dir, const ExportVariant& v) {
  if (!fs::exists(dir / "train.en")) write_synthetic_corpus(dir, "train", 200);
  data::TokenizerOptions options;
  options.vocab_size = 300;
  const auto tokenizer = data::Tokenizer::train({dir / "train.en", dir / "train.de"}, options);
  auto config = tiny_model_config(tokenizer.vocab_size());
  config.norm = v.norm;
  config.activation = v.activation;
  config.tie_embeddings = v.tied;
  config.output_bias = v.bias;
  config.encoder_layers = v.tied ? 2 : 1;
  config.decoder_layers = v.tied ? 1 : 2;
  model::Transformer model(config);
  const auto path = dir / (std::string(v.norm) + (v.bias ? "-bias" : "") + ".pt");
  checkpoint::save(path, checkpoint::Checkpoint{config, checkpoint::model_weights(model), tokenizer.to_bytes(), "",
                                                std::nullopt, {}});
  return path;
}

class Ct2Export : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(make_temp_dir("export"));
    const auto toy = run_trafo("toy-corpus --out " + quoted(*dir_ / "toy") + " --train 4000 --dev 20 --test 200");
    ASSERT_EQ(toy.exit_code, 0) << toy.errors;
  }
  static void TearDownTestSuite() { delete dir_; }

  static void train(const std::string& name, const std::string& variant) {
    const auto result = run_trafo(
        "train --data-dir " + quoted(*dir_ / "toy") + " --src-lang en --tgt-lang de --run-dir " + quoted(*dir_ / name) +
        " --threads 2 --vocab-size 500 --d-model 64 --heads 4 --d-ff 128 --encoder-layers 2 --decoder-layers 2"
        " --batch-tokens 1500 --lr 0.003 --warmup-steps 50 --max-steps 300 --valid-every 300 --valid-max-sentences 20 --valid-samples 0 " +
        variant);
    ASSERT_EQ(result.exit_code, 0) << result.errors;
  }
  // A model trained here on first use (each test runs in a process of its own: it trains only what it uses).
  static fs::path checkpoint(const std::string& name) {
    const auto path = *dir_ / name / "checkpoint-last.pt";
    if (!fs::exists(path)) {
      train(name, name == "post"    ? "--norm post --activation gelu --tie-embeddings false"
                  : name == "swish" ? "--norm post --activation swish --positions sinusoidal-halves --tie-embeddings false"
                                    : "");
    }
    return path;
  }
  static fs::path test_source() { return *dir_ / "toy" / "test.en"; }

  // trafo translate's greedy output, one line per test sentence.
  static fs::path trafo_translation(const std::string& name) {
    const auto out = *dir_ / (name + ".trafo.txt");
    // fp32, as the exported float32 model computes, whatever auto would pick here
    const auto result = run_trafo("translate --checkpoint " + quoted(checkpoint(name)) +
                                  " --threads 2 --beam 1 --precision fp32 --input " + quoted(test_source()) +
                                  " --output " + quoted(out) +
                                  " --max-length-a 0 --max-length-b " + std::to_string(kMaxLength));
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return out;
  }

  static fs::path export_model(const fs::path& model, const std::string& quantization) {
    const auto out = fs::path(model.string() + "-" + quantization);
    const auto result = run_trafo("export --checkpoint " + quoted(model) + " --format ctranslate2 --out " +
                                  quoted(out) + " --quantization " + quantization + " --force");
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return out;
  }

  // The exported folder through ctranslate2.Translator (bench/ctranslate2_decode.py), greedy.
  static fs::path ct2_translation(const fs::path& model_dir) {
    const auto out = fs::path(model_dir.string() + ".txt");
    const auto result = run_command(std::string(TRAFO_PYTHON) + " " + TRAFO_SOURCE_DIR +
                                    "/bench/ctranslate2_decode.py " + quoted(model_dir) + " " + quoted(test_source()) +
                                    " --output " + quoted(out) + " --threads 2 --beam 1 --max-decoding-length " +
                                    std::to_string(kMaxLength));
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return out;
  }

  static double bleu(const fs::path& hypotheses) {
    const auto result = run_trafo("score --json --ref " + quoted(*dir_ / "toy" / "test.de") + " --hyp " + quoted(hypotheses));
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return nlohmann::json::parse(result.output).at("bleu").get<double>();
  }

  static double agreement(const fs::path& a, const fs::path& b) {
    const auto first = lines_of(read_text(a)), second = lines_of(read_text(b));
    EXPECT_EQ(first.size(), second.size());
    size_t same = 0;
    for (size_t i = 0; i < std::min(first.size(), second.size()); ++i) same += first[i] == second[i];
    return static_cast<double>(same) / static_cast<double>(std::max<size_t>(1, first.size()));
  }

  // float32: the same text on >= 99% of lines and the same BLEU (0.1); int8: BLEU within 1.
  static void check_variant(const std::string& name) {
    TRAFO_REQUIRE_PYTHON_MODULE("ctranslate2");
    TRAFO_REQUIRE_PYTHON_MODULE("sentencepiece");
    const auto trafo = trafo_translation(name);
    const double trafo_bleu = bleu(trafo);
    const auto float32 = ct2_translation(export_model(checkpoint(name), "float32"));
    const double same = agreement(trafo, float32);
    EXPECT_GE(same, 0.99) << name;
    const double float32_bleu = bleu(float32);
    EXPECT_NEAR(float32_bleu, trafo_bleu, 0.1) << name;
    const double int8_bleu = bleu(ct2_translation(export_model(checkpoint(name), "int8")));
    EXPECT_NEAR(int8_bleu, trafo_bleu, 1.0) << name;
    std::cout << name << ": same text on " << same * 100 << "% of lines; BLEU trafo " << trafo_bleu << ", float32 "
              << float32_bleu << ", int8 " << int8_bleu << "\n";
  }

  static fs::path* dir_;
};
fs::path* Ct2Export::dir_ = nullptr;

TEST_F(Ct2Export, PreNormReluTiedTranslatesAsTrafo) { check_variant("pre"); }

TEST_F(Ct2Export, PostNormGeluUntiedTranslatesAsTrafo) { check_variant("post"); }

// OPUS-MT's MarianMT shape: post-norm, swish (SiLU), positions with the sines in the first half.
TEST_F(Ct2Export, PostNormSwishHalvesUntiedTranslatesAsTrafo) { check_variant("swish"); }

TEST_F(Ct2Export, WritesTheModelFolder) {
  const auto model = random_checkpoint(*dir_, ExportVariant{"pre", "relu", true});
  const auto out = export_model(model, "bfloat16");
  for (const auto* file : {"model.bin", "config.json", "shared_vocabulary.json", "sentencepiece.model"}) {
    EXPECT_TRUE(fs::is_regular_file(out / file)) << file;
  }
  const auto config = nlohmann::json::parse(read_text(out / "config.json"));
  EXPECT_EQ(config.at("add_source_eos"), true);
  EXPECT_EQ(config.at("add_source_bos"), false);
  EXPECT_EQ(config.at("decoder_start_token"), "<s>");
  EXPECT_EQ(config.at("layer_norm_epsilon"), 1e-5);
  const auto vocabulary = nlohmann::json::parse(read_text(out / "shared_vocabulary.json"));
  ASSERT_GT(vocabulary.size(), 4u);
  EXPECT_EQ(vocabulary[0], "<pad>");
  EXPECT_EQ(vocabulary[3], "</s>");
  // bfloat16 halves the float32 file (the flags and names aside).
  const auto float32 = export_model(model, "float32");
  EXPECT_LT(fs::file_size(out / "model.bin"), fs::file_size(float32 / "model.bin") * 0.55);
}

// --format dispatches through deploy::export_formats(); each row names the quantizations it takes.
TEST(ExportFormats, OneRowPerFormatAndClearErrorsOtherwise) {
  ASSERT_FALSE(deploy::export_formats().empty());
  EXPECT_STREQ(deploy::export_format("ctranslate2").name, "ctranslate2");
  try {
    deploy::export_format("onnx");
    ADD_FAILURE() << "found";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("one of ctranslate2"), std::string::npos) << e.what();
  }
  const auto& ct2 = deploy::export_format("ctranslate2");
  EXPECT_EQ(deploy::pick_quantization(ct2, ""), "float32");
  EXPECT_EQ(deploy::pick_quantization(ct2, "int8"), "int8");
  EXPECT_THROW(deploy::pick_quantization(ct2, "int4"), InputError);
}

TEST_F(Ct2Export, RefusesWithOneLineAndKeepsWhatIsThere) {
  const auto model = random_checkpoint(*dir_, ExportVariant{"pre", "relu", true});
  const auto out = *dir_ / "taken";
  fs::create_directories(out);
  write_text(out / "keep.txt", "mine");
  const auto refused = run_trafo("export --checkpoint " + quoted(model) + " --out " + quoted(out));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.errors.find("--force"), std::string::npos) << refused.errors;
  EXPECT_EQ(read_text(out / "keep.txt"), "mine");

  const auto quantization = run_trafo("export --checkpoint " + quoted(model) + " --out " +
                                      quoted(*dir_ / "q") + " --quantization int4");
  EXPECT_EQ(quantization.exit_code, 2) << quantization.errors;
  EXPECT_FALSE(fs::exists(*dir_ / "q"));

  write_text(*dir_ / "broken.pt", "not a checkpoint");
  const auto broken = run_trafo("export --checkpoint " + quoted(*dir_ / "broken.pt") + " --out " + quoted(*dir_ / "b"));
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_EQ(std::count(broken.errors.begin(), broken.errors.end(), '\n'), 1) << broken.errors;
  EXPECT_FALSE(fs::exists(*dir_ / "b"));

  // --force replaces the folder, and nothing is left beside it.
  const auto forced = run_trafo("export --checkpoint " + quoted(model) + " --out " + quoted(out) + " --force");
  ASSERT_EQ(forced.exit_code, 0) << forced.errors;
  EXPECT_FALSE(fs::exists(out / "keep.txt"));
  EXPECT_TRUE(fs::exists(out / "model.bin"));
  for (const auto& entry : fs::directory_iterator(*dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
    EXPECT_EQ(entry.path().filename().string().find(".old-"), std::string::npos) << entry.path();
  }
}

// model.bin against the one the wheel's own TransformerSpec writes for the same shapes
// (tests/ctranslate2_layout.py): every variable's name, dtype and shape, and the aliases, for both
// converter paths, tied with an output bias, unequal depths, and each stored type.
TEST(Ct2Layout, ModelBinMatchesTheWheelsOwnSpec) {
  TRAFO_REQUIRE_PYTHON_MODULE("ctranslate2");
  const auto dir = make_temp_dir("ct2-layout");
  const ExportVariant variants[] = {{"pre", "relu", true}, {"post", "gelu", false}, {"post", "relu", true, true}};
  std::string checks;  // six arguments a model.bin, all checked by one Python process
  for (const ExportVariant& v : variants) {
    const auto checkpoint = random_checkpoint(dir, v);
    const auto heads = checkpoint::load(checkpoint).model_config.heads;
    for (const std::string quantization : {"float32", "int8", "bfloat16"}) {
      const auto out = dir / (std::string(v.norm) + (v.bias ? "-bias-" : "-") + quantization);
      const auto exported = run_trafo("export --checkpoint " + quoted(checkpoint) + " --out " + quoted(out) +
                                      " --quantization " + quantization);
      ASSERT_EQ(exported.exit_code, 0) << exported.errors;
      checks += " " + quoted(out / "model.bin") + " " + v.norm + " " + v.activation + " " +
                (v.bias ? "tied-bias" : v.tied ? "tied" : "untied") + " " +
                (quantization == "float32" ? "none" : quantization) + " " + std::to_string(heads);
    }
  }
  const auto check =
      run_command(std::string(TRAFO_PYTHON) + " " + TRAFO_SOURCE_DIR + "/tests/ctranslate2_layout.py" + checks);
  EXPECT_EQ(check.exit_code, 0) << check.output << check.errors;
  EXPECT_EQ(std::count(check.output.begin(), check.output.end(), '\n'), 9) << check.output;  // one line a model.bin
}

}  // namespace
}  // namespace trafo::testing
