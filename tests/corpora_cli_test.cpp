// `trafo train` on data at scale, through the binary: the cache folder reused by a new run, several
// corpora with weights and tags (resumed exactly), [[corpus]] tables, `translate --tag`, the leak
// check, and bad input in one line with exit 2 and nothing saved lost.
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "data_support.h"
#include "run_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/case_variants.h"
#include "trafo/metrics/language_id.h"

namespace trafo::testing {
namespace {

const char* kCorporaModel =
    " --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
    " --batch-tokens 200 --threads 1 --valid-max-sentences 5 --log-every 1 --early-stopping 0";

class CorporaCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = make_temp_dir("corpora-cli");
    data_ = root_ / "data";
    std::filesystem::create_directories(data_);
    write_synthetic_corpus(data_, "train", 80, 1);
    write_synthetic_corpus(data_, "dev", 6, 2);
    write_synthetic_corpus(data_, "extra", 40, 3);
    cache_ = root_ / "cache";
  }
  std::string base(const std::string& run, const std::filesystem::path& cache = {}) const {
    return "train --data-dir " + quoted(data_) + " --src-lang en --tgt-lang de --cache-dir " +
           quoted(cache.empty() ? cache_ : cache) + " --run-dir " + quoted(root_ / run) + kCorporaModel;
  }
  std::string two_corpora() const {
    return " --corpus " + quoted(data_ / "train.en") + "," + quoted(data_ / "train.de") + ",3 --corpus " +
           quoted(data_ / "extra.en") + "," + quoted(data_ / "extra.de") + ",1,'<bt>'";
  }
  nlohmann::json start_event(const std::string& run) const {
    for (const auto& event : read_jsonl(root_ / run / "metrics.jsonl")) {
      if (event["event"] == "start") return event;
    }
    return {};
  }
  std::filesystem::path root_, data_, cache_;
};

void expect_same_weights(const std::filesystem::path& a, const std::filesystem::path& b) {
  const auto x = checkpoint::load(a), y = checkpoint::load(b);
  ASSERT_EQ(x.weights.size(), y.weights.size());
  for (const auto& [name, tensor] : x.weights) EXPECT_TRUE(torch::equal(tensor, y.weights.at(name))) << name;
}

TEST_F(CorporaCli, ANewRunOnTheSameDataReusesTheVocabularyAndTheTokenCache) {
  const auto first = run_trafo(base("a") + " --max-steps 2 --valid-every 2");
  ASSERT_EQ(first.exit_code, 0) << first.errors;
  EXPECT_NE(first.errors.find("learned the vocabulary from 160 sentences"), std::string::npos) << first.errors;
  EXPECT_TRUE(start_event("a")["corpora"][0]["token_cache_built"].get<bool>());
  EXPECT_EQ(start_event("a")["cache_dir"], cache_.string());

  const auto second = run_trafo(base("b") + " --max-steps 2 --valid-every 2 --seed 5");
  ASSERT_EQ(second.exit_code, 0) << second.errors;
  EXPECT_NE(second.errors.find("reusing the vocabulary learned before"), std::string::npos) << second.errors;
  EXPECT_EQ(second.errors.find("tokenizing"), std::string::npos) << second.errors;
  EXPECT_FALSE(start_event("b")["corpora"][0]["token_cache_built"].get<bool>());
  EXPECT_EQ(checkpoint::load(root_ / "a" / "checkpoint-last.pt").tokenizer,
            checkpoint::load(root_ / "b" / "checkpoint-last.pt").tokenizer);

  // Other vocabulary options are another vocabulary.
  const auto third = run_trafo(base("c") + " --max-steps 1 --valid-every 1 --vocab-type bpe");
  ASSERT_EQ(third.exit_code, 0) << third.errors;
  EXPECT_NE(third.errors.find("learned the vocabulary"), std::string::npos) << third.errors;
}

TEST_F(CorporaCli, TwoCorporaWithWeightsAndATagResumeBitwiseAndTranslateWithTheTag) {
  // fp32 in the runs compared below: auto times the CPU and the model at start, and may pick
  // differently from one run to the next.
  const std::string fp32 = " --precision fp32";
  const auto whole =
      run_trafo(base("whole") + two_corpora() + fp32 + " --max-steps 12 --valid-every 6 --valid-tag '<bt>'");
  ASSERT_EQ(whole.exit_code, 0) << whole.errors;
  const auto start = start_event("whole");
  ASSERT_EQ(start["corpora"].size(), 2u);
  EXPECT_EQ(start["corpora"][0]["pairs"], 80);
  EXPECT_DOUBLE_EQ(start["corpora"][0]["share"].get<double>(), 0.75);
  EXPECT_EQ(start["corpora"][1]["tag"], "<bt>");
  EXPECT_NE(whole.errors.find("weight 1 (25.0% of the pairs served), tag <bt>"), std::string::npos) << whole.errors;
  int64_t pairs[2] = {0, 0};
  for (const auto& event : read_jsonl(root_ / "whole" / "metrics.jsonl")) {
    if (event["event"] != "train") continue;
    ASSERT_TRUE(event.contains("corpus_pairs")) << event.dump();
    pairs[0] += event["corpus_pairs"][0].get<int64_t>();
    pairs[1] += event["corpus_pairs"][1].get<int64_t>();
  }
  EXPECT_GT(pairs[0], pairs[1]);
  EXPECT_GT(pairs[1], 0);

  const auto part = run_trafo(base("part") + two_corpora() + fp32 + " --max-steps 7 --valid-every 6");
  ASSERT_EQ(part.exit_code, 0) << part.errors;
  const auto rest = run_trafo(base("part") + two_corpora() + fp32 + " --max-steps 12 --valid-every 6");
  ASSERT_EQ(rest.exit_code, 0) << rest.errors;
  EXPECT_NE(rest.errors.find("resuming from"), std::string::npos);
  expect_same_weights(root_ / "whole" / "checkpoint-last.pt", root_ / "part" / "checkpoint-last.pt");

  // The weights are part of the run: another weight at a resume is refused, naming it.
  const auto reweighted = run_trafo(base("part") + " --corpus " + quoted(data_ / "train.en") + "," +
                                    quoted(data_ / "train.de") + ",2 --corpus " + quoted(data_ / "extra.en") + "," +
                                    quoted(data_ / "extra.de") + ",1,'<bt>' --max-steps 14");
  EXPECT_EQ(reweighted.exit_code, 2);
  EXPECT_NE(reweighted.errors.find("corpus 1 weight 3 vs 2"), std::string::npos) << reweighted.errors;

  write_text(root_ / "in.txt", "the cat\n");
  const auto tagged = run_trafo("translate -c " + quoted(root_ / "whole" / "checkpoint-last.pt") +
                                " --tag '<bt>' --threads 1 < " + quoted(root_ / "in.txt"));
  EXPECT_EQ(tagged.exit_code, 0) << tagged.errors;
  const auto unknown = run_trafo("translate -c " + quoted(root_ / "whole" / "checkpoint-last.pt") +
                                 " --tag '<xx>' --threads 1 < " + quoted(root_ / "in.txt"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.errors.find("its tags: <bt>"), std::string::npos) << unknown.errors;
  // Validation with --valid-tag is a fresh `eval --tag` of the same checkpoint.
  const auto evaluated = run_trafo("eval -c " + quoted(root_ / "whole" / "checkpoint-12.pt") + " --tag '<bt>' --src " +
                                   quoted(data_ / "dev.en") + " --ref " + quoted(data_ / "dev.de") +
                                   " --threads 1 --batch-tokens 256 --json" + fp32);
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.errors;
  double valid_loss = 0.0;
  for (const auto& event : read_jsonl(root_ / "whole" / "metrics.jsonl")) {
    if (event["event"] == "valid" && event["step"] == 12) valid_loss = event["loss"].get<double>();
  }
  EXPECT_NEAR(nlohmann::json::parse(evaluated.output)["loss"].get<double>(), valid_loss, 1e-5);
  const auto untagged = run_trafo("eval -c " + quoted(root_ / "whole" / "checkpoint-12.pt") + " --src " +
                                  quoted(data_ / "dev.en") + " --ref " + quoted(data_ / "dev.de") +
                                  " --threads 1 --batch-tokens 256 --json" + fp32);
  ASSERT_EQ(untagged.exit_code, 0) << untagged.errors;
  EXPECT_NE(nlohmann::json::parse(untagged.output)["loss"].get<double>(), valid_loss) << "the tag changes the input";
}

// A model trained on corpora tagged with target-language codes translates into each: --tgt-lang picks
// the code's tag, a line may begin with its own code, and a line with neither, or an unknown target,
// is a one-line error naming the choices. On a model of one target, --tgt-lang must be that one.
TEST_F(CorporaCli, TgtLangChoosesTheTargetOfAModelOfSeveral) {
  const auto trained = run_trafo(base("multi") + " --corpus " + quoted(data_ / "train.en") + "," +
                                 quoted(data_ / "train.de") + ",1,'>>de<<' --corpus " + quoted(data_ / "extra.en") + "," +
                                 quoted(data_ / "extra.de") + ",1,'>>fr<<' --max-steps 3 --valid-tag '>>de<<'");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto model = " -c " + quoted(root_ / "multi" / "checkpoint-last.pt") + " --threads 1 --precision fp32";
  write_text(root_ / "in.txt", "the cat\n\nthe dog\n");
  write_text(root_ / "coded.txt", ">>fr<< the cat\n\n>>de<< the dog\n");
  const auto translate = [&](const std::string& options, const std::string& input = "in.txt") {
    return run_trafo("translate" + model + options + " < " + quoted(root_ / input));
  };
  const auto by_lang = translate(" --tgt-lang fr"), by_tag = translate(" --tag '>>fr<<'");
  ASSERT_EQ(by_lang.exit_code, 0) << by_lang.errors;
  EXPECT_EQ(by_lang.output, by_tag.output);
  EXPECT_EQ(lines_of(by_lang.output).size(), 3u);
  // A line's own code is read as --tgt-lang's tag: the same pieces, the same translation.
  const auto coded = translate("", "coded.txt");
  EXPECT_EQ(coded.exit_code, 0) << coded.errors;
  const auto coded_lines = lines_of(coded.output);
  ASSERT_EQ(coded_lines.size(), 3u);
  EXPECT_EQ(coded_lines[0], lines_of(by_lang.output)[0]);
  EXPECT_EQ(coded_lines[2], lines_of(translate(" --tgt-lang de").output)[2]);

  const auto expect_refused = [](const CommandResult& result, const std::string& said) {
    EXPECT_EQ(result.exit_code, 2) << result.output;
    int errors = 0;
    for (const auto& line : lines_of(result.errors)) errors += line.rfind("trafo: error: ", 0) == 0 ? 1 : 0;
    EXPECT_EQ(errors, 1) << result.errors;
    EXPECT_NE(result.errors.find(said), std::string::npos) << result.errors;
  };
  expect_refused(translate(""), "line 1 names no target language, and the model translates into de, fr");
  expect_refused(translate(" --tgt-lang it"), "translates into de, fr (its >>xx<< codes)");
  write_text(root_ / "it.txt", ">>it<< the cat\n");
  expect_refused(translate("", "it.txt"), "line 1 asks for >>it<<, which the model does not translate into (de, fr)");
  write_text(root_ / "blank.txt", ">>fr<<\tthe cat\n  \n");  // a tab after the code; a blank line is a blank line
  const auto blank = translate("", "blank.txt");
  EXPECT_EQ(blank.exit_code, 0) << blank.errors;
  EXPECT_EQ(lines_of(blank.output).size(), 2u);
  expect_refused(translate(" --tgt-lang fr --tag '>>de<<'"), "choose different tags");
  const auto eval = [&](const std::string& options) {
    return run_trafo("eval" + model + options + " --src " + quoted(data_ / "dev.en") + " --ref " +
                     quoted(data_ / "dev.de") + " --json");
  };
  const auto evaluated = eval(" --tgt-lang de");
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.errors;
  EXPECT_TRUE(nlohmann::json::parse(evaluated.output).contains("bleu"));
  expect_refused(eval(""), "dev.en line 1 names no target language");
  for (const std::string verb : {"score-pairs", "align"}) {
    const auto pairs = " --src " + quoted(data_ / "dev.en") + " --tgt " + quoted(data_ / "dev.de");
    expect_refused(run_trafo(verb + model + pairs), "dev.en line 1 names no target language");
    EXPECT_EQ(run_trafo(verb + model + pairs + " --tgt-lang fr").exit_code, 0) << verb;
  }

  const auto one = run_trafo(base("one") + " --max-steps 2");
  ASSERT_EQ(one.exit_code, 0) << one.errors;
  const auto one_model = " -c " + quoted(root_ / "one" / "checkpoint-last.pt") + " --threads 1 < " + quoted(root_ / "in.txt");
  EXPECT_EQ(run_trafo("translate --tgt-lang de" + one_model).exit_code, 0);
  expect_refused(run_trafo("translate --tgt-lang fr" + one_model), "--tgt-lang fr: ");
}

// Corpora with their own target languages: with two of them, each corpus's sources begin with its
// target's >>xx<< tag, the dev set with the run's, and the checkpoint lists both targets.
TEST_F(CorporaCli, CorporaOfTwoTargetLanguagesTrainAModelOfBoth) {
  // "fr": the synthetic German with another suffix ("catou" for "caten"), a language of its own to an
  // identifier of character n-grams.
  const auto french = [](const std::string& german) { return std::regex_replace(german, std::regex("en\\b"), "ou"); };
  write_text(data_ / "extra.fr", french(read_text(data_ / "extra.de")));
  const auto corpora = " --corpus " + quoted(data_ / "train.en") + "," + quoted(data_ / "train.de") + ",1,,,en,de --corpus " +
                       quoted(data_ / "extra.en") + "," + quoted(data_ / "extra.fr") + ",1,,,en,fr";
  // en-fr's own dev pair, as fairseq names them (a multi-way dev.fr beside dev.en would do too)
  std::filesystem::copy_file(data_ / "dev.en", data_ / "dev.en-fr.en");
  write_text(data_ / "dev.en-fr.fr", french(read_text(data_ / "dev.de")));
  const auto trained = run_trafo(base("two") + corpora + " --max-steps 3 --valid-every 3 --precision fp32");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  // Validation judges each direction and their macro average; each direction's figures are a fresh
  // `eval --tgt-lang` of the checkpoint.
  nlohmann::json valid;
  for (const auto& event : read_jsonl(root_ / "two" / "metrics.jsonl")) {
    if (event["event"] == "valid") valid = event;
  }
  ASSERT_TRUE(valid.contains("directions")) << valid.dump();
  const auto& directions = valid["directions"];
  ASSERT_EQ(directions.size(), 2u) << directions.dump();
  EXPECT_NEAR(valid["bleu"].get<double>(),
              (directions["en-de"]["bleu"].get<double>() + directions["en-fr"]["bleu"].get<double>()) / 2, 1e-9);
  EXPECT_NEAR(valid["loss"].get<double>(),
              (directions["en-de"]["loss"].get<double>() + directions["en-fr"]["loss"].get<double>()) / 2, 1e-9);
  const auto identifier =
      metrics::LanguageId::from_json(checkpoint::load(root_ / "two" / "checkpoint-3.pt", false).inference.language_id);
  for (const std::string target : {"de", "fr"}) {
    const auto reference = data_ / (target == "de" ? "dev.de" : "dev.en-fr.fr");
    const auto evaluate = [&](const std::filesystem::path& source, const std::filesystem::path& ref,
                              const std::string& more = "") {
      const auto evaluated = run_trafo("eval -c " + quoted(root_ / "two" / "checkpoint-3.pt") + " --tgt-lang " + target +
                                       " --src " + quoted(source) + " --ref " + quoted(ref) +
                                       " --threads 1 --json --precision fp32" + more);
      EXPECT_EQ(evaluated.exit_code, 0) << evaluated.errors;
      return nlohmann::json::parse(evaluated.output);
    };
    // The loss is over every dev pair; the translations over the first --valid-max-sentences (5).
    EXPECT_NEAR(evaluate(data_ / "dev.en", reference)["loss"].get<double>(),
                directions["en-" + target]["loss"].get<double>(), 1e-5) << target;
    const auto lines = lines_of(read_text(reference)), sources = lines_of(read_text(data_ / "dev.en"));
    std::string first_sources, first_references;
    for (size_t i = 0; i < 5; ++i) {
      first_sources += sources[i] + "\n";
      first_references += lines[i] + "\n";
    }
    write_text(root_ / "five.en", first_sources);
    write_text(root_ / ("five." + target), first_references);
    EXPECT_NEAR(evaluate(root_ / "five.en", root_ / ("five." + target))["bleu"].get<double>(),
                directions["en-" + target]["bleu"].get<double>(), 1e-6) << target;
    // The off-target rate: the checkpoint's identifier, learned from the corpora's target sides,
    // labels every reference as its language, and eval's counts are its labels of eval's own
    // translations.
    const auto translations = root_ / ("dev.out." + target);
    const auto off = evaluate(data_ / "dev.en", reference, " -o " + quoted(translations))["off_target"];
    ASSERT_TRUE(off.is_object()) << target;
    EXPECT_EQ(off["references_identified"].get<double>(), 1.0) << target;
    const auto counts = metrics::OffTarget::count(identifier, std::vector<std::string>(lines.size(), target), lines,
                                                  lines_of(read_text(translations)));
    EXPECT_EQ(off["judged"].get<int64_t>(), counts.judged) << target;
    EXPECT_EQ(off["lines"].get<int64_t>(), counts.off()) << target;
    std::vector<int64_t> numbers;  // 1-based, to look at
    for (const int64_t i : counts.off_lines) numbers.push_back(i + 1);
    EXPECT_EQ(off["line_numbers"].get<std::vector<int64_t>>(), numbers) << target;
    EXPECT_EQ(off["labelled"].get<int64_t>(), counts.labelled) << target;
    EXPECT_EQ(off["labelled_lines"].get<int64_t>(), counts.labelled_off) << target;
    EXPECT_EQ(counts.references, static_cast<int64_t>(lines.size())) << target;
    // It knows the source language too: English copied through untranslated is off target.
    const auto copied = metrics::OffTarget::count(identifier, std::vector<std::string>(lines.size(), target), lines,
                                                  sources);
    EXPECT_GT(copied.judged, static_cast<int64_t>(lines.size()) * 9 / 10) << target;
    EXPECT_EQ(copied.off(), copied.judged) << target;
  }
  EXPECT_EQ(identifier.languages(), (std::vector<std::string>{"de", "en", "fr"}));
  const auto start = start_event("two");
  ASSERT_EQ(start["corpora"].size(), 2u);
  EXPECT_EQ(start["corpora"][0]["tag"], ">>de<<");
  EXPECT_EQ(start["corpora"][1]["tag"], ">>fr<<");
  EXPECT_EQ(start["corpora"][1]["tgt_lang"], "fr");
  const auto saved = checkpoint::load(root_ / "two" / "checkpoint-last.pt", false);
  EXPECT_EQ(saved.inference.tags, (std::vector<std::string>{">>de<<", ">>fr<<"}));
  EXPECT_NE(read_text(root_ / "two" / "config.toml").find("valid-tag=\">>de<<\""), std::string::npos);
  // A resume settles the same tags; the model translates into either.
  const auto resumed = run_trafo(base("two") + corpora + " --max-steps 4 --valid-every 3 --precision fp32");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.errors;
  write_text(root_ / "in.txt", "the cat\n");
  const auto model = " -c " + quoted(root_ / "two" / "checkpoint-last.pt") + " --threads 1 --precision fp32 < " +
                     quoted(root_ / "in.txt");
  EXPECT_EQ(run_trafo("translate --tgt-lang fr" + model).output, run_trafo("translate --tag '>>fr<<'" + model).output);

  // A corpus tagged otherwise, or a dev language no corpus has, is one line and exit 2.
  const auto tagged = run_trafo(base("bad") + " --corpus " + quoted(data_ / "train.en") + "," +
                                quoted(data_ / "train.de") + ",1,'<bt>',,en,de --corpus " + quoted(data_ / "extra.en") +
                                "," + quoted(data_ / "extra.de") + ",1,,,en,fr --max-steps 1");
  EXPECT_EQ(tagged.exit_code, 2);
  EXPECT_NE(tagged.errors.find("corpus 1 has the tag <bt>"), std::string::npos) << tagged.errors;
  const auto no_dev = run_trafo(base("bad") + " --corpus " + quoted(data_ / "train.en") + "," + quoted(data_ / "train.de") +
                                ",1,,,en,es --corpus " + quoted(data_ / "extra.en") + "," + quoted(data_ / "extra.de") +
                                ",1,,,en,fr --max-steps 1");
  EXPECT_EQ(no_dev.exit_code, 2);
  EXPECT_NE(no_dev.errors.find("none of the corpora's target languages (es, fr)"), std::string::npos) << no_dev.errors;
  EXPECT_EQ(run_trafo(base("bad") + " --corpus a,b,1,,,en --max-steps 1").exit_code, 2);
}

// --retry-off-target: a translation the model's identifier labels as another language than asked is
// decoded again, and one of the beam's in the language asked replaces it; the others keep their
// pieces. Here an identifier that takes the model's own French for German finds every translation off
// target, so every sentence is decoded again.
TEST_F(CorporaCli, RetryOffTargetReplacesOnlyTranslationsInAnotherLanguage) {
  const auto french = [](const std::string& german) { return std::regex_replace(german, std::regex("en\\b"), "ou"); };
  write_text(data_ / "extra.fr", french(read_text(data_ / "extra.de")));
  const auto corpora = " --corpus " + quoted(data_ / "train.en") + "," + quoted(data_ / "train.de") + ",1,,,en,de --corpus " +
                       quoted(data_ / "extra.en") + "," + quoted(data_ / "extra.fr") + ",1,,,en,fr";
  const auto trained = run_trafo(base("two") + corpora +
                                 " --max-steps 150 --valid-every 150 --lr 3e-3 --warmup-steps 20 --precision fp32");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto checkpoint_path = root_ / "two" / "checkpoint-last.pt";
  const auto translate = [&](const std::filesystem::path& model, const std::string& more) {
    const auto translated = run_trafo("translate -c " + quoted(model) + " --tgt-lang fr --threads 1 --precision fp32 -i " +
                                      quoted(data_ / "dev.en") + more);
    EXPECT_EQ(translated.exit_code, 0) << translated.errors;
    return lines_of(translated.output);
  };
  const auto plain = translate(checkpoint_path, "");
  const auto sources = lines_of(read_text(data_ / "dev.en"));
  ASSERT_EQ(plain.size(), sources.size());

  auto swapped = checkpoint::load(checkpoint_path, false);
  const auto identifier = metrics::LanguageId::learn(
      {{"de", plain}, {"fr", lines_of(read_text(data_ / "extra.fr"))}, {"en", lines_of(read_text(data_ / "train.en"))}});
  swapped.inference.language_id = identifier.to_json();
  checkpoint::save(root_ / "swapped.pt", swapped);
  const auto retried = translate(root_ / "swapped.pt", " --retry-off-target 4");
  ASSERT_EQ(retried.size(), plain.size());
  int changed = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    const auto label = identifier.identify(plain[i]);
    if (label.empty() || label == "fr") {
      EXPECT_EQ(retried[i], plain[i]) << i;
    } else if (retried[i] != plain[i]) {
      EXPECT_EQ(identifier.identify(retried[i]), "fr") << i << ": " << retried[i];
      ++changed;
    }
  }
  EXPECT_GT(changed, 0);
  // eval takes the same translations, and finds fewer off target.
  write_text(data_ / "dev.fr", french(read_text(data_ / "dev.de")));
  const auto evaluate = [&](const std::string& more) {
    const auto evaluated = run_trafo("eval -c " + quoted(root_ / "swapped.pt") + " --tgt-lang fr --src " +
                                     quoted(data_ / "dev.en") + " --ref " + quoted(data_ / "dev.fr") +
                                     " --threads 1 --precision fp32 --json -o " + quoted(root_ / "eval.out") + more);
    EXPECT_EQ(evaluated.exit_code, 0) << evaluated.errors;
    return nlohmann::json::parse(evaluated.output)["off_target"];
  };
  const auto before = evaluate("")["lines"].get<int64_t>();
  EXPECT_EQ(lines_of(read_text(root_ / "eval.out")), plain);
  EXPECT_LT(evaluate(" --retry-off-target 4")["lines"].get<int64_t>(), before);
  EXPECT_EQ(lines_of(read_text(root_ / "eval.out")), retried);

  // On a model of one target language the option would do nothing: refused, in one line.
  const auto single = run_trafo(base("one") + " --max-steps 1 --valid-every 1 --precision fp32");
  ASSERT_EQ(single.exit_code, 0) << single.errors;
  const auto one = run_trafo("translate -c " + quoted(root_ / "one" / "checkpoint-last.pt") +
                             " --threads 1 --precision fp32 --retry-off-target 4 -i " + quoted(data_ / "dev.en"));
  EXPECT_EQ(one.exit_code, 2) << one.errors;
  EXPECT_NE(one.errors.find("trafo: error: --retry-off-target has nothing to check here"), std::string::npos)
      << one.errors;
  EXPECT_TRUE(one.output.empty());
  const auto bad = run_trafo("translate -c " + quoted(checkpoint_path) + " --tgt-lang fr --retry-off-target -1 -i " +
                             quoted(data_ / "dev.en"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.errors.find("retry-off-target must be 0 (off) or a beam between 2 and"), std::string::npos)
      << bad.errors;
}

// --sampling-temperature T draws each corpus by its weight x its pairs^(1/T): T = 1 by size, T = 2
// nearer even; the start record and train.log give each share, and a negative T is a one-line error.
TEST_F(CorporaCli, SamplingTemperatureDrawsByWeightAndSize) {
  const std::string corpora = " --corpus " + quoted(data_ / "train.en") + "," + quoted(data_ / "train.de") +
                              " --corpus " + quoted(data_ / "extra.en") + "," + quoted(data_ / "extra.de");
  for (const double t : {1.0, 2.0}) {
    const std::string run = t == 1.0 ? "t1" : "t2";
    const auto trained = run_trafo(base(run) + corpora + " --max-steps 2 --valid-every 2 --sampling-temperature " +
                                   std::to_string(t));
    ASSERT_EQ(trained.exit_code, 0) << trained.errors;
    const auto start = start_event(run);
    ASSERT_EQ(start["corpora"].size(), 2u);
    const double a = std::pow(start["corpora"][0]["pairs"].get<double>(), 1.0 / t);
    const double b = std::pow(start["corpora"][1]["pairs"].get<double>(), 1.0 / t);
    EXPECT_NEAR(start["corpora"][0]["share"].get<double>(), a / (a + b), 1e-12) << "T " << t;
    EXPECT_NE(read_text(root_ / run / "train.log").find(t == 1.0 ? "weight 1 x pairs^(1/1)" : "weight 1 x pairs^(1/2)"),
              std::string::npos);
    EXPECT_NE(read_text(root_ / run / "config.toml").find("sampling-temperature="), std::string::npos);
  }
  EXPECT_NEAR(start_event("t1")["corpora"][0]["share"].get<double>(), 80.0 / 120.0, 1e-12);
  // The temperature is the run's, as the weights are: another one at a resume is refused, naming it.
  const auto changed = run_trafo(base("t1") + corpora + " --max-steps 4 --sampling-temperature 2");
  EXPECT_EQ(changed.exit_code, 2);
  EXPECT_NE(changed.errors.find("sampling-temperature"), std::string::npos) << changed.errors;
  const auto bad = run_trafo(base("t3") + corpora + " --max-steps 2 --sampling-temperature -1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.errors.find("sampling-temperature must be finite and not negative"), std::string::npos) << bad.errors;
}

// A temperature near 0 (or a weight near 0) gives the smaller corpus no share of the draw: the first
// corpus's epoch would never end and its batches per epoch overflow. A one-line error naming the
// corpus, before a step; under the timeout, since the run used to go on for ever.
TEST_F(CorporaCli, ACorpusThatWouldNeverBeDrawnIsAnError) {
  const std::string first = " --corpus " + quoted(data_ / "extra.en") + "," + quoted(data_ / "extra.de");
  const std::string second = " --corpus " + quoted(data_ / "train.en") + "," + quoted(data_ / "train.de");
  for (const std::string& options :
       {first + second + " --sampling-temperature 1e-300", first + ",1e-9" + second, second + first + ",1e-9"}) {
    const auto run = root_ / "never";
    const auto result = run_command("timeout 120 '" + std::string(TRAFO_BINARY) + "' " + base("never") + options +
                                    " --max-epochs 1 --max-steps 0");
    EXPECT_EQ(result.exit_code, 2) << options << ": " << result.errors;
    const auto lines = lines_of(result.errors);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back().rfind("trafo: error: corpus ", 0), 0u) << result.errors;
    EXPECT_NE(lines.back().find("extra.en"), std::string::npos) << result.errors;
    EXPECT_NE(lines.back().find("at least 0.01%"), std::string::npos) << result.errors;
    EXPECT_EQ(read_text(run / "metrics.jsonl").find("\"train\""), std::string::npos);
  }
}

// --all-caps-every and --title-case-every: the variants join the token cache (one of their own, named
// by the options), the start record and train.log count them, and they are the run's at a resume.
TEST_F(CorporaCli, CaseVariantsJoinTheTokenCacheAndAreCounted) {
  int64_t variants = 0;
  const auto sources = lines_of(read_text(data_ / "train.en")), targets = lines_of(read_text(data_ / "train.de"));
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto line = static_cast<int64_t>(i + 1);
    // a variant that reads otherwise on either side
    variants += line % 4 == 0 && (data::all_caps(sources[i]) != sources[i] || data::all_caps(targets[i]) != targets[i]);
    variants += line % 5 == 0 && (data::english_title_case(sources[i]) != sources[i] ||
                                  data::sentence_case(targets[i]) != targets[i]);
  }
  ASSERT_GT(variants, 20);
  const auto plain = run_trafo(base("plain") + " --max-steps 1 --valid-every 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.errors;
  const auto cased =
      run_trafo(base("cased") + " --max-steps 1 --valid-every 1 --all-caps-every 4 --title-case-every 5");
  ASSERT_EQ(cased.exit_code, 0) << cased.errors;
  const auto corpus = start_event("cased")["corpora"][0];
  EXPECT_EQ(corpus["pairs"].get<int64_t>(), 80 + variants);
  EXPECT_EQ(corpus["case_variants"].get<int64_t>(), variants);
  EXPECT_TRUE(corpus["token_cache_built"].get<bool>());
  EXPECT_NE(corpus["token_cache"], start_event("plain")["corpora"][0]["token_cache"]);
  EXPECT_FALSE(start_event("plain")["corpora"][0].contains("case_variants"));
  EXPECT_NE(
      read_text(root_ / "cased" / "train.log")
          .find(std::to_string(80 + variants) + " pairs (" + std::to_string(variants) + " of them case variants)"),
      std::string::npos);
  const auto changed = run_trafo(base("cased") + " --max-steps 2 --all-caps-every 3 --title-case-every 5");
  EXPECT_EQ(changed.exit_code, 2);
  EXPECT_NE(changed.errors.find("all-caps-every 4 vs 3"), std::string::npos) << changed.errors;
  const auto bad = run_trafo(base("bad") + " --max-steps 1 --title-case-every -2");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.errors.find("must not be negative"), std::string::npos) << bad.errors;
}

TEST_F(CorporaCli, CorpusTablesInAConfigFile) {
  write_text(root_ / "c.toml", "max-steps = 2\nvalid-every = 2\n\n[[corpus]]\nsrc = \"" + (data_ / "train.en").string() +
                                   "\"\ntgt = \"" + (data_ / "train.de").string() + "\"\nweight = 2\n\n[[corpus]]  # back-translations\nsrc = \"" +
                                   (data_ / "extra.en").string() + "\"\ntgt = \"" + (data_ / "extra.de").string() +
                                   "\"\ntag = \">>bt<<\"\n");
  const auto dumped = run_trafo(base("t") + " --config " + quoted(root_ / "c.toml") + " --dump-config");
  ASSERT_EQ(dumped.exit_code, 0) << dumped.errors;
  EXPECT_NE(dumped.output.find("[[corpus]]\nsrc=\"" + (data_ / "extra.en").string()), std::string::npos) << dumped.output;
  EXPECT_NE(dumped.output.find("tag=\">>bt<<\""), std::string::npos) << dumped.output;
  const auto trained = run_trafo(base("t") + " --config " + quoted(root_ / "c.toml"));
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto start = start_event("t");
  ASSERT_EQ(start["corpora"].size(), 2u);
  EXPECT_NEAR(start["corpora"][0]["share"].get<double>(), 2.0 / 3.0, 1e-12);
  EXPECT_NE(read_text(root_ / "t" / "config.toml").find("tag=\">>bt<<\""), std::string::npos);

  write_text(root_ / "bad.toml", "[[corpus]]\nsrc = \"a\"\nsource = \"b\"\n");
  const auto bad = run_trafo(base("u") + " --config " + quoted(root_ / "bad.toml"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.errors.find("bad.toml:3: [[corpus]] source: unknown key"), std::string::npos) << bad.errors;
}

TEST_F(CorporaCli, DevAndTestPairsAlsoInTrainingAreCounted) {
  const auto train_lines = lines_of(read_text(data_ / "train.en"));
  write_text(data_ / "dev.en", "zebra one\n" + train_lines[5] + "\nzebra two\nzebra three\n" + train_lines[50] +
                                   "\nzebra four\n");
  write_text(data_ / "test.en", train_lines[7] + "\nzebra\n");
  write_text(data_ / "test.de", "a\nb\n");
  const auto result = run_trafo(base("leak") + " --max-steps 1 --valid-every 1");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_NE(result.errors.find("2 of 6 dev pairs have a source sentence that is also in the training data"),
            std::string::npos)
      << result.errors;
  EXPECT_NE(result.errors.find("lines 2, 5)"), std::string::npos) << result.errors;
  EXPECT_NE(result.errors.find("1 of 2 test pairs"), std::string::npos) << result.errors;
  EXPECT_EQ(start_event("leak")["dev_pairs_in_training"], 2);
  EXPECT_EQ(start_event("leak")["test_pairs_in_training"], 1);
}

TEST_F(CorporaCli, BadInputIsOneLineAndExitTwoAndKeepsWhatWasSaved) {
  const auto first = run_trafo(base("kept") + " --max-steps 2 --valid-every 2");
  ASSERT_EQ(first.exit_code, 0) << first.errors;
  const auto saved = read_text(root_ / "kept" / "checkpoint-last.pt");
  write_text(root_ / "short.de", read_text(data_ / "extra.de").substr(0, read_text(data_ / "extra.de").rfind('\n', read_text(data_ / "extra.de").size() - 2) + 1));
  write_text(root_ / "a-file", "x");
  write_text(root_ / "tagged.en", "the <zz> cat\nthe dog\n");
  write_text(root_ / "tagged.de", "a\nb\n");
  const std::string extra = quoted(data_ / "extra.en") + "," + quoted(data_ / "extra.de");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --corpus " + quoted(root_ / "nope.en") + "," + quoted(root_ / "nope.de"), "missing data file"},
      {" --corpus " + quoted(data_ / "extra.en") + "," + quoted(root_ / "short.de"), "has 40 lines"},
      {" --corpus " + extra + ",0", "weight must be positive"},
      {" --corpus " + extra + ",-2", "weight must be positive"},
      {" --corpus " + extra + ",x", "--corpus: weight 'x'"},
      {" --corpus " + quoted(data_ / "extra.en"), "is not SRC,TGT[,WEIGHT[,TAG[,ALIGNMENT[,SRC_LANG,TGT_LANG]]]]"},
      {" --corpus " + extra + ",1,'<s>'", "a piece SentencePiece reserves"},
      {" --corpus " + extra + ",1,'a b'", "must not hold white space"},
      {" --corpus " + quoted(root_ / "tagged.en") + "," + quoted(root_ / "tagged.de") + ",1,'<zz>' --corpus " + extra,
       "the corpus tag <zz> is written in the text"},
      {"CACHE", "cannot create the cache folder"},
      {" --train-src " + quoted(data_ / "train.en") + " --train-tgt " + quoted(data_ / "train.de") + " --corpus " + extra,
       "not both"},
  };
  for (const auto& [arguments, message] : cases) {
    for (const std::string run : {"kept", "fresh"}) {
      const auto result = arguments == "CACHE" ? run_trafo(base(run, root_ / "a-file" / "cache") + " --max-steps 4")
                                               : run_trafo(base(run) + arguments + " --max-steps 4 --valid-every 2");
      EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.errors;
      // Over the kept run, some are refused first as a resume with other data: exit 2 all the same.
      if (run == std::string("fresh")) {
        EXPECT_NE(result.errors.find(message), std::string::npos) << arguments << "\n" << result.errors;
      }
      const auto lines = lines_of(result.errors);
      ASSERT_FALSE(lines.empty());
      EXPECT_EQ(lines.back().rfind("trafo: error: ", 0), 0u) << lines.back();
    }
    EXPECT_EQ(read_text(root_ / "kept" / "checkpoint-last.pt"), saved) << arguments;
    EXPECT_FALSE(std::filesystem::exists(root_ / "fresh" / "checkpoint-last.pt")) << arguments;
  }
  // The short file counts 39 lines, named beside the 40.
  const auto counts = run_trafo(base("fresh") + " --corpus " + quoted(data_ / "extra.en") + "," + quoted(root_ / "short.de") +
                                " --max-steps 1");
  EXPECT_NE(counts.errors.find("has 39"), std::string::npos) << counts.errors;
}

TEST_F(CorporaCli, AKillWhileTheCacheIsBuiltLeavesNoCacheAndTheNextStartBuildsIt) {
  write_synthetic_corpus(data_, "big", 150000, 4);
  // 19 chunks of 8192 pairs, each written 100 ms late: the kill lands while the cache is built
  const std::string command = "env TRAFO_TEST_HOOKS=cache_chunk_delay_ms=100 '" + std::string(TRAFO_BINARY) + "' " +
                              base("killed") + " --corpus " +
                              quoted(data_ / "big.en") + "," + quoted(data_ / "big.de") +
                              " --vocab-sample 2000 --max-steps 1 2> " + quoted(root_ / "killed.log");
  auto building = [&] {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(cache_, error)) {
      if (entry.path().extension() == ".tmp" && entry.path().filename().string().rfind("corpus-", 0) == 0) return true;
    }
    return false;
  };
  const int pid = spawn_command(command);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!building() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(building()) << read_text(root_ / "killed.log");
  ::kill(pid, SIGKILL);
  EXPECT_EQ(wait_for_exit(pid, 60), 128 + SIGKILL);
  EXPECT_TRUE(building()) << "the killed build's files are still there";

  const auto rerun = run_trafo(base("killed") + " --corpus " + quoted(data_ / "big.en") + "," + quoted(data_ / "big.de") +
                               " --vocab-sample 2000 --max-steps 1");
  ASSERT_EQ(rerun.exit_code, 0) << rerun.errors;
  EXPECT_NE(rerun.errors.find("tokenizing"), std::string::npos) << rerun.errors;
  EXPECT_FALSE(building()) << "the killed build's temporary files were removed";
  EXPECT_EQ(start_event("killed")["corpora"][0]["pairs"], 150000);
}

}  // namespace
}  // namespace trafo::testing
