// Bad input through the binary: every class of defect an outside fuzzing campaign found ends
// in exit code 2 and one line on stderr naming the option or file, never a crash, a stack trace
// or a silent acceptance. Where the fix makes the input work (a small corpus with the default
// vocabulary size), the run succeeds.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "data_support.h"
#include "run_support.h"
#include "test_support.h"
#include "trafo/errors.h"
#include "trafo/run_config/options.h"

namespace trafo::testing {
namespace {

const char* kInputErrorsModel =
    " --vocab-size 300 --d-model 16 --heads 2 --d-ff 32 --encoder-layers 1 --decoder-layers 1"
    " --batch-tokens 200 --threads 1 --valid-max-sentences 2";

// Exit code 2 and a single "trafo: error: ..." line that contains `needle`. With `only_line`,
// that line is all of stderr (errors found before any work is logged).
void expect_input_error(const CommandResult& result, const std::string& needle, bool only_line = true) {
  EXPECT_EQ(result.exit_code, 2) << result.errors;
  std::istringstream lines(result.errors);
  int error_lines = 0, all_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    ++all_lines;
    if (line.rfind("trafo: error: ", 0) != 0) continue;
    ++error_lines;
    EXPECT_NE(line.find(needle), std::string::npos) << "the message should name " << needle << ": " << line;
  }
  EXPECT_EQ(error_lines, 1) << result.errors;
  if (only_line) {
    EXPECT_EQ(all_lines, 1) << result.errors;
  }
  // "received 2": an option given twice by mistake in the test, which would hide the error tested.
  for (const char* trace : {"frame #", "Exception raised from", "terminate called", "Running command", "received 2"}) {
    EXPECT_EQ(result.errors.find(trace), std::string::npos) << result.errors;
  }
}

// A small corpus, and a tiny trained checkpoint for the commands that load one.
class InputErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("input-errors"));
    write_synthetic_corpus(*dir_, "train", 80, 1);
    write_synthetic_corpus(*dir_, "dev", 6, 2);
    const auto made = run_trafo(train_args(*dir_ / "model-run") + " --max-steps 1 --valid-every 0");
    ASSERT_EQ(made.exit_code, 0) << made.errors;
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string train_args(const std::filesystem::path& run) {
    return "train --data-dir " + quoted(*dir_) + " --src-lang en --tgt-lang de --run-dir " + quoted(run) +
           kInputErrorsModel;
  }
  static std::string train() { return train_args(make_temp_dir("input-errors-run") / "run"); }
  // Without the tiny model's flags and --threads, for tests that give their own (an option given
  // twice is an error of its own).
  static std::string train_any_model() {
    return "train --data-dir " + quoted(*dir_) + " --src-lang en --tgt-lang de --max-steps 1 --run-dir " +
           quoted(make_temp_dir("input-errors-run") / "run");
  }
  static std::string checkpoint() { return quoted(*dir_ / "model-run" / "checkpoint-last.pt"); }
  static std::string data(const std::string& name) { return quoted(*dir_ / name); }

  static std::filesystem::path* dir_;
};

std::filesystem::path* InputErrors::dir_ = nullptr;

TEST_F(InputErrors, ModelSizesHaveUpperLimits) {
  expect_input_error(run_trafo(train_any_model() + " --max-positions 10000000000"), "max-positions");
  expect_input_error(run_trafo(train_any_model() + " --max-positions 10000000000"), "65536");
  expect_input_error(run_trafo(train_any_model() + " --d-model 1000000 --heads 1"), "d-model must be between");
  expect_input_error(run_trafo(train_any_model() + " --d-ff 100000000"), "d-ff");
  expect_input_error(run_trafo(train_any_model() + " --encoder-layers 100000"), "encoder-layers");
  expect_input_error(run_trafo(train_any_model() + " --heads 4096 --d-model 4096"), "heads must be between");
  expect_input_error(run_trafo(train_any_model() + " --vocab-size 100000000000"), "vocab-size");
  // Each size within its limit, together too big.
  expect_input_error(run_trafo(train_any_model() + " --d-model 16384 --heads 16 --d-ff 65536 --encoder-layers 64"),
                     "parameters");
  expect_input_error(run_trafo("bench --d-model 100000 --heads 1 --threads 1"), "d-model must be between");
}

TEST_F(InputErrors, ThreadsAreCheckedInOnePlaceForEveryCommand) {
  const std::string src = data("dev.en"), ref = data("dev.de");
  expect_input_error(run_trafo("translate --checkpoint " + checkpoint() + " --input " + src + " --threads 100000"),
                     "--threads");
  expect_input_error(run_trafo("translate --checkpoint " + checkpoint() + " --input " + src + " --threads=-1"),
                     "--threads");
  expect_input_error(run_trafo("eval --checkpoint " + checkpoint() + " --src " + src + " --ref " + ref +
                               " --threads 100000"),
                     "--threads");
  expect_input_error(run_trafo("attention --checkpoint " + checkpoint() + " --src hello --json --threads 5000"),
                     "--threads");
  expect_input_error(run_trafo("bench --threads=-1"), "--threads");
  expect_input_error(run_trafo(train_any_model() + " --threads 100000"), "--threads");
}

TEST(ParseDuration, IsStrict) {
  EXPECT_EQ(run_config::parse_duration("90"), 90.0);
  EXPECT_EQ(run_config::parse_duration("90s"), 90.0);
  EXPECT_EQ(run_config::parse_duration("20m"), 1200.0);
  EXPECT_EQ(run_config::parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(run_config::parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(run_config::parse_duration(""), 0.0);
  for (const char* bad : {".", "1.2.3", "5x", "-1m", "m", "1h30", "30m1h", "1m1m", " 5s", "5s ", "1e5s",
                          "99999999999999999999999999999999999999999999999999999999999999999999999999999999999"
                          "99999999999999999999999999999999999999999999999999999999999999999999999999999999999"
                          "99999999999999999999999999999999999999999999999999999999999999999999999999999999999"
                          "99999999999999999999999999999999999999999999999999999999999999999999999999999h"}) {
    EXPECT_THROW(run_config::parse_duration(bad), InputError) << bad;
  }
}

TEST_F(InputErrors, MaxTimeMustBeAPositiveDuration) {
  for (const char* bad : {"0s", "0", ".", "1.2.3", "5x", "-1m"}) {
    expect_input_error(run_trafo(train() + " --max-steps 0 --max-time=" + bad), "max-time");
  }
}

TEST_F(InputErrors, ConfigFileValuesAreCheckedEvenWhenTheCommandLineRepeatsThem) {
  const auto dir = make_temp_dir("input-errors-config");
  write_text(dir / "broken.toml", "lr = 0.01\nd-model = \"wide\"\n");
  // train() gives --d-model on the command line.
  expect_input_error(run_trafo(train() + " --config " + quoted(dir / "broken.toml") + " --dump-config"),
                     "broken.toml:2");
  write_text(dir / "bad-number.toml", "seed = -1\n");
  expect_input_error(run_trafo(train() + " --config " + quoted(dir / "bad-number.toml") + " --seed 3 --dump-config"),
                     "seed");
  // trafo bench reads train configs: keys it does not take are checked all the same.
  write_text(dir / "bench.toml", "d-model = 16\nlr = \"fast\"\n");
  expect_input_error(run_trafo("bench --config " + quoted(dir / "bench.toml") + " --threads 1"), "bench.toml:2");
}

TEST_F(InputErrors, ConfigFilesThatAreNotConfigs) {
  const auto dir = make_temp_dir("input-errors-config");
  const std::string dump = train() + " --dump-config --config ";
  expect_input_error(run_trafo(dump + quoted(dir)), "is a directory");
  expect_input_error(run_trafo(dump + quoted(dir / "missing.toml")), "missing.toml");
  write_text(dir / "latin1.toml", "lr = 0.01\nrun-dir = \"caf\xE9\"\n");
  expect_input_error(run_trafo(dump + quoted(dir / "latin1.toml")), "latin1.toml:2: invalid UTF-8");
  write_text(dir / "prose.toml", "# a config\nthis is not toml\n");
  expect_input_error(run_trafo(dump + quoted(dir / "prose.toml")), "prose.toml:2");
  write_text(dir / "short.toml", "lr = 0.01\nx\n");  // CLI11's reader skipped lines under 3 characters
  expect_input_error(run_trafo(dump + quoted(dir / "short.toml")), "short.toml:2");
  write_text(dir / "twice.toml", "lr = 0.01\nlr = 0.02\n");
  expect_input_error(run_trafo(dump + quoted(dir / "twice.toml")), "set twice");
  write_text(dir / "section.toml", "[train]\nlr = 0.01\n");
  expect_input_error(run_trafo(dump + quoted(dir / "section.toml")), "section.toml:1");
  write_text(dir / "bare.toml", "optimizer = adamw\n");
  expect_input_error(run_trafo(dump + quoted(dir / "bare.toml")), "quoted");
  write_text(dir / "trailing.toml", "lr = 0.01 0.02\n");
  expect_input_error(run_trafo(dump + quoted(dir / "trailing.toml")), "trailing.toml:1");
  write_text(dir / "binary.toml", std::string("lr = 0.01\n\x01\x02\x03\x04", 14));
  expect_input_error(run_trafo(dump + quoted(dir / "binary.toml")), "binary.toml:2");

  // A byte order mark (Windows editors write one) is allowed.
  write_text(dir / "bom.toml", "\xEF\xBB\xBF" "d-model = 16\n# a comment\n\nlr = 0.25  # peak\n");
  const auto bom = run_trafo(dump + quoted(dir / "bom.toml"));
  ASSERT_EQ(bom.exit_code, 0) << bom.errors;
  EXPECT_NE(bom.output.find("lr=0.25"), std::string::npos) << bom.output;
}

TEST_F(InputErrors, AttentionRefusesInvalidUtf8) {
  const std::string base = "attention --checkpoint " + checkpoint() + " --threads 1 --json";
  expect_input_error(run_trafo(base + " --src \"$(printf 'caf\\351')\""), "--src");
  expect_input_error(run_trafo(base + " --src hello --tgt \"$(printf '\\377')\""), "--tgt");
}

TEST_F(InputErrors, NumbersAreRangeCheckedAndFinite) {
  expect_input_error(run_trafo("bench --seed=-1 --threads 1"), "--seed");
  expect_input_error(run_trafo(train() + " --max-steps 1 --seed=-1"), "--seed");
  expect_input_error(run_trafo(train_any_model() + " --d-model 0x10"), "--d-model");
  // Leading zeros are decimal, not octal (CLI11 alone reads 010 as 8).
  const auto decimal = run_trafo(train() + " --warmup-steps 010 --dump-config");
  EXPECT_NE(decimal.output.find("warmup-steps=10\n"), std::string::npos) << decimal.output << decimal.errors;
  expect_input_error(run_trafo(train() + " --max-steps 1 --lr inf"), "--lr");
  expect_input_error(run_trafo(train() + " --max-steps 1 --lr 1e999"), "--lr");
  expect_input_error(run_trafo(train() + " --max-steps 1 --dropout nan"), "--dropout");
  expect_input_error(run_trafo(train() + " --max-steps 1 --clip-norm inf"), "--clip-norm");
  expect_input_error(run_trafo(train_any_model() + " --batch-tokens 100000000000"), "batch-tokens");
  expect_input_error(run_trafo("bench --threads 1 --batch-tokens 0"), "--batch-tokens");
  expect_input_error(run_trafo("bench --threads 1 --decode-sentences 1000000000"), "--decode-sentences");
  const std::string translate = "translate --checkpoint " + checkpoint() + " --input " + data("dev.en");
  expect_input_error(run_trafo(translate + " --length-penalty nan"), "--length-penalty");
  expect_input_error(run_trafo(translate + " --beam 1000000"), "beam");
}

// No output option writes over what a command reads or what a run saved: the same file by any
// path or link, or a folder holding it, is one line and exit 2, with the input left as it was.
TEST_F(InputErrors, OutputsNeverDestroyInputs) {
  const auto dir = make_temp_dir("input-errors-outputs");
  namespace fs = std::filesystem;
  fs::create_directory(dir / "run");
  fs::copy_file(*dir_ / "model-run" / "checkpoint-last.pt", dir / "run" / "model.pt");
  fs::copy_file(*dir_ / "model-run" / "metrics.jsonl", dir / "run" / "metrics.jsonl");
  fs::copy_file(*dir_ / "dev.en", dir / "src.en");
  fs::copy_file(*dir_ / "dev.de", dir / "ref.de");
  fs::create_symlink(dir / "ref.de", dir / "alias.de");
  const auto model = dir / "run" / "model.pt";
  std::map<fs::path, std::string> before;
  for (const auto& path : {model, dir / "src.en", dir / "ref.de", dir / "run" / "metrics.jsonl"}) {
    before[path] = read_text(path);
  }
  const std::string eval = "eval --threads 1 --checkpoint " + quoted(model) + " --src " + quoted(dir / "src.en") +
                           " --ref " + quoted(dir / "ref.de") + " --output ";
  expect_input_error(run_trafo(eval + quoted(dir / "ref.de")), "--ref");
  expect_input_error(run_trafo(eval + quoted(dir / "alias.de")), "--ref");
  expect_input_error(run_trafo(eval + quoted(model)), "--checkpoint");
  expect_input_error(run_trafo(eval + quoted(dir / "run" / ".." / "src.en")), "--src");
  const std::string translate = "translate --threads 1 --checkpoint " + quoted(model) + " --input " +
                                quoted(dir / "src.en") + " --output ";
  expect_input_error(run_trafo(translate + quoted(dir / "src.en")), "--input");
  expect_input_error(run_trafo(translate + quoted(model)), "--checkpoint");
  expect_input_error(run_trafo("export --checkpoint " + quoted(model) + " --force --out " + quoted(dir / "run")),
                     "holds the --checkpoint");
  expect_input_error(run_trafo("export --checkpoint " + quoted(model) + " --force --out " + quoted(dir)),
                     "holds the --checkpoint");
  expect_input_error(run_trafo("average --force --out " + quoted(model) + " " + quoted(model)), "averaged");
  // A file of a folder the command reads (import reads a MarianMT folder), with or without --force.
  expect_input_error(run_trafo("import --from " + quoted(dir / "run") + " --force --out " + quoted(model)), "--from");
  expect_input_error(run_trafo("import --from " + quoted(dir / "run") + " --out " + quoted(model)), "--from");
  expect_input_error(run_trafo("report " + quoted(dir / "run") + " --out " + quoted(dir / "run" / "metrics.jsonl")),
                     "metrics.jsonl");
  fs::copy_file(model, dir / "model.html");
  expect_input_error(run_trafo("attention --threads 1 --src 'a b' --checkpoint " + quoted(dir / "model.html") +
                               " --out " + quoted(dir / "model.html")),
                     "--checkpoint");
  fs::copy_file(model, dir / "run" / "checkpoint-last.pt");
  fs::copy_file(*dir_ / "model-run" / "config.toml", dir / "run" / "config.toml");
  for (const char* saved : {"checkpoint-last.pt", "config.toml"}) {
    before[dir / "run" / saved] = read_text(dir / "run" / saved);
    expect_input_error(run_trafo("report " + quoted(dir / "run") + " --out " + quoted(dir / "run" / saved)), saved);
  }
  for (const auto& [path, text] : before) EXPECT_EQ(read_text(path), text) << path;
  EXPECT_EQ(read_text(dir / "model.html"), before[model]);
  EXPECT_TRUE(fs::exists(dir / "alias.de"));

  // A link is written through: to a device it stays a device (/dev/full: exit 1, the disk is full),
  // to a file the file gets the text and the link stays.
  fs::create_symlink("/dev/full", dir / "full");
  const auto full = run_trafo(eval + quoted(dir / "full"));
  EXPECT_EQ(full.exit_code, 1) << full.errors;
  EXPECT_NE(full.errors.find("cannot write"), std::string::npos) << full.errors;
  EXPECT_TRUE(fs::is_symlink(dir / "full"));
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  write_text(dir / "old.txt", "old\n");
  fs::create_symlink(dir / "old.txt", dir / "hyp.link");
  const auto linked = run_trafo(eval + quoted(dir / "hyp.link"));
  EXPECT_EQ(linked.exit_code, 0) << linked.errors;
  EXPECT_TRUE(fs::is_symlink(dir / "hyp.link"));
  EXPECT_NE(read_text(dir / "old.txt"), "old\n");

  // A folder named with a trailing slash is that folder.
  const auto exported = run_trafo("export --checkpoint " + quoted(model) + " --out " + quoted(dir / "ct2") + "/");
  EXPECT_EQ(exported.exit_code, 0) << exported.errors;
  EXPECT_TRUE(fs::is_regular_file(dir / "ct2" / "model.bin"));

  // toy-corpus replaces a folder's train/dev/test files only when told to.
  write_text(dir / "train.en", "real data\n");
  expect_input_error(run_trafo("toy-corpus --train 20 --dev 2 --test 2 --out " + quoted(dir)), "train.en exists");
  EXPECT_EQ(read_text(dir / "train.en"), "real data\n");
  const auto forced = run_trafo("toy-corpus --train 20 --dev 2 --test 2 --force --out " + quoted(dir));
  EXPECT_EQ(forced.exit_code, 0) << forced.errors;
  EXPECT_NE(read_text(dir / "train.en"), "real data\n");
}

// Results that cannot reach standard output are a failure, not a quiet success.
TEST_F(InputErrors, AFullStandardOutputIsAFailure) {
  const auto result = run_trafo(train() + " --dump-config > /dev/full");
  EXPECT_EQ(result.exit_code, 1) << result.errors;
  EXPECT_NE(result.errors.find("standard output"), std::string::npos) << result.errors;
}

// Options whose cost grows with their value have an upper limit.
TEST_F(InputErrors, CostlyOptionsHaveUpperLimits) {
  expect_input_error(run_trafo(train() + " --max-steps 1 --accumulate 100000000"), "accumulate");
  expect_input_error(run_trafo("translate --threads 1 --checkpoint " + checkpoint() + " --input " + data("dev.en") +
                               " --max-length-b=-100"),
                     "max-length-b");
  expect_input_error(run_trafo("score --ref " + data("dev.de") + " --hyp " + data("dev.de") +
                               " --chrf-word-order 2000000000"),
                     "--chrf-word-order");
}

TEST_F(InputErrors, DataFilesThatAreNotText) {
  const auto dir = make_temp_dir("input-errors-data");
  std::filesystem::create_directory(dir / "train.en");
  write_text(dir / "train.de", "hallo\n");
  const std::string args =
      " --src-lang en --tgt-lang de --run-dir " + quoted(dir / "run") + kInputErrorsModel + " --max-steps 1";
  expect_input_error(run_trafo("train --data-dir " + quoted(dir) + args), "train.en is a directory, not a text file");

  const auto empty = make_temp_dir("input-errors-empty");
  write_text(empty / "train.en", "");
  write_text(empty / "train.de", "");
  write_synthetic_corpus(empty, "dev", 6, 2);
  expect_input_error(run_trafo("train --data-dir " + quoted(empty) + args), "train.en holds no text");
  write_text(empty / "train.en", "\n  \n");
  write_text(empty / "train.de", "a\nb\n");
  expect_input_error(run_trafo("train --data-dir " + quoted(empty) + args), "train.en holds no text");
}

TEST_F(InputErrors, VocabularyErrorsPointTheRightWay) {
  // Many distinct characters need more pieces than 300: the fix is a larger vocabulary.
  const auto dir = make_temp_dir("input-errors-chars");
  std::string text;
  for (int line = 0; line < 200; ++line) {
    for (int c = 0; c < 120; ++c) {
      const int code = 0x4E00 + (line * 7 + c) % 400;  // CJK ideographs, three UTF-8 bytes each
      text += static_cast<char>(0xE0 | (code >> 12));
      text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      text += static_cast<char>(0x80 | (code & 0x3F));
    }
    text += "\n";
  }
  write_text(dir / "train.en", text);
  write_text(dir / "train.de", text);
  write_text(dir / "dev.en", "a\n");
  write_text(dir / "dev.de", "b\n");
  const auto result = run_trafo("train --data-dir " + quoted(dir) + " --src-lang en --tgt-lang de --run-dir " +
                                quoted(dir / "run") + kInputErrorsModel + " --max-steps 1");
  expect_input_error(result, "larger --vocab-size", /*only_line=*/false);
  EXPECT_EQ(result.errors.find("smaller --vocab-size"), std::string::npos) << result.errors;
}

TEST(InputErrorsSmallCorpus, TrainsASmallerVocabularyThanTheDefault) {
  const auto dir = make_temp_dir("input-errors-toy");
  const auto toy = run_trafo("toy-corpus --out " + quoted(dir) + " --train 3000 --dev 20 --test 20");
  ASSERT_EQ(toy.exit_code, 0) << toy.errors;
  const auto result = run_trafo("train --data-dir " + quoted(dir) + " --src-lang en --tgt-lang de --run-dir " +
                                quoted(dir / "run") +
                                " --d-model 16 --heads 2 --d-ff 32 --encoder-layers 1 --decoder-layers 1"
                                " --batch-tokens 200 --threads 1 --valid-max-sentences 2 --max-steps 1");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_NE(result.errors.find("not the 8000 asked for"), std::string::npos) << result.errors;
  EXPECT_EQ(result.errors.find("Running command"), std::string::npos) << result.errors;
}

}  // namespace
}  // namespace trafo::testing
