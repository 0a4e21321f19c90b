// TrainConfig's key table and its TOML (src/train/config_keys.cpp, config_file.cpp): the one
// place options are named, typed and read, shared by config files, --dump-config, checkpoints,
// the command line and trafo bench.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "trafo/errors.h"
#include "trafo/train/config_file.h"
#include "trafo/train/config_keys.h"
#include "trafo/train/options.h"

using namespace trafo;

TEST(ConfigKeys, EveryKeyIsNamedOnceAndReadsBackWhatItWrites) {
  train::TrainConfig changed;
  std::set<std::string> names;
  for (const auto& key : train::config_keys()) {
    EXPECT_TRUE(names.insert(key.name).second) << key.name << " is in the table twice";
    EXPECT_EQ(train::find_config_key(key.name), &key);
    const std::string type = train::type_name(key);
    const std::string text = type == "TEXT" ? "x y" : type == "BOOL" ? "true" : type == "FLOAT" ? "0.125" : "7";
    train::parse_value(key, text, changed);
    train::TrainConfig back;
    train::parse_value(key, type == "TEXT" ? text : train::format_value(key, changed), back);
    EXPECT_EQ(train::format_value(key, back), train::format_value(key, changed)) << key.name;
  }
  EXPECT_EQ(train::find_config_key("learning-rate"), nullptr);
  EXPECT_EQ(changed.model.d_model, 7);
  EXPECT_EQ(changed.lr, 0.125);
  EXPECT_EQ(changed.run_dir, "x y");
  EXPECT_TRUE(changed.tensorboard);

  // The whole config: every key once, and it reads back to the same text.
  const std::string toml = train::to_toml(changed);
  train::TrainConfig again;
  EXPECT_EQ(train::read_config_text(toml, "dumped.toml", again).size(), train::config_keys().size());
  EXPECT_EQ(train::to_toml(again), toml);
}

TEST(ConfigKeys, NumbersAreDecimalAndFinite) {
  train::TrainConfig c;
  const auto& warmup = *train::find_config_key("warmup-steps");
  train::parse_value(warmup, "010", c);
  EXPECT_EQ(c.warmup_steps, 10) << "leading zeros are not octal";
  for (const char* bad : {"0x10", "1.5", "", "+", "1e3", "99999999999999999999"}) {
    EXPECT_THROW(train::parse_value(warmup, bad, c), InputError) << bad;
  }
  EXPECT_THROW(train::parse_value(*train::find_config_key("seed"), "-1", c), InputError);
  const auto& lr = *train::find_config_key("lr");
  for (const char* bad : {"inf", "nan", "1e999", "0.1.2", "fast"}) {
    EXPECT_THROW(train::parse_value(lr, bad, c), InputError) << bad;
  }
  train::parse_value(lr, "3e-4", c);
  EXPECT_EQ(train::format_value(lr, c), "0.0003");
  EXPECT_THROW(train::parse_value(*train::find_config_key("tie-embeddings"), "maybe", c), InputError);
}

TEST(ConfigFile, KeptKeysAreCheckedButNotTaken) {
  train::TrainConfig c;
  c.lr = 0.5;  // as given on the command line
  const auto keys = train::read_config_text("lr = 0.25\nd-model = 64\n", "a.toml", c, {"lr"});
  EXPECT_EQ(keys, (std::set<std::string>{"lr", "d-model"}));
  EXPECT_EQ(c.lr, 0.5);
  EXPECT_EQ(c.model.d_model, 64);
  try {
    train::read_config_text("d-model = 64\nlr = \"fast\"\n", "b.toml", c, {"lr"});
    FAIL() << "a bad value of a kept key was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.toml:2: lr:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(train::read_config_text("config = \"x.toml\"\n", "c.toml", c), InputError);
}

TEST(ConfigFile, TextIsQuoted) {
  // The fuzzer's finding (fuzz/findings/config_file/bare-text-with-quotes): a bare token that
  // starts with a digit was taken as text, quotes and all, and --dump-config could not write it back.
  train::TrainConfig c;
  for (const char* line : {"train-src = 0000005dropout'=1ram\"\n", "src-lang = 1\n", "run-dir = true\n"}) {
    try {
      train::read_config_text(line, "a.toml", c);
      FAIL() << "accepted " << line;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a.toml:1: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("must be quoted"), std::string::npos) << e.what();
    }
  }
  train::read_config_text("src-lang = 'fr'\nlr = \"0.5\"\n", "b.toml", c);
  EXPECT_EQ(c.src_lang, "fr");
  EXPECT_EQ(c.lr, 0.5);
}

TEST(ConfigFile, TextsThatCannotBeWrittenBackAreRefused) {
  train::TrainConfig c;
  c.data_dir = "data";
  train::validate(c);
  c.run_dir = "it's a \"run\"";
  EXPECT_THROW(train::validate(c), InputError);
  c.run_dir = "two\nlines";
  EXPECT_THROW(train::validate(c), InputError);
  c.run_dir = "it's";
  train::validate(c);
  train::TrainConfig back;
  train::read_config_text(train::to_toml(c), "dumped.toml", back);
  EXPECT_EQ(back.run_dir, "it's");
}

TEST(ConfigFile, CorpusTablesReadBackAndTheCommandLineWins) {
  train::TrainConfig config;
  config.corpora = {{"a.en", "a.de", 3.0, ""}, {"b en", "b.de", 0.5, ">>fr<<"}};
  const std::string toml = train::to_toml(config);
  train::TrainConfig again;
  const auto keys = train::read_config_text(toml, "dumped.toml", again);
  EXPECT_EQ(keys.count("corpus"), 1u);
  ASSERT_EQ(again.corpora.size(), 2u);
  EXPECT_TRUE(again.corpora == config.corpora);
  EXPECT_EQ(train::to_toml(again), toml);

  train::TrainConfig given;
  given.corpora = {{"c.en", "c.de", 1.0, ""}};
  train::read_config_text(toml, "dumped.toml", given, {"corpus"});
  ASSERT_EQ(given.corpora.size(), 1u);
  EXPECT_EQ(given.corpora[0].src, "c.en");

  // Tags that cannot be one reserved piece.
  for (const std::string tag : {"a,b", "a b", "<s>", "<0x41>"}) {
    train::TrainConfig tagged;
    tagged.data_dir = "data";
    tagged.corpora = {{"a.en", "a.de", 1.0, tag}};
    EXPECT_THROW(train::validate(tagged), InputError) << tag;
  }
  for (const std::string bad : {"[[corpus]]\nweight = \"x\"\n", "[[corpus]]\nsrc = a.en\n", "[corpus]\nsrc = \"a\"\n",
                                "[[corpus]]\nlr = 1\n"}) {
    train::TrainConfig scratch;
    EXPECT_THROW(train::read_config_text(bad, "bad.toml", scratch), InputError) << bad;
  }
}
