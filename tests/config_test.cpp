// TrainConfig's key table and its TOML (src/run_config/config_keys.cpp, config_file.cpp): the one
// place options are named, typed and read, shared by config files, --dump-config, checkpoints,
// the command line and trafo bench.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "trafo/errors.h"
#include "trafo/run_config/config_file.h"
#include "trafo/run_config/config_keys.h"
#include "trafo/run_config/options.h"

using namespace trafo;

namespace {

// A corpus of the config, its fields named.
run_config::CorpusSpec config_corpus(const std::string& src, const std::string& tgt, double weight, const std::string& tag,
                              const std::string& src_lang = "", const std::string& tgt_lang = "") {
  run_config::CorpusSpec spec;
  spec.src = src;
  spec.tgt = tgt;
  spec.weight = weight;
  spec.tag = tag;
  spec.src_lang = src_lang;
  spec.tgt_lang = tgt_lang;
  return spec;
}

}  // namespace

TEST(ConfigKeys, EveryKeyIsNamedOnceAndReadsBackWhatItWrites) {
  run_config::TrainConfig changed;
  std::set<std::string> names;
  for (const auto& key : run_config::config_keys()) {
    EXPECT_TRUE(names.insert(key.name).second) << key.name << " is in the table twice";
    EXPECT_EQ(run_config::find_config_key(key.name), &key);
    const std::string type = run_config::type_name(key);
    const std::string text = type == "TEXT" ? "x y" : type == "BOOL" ? "true" : type == "FLOAT" ? "0.125" : "7";
    run_config::parse_value(key, text, changed);
    run_config::TrainConfig back;
    run_config::parse_value(key, type == "TEXT" ? text : run_config::format_value(key, changed), back);
    EXPECT_EQ(run_config::format_value(key, back), run_config::format_value(key, changed)) << key.name;
  }
  EXPECT_EQ(run_config::find_config_key("learning-rate"), nullptr);
  EXPECT_EQ(changed.model.d_model, 7);
  EXPECT_EQ(changed.optim.lr, 0.125);
  EXPECT_EQ(changed.run.run_dir, "x y");
  EXPECT_TRUE(changed.run.tensorboard);

  // The whole config: every key once, and it reads back to the same text.
  const std::string toml = run_config::to_toml(changed);
  run_config::TrainConfig again;
  EXPECT_EQ(run_config::read_config_text(toml, "dumped.toml", again).size(), run_config::config_keys().size());
  EXPECT_EQ(run_config::to_toml(again), toml);
}

TEST(ConfigKeys, NumbersAreDecimalAndFinite) {
  run_config::TrainConfig c;
  const auto& warmup = *run_config::find_config_key("warmup-steps");
  run_config::parse_value(warmup, "010", c);
  EXPECT_EQ(c.optim.warmup_steps, 10) << "leading zeros are not octal";
  for (const char* bad : {"0x10", "1.5", "", "+", "1e3", "99999999999999999999"}) {
    EXPECT_THROW(run_config::parse_value(warmup, bad, c), InputError) << bad;
  }
  EXPECT_THROW(run_config::parse_value(*run_config::find_config_key("seed"), "-1", c), InputError);
  const auto& lr = *run_config::find_config_key("lr");
  // 1e-400 is no double: it read as 0 without a word. A subnormal one has lost digits.
  for (const char* bad : {"inf", "nan", "1e999", "0.1.2", "fast", "1e-400", "4.9e-324", "1e-310"}) {
    EXPECT_THROW(run_config::parse_value(lr, bad, c), InputError) << bad;
  }
  run_config::parse_value(lr, "0e5", c);  // 0 written otherwise is 0
  EXPECT_EQ(c.optim.lr, 0.0);
  run_config::parse_value(lr, "2.3e-308", c);
  EXPECT_EQ(c.optim.lr, 2.3e-308);
  run_config::parse_value(lr, "3e-4", c);
  EXPECT_EQ(run_config::format_value(lr, c), "0.0003");
  EXPECT_THROW(run_config::parse_value(*run_config::find_config_key("tie-embeddings"), "maybe", c), InputError);
}

// A duration past a century (1e300h) is refused, not carried into clocks and estimates.
TEST(ConfigKeys, MaxTimeHasALimit) {
  EXPECT_EQ(run_config::parse_duration("1000000h"), 3.6e9);
  for (const char* bad : {"1000001h", "1e300h", "99999999999999999999999s"}) {
    EXPECT_THROW(run_config::parse_duration(bad), InputError) << bad;
  }
}

TEST(ConfigFile, KeptKeysAreCheckedButNotTaken) {
  run_config::TrainConfig c;
  c.optim.lr = 0.5;  // as given on the command line
  const auto keys = run_config::read_config_text("lr = 0.25\nd-model = 64\n", "a.toml", c, {"lr"});
  EXPECT_EQ(keys, (std::set<std::string>{"lr", "d-model"}));
  EXPECT_EQ(c.optim.lr, 0.5);
  EXPECT_EQ(c.model.d_model, 64);
  try {
    run_config::read_config_text("d-model = 64\nlr = \"fast\"\n", "b.toml", c, {"lr"});
    FAIL() << "a bad value of a kept key was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.toml:2: lr:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_config::read_config_text("config = \"x.toml\"\n", "c.toml", c), InputError);
}

TEST(ConfigFile, TextIsQuoted) {
  // The fuzzer's finding (fuzz/findings/config_file/bare-text-with-quotes): a bare token that
  // starts with a digit was taken as text, quotes and all, and --dump-config could not write it back.
  run_config::TrainConfig c;
  for (const char* line : {"train-src = 0000005dropout'=1ram\"\n", "src-lang = 1\n", "run-dir = true\n"}) {
    try {
      run_config::read_config_text(line, "a.toml", c);
      FAIL() << "accepted " << line;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a.toml:1: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("must be quoted"), std::string::npos) << e.what();
    }
  }
  run_config::read_config_text("src-lang = 'fr'\nlr = \"0.5\"\n", "b.toml", c);
  EXPECT_EQ(c.data.src_lang, "fr");
  EXPECT_EQ(c.optim.lr, 0.5);
}

TEST(ConfigFile, TextsThatCannotBeWrittenBackAreRefused) {
  run_config::TrainConfig c;
  c.data.data_dir = "data";
  run_config::validate(c);
  c.run.run_dir = "it's a \"run\"";
  EXPECT_THROW(run_config::validate(c), InputError);
  c.run.run_dir = "two\nlines";
  EXPECT_THROW(run_config::validate(c), InputError);
  c.run.run_dir = "it's";
  run_config::validate(c);
  run_config::TrainConfig back;
  run_config::read_config_text(run_config::to_toml(c), "dumped.toml", back);
  EXPECT_EQ(back.run.run_dir, "it's");
}

// Corpora of two or more target languages are tagged by their target (>>xx<<), and so is the dev set;
// one target language leaves every tag as given.
TEST(ConfigFile, CorporaOfSeveralTargetsAreTaggedByTheirTarget) {
  run_config::TrainConfig one;
  one.data.tgt_lang = "de";
  one.data.corpora = {config_corpus("a.en", "a.de", 1.0, ""), config_corpus("b.en", "b.de", 1.0, "<bt>", "en", "de")};
  const auto before = one.data.corpora;
  run_config::tag_targets(one);
  EXPECT_TRUE(one.data.corpora == before);
  EXPECT_EQ(one.run.valid_tag, "");
  EXPECT_EQ(run_config::target_languages(one), std::vector<std::string>{"de"});

  run_config::TrainConfig several;
  several.data.tgt_lang = "fr";
  several.data.corpora = {config_corpus("a.en", "a.de", 1.0, "", "en", "de"), config_corpus("b.en", "b.fr", 1.0, ""),
                          config_corpus("c.en", "c.es", 1.0, ">>es<<", "en", "es")};
  run_config::tag_targets(several);
  EXPECT_EQ(several.data.corpora[0].tag, ">>de<<");
  EXPECT_EQ(several.data.corpora[1].tag, ">>fr<<");
  EXPECT_EQ(several.data.corpora[2].tag, ">>es<<");
  EXPECT_EQ(several.run.valid_tag, ">>fr<<");
  EXPECT_EQ(run_config::target_languages(several), (std::vector<std::string>{"de", "fr", "es"}));
  auto again = several;
  run_config::tag_targets(again);  // a resume settles the same
  EXPECT_TRUE(again.data.corpora == several.data.corpora);

  auto other_tag = several;
  other_tag.data.corpora[0].tag = "<bt>";
  EXPECT_THROW(run_config::tag_targets(other_tag), InputError);
  auto no_dev_target = several;
  no_dev_target.data.tgt_lang = "it";
  EXPECT_THROW(run_config::tag_targets(no_dev_target), InputError);
  auto spaced = several;
  spaced.data.data_dir = "data";
  spaced.data.corpora[0].tgt_lang = "d e";
  EXPECT_THROW(run_config::validate(spaced), InputError);
}

TEST(ConfigFile, CorpusTablesReadBackAndTheCommandLineWins) {
  run_config::TrainConfig config;
  config.data.corpora = {config_corpus("a.en", "a.de", 3.0, ""), config_corpus("b en", "b.de", 0.5, ">>fr<<", "en", "fr")};
  const std::string toml = run_config::to_toml(config);
  EXPECT_NE(toml.find("src-lang=\"en\"\ntgt-lang=\"fr\"\n"), std::string::npos) << toml;
  run_config::TrainConfig again;
  const auto keys = run_config::read_config_text(toml, "dumped.toml", again);
  EXPECT_EQ(keys.count("corpus"), 1u);
  ASSERT_EQ(again.data.corpora.size(), 2u);
  EXPECT_TRUE(again.data.corpora == config.data.corpora);
  EXPECT_EQ(run_config::to_toml(again), toml);

  run_config::TrainConfig given;
  given.data.corpora = {config_corpus("c.en", "c.de", 1.0, "")};
  run_config::read_config_text(toml, "dumped.toml", given, {"corpus"});
  ASSERT_EQ(given.data.corpora.size(), 1u);
  EXPECT_EQ(given.data.corpora[0].src, "c.en");

  // Tags that cannot be one reserved piece.
  for (const std::string tag : {"a,b", "a b", "<s>", "<0x41>"}) {
    run_config::TrainConfig tagged;
    tagged.data.data_dir = "data";
    tagged.data.corpora = {config_corpus("a.en", "a.de", 1.0, tag)};
    EXPECT_THROW(run_config::validate(tagged), InputError) << tag;
  }
  for (const std::string bad : {"[[corpus]]\nweight = \"x\"\n", "[[corpus]]\nsrc = a.en\n", "[corpus]\nsrc = \"a\"\n",
                                "[[corpus]]\nlr = 1\n"}) {
    run_config::TrainConfig scratch;
    EXPECT_THROW(run_config::read_config_text(bad, "bad.toml", scratch), InputError) << bad;
  }
}
