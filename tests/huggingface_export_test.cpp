// `trafo export --format huggingface`, checked with the real transformers (PyPI, in .venv, which
// scripts/setup.sh installs): toy models of trafo's default architecture and of others (post- and
// pre-norm, each activation, tied and untied, positions interleaved and in halves), trained here and
// exported, load with AutoTokenizer and AutoModelForSeq2SeqLM, generate trafo's translation of every
// line greedily, give each translation trafo's score-pairs log p, and print trafo's translations
// through every user's recipe, batch_decode(generate(**tokenizer(texts, padding=True)),
// skip_special_tokens=True), with no "<s>" first (tests/huggingface_check.py). Sources that spell a
// special piece ("<s>", "</s>") are text to both.
// A pre-norm model with untied embeddings, which no class expresses, is refused in one line.
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
    ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(*dir_ / "toy") + " --train 2000 --dev 100 --test 10").exit_code, 0);
  }
  static void TearDownTestSuite() { delete dir_; }

  // A toy model of `options` (2 encoder layers, 1 decoder layer), trained `steps` in `name`; its checkpoint.
  static fs::path train(const std::string& name, const std::string& options, int steps = 150) {
    const auto trained = run_trafo("train --data-dir " + quoted(*dir_ / "toy") + " --src-lang en --tgt-lang de --run-dir " +
                                   quoted(*dir_ / name) +
                                   " --d-model 32 --heads 2 --encoder-layers 2 --decoder-layers 1 --d-ff 64"
                                   " --vocab-size 400 --threads 1 --early-stopping 0 --lr 3e-3 --warmup-steps 30"
                                   " --valid-max-sentences 5 --max-steps " +
                                   std::to_string(steps) + " --valid-every " + std::to_string(steps) + " " + options);
    EXPECT_EQ(trained.exit_code, 0) << trained.errors;
    return *dir_ / name / "checkpoint-last.pt";
  }

  static fs::path* dir_;
};
fs::path* HuggingFaceExport::dir_ = nullptr;

TEST_F(HuggingFaceExport, TransformersLoadsTheFolderAndTranslatesAsTrafo) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  // Post-norm models export as MarianMT, pre-norm ones (trafo's default: "") as Pegasus; positions in
  // halves as they are, trafo's interleaved ones through a permutation of the model dimension.
  const std::vector<std::pair<std::string, std::string>> models = {
      {"default", ""},
      {"pre-swish-halves", "--activation swish --positions sinusoidal-halves"},
      {"post-swish-halves", "--norm post --activation swish --positions sinusoidal-halves"},
      {"post-relu-untied-halves", "--norm post --tie-embeddings false --positions sinusoidal-halves"},
      {"post-gelu", "--norm post --activation gelu"},
      {"post-relu-untied", "--norm post --tie-embeddings false"},
  };
  // The dev sources, then text that spells special pieces, as a web page's <s> (struck) does.
  const auto sources = *dir_ / "sources.en";
  write_text(sources, read_text(*dir_ / "toy" / "dev.en") + "<s>the duck</s> sings.\n<pad> <unk> <s>\n");
  std::string checks;  // FOLDER SOURCES TRANSLATIONS SCORES of each model, checked by one Python process
  for (const auto& [name, options] : models) {
    SCOPED_TRACE(name);
    const auto checkpoint = train(name, options);
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
    checks += " " + quoted(folder) + " " + quoted(sources) + " " + quoted(translations) + " " + quoted(scores);
  }
  const auto checked = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                   "/tests/huggingface_check.py'" + checks);
  EXPECT_EQ(checked.exit_code, 0) << checked.output << checked.errors;
  EXPECT_NE(checked.output.find("ok"), std::string::npos) << checked.output;
}

// A model of two target languages (corpora tagged >>de<< and >>fr<<) exports as a multilingual
// OPUS-MT folder: its codes are MarianTokenizer's supported_language_codes, target_lang names both,
// transformers translates a source that begins with its code as trafo does, and the folder imports
// back as a model of the same two targets.
TEST_F(HuggingFaceExport, AModelOfTwoTargetsExportsAndImportsAsMultilingualOpusMt) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  const auto toy = *dir_ / "toy";
  const auto pairs = quoted(toy / "train.en") + "," + quoted(toy / "train.de");
  const auto checkpoint =
      train("multi", "--norm post --corpus " + pairs + ",1,,,en,de --corpus " + pairs + ",1,,,en,fr", 100);
  const auto folder = *dir_ / "multi-hf";
  const auto exported =
      run_trafo("export --format huggingface --checkpoint " + quoted(checkpoint) + " --out " + quoted(folder));
  ASSERT_EQ(exported.exit_code, 0) << exported.errors;
  const auto codes = run_command(std::string("'") + TRAFO_PYTHON +
                                 "' -c 'import json, sys; from transformers import MarianTokenizer; "
                                 "t = MarianTokenizer.from_pretrained(sys.argv[1]); "
                                 "print(t.supported_language_codes, json.load(open(sys.argv[1] + \"/tokenizer_config.json\"))"
                                 "[\"target_lang\"])' " + quoted(folder));
  ASSERT_EQ(codes.exit_code, 0) << codes.errors;
  EXPECT_EQ(codes.output, "['>>de<<', '>>fr<<'] de+fr\n");

  // Sources that begin with their code, half each; trafo's translations, scores, then transformers'.
  std::string text;
  int n = 0;
  for (const auto& line : lines_of(read_text(toy / "dev.en"))) text += (n++ % 2 == 0 ? ">>fr<< " : ">>de<< ") + line + "\n";
  const auto sources = *dir_ / "multi.en", translations = *dir_ / "multi.out", scores = *dir_ / "multi.scores";
  write_text(sources, text);
  const std::string fp32 = " --threads 1 --precision fp32";
  ASSERT_EQ(run_trafo("translate --checkpoint " + quoted(checkpoint) + " --input " + quoted(sources) + " --output " +
                      quoted(translations) + fp32).exit_code, 0);
  ASSERT_EQ(run_trafo("score-pairs --checkpoint " + quoted(checkpoint) + " --src " + quoted(sources) + " --tgt " +
                      quoted(translations) + fp32 + " > " + quoted(scores)).exit_code, 0);
  const auto checked = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                   "/tests/huggingface_check.py' " + quoted(folder) + " " + quoted(sources) + " " +
                                   quoted(translations) + " " + quoted(scores));
  EXPECT_EQ(checked.exit_code, 0) << checked.output << checked.errors;

  // Imported back: the same two targets, the same translations.
  const auto imported = *dir_ / "multi-imported.pt";
  const auto back = run_trafo("import --from " + quoted(folder) + " --out " + quoted(imported) + " --force");
  ASSERT_EQ(back.exit_code, 0) << back.errors;
  const auto again = run_trafo("translate --checkpoint " + quoted(imported) + " --input " + quoted(sources) + fp32);
  ASSERT_EQ(again.exit_code, 0) << again.errors;
  EXPECT_EQ(again.output, read_text(translations));
  const auto unnamed = run_trafo("translate --checkpoint " + quoted(imported) + " --input " + quoted(toy / "dev.en") + fp32);
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_NE(unnamed.errors.find("translates into de, fr"), std::string::npos) << unnamed.errors;
}

TEST_F(HuggingFaceExport, APreNormModelWithUntiedEmbeddingsIsRefusedInOneLine) {
  const auto checkpoint = train("pre-untied", "--tie-embeddings false", /*steps=*/1);
  const auto folder = *dir_ / "pre-untied-hf";
  const auto refused =
      run_trafo("export --format huggingface --checkpoint " + quoted(checkpoint) + " --out " + quoted(folder));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(lines_of(refused.errors).size(), 1u) << refused.errors;
  EXPECT_NE(refused.errors.find("train with --tie-embeddings true, or --norm post"), std::string::npos)
      << refused.errors;
  EXPECT_FALSE(fs::exists(folder));
}

}  // namespace
}  // namespace trafo::testing
