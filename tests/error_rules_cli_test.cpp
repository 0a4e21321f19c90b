// The error rules through the binary (docs/design.md "Exit codes"): an error names its file and its
// cause, and an exit code means one thing for every writer: 1 when the machine refuses a write at run
// time (a full disk, a file over its size limit), 2 when the path cannot be written (a file where a
// folder should be). Corpus weights of any size are shared out, never summed into infinity.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "data_support.h"
#include "run_support.h"
#include "trafo/checkpoint/checkpoint.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

const char* kErrorRulesModel =
    " --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
    " --batch-tokens 200 --threads 1 --valid-max-sentences 2";

// The exit code, and the one "trafo: error:" line of stderr holding `needle`, with no stack trace.
void expect_error(const CommandResult& result, int code, const std::string& needle) {
  EXPECT_EQ(result.exit_code, code) << result.errors;
  int error_lines = 0;
  for (const auto& line : lines_of(result.errors)) {
    if (line.rfind("trafo: error: ", 0) != 0) continue;
    ++error_lines;
    EXPECT_NE(line.find(needle), std::string::npos) << "the message should hold " << needle << ": " << line;
  }
  EXPECT_EQ(error_lines, 1) << result.errors;
  for (const char* trace : {"frame #", "Exception raised from", "terminate called"}) {
    EXPECT_EQ(result.errors.find(trace), std::string::npos) << result.errors;
  }
}

// trafo with `arguments`, its files limited to `bytes` (SIGXFSZ ignored): a write past the limit fails
// with EFBIG, as a write to a full disk fails with ENOSPC, whatever the machine's disks.
CommandResult run_trafo_with_file_limit(int64_t bytes, const std::string& arguments) {
  return run_command("trap '' XFSZ; ulimit -f " + std::to_string(bytes / 512) + "; exec '" + TRAFO_BINARY + "' " +
                     arguments);
}

// A small corpus, a bigger one (its token cache is 3 MB, the vocabulary 240 KB), and a tiny checkpoint.
class ErrorRules : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(make_temp_dir("error-rules"));
    fs::create_directories(data());
    write_synthetic_corpus(data(), "train", 80, 1);
    write_synthetic_corpus(data(), "dev", 6, 2);
    write_synthetic_corpus(data(), "extra", 40, 3);
    write_synthetic_corpus(data(), "big", 20000, 4);
    const auto made = run_trafo(train(*root_ / "model-run") + " --max-steps 1 --valid-every 0");
    ASSERT_EQ(made.exit_code, 0) << made.errors;
  }
  static void TearDownTestSuite() {
    delete root_;
    root_ = nullptr;
  }
  static fs::path data() { return *root_ / "data"; }
  static fs::path model() { return *root_ / "model-run" / "checkpoint-last.pt"; }
  static std::string data_args(const fs::path& run) {
    return "train --data-dir " + quoted(data()) + " --src-lang en --tgt-lang de --run-dir " + quoted(run);
  }
  static std::string train(const fs::path& run) { return data_args(run) + kErrorRulesModel; }
  // A run on the big corpus with its own cache folder.
  static std::string train_big(const fs::path& dir) {
    return train(dir / "run") + " --train-src " + quoted(data() / "big.en") + " --train-tgt " +
           quoted(data() / "big.de") + " --cache-dir " + quoted(dir / "cache") + " --max-steps 1 --valid-every 0";
  }
  static fs::path* root_;
};

fs::path* ErrorRules::root_ = nullptr;

// A checkpoint whose model config is invalid: every command that loads it says which file it is.
TEST_F(ErrorRules, ACheckpointsBadModelConfigNamesTheCheckpointInEveryCommand) {
  const auto dir = make_temp_dir("error-rules-checkpoint");
  auto bad = checkpoint::load(model(), /*with_training_state=*/false);
  bad.model_config.heads = 3;  // does not divide d-model 32
  const auto path = dir / "bad-heads.pt";
  checkpoint::save(path, bad);
  const std::string reason = path.string() + ": invalid model config: heads (3) must divide d-model (32)";
  const std::string dev = " --src " + quoted(data() / "dev.en") + " --ref " + quoted(data() / "dev.de");

  expect_error(run_trafo("translate --threads 1 --checkpoint " + quoted(path) + " --input " + quoted(data() / "dev.en")),
               2, reason);
  expect_error(run_trafo("translate --threads 1 --checkpoint " + quoted(model()) + " --checkpoint " + quoted(path) +
                         " --input " + quoted(data() / "dev.en")),
               2, reason);
  expect_error(run_trafo("eval --threads 1 --checkpoint " + quoted(path) + dev), 2, reason);
  expect_error(run_trafo("export --checkpoint " + quoted(path) + " --out " + quoted(dir / "ct2")), 2, reason);
  expect_error(run_trafo("average --out " + quoted(dir / "avg.pt") + " " + quoted(model()) + " " + quoted(path)), 2,
               reason);
  expect_error(run_trafo("average --out " + quoted(dir / "avg.pt") + " " + quoted(path) + " " + quoted(model())), 2,
               reason);
  expect_error(run_trafo(data_args(dir / "tuned") + " --threads 1 --max-steps 1 --init-from " + quoted(path)), 2,
               reason);
  EXPECT_FALSE(fs::exists(dir / "ct2"));
  EXPECT_FALSE(fs::exists(dir / "avg.pt"));

  // A reason that names the file already is not given the name twice.
  write_text(dir / "short.pt", read_text(model()).substr(0, 200));
  const auto truncated = run_trafo("eval --threads 1 --checkpoint " + quoted(dir / "short.pt") + dev);
  expect_error(truncated, 2, (dir / "short.pt").string());
  const auto first = truncated.errors.find((dir / "short.pt").string());
  EXPECT_EQ(truncated.errors.find((dir / "short.pt").string(), first + 1), std::string::npos) << truncated.errors;
}

// Two weights of 1e308 once summed to infinity, every share to 0, and the vocabulary had no line to
// learn from. Any positive, finite weights now share the pairs as their ratios say.
TEST_F(ErrorRules, HugeCorpusWeightsShareThePairsAsTheirRatiosSay) {
  const auto dir = make_temp_dir("error-rules-weights");
  auto corpora = [&](const std::string& weight) {
    return " --corpus " + quoted(data() / "train.en") + "," + quoted(data() / "train.de") + "," + weight +
           " --corpus " + quoted(data() / "extra.en") + "," + quoted(data() / "extra.de") + "," + weight;
  };
  const std::string cache = " --cache-dir " + quoted(dir / "cache") + " --max-steps 4 --valid-every 0 --log-every 1";
  const auto huge = run_trafo(train(dir / "huge") + corpora("1e308") + cache);
  ASSERT_EQ(huge.exit_code, 0) << huge.errors;
  const auto ones = run_trafo(train(dir / "ones") + corpora("1") + cache);
  ASSERT_EQ(ones.exit_code, 0) << ones.errors;

  // The same vocabulary sample as equal weights of 1, and half of the pairs each.
  const auto sentences = [](const std::string& log) {
    const auto at = log.find("learned the vocabulary from ");
    return at == std::string::npos ? std::string("none") : log.substr(at, log.find(" sentences", at) - at);
  };
  EXPECT_EQ(sentences(huge.errors), sentences(ones.errors)) << huge.errors;
  EXPECT_NE(sentences(huge.errors), "none") << huge.errors;
  int64_t pairs[2] = {0, 0};
  for (const auto& event : read_jsonl(dir / "huge" / "metrics.jsonl")) {
    if (event["event"] == "start") {
      ASSERT_EQ(event["corpora"].size(), 2u) << event.dump();
      EXPECT_DOUBLE_EQ(event["corpora"][0]["share"].get<double>(), 0.5);
      EXPECT_DOUBLE_EQ(event["corpora"][1]["share"].get<double>(), 0.5);
    }
    if (event["event"] != "train") continue;
    pairs[0] += event["corpus_pairs"][0].get<int64_t>();
    pairs[1] += event["corpus_pairs"][1].get<int64_t>();
  }
  EXPECT_GT(pairs[0], 0);
  EXPECT_GT(pairs[1], 0);
}

// A write the machine refuses at run time is exit 1, for every writer, in the same folder alike.
TEST_F(ErrorRules, AFullDiskIsExitOneForEveryWriter) {
  const auto dir = make_temp_dir("error-rules-full");
  // The token cache (3 MB) past a 1 MB limit; the vocabulary (240 KB) fits.
  const auto cache = run_trafo_with_file_limit(1 << 20, train_big(dir / "a"));
  expect_error(cache, 1, "cannot write the token cache " + (dir / "a" / "cache").string());
  EXPECT_EQ(cache.errors.find("give --cache-dir"), std::string::npos) << cache.errors;
  // The vocabulary past a 64 KB limit, in the same kind of folder: the same exit code.
  const auto vocabulary = run_trafo_with_file_limit(64 << 10, train_big(dir / "b"));
  expect_error(vocabulary, 1, "cannot write " + (dir / "b" / "cache" / "vocab-").string());
  for (const char* folder : {"a", "b"}) {  // no temporary file left behind
    for (const auto& entry : fs::directory_iterator(dir / folder / "cache")) {
      EXPECT_EQ(entry.path().filename().string().find("tmp"), std::string::npos) << entry.path();
    }
  }

  const std::string dev = quoted(data() / "dev.en");
  expect_error(run_trafo("translate --threads 1 --checkpoint " + quoted(model()) + " --input " + dev +
                         " --output /dev/full"),
               1, "cannot write the translations to /dev/full");
  expect_error(run_trafo("eval --threads 1 --checkpoint " + quoted(model()) + " --src " + dev + " --ref " +
                         quoted(data() / "dev.de") + " --output /dev/full"),
               1, "cannot write /dev/full");
  expect_error(run_trafo("average --force --out /dev/full " + quoted(model())), 1, "cannot write /dev/full");
  // A checkpoint past the limit (850 KB) in a run whose vocabulary and token cache fit.
  const auto checkpoint = run_trafo_with_file_limit(512 << 10, train(dir / "c" / "run") + " --cache-dir " +
                                                                   quoted(dir / "c" / "cache") + " --max-steps 1");
  expect_error(checkpoint, 1, "cannot write " + (dir / "c" / "run" / "checkpoint-").string());
}

// The full disk of the report that found the defect, where a tmpfs can be mounted (as root, in a mount
// namespace of its own): the token cache in a 1 MB folder is exit 1, as the vocabulary would be.
TEST_F(ErrorRules, ATokenCacheOnARealFullDiskIsExitOne) {
  const auto dir = make_temp_dir("error-rules-tmpfs");
  fs::create_directories(dir / "a" / "cache");
  const std::string mount = "unshare -m sh -c \"mount -t tmpfs -o size=1m tmpfs '" + (dir / "a" / "cache").string() +
                            "' && exec '" + TRAFO_BINARY + "' ";
  if (run_command(mount + "--version\"").exit_code != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root and unshare)";
  }
  const auto result = run_command(mount + train_big(dir / "a") + "\"");  // paths in '', safe within ""
  expect_error(result, 1, "cannot write the token cache " + (dir / "a" / "cache").string());
  EXPECT_NE(result.errors.find("No space left on device"), std::string::npos) << result.errors;
}

// A path that cannot be written (a file where a folder should be) is bad input: exit 2, for every writer.
TEST_F(ErrorRules, AFileWhereAFolderShouldBeIsExitTwoForEveryWriter) {
  const auto dir = make_temp_dir("error-rules-path");
  write_text(dir / "file", "not a folder\n");
  const auto blocked = dir / "file";
  const std::string dev = quoted(data() / "dev.en");
  const auto out = [&](const std::string& name) { return (blocked / name).string(); };
  const auto given = [&](const std::string& name) { return quoted(blocked / name); };

  expect_error(run_trafo("translate --threads 1 --checkpoint " + quoted(model()) + " --input " + dev + " --output " +
                         given("hyp.txt")),
               2, out("hyp.txt"));
  expect_error(run_trafo("eval --threads 1 --checkpoint " + quoted(model()) + " --src " + dev + " --ref " +
                         quoted(data() / "dev.de") + " --output " + given("hyp.txt")),
               2, "cannot write " + out("hyp.txt"));
  expect_error(run_trafo("average --out " + given("avg.pt") + " " + quoted(model())), 2,
               "cannot write " + out("avg.pt"));
  expect_error(run_trafo("export --checkpoint " + quoted(model()) + " --out " + given("ct2")), 2, out("ct2"));
  expect_error(run_trafo("toy-corpus --train 20 --dev 2 --test 2 --out " + given("toy")), 2, out("toy"));
  expect_error(run_trafo(train(dir / "run") + " --max-steps 1 --cache-dir " + given("cache")), 2,
               out("cache") + ": Not a directory; give --cache-dir a folder that can be written");
  expect_error(run_trafo(train(blocked / "run") + " --max-steps 1"), 2, out("run"));
  expect_error(run_trafo("report " + quoted(model().parent_path()) + " --out " + given("report.html")), 2,
               out("report.html"));
  EXPECT_EQ(read_text(blocked), "not a folder\n");
}

}  // namespace
}  // namespace trafo::testing
