// `trafo import`: Hugging Face MarianMT folders, made here by the real transformers (PyPI, in .venv;
// tests/marian_make.py: tiny random models with OPUS-MT's layout, a SentencePiece model per side
// trained on the toy corpus, nothing downloaded), become trafo checkpoints that translate and score
// as transformers does (tests/huggingface_check.py), that every command taking a checkpoint takes,
// that CTranslate2 runs as trafo does once exported, and that fine-tune and export back.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/model/transformer.h"
#include "trafo/util/files.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFp32 = " --threads 1 --precision fp32";

class MarianImport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(make_temp_dir("marian-import"));
    ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(*dir_ / "toy") + " --train 2000 --dev 100 --test 10").exit_code, 0);
    // The sources of the multilingual model start with its target-language code, as OPUS-MT's users write them.
    std::string tagged;
    for (const auto& line : lines_of(read_text(*dir_ / "toy" / "dev.en"))) tagged += ">>deu<< " + line + "\n";
    write_text(*dir_ / "dev.tagged.en", tagged);
  }
  static void TearDownTestSuite() { delete dir_; }

  // A MarianMT folder made by tests/marian_make.py with `arguments` (ACTIVATION SEED WEIGHTS [flags]),
  // copied into this test's folder. Each test is a process of its own and transformers takes seconds
  // to import, so a made folder is kept in the build tree (tests/marian-models), under a hash of the
  // script, its arguments and its training text: made once for all four tests.
  static fs::path make(const std::string& name, const std::string& arguments) {
    const auto folder = *dir_ / name;
    if (fs::exists(folder)) return folder;
    const auto train_en = *dir_ / "toy" / "train.en", train_de = *dir_ / "toy" / "train.de";
    const auto key = read_text(std::string(TRAFO_SOURCE_DIR) + "/tests/marian_make.py") + "\n" + arguments + "\n" +
                     read_text(train_en) + read_text(train_de);
    const auto kept = kept_folder("marian-models", key, [&](const fs::path& making) {
      const auto made = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                    "/tests/marian_make.py' " + quoted(making) + " " + quoted(train_en) + " " +
                                    quoted(train_de) + " " + arguments);
      EXPECT_EQ(made.exit_code, 0) << made.output << made.errors;
      return made.exit_code == 0;
    });
    if (kept.empty()) return folder;
    fs::copy(kept, folder, fs::copy_options::recursive);
    return folder;
  }

  static fs::path import(const fs::path& folder) {
    const auto checkpoint = fs::path(folder.string() + ".pt");
    const auto imported = run_trafo("import --from " + quoted(folder) + " --out " + quoted(checkpoint) + " --force");
    EXPECT_EQ(imported.exit_code, 0) << imported.errors;
    return checkpoint;
  }

  // trafo's greedy translation of `sources` and its score-pairs scores, as huggingface_check.py's
  // arguments after a folder's: " SOURCES TRANSLATIONS SCORES".
  static std::string translated(const fs::path& checkpoint, const fs::path& sources) {
    const auto translations = fs::path(checkpoint.string() + ".de"), scores = fs::path(checkpoint.string() + ".scores");
    const auto translation = run_trafo("translate --checkpoint " + quoted(checkpoint) + " --input " + quoted(sources) +
                                       " --output " + quoted(translations) + kFp32);
    EXPECT_EQ(translation.exit_code, 0) << translation.errors;
    const auto scored = run_trafo("score-pairs --checkpoint " + quoted(checkpoint) + " --src " + quoted(sources) +
                                  " --tgt " + quoted(translations) + kFp32 + " > " + quoted(scores));
    EXPECT_EQ(scored.exit_code, 0) << scored.errors;
    return " " + quoted(sources) + " " + quoted(translations) + " " + quoted(scores);
  }

  static void expect_as_transformers(const std::string& checks) {
    const auto checked = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                     "/tests/huggingface_check.py'" + checks);
    EXPECT_EQ(checked.exit_code, 0) << checked.output << checked.errors;
    EXPECT_NE(checked.output.find("ok"), std::string::npos) << checked.output;
  }

  // What the project's Python prints for `code` (which reads the folder as sys.argv[1]).
  static std::string python_output(const std::string& code, const fs::path& folder) {
    const auto result = run_command(std::string("'") + TRAFO_PYTHON + "' -c '" + code + "' " + quoted(folder));
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return result.output;
  }

  // MarianMTModel's parameters as a fine-tuning trains them: its trainable ones (its sinusoidal
  // positions are fixed, a buffer in trafo) and final_logits_bias (a buffer there, trained here).
  static int64_t marian_parameters(const fs::path& folder) {
    return std::stoll(python_output("import sys\nfrom transformers import MarianMTModel\n"
                                    "m = MarianMTModel.from_pretrained(sys.argv[1])\n"
                                    "print(sum(p.numel() for p in m.parameters() if p.requires_grad) + "
                                    "m.final_logits_bias.numel())",
                                    folder));
  }

  // Each tensor of the folder's model.safetensors and its shape, the fixed positions left out
  // (transformers makes them itself; trafo's export writes them too).
  static nlohmann::json tensor_shapes(const fs::path& folder) {
    return nlohmann::json::parse(python_output(
        "import json, sys\nfrom safetensors import safe_open\n"
        "f = safe_open(sys.argv[1] + \"/model.safetensors\", \"pt\")\n"
        "print(json.dumps({k: f.get_slice(k).get_shape() for k in f.keys() if \"embed_positions\" not in k}))",
        folder));
  }

  static fs::path exported(const fs::path& checkpoint, const std::string& format) {
    const auto out = fs::path(checkpoint.string() + "-" + format);
    const auto result = run_trafo("export --format " + format + " --checkpoint " + quoted(checkpoint) + " --out " +
                                  quoted(out) + " --force");
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return out;
  }

  static fs::path* dir_;
};
fs::path* MarianImport::dir_ = nullptr;

// Shared and separate vocabularies, source.spm and target.spm apart; swish, relu and gelu;
// model.safetensors and pytorch_model.bin; the output bias zero (tied) and random; a multilingual
// model's language codes.
TEST_F(MarianImport, ImportedModelsTranslateAndScoreAsTransformersAndExportBack) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  const auto dev = *dir_ / "toy" / "dev.en", tagged = *dir_ / "dev.tagged.en";
  const std::vector<std::tuple<std::string, std::string, fs::path>> models = {
      {"swish-tied", "swish 1 safetensors --tied", dev},
      {"relu-codes", "relu 2 bin --codes", tagged},
      {"gelu", "gelu 3 safetensors", dev},
      // The source vocabulary the longer: trafo's target table grows with rows no text gives.
      {"swish-separate", "swish 5 safetensors --separate --codes", tagged},
  };
  std::string checks;
  for (const auto& [name, arguments, sources] : models) {
    SCOPED_TRACE(name);
    const auto folder = make(name, arguments);
    const auto checkpoint = import(folder);
    const auto trafo = translated(checkpoint, sources);
    // Exported back, transformers loads trafo's folder and translates as trafo does.
    checks += " " + quoted(folder) + trafo + " " + quoted(exported(checkpoint, "huggingface")) + trafo;
  }
  expect_as_transformers(checks);
}

// A folder whose three matrices are one (OPUS-MT's tied embeddings) imports tied, its
// final_logits_bias the model's output bias: MarianMTModel's parameters, and one row more (the
// start piece, kept as bos and as pad); a really untied folder (separate vocabularies) stays untied.
TEST_F(MarianImport, ATiedFolderImportsTiedWithMarianMTsParameters) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  const std::vector<std::tuple<std::string, std::string, bool>> models = {
      {"gelu", "gelu 3 safetensors", true},
      {"relu-codes", "relu 2 bin --codes", true},
      {"swish-separate", "swish 5 safetensors --separate --codes", false},
  };
  for (const auto& [name, arguments, tied] : models) {
    SCOPED_TRACE(name);
    const auto folder = make(name, arguments);
    const auto imported = checkpoint::load(import(folder), false);
    const auto& c = imported.model_config;
    EXPECT_EQ(c.tie_embeddings, tied);
    EXPECT_EQ(c.output_bias, tied);
    if (!tied) continue;
    const auto model = checkpoint::make_model(imported, torch::kCPU);
    EXPECT_EQ(model->parameter_count(), marian_parameters(folder) + c.d_model + 1);
  }
}

TEST_F(MarianImport, EveryCommandThatTakesACheckpointTakesAnImportedOne) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  TRAFO_REQUIRE_PYTHON_MODULE("ctranslate2");
  const auto checkpoint = import(make("relu-codes", "relu 2 bin --codes"));
  const auto dev = *dir_ / "toy" / "dev.en", tagged = *dir_ / "dev.tagged.en", ref = *dir_ / "toy" / "dev.de";
  const auto run = [&](const std::string& arguments) {
    const auto result = run_trafo(arguments);
    EXPECT_EQ(result.exit_code, 0) << arguments << "\n" << result.errors;
    return result.output;
  };
  const auto translate_with = [](const fs::path& model) {
    return "translate --checkpoint " + quoted(model) + kFp32 + " --input ";
  };
  const auto translate = translate_with(checkpoint);
  // --tag puts the language code first, as the text's own code does.
  const auto with_codes = run(translate + quoted(tagged));
  EXPECT_EQ(run(translate + quoted(dev) + " --tag '>>deu<<'"), with_codes);
  // A model of two targets (>>deu<<, >>fra<<): --tgt-lang picks one, and a line that names none is refused.
  EXPECT_EQ(run(translate + quoted(dev) + " --tgt-lang deu"), with_codes);
  const auto unnamed = run_trafo(translate + quoted(dev));
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_NE(unnamed.errors.find("translates into deu, fra"), std::string::npos) << unnamed.errors;
  EXPECT_EQ(lines_of(with_codes).size(), 100u);
  EXPECT_EQ(lines_of(run(translate + quoted(tagged) + " --beam 4 --n-best 2")).size(), 200u);
  EXPECT_EQ(lines_of(run(translate + quoted(tagged) + " --sampling-topk 10 --seed 3")).size(), 100u);
  EXPECT_NE(run(translate + quoted(tagged) + " --alignment").find(" ||| "), std::string::npos);
  const auto ensemble = run("translate --checkpoint " + quoted(checkpoint) + " --checkpoint " + quoted(checkpoint) +
                            kFp32 + " --input " + quoted(tagged));
  EXPECT_EQ(ensemble, with_codes);  // two copies of one model average to it
  const auto evaluated =
      nlohmann::json::parse(run("eval --json --checkpoint " + quoted(checkpoint) + kFp32 + " --src " + quoted(tagged) +
                                " --ref " + quoted(ref)));
  EXPECT_TRUE(evaluated.contains("bleu")) << evaluated.dump();
  EXPECT_NE(run("attention --json --checkpoint " + quoted(checkpoint) + " --src 'The dog sings.'").find("cross"),
            std::string::npos);
  const auto averaged = *dir_ / "averaged.pt";
  run("average " + quoted(checkpoint) + " " + quoted(checkpoint) + " --out " + quoted(averaged) + " --force");
  EXPECT_EQ(run("translate --checkpoint " + quoted(averaged) + kFp32 + " --input " + quoted(tagged)), with_codes);

  // An older repository's pytorch_model.bin, saved before PyTorch 1.6 (no zip), imports the same.
  const auto legacy = *dir_ / "relu-codes-legacy";
  util::remove_tree(legacy);
  fs::copy(*dir_ / "relu-codes", legacy);
  const auto resaved = run_command(std::string("'") + TRAFO_PYTHON + "' -c 'import torch; p = \"" +
                                   (legacy / "pytorch_model.bin").string() +
                                   "\"; torch.save(torch.load(p, weights_only=True), p, "
                                   "_use_new_zipfile_serialization=False)'");
  ASSERT_EQ(resaved.exit_code, 0) << resaved.errors;
  EXPECT_EQ(run(translate_with(import(legacy)) + quoted(tagged)), with_codes);

  // CTranslate2 runs the export (source.spm, target.spm, the reordered vocabulary, or a vocabulary
  // per side) as trafo does.
  for (const auto& model : {checkpoint, import(make("swish-separate", "swish 5 safetensors --separate --codes"))}) {
    SCOPED_TRACE(model.string());
    const auto ct2 = exported(model, "ctranslate2");
    const auto ct2_text = *dir_ / "ct2.de";
    const auto decoded = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                     "/bench/ctranslate2_decode.py' " + quoted(ct2) + " " + quoted(tagged) +
                                     " --output " + quoted(ct2_text) + " --threads 1 --trafo-limit");
    ASSERT_EQ(decoded.exit_code, 0) << decoded.errors;
    EXPECT_EQ(read_text(ct2_text), run(translate_with(model) + quoted(tagged)));
  }
  // An Argos package holds one SentencePiece model for both sides: refused in one line.
  const auto argos = run_trafo("export --format argos --checkpoint " + quoted(checkpoint) + " --out " +
                               quoted(*dir_ / "model.argosmodel"));
  EXPECT_EQ(argos.exit_code, 2);
  EXPECT_EQ(lines_of(argos.errors).size(), 1u) << argos.errors;
}

TEST_F(MarianImport, AFineTunedImportedModelKeepsItsVocabularyAndExportsBack) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  const auto checkpoint = import(make("gelu", "gelu 3 safetensors"));
  const auto run_dir = *dir_ / "fine-tuned";
  const auto trained = run_trafo("train --init-from " + quoted(checkpoint) + " --data-dir " + quoted(*dir_ / "toy") +
                                 " --src-lang en --tgt-lang de --run-dir " + quoted(run_dir) +
                                 " --threads 1 --max-steps 30 --valid-every 30 --lr 1e-3 --warmup-steps 10"
                                 " --early-stopping 0 --valid-max-sentences 5");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto tuned = run_dir / "checkpoint-last.pt";
  // The vocabulary is the imported one, and the weights moved.
  const auto pieces = [&](const fs::path& model) {
    return run_trafo("translate --checkpoint " + quoted(model) + kFp32 + " --input " + quoted(*dir_ / "toy" / "dev.en"))
        .output;
  };
  EXPECT_NE(pieces(tuned), pieces(checkpoint));
  const auto back = exported(tuned, "huggingface");
  expect_as_transformers(" " + quoted(back) + translated(tuned, *dir_ / "toy" / "dev.en"));
  // Fine-tuned tied, it exports as the folder was made: its tensors (one shared matrix, the
  // final_logits_bias trained), each of its shape (the start piece, kept twice in trafo, is one row
  // again), its vocabulary's pieces, and its tying.
  const auto original = tensor_shapes(*dir_ / "gelu"), shapes = tensor_shapes(back);
  const auto config = nlohmann::json::parse(read_text(back / "config.json"));
  EXPECT_EQ(shapes, original);
  const auto pieces_of = [](const fs::path& folder) {
    const auto vocab = nlohmann::json::parse(read_text(folder / "vocab.json"));
    std::set<std::string> pieces;
    for (const auto& [piece, id] : vocab.items()) pieces.insert(piece);
    return pieces;
  };
  EXPECT_EQ(pieces_of(back), pieces_of(*dir_ / "gelu"));
  EXPECT_EQ(config.at("decoder_start_token_id"), config.at("pad_token_id"));
  EXPECT_EQ(config.at("tie_word_embeddings"), true);
  EXPECT_EQ(config.at("share_encoder_decoder_embeddings"), true);
  const auto output_bias = [](const fs::path& model) { return checkpoint::load(model, false).weights.at("output_bias"); };
  EXPECT_FALSE(torch::equal(output_bias(tuned), output_bias(checkpoint)));  // trained
  // Resuming the fine-tuning run continues it (its run record holds the imported model's options).
  const auto resumed = run_trafo("train --run-dir " + quoted(run_dir) + " --max-steps 35 --threads 1");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.errors;

  // A multilingual model's language code is a corpus tag: its corpus's sources start with it.
  const auto multilingual = import(make("relu-codes", "relu 2 bin --codes"));
  const auto toy = *dir_ / "toy";
  const auto tagged_run = *dir_ / "fine-tuned-tagged";
  const auto tagged = run_trafo("train --init-from " + quoted(multilingual) + " --data-dir " + quoted(toy) +
                                " --src-lang en --tgt-lang de --corpus " + quoted(toy / "train.en") + "," +
                                quoted(toy / "train.de") + ",1,'>>deu<<' --run-dir " + quoted(tagged_run) +
                                " --threads 1 --max-steps 5 --valid-every 5 --early-stopping 0 --valid-max-sentences 5");
  ASSERT_EQ(tagged.exit_code, 0) << tagged.errors;
  const auto translated = run_trafo("translate --checkpoint " + quoted(tagged_run / "checkpoint-last.pt") + kFp32 +
                                    " --tag '>>deu<<' --input " + quoted(toy / "test.en"));
  EXPECT_EQ(translated.exit_code, 0) << translated.errors;
  EXPECT_EQ(lines_of(translated.output).size(), 10u);
}

TEST_F(MarianImport, WhatTrafoCannotReadOrExpressIsRefusedInOneLine) {
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  const auto good = make("swish-tied", "swish 1 safetensors --tied");
  const auto with_bin = make("relu-codes", "relu 2 bin --codes");
  const auto variant = [&](const std::string& name, const std::function<void(const fs::path&)>& change) {
    const auto folder = *dir_ / ("bad-" + name);
    util::remove_tree(folder);
    fs::copy(good, folder);
    change(folder);
    return folder;
  };
  const auto with_config = [&](const std::string& key, const nlohmann::json& value) {
    return [key, value](const fs::path& folder) {
      auto config = nlohmann::json::parse(read_text(folder / "config.json"));
      config[key] = value;
      write_text(folder / "config.json", config.dump());
    };
  };
  // A pytorch_model.bin written by torch.save holding `object` (Python), with its `options`
  // (", _use_new_zipfile_serialization=False": the form before PyTorch 1.6).
  const auto pickled = [&](const std::string& object, const std::string& options = "") {
    return [object, options](const fs::path& folder) {
      fs::remove(folder / "model.safetensors");
      const auto saved = run_command(std::string("'") + TRAFO_PYTHON + "' -c 'import os, torch\nclass Evil:\n"
                                     "    def __reduce__(self): return (os.system, (\"touch " + (folder / "ran").string() +
                                     "\",))\ntorch.save(" + object + ", \"" + (folder / "pytorch_model.bin").string() + "\"" +
                                     options + ")'");
      ASSERT_EQ(saved.exit_code, 0) << saved.errors;
    };
  };
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {variant("decoder-vocab", with_config("decoder_vocab_size", 100)), "there is no target_vocab.json"},
      {variant("d-model", with_config("d_model", 64)),
       "model.safetensors: encoder.layers.0.self_attn.q_proj.weight has shape [32, 32], not [64, 64] as config.json gives"},
      {variant("vocab-size", with_config("vocab_size", 1000000000000LL)), "vocab_size 1000000000000 is not in"},
      {variant("list", pickled("[torch.zeros(2)]")), "holds no dict of tensors"},
      {variant("code", pickled("{\"x\": Evil()}")), "no state dict LibTorch reads (Unpickler found unknown type"},
      {variant("legacy-code", pickled("{\"x\": Evil()}", ", _use_new_zipfile_serialization=False")),
       "it names the class posix.system"},
      {variant("legacy-truncated",
               [&](const fs::path& f) {
                 pickled("dict(torch.load(\"" + (with_bin / "pytorch_model.bin").string() +
                         "\", weights_only=True))", ", _use_new_zipfile_serialization=False")(f);
                 fs::resize_file(f / "pytorch_model.bin", fs::file_size(f / "pytorch_model.bin") / 2);
               }),
       "ends early (truncated)"},
      {variant("activation", with_config("activation_function", "tanh")), "activation_function 'tanh'"},
      {variant("type", with_config("model_type", "bart")), "not 'marian'"},
      {variant("no-vocab", [](const fs::path& f) { fs::remove(f / "vocab.json"); }), "vocab.json"},
      {variant("no-weights", [](const fs::path& f) { fs::remove(f / "model.safetensors"); }),
       "neither model.safetensors nor pytorch_model.bin"},
      {variant("truncated",
               [](const fs::path& f) { fs::resize_file(f / "model.safetensors", fs::file_size(f / "model.safetensors") / 2); }),
       "model.safetensors"},
      {variant("bad-spm", [](const fs::path& f) { write_text(f / "target.spm", "not a model"); }),
       "target.spm is not a valid SentencePiece model"},
      {variant("bad-source-spm", [](const fs::path& f) { write_text(f / "source.spm", "not a model"); }),
       "source.spm is not a valid SentencePiece model"},
      // A projection of the wrong shape is named with its file, its name and both shapes, before any
      // arithmetic meets it.
      {variant("k-proj-shape",
               [](const fs::path& f) {
                 const auto file = (f / "model.safetensors").string();
                 const auto changed = run_command(
                     std::string("'") + TRAFO_PYTHON + "' -c 'import torch\nfrom safetensors.torch import load_file, save_file\n"
                     "w = load_file(\"" + file + "\")\nname = [k for k in w if k.endswith(\"encoder.layers.0.self_attn.k_proj.weight\")][0]\n"
                     "w[name] = torch.zeros(w[name].shape[0], w[name].shape[1] // 2)\nsave_file(w, \"" + file +
                     "\", metadata={\"format\": \"pt\"})'");
                 ASSERT_EQ(changed.exit_code, 0) << changed.errors;
               }),
       "model.safetensors: encoder.layers.0.self_attn.k_proj.weight has shape ["},
      {*dir_ / "no-such-folder", "is not a folder"},
      // A config trafo's model cannot take is config.json's fault, named before a weight is read.
      {variant("heads",
               [&](const fs::path& f) {
                 with_config("encoder_attention_heads", 3)(f);
                 with_config("decoder_attention_heads", 3)(f);
               }),
       "bad-heads/config.json: invalid model config: heads (3) must divide d-model"},
  };
  for (const auto& [folder, expected] : cases) {
    SCOPED_TRACE(folder.filename().string());
    const auto out = fs::path(folder.string() + ".pt");
    const auto result = run_trafo("import --from " + quoted(folder) + " --out " + quoted(out));
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_EQ(lines_of(result.errors).size(), 1u) << result.errors;
    EXPECT_NE(result.errors.find(expected), std::string::npos) << result.errors;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(folder / "ran"));  // a pickle's code never runs
  }
  // --out that is one of the folder's files by another name (a hard link) is refused, --force or not.
  const auto link = *dir_ / "hard-link.pt";
  fs::remove(link);
  fs::create_hard_link(good / "source.spm", link);
  const auto spm = read_text(good / "source.spm");
  const auto linked = run_trafo("import --from " + quoted(good) + " --out " + quoted(link) + " --force");
  EXPECT_EQ(linked.exit_code, 2) << linked.errors;
  EXPECT_NE(linked.errors.find("by another name"), std::string::npos) << linked.errors;
  EXPECT_EQ(read_text(good / "source.spm"), spm);
  EXPECT_EQ(read_text(link), spm);
}

}  // namespace
}  // namespace trafo::testing
