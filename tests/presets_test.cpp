// Defaults that fit the corpus and the budget (--preset): which preset auto picks from the training
// pairs and the epochs the budget buys (posed speeds), that options given keep their values, and,
// through the binary, that a run times the built-in defaults, says which preset and why, records it,
// and keeps it when resumed with another budget.
#include <gtest/gtest.h>

#include <map>

#include <tuple>

#include "data_support.h"
#include "run_support.h"
#include "trafo/errors.h"
#include "trafo/run_config/config_keys.h"
#include "trafo/run_config/presets.h"

namespace trafo::run_config {
namespace {

// A config as the command line makes it: only `given` counts as given.
TrainConfig asked(std::set<std::string> given) {
  TrainConfig c;
  c.given = std::move(given);
  return c;
}

// gettext-enfr's size: ~247,500 target tokens an epoch (988,258 bytes at 4.4 a piece, and an end of
// sentence per pair).
const CorpusSize kGettext{22901, 988258};

TEST(Presets, AutoPicksFromThePairsAndTheEpochsTheBudgetBuysHere) {
  int timed = 0;
  const auto speed = [&timed](double tokens_per_s) {
    return DefaultsSpeed([&timed, tokens_per_s](const TrainConfig&) {
      ++timed;
      return tokens_per_s;
    });
  };
  auto c = asked({"max-time"});
  c.stop.max_time = "28m";
  // A slow CPU in fp32: 28 minutes at 2,000 tokens/s buy about 13.6 epochs of the built-in defaults.
  const auto slow = choose_preset(c, kGettext, speed(2000));
  EXPECT_EQ(slow.preset->name, "small-short");
  for (const char* words : {"22901 training pairs", "--max-time 28m", "2000 target tokens/s here (timed)",
                            "about 13.6 epochs", "under 40"}) {
    EXPECT_NE(slow.why.find(words), std::string::npos) << words << " in " << slow.why;
  }
  // A fast CPU in bf16: the same 28 minutes buy about 68 epochs, where the built-in defaults' larger
  // batches are no longer short of updates.
  const auto fast = choose_preset(c, kGettext, speed(10000));
  EXPECT_EQ(fast.preset->name, "small-long") << fast.why;
  EXPECT_NE(fast.why.find("about 67.9 epochs"), std::string::npos) << fast.why;
  // Just either side of 40 epochs (9,900,200 target tokens in 28 minutes: 5,893 tokens/s).
  EXPECT_EQ(choose_preset(c, kGettext, speed(5880)).preset->name, "small-short");
  EXPECT_EQ(choose_preset(c, kGettext, speed(5910)).preset->name, "small-long");
  EXPECT_EQ(timed, 4);
  // Untimed (a run of several processes): the wall clock alone, two hours or less is short.
  EXPECT_EQ(choose_preset(c, kGettext).preset->name, "small-short");
  EXPECT_EQ(choose_preset(c, kGettext, speed(0)).preset->name, "small-short");
  c.stop.max_time = "2h";
  EXPECT_EQ(choose_preset(c, kGettext).preset->name, "small-short") << "two hours is still short";
  c.stop.max_time = "2h1m";
  EXPECT_NE(choose_preset(c, kGettext).why.find("untimed"), std::string::npos);
  EXPECT_EQ(choose_preset(c, kGettext).preset->name, "small-long");
  timed = 0;
  // Budgets of epochs or updates decide directly: nothing is timed.
  EXPECT_EQ(choose_preset(asked({}), kGettext, speed(1)).preset->name, "small-long") << "no limit: early stopping";
  auto e = asked({"max-epochs"});
  e.stop.max_epochs = 94;
  EXPECT_EQ(choose_preset(e, kGettext, speed(1)).preset->name, "small-short") << "up to 100 epochs is short";
  EXPECT_NE(choose_preset(e, kGettext).why.find("--max-epochs 94"), std::string::npos);
  e.given->insert("max-time");
  e.stop.max_time = "10h";
  EXPECT_EQ(choose_preset(e, kGettext, speed(1e9)).preset->name, "small-short")
      << "100 epochs or less is short, whatever the time";
  e.stop.max_epochs = 101;
  e.stop.max_time = "";
  EXPECT_EQ(choose_preset(e, kGettext, speed(1)).preset->name, "small-long");
  auto s = asked({"max-steps"});
  s.stop.max_steps = 5000;
  EXPECT_EQ(choose_preset(s, kGettext, speed(1)).preset->name, "small-long") << "a budget of updates stays long";
  EXPECT_EQ(timed, 0);
  c.stop.max_time = "22m";
  EXPECT_EQ(choose_preset(c, CorpusSize{5'000'000, 500'000'000}, speed(1)).preset->name, "standard");
  c.init_from = "model.pt";
  EXPECT_EQ(choose_preset(c, kGettext, speed(1)).preset->name, "standard") << "fine-tuning";
  c.run.preset = "small-long";
  EXPECT_EQ(choose_preset(c, kGettext, speed(1)).preset->name, "small-long") << "asked for";
  EXPECT_EQ(timed, 0);
  c.run.preset = "tiny";
  EXPECT_THROW(choose_preset(c, kGettext), InputError);
  EXPECT_THROW(validate(c), InputError);
}

// The second look revises a timed choice only for a clear difference: a quarter either side of 40
// epochs.
TEST(Presets, TheSecondLookRevisesOnlyAClearlyWrongChoice) {
  EXPECT_EQ(second_look("small-short", 49.9), nullptr);
  ASSERT_NE(second_look("small-short", 50.0), nullptr);
  EXPECT_EQ(second_look("small-short", 50.0)->name, "small-long");
  EXPECT_EQ(second_look("small-short", 10.0), nullptr) << "right the first time";
  EXPECT_EQ(second_look("small-long", 32.0), nullptr);
  ASSERT_NE(second_look("small-long", 31.9), nullptr);
  EXPECT_EQ(second_look("small-long", 31.9)->name, "small-short");
  EXPECT_EQ(second_look("small-long", 500.0), nullptr) << "right the first time";
  EXPECT_EQ(second_look("standard", 1.0), nullptr) << "only auto's small-corpus presets";
}

TEST(Presets, OptionsGivenKeepTheirValuesAndAResumeOnlyTakesTrainingKnobs) {
  const auto& small = *find_preset("small-short");
  ASSERT_FALSE(small.values.empty());
  auto c = asked({"batch-tokens"});
  c.optim.batch_tokens = 1000;
  const auto set = apply_preset(c, PresetChoice{&small, ""});
  EXPECT_EQ(c.run.preset, "small-short");
  EXPECT_EQ(c.optim.batch_tokens, 1000) << "given";
  for (const auto& [name, value] : small.values) {
    if (name == "batch-tokens") continue;
    EXPECT_EQ(format_value(*find_config_key(name), c), value) << name;
    EXPECT_NE(std::find(set.begin(), set.end(), name), set.end()) << name;
  }
  auto resumed = asked({});
  const auto vocab = resumed.vocab.vocab_size;
  const auto knobs = apply_preset(resumed, PresetChoice{&small, ""}, /*resuming=*/true);
  EXPECT_EQ(resumed.vocab.vocab_size, vocab) << "the run's vocabulary is its own";
  EXPECT_EQ(std::find(knobs.begin(), knobs.end(), "vocab-size"), knobs.end());
  EXPECT_NE(std::find(knobs.begin(), knobs.end(), "batch-tokens"), knobs.end());
  auto in_code = TrainConfig{};  // a config made in code counts every key as given
  EXPECT_TRUE(apply_preset(in_code, PresetChoice{&small, ""}).empty());
}

// The students' presets give Bergamot's shapes: a deep encoder, a 2-layer decoder, tied embeddings;
// auto never picks one, and an option given keeps its value.
TEST(Presets, StudentPresetsAreADeepEncoderAndAShallowDecoder) {
  for (const auto& [name, width, ff] : {std::tuple<std::string, int64_t, int64_t>{"student-tiny", 256, 1536},
                                       {"student-base", 512, 2048}}) {
    const Preset* student = find_preset(name);
    ASSERT_NE(student, nullptr) << name;
    auto c = asked({"decoder-layers"});
    c.model.decoder_layers = 3;
    apply_preset(c, PresetChoice{student, ""});
    EXPECT_EQ(c.run.preset, name);
    EXPECT_EQ(c.model.d_model, width) << name;
    EXPECT_EQ(c.model.heads, 8) << name;
    EXPECT_EQ(c.model.encoder_layers, 6) << name;
    EXPECT_EQ(c.model.decoder_layers, 3) << name << ": given";
    EXPECT_EQ(c.model.d_ff, ff) << name;
    EXPECT_TRUE(c.model.tie_embeddings) << name;
    EXPECT_NE(preset_names().find(name), std::string::npos);
  }
  auto c = asked({});
  c.run.preset = "auto";
  for (const int64_t pairs : {1000, 100000, 5000000}) {
    const auto picked = choose_preset(c, CorpusSize{pairs, pairs * 40}).preset->name;
    EXPECT_EQ(picked.rfind("student", 0), std::string::npos) << pairs;
  }
}

// A preset's vocabulary is for a pair of languages: corpora of more languages get as many pieces for
// each (English into French, Spanish and Italian: four languages, twice the pieces), up to a ceiling.
TEST(Presets, TheVocabularyGrowsWithTheLanguagesTheCorporaCover) {
  auto c = asked({});
  EXPECT_EQ(corpus_languages(c), 2) << "the run's --src-lang and --tgt-lang";
  for (const std::string target : {"fr", "es", "it"})
    c.data.corpora.push_back({"a.en", "a." + target, 1.0, "", "", "en", target});
  c.data.corpora.push_back({"b.en", "b.fr", 1.0, "<bt>", "", "", "fr"});  // no source language: the run's (en)
  EXPECT_EQ(corpus_languages(c), 4);
  EXPECT_EQ(preset_vocab_size(4000, 2), 4000);
  EXPECT_EQ(preset_vocab_size(4000, 3), 6000);
  EXPECT_EQ(preset_vocab_size(4000, 4), 8000);
  EXPECT_EQ(preset_vocab_size(4000, 40), kMostPresetPieces);
  EXPECT_EQ(preset_vocab_size(20000, 4), 20000) << "never fewer than a pair's";

  c.run.preset = "small-short";
  const auto choice = choose_preset(c, kGettext);
  EXPECT_EQ(choice.languages, 4);
  EXPECT_NE(choice.why.find("cover 4 languages"), std::string::npos) << choice.why;
  const auto set = apply_preset(c, choice);
  EXPECT_EQ(c.vocab.vocab_size, 8000);
  EXPECT_NE(std::find(set.begin(), set.end(), "vocab-size"), set.end());
  EXPECT_EQ(c.optim.batch_tokens, 2048) << "the other values as the preset has them";

  auto given = c;
  given.given = {"vocab-size"};
  given.vocab.vocab_size = 3000;
  apply_preset(given, choice);
  EXPECT_EQ(given.vocab.vocab_size, 3000) << "given";
  auto one_pair = asked({});
  one_pair.run.preset = "small-short";
  apply_preset(one_pair, choose_preset(one_pair, kGettext));
  EXPECT_EQ(one_pair.vocab.vocab_size, 4000);
  EXPECT_EQ(choose_preset(one_pair, kGettext).why.find("languages"), std::string::npos);
}

}  // namespace
}  // namespace trafo::run_config

namespace trafo::testing {
namespace {

// Through the binary: the preset is in train.log and the start event with its reason and the options it
// set, config.toml records it by name, and a resume with another budget keeps it.
TEST(PresetsCli, ARunSaysWhichPresetAndWhyAndAResumeKeepsIt) {
  const auto data = make_temp_dir("preset-data");
  write_synthetic_corpus(data, "train", 80, 1);
  write_synthetic_corpus(data, "dev", 8, 2);
  const auto run = make_temp_dir("preset-run") / "run";
  const std::string base = "train --data-dir " + quoted(data) + " --src-lang en --tgt-lang de --run-dir " + quoted(run) +
                           " --cache-dir " + quoted(run.parent_path() / "cache") +
                           " --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --threads 1"
                           " --valid-every 2 --valid-max-sentences 4 --vocab-size 300";
  // Posed as a machine on which 20 minutes buy the built-in defaults under 40 epochs of these pairs.
  const auto first = run_command("TRAFO_TEST_HOOKS=train_tokens_per_s=1 '" + std::string(TRAFO_BINARY) + "' " + base +
                                 " --max-time 20m --max-steps 2");
  ASSERT_EQ(first.exit_code, 0) << first.errors;
  const auto start = read_jsonl(run / "metrics.jsonl").front();
  EXPECT_EQ(start["preset"], "small-short") << start;
  EXPECT_NE(start["preset_reason"].get<std::string>().find("80 training pairs"), std::string::npos) << start;
  const auto set = start["preset_set"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(set.begin(), set.end(), "batch-tokens"), set.end()) << start;
  EXPECT_EQ(std::find(set.begin(), set.end(), "vocab-size"), set.end()) << "given: " << start;
  const auto log = read_text(run / "train.log");
  EXPECT_NE(log.find("choice: preset small-short (--preset auto: 80 training pairs"), std::string::npos) << log;
  // Each automatic choice is one line of train.log and one record of the start event: which learning
  // rate this run uses, and why.
  EXPECT_NE(log.find("choice: lr 0.002 (the small-short preset"), std::string::npos) << log;
  EXPECT_NE(log.find("choice: batch-tokens 2048 (the small-short preset"), std::string::npos) << log;
  std::map<std::string, nlohmann::json> choices;
  for (const auto& choice : start["choices"]) choices[choice["what"].get<std::string>()] = choice;
  ASSERT_TRUE(choices.count("lr")) << start;
  EXPECT_EQ(choices["lr"]["value"], "0.002");
  EXPECT_NE(choices["lr"]["why"].get<std::string>().find("small-short"), std::string::npos) << start;
  EXPECT_EQ(choices["preset"]["value"], "small-short");
  EXPECT_TRUE(choices.count("precision") && choices.count("validation-precision")) << start;
  EXPECT_FALSE(choices.count("vocab-size")) << "given, and learned whole: " << start;
  EXPECT_NE(read_text(run / "config.toml").find("preset=\"small-short\""), std::string::npos);

  // Timed for real: this tiny model trains the 80 pairs thousands of times over in 20 minutes.
  const auto timed_run = run.parent_path() / "timed";
  const auto timed = run_trafo("train --data-dir " + quoted(data) + " --src-lang en --tgt-lang de --run-dir " +
                               quoted(timed_run) + " --cache-dir " + quoted(run.parent_path() / "cache") +
                               " --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --threads 1"
                               " --valid-every 2 --valid-max-sentences 4 --vocab-size 300 --max-time 20m --max-steps 2");
  ASSERT_EQ(timed.exit_code, 0) << timed.errors;
  const auto timed_start = read_jsonl(timed_run / "metrics.jsonl").front();
  EXPECT_EQ(timed_start["preset"], "small-long") << timed_start;
  EXPECT_NE(timed_start["preset_reason"].get<std::string>().find("target tokens/s here (timed)"), std::string::npos)
      << timed_start;

  // Resumed with no time limit, which alone would pick small-long: the run's preset stays.
  const auto resumed = run_trafo(base + " --max-steps 4");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  const auto events = read_jsonl(run / "metrics.jsonl");
  nlohmann::json second;
  for (const auto& event : events) {
    if (event["event"] == "start") second = event;
  }
  EXPECT_EQ(second["preset"], "small-short") << second;
  EXPECT_EQ(second["preset_reason"], "the run's") << second;
  const auto bad = run_trafo(base + " --preset huge --max-steps 4");
  EXPECT_EQ(bad.exit_code, 2) << bad.errors;
  EXPECT_EQ(lines_of(bad.errors).size(), 1u) << bad.errors;
  EXPECT_NE(bad.errors.find("preset must be auto, standard"), std::string::npos) << bad.errors;
}

// Through the binary: a run of two target languages (three in all) gets small-short's vocabulary for
// three, and says why.
TEST(PresetsCli, ARunOfMoreLanguagesGetsMorePiecesFromThePreset) {
  const auto data = make_temp_dir("preset-languages");
  write_synthetic_corpus(data, "train", 40, 1);
  write_synthetic_corpus(data, "dev", 4, 2);
  for (const std::string split : {"train", "dev"})
    std::filesystem::copy_file(data / (split + ".de"), data / (split + ".fr"));
  const auto run = data / "run";
  const auto trained = run_trafo(
      "train --data-dir " + quoted(data) + " --src-lang en --tgt-lang de --run-dir " + quoted(run) + " --cache-dir " +
      quoted(data / "cache") + " --corpus " + quoted(data / "train.en") + "," + quoted(data / "train.de") +
      ",1,,,en,de --corpus " + quoted(data / "train.en") + "," + quoted(data / "train.fr") +
      ",1,,,en,fr --preset small-short --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
      " --threads 1 --valid-every 1 --valid-max-sentences 2 --max-steps 1 --precision fp32");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto start = read_jsonl(run / "metrics.jsonl").front();
  EXPECT_NE(start["preset_reason"].get<std::string>().find("cover 3 languages"), std::string::npos) << start;
  const auto set = start["preset_set"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(set.begin(), set.end(), "vocab-size"), set.end()) << start;
  EXPECT_NE(read_text(run / "config.toml").find("vocab-size=6000"), std::string::npos)
      << read_text(run / "config.toml");
  EXPECT_NE(read_text(run / "train.log").find("vocab-size 6000"), std::string::npos);
}

// Through the binary, the run's own pace (posed) against the probe's (posed): where they disagree
// clearly, the run starts again with the other preset in the same --max-time, before any
// checkpoint, and says why; where they agree, it goes on.
TEST(PresetsCli, ARunWhosePaceBeliesTheProbeStartsAgainWithTheOtherPreset) {
  const auto data = make_temp_dir("second-look-data");
  write_synthetic_corpus(data, "train", 80, 1);
  write_synthetic_corpus(data, "dev", 8, 2);
  const auto root = make_temp_dir("second-look");
  const auto train = [&](const std::string& name, const std::string& hooks) {
    const auto run = root / name;
    const auto result = run_command(
        "TRAFO_TEST_HOOKS=" + hooks + " '" + std::string(TRAFO_BINARY) + "' train --data-dir " + quoted(data) +
        " --src-lang en --tgt-lang de --run-dir " + quoted(run) + " --cache-dir " + quoted(root / "cache") +
        " --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --threads 1 --vocab-size 300"
        " --valid-every 20 --valid-max-sentences 4 --max-time 20m --max-steps 24");
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return run;
  };
  // The probe says 20 minutes buy under 40 epochs; the run goes through an epoch a second.
  const auto faster = train("faster", "train_tokens_per_s=1,run_epochs_per_s=1");
  // The probe says far more than 40; the run goes through an epoch in 1,000 s.
  const auto slower = train("slower", "train_tokens_per_s=1000000000,run_epochs_per_s=0.001");
  // Both say under 40.
  const auto agreed = train("agreed", "train_tokens_per_s=1,run_epochs_per_s=0.001");
  for (const auto& [run, first, second] : {std::tuple{faster, "small-short", "small-long"},
                                           std::tuple{slower, "small-long", "small-short"}}) {
    SCOPED_TRACE(run.string());
    const auto events = read_jsonl(run / "metrics.jsonl");
    ASSERT_FALSE(events.empty());
    size_t starts = 0;
    for (const auto& event : events) starts += event["event"] == "start" ? 1 : 0;
    EXPECT_EQ(starts, 1u) << "the first attempt's records went";
    EXPECT_EQ(events.front()["preset"], second) << events.front();
    const auto reason = events.front()["preset_reason"].get<std::string>();
    EXPECT_NE(reason.find("second look"), std::string::npos) << reason;
    EXPECT_NE(reason.find("(posed)"), std::string::npos) << reason;
    EXPECT_NE(reason.find(std::string(first) + " was the first look"), std::string::npos) << reason;
    EXPECT_EQ(events.back()["event"], "end");
    EXPECT_EQ(events.back()["step"], 24) << "the new start trained the whole budget of updates";
    EXPECT_NE(read_text(run / "config.toml").find("preset=\"" + std::string(second) + "\""), std::string::npos);
    const auto log = read_text(run / "train.log");
    EXPECT_NE(log.find("preset " + std::string(first) + " (--preset auto"), std::string::npos) << log;
    EXPECT_NE(log.find("the run starts again with --preset " + std::string(second)), std::string::npos) << log;
  }
  const auto kept = read_jsonl(agreed / "metrics.jsonl").front();
  EXPECT_EQ(kept["preset"], "small-short") << kept;
  EXPECT_EQ(read_text(agreed / "train.log").find("second look"), std::string::npos);
}

}  // namespace
}  // namespace trafo::testing
