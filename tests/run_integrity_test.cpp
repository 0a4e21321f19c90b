// What trafo reports and keeps, end to end through the binary: in-training validation equals a
// fresh `trafo eval`, damaged checkpoints are refused, and no saved run is lost (resume from the
// newest checkpoint whatever its name, the folder lock, --overwrite only once the new run is checked,
// stale temporaries, a full disk).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_support.h"
#include "run_support.h"
#include "trafo/util/files.h"

namespace trafo::testing {
namespace {

const char* kIntegrityModel =
    " --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64"
    " --batch-tokens 200 --threads 1 --valid-max-sentences 0 --log-every 1";

int count_lines(const std::string& text) { return static_cast<int>(lines_of(text).size()); }

class RunIntegrity : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = make_temp_dir("integrity-data");
    write_synthetic_corpus(data_, "train", 80, 1);
    write_synthetic_corpus(data_, "dev", 8, 2);
    run_ = make_temp_dir("integrity-run") / "run";
  }
  std::string base() const {
    return "train --data-dir " + quoted(data_) + " --src-lang en --tgt-lang de --run-dir " + quoted(run_) +
           kIntegrityModel + " --vocab-size " + std::to_string(vocab_size_);
  }
  std::filesystem::path data_, run_;
  int vocab_size_ = 300;
};

// The stale-weights bug: decoding packs weights, and the fused Adam updates them without bumping
// version counters, so later validations decoded with old copies. Every validation's loss, BLEU, chrF
// and every hypothesis must equal what a fresh process computes from the checkpoint of that step, in
// either precision validation may run: fp32 (auto's), and bf16 where it is asked for (a CPU with
// native bf16 posed), where bf16's rounding turns the last bits that padding beside a sentence changes
// into another token near a tie. The dev set spans several of eval's batches.
class ValidationAsEval : public RunIntegrity, public ::testing::WithParamInterface<const char*> {};

TEST_P(ValidationAsEval, EqualsAFreshEvalOfTheCheckpointOfThatStep) {
  const bool bf16 = std::string(GetParam()) == "bf16";
  const PosedCpu posed(bf16 ? "avx512_bf16" : "", "0.5", "10");
  // The toy pair with a barely trained model: outputs that change with every update.
  const auto toy = make_temp_dir("integrity-toy");
  ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(toy) + " --train 300 --dev 300 --test 10").exit_code, 0);
  data_ = toy;
  vocab_size_ = 400;
  const auto trained = run_trafo(base() + (bf16 ? " --precision bf16" : "") +
                                 " --max-steps 40 --valid-every 10 --valid-samples 300"
                                 " --keep-checkpoints 5 --lr 1e-3 --warmup-steps 1 --dropout 0"
                                 " --early-stopping 0");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto start = read_jsonl(run_ / "metrics.jsonl").front();
  ASSERT_EQ(start["precision"], GetParam()) << start;
  ASSERT_EQ(start["validation_precision"], GetParam()) << start;
  const auto hypotheses = expect_validations_equal_fresh_evals(run_, data_);
  ASSERT_EQ(hypotheses.size(), 4u);
  bool changed = false;
  for (size_t i = 1; i < hypotheses.size(); ++i) changed |= hypotheses[i] != hypotheses[i - 1];
  EXPECT_TRUE(changed) << "the outputs never changed: the test cannot tell stale weights from fresh ones";
}

INSTANTIATE_TEST_SUITE_P(RunIntegrity, ValidationAsEval, ::testing::Values("fp32", "bf16"));

// 1 KB of random bytes inside a valid checkpoint: every command that loads it says so in one line
// (exit 2, naming the file) instead of translating garbage; a resume neither starts over nor runs on.
TEST_F(RunIntegrity, DamagedCheckpointsAreRefusedInOneLine) {
  ASSERT_EQ(run_trafo(base() + " --max-steps 2").exit_code, 0);
  const auto good = read_text(run_ / "checkpoint-last.pt");
  const auto dir = make_temp_dir("damaged");
  write_text(dir / "input.txt", "the cat\n");
  // fp32: auto times the model at start and may pick differently from one run to the next.
  const std::string input = " --precision fp32 < " + quoted(dir / "input.txt");
  auto translate = [&](const std::filesystem::path& checkpoint) {
    return std::vector<CommandResult>{
        run_trafo("translate --threads 1 --checkpoint " + quoted(checkpoint) + input),
        run_trafo("translate --threads 1 --n-best 2 --beam 2 --checkpoint " + quoted(checkpoint) + input)};
  };
  const auto expected = translate(run_ / "checkpoint-last.pt");
  std::mt19937 rng(7);
  int refused = 0;
  for (const double at : {0.02, 0.1, 0.3, 0.5, 0.7, 0.9}) {
    std::string bytes = good;
    const size_t offset = static_cast<size_t>(at * static_cast<double>(bytes.size()));
    for (size_t i = offset; i < std::min(bytes.size(), offset + 1024); ++i) bytes[i] = static_cast<char>(rng());
    const auto damaged = dir / "damaged.pt";
    write_text(damaged, bytes);
    const auto results = translate(damaged);
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& result = results[i];
      if (result.exit_code == 0) {  // the damage hit nothing a translation reads (the optimizer state)
        EXPECT_EQ(result.output, expected[i].output) << "damage at " << at << " changed the translation silently";
        continue;
      }
      ++refused;
      EXPECT_EQ(result.exit_code, 2) << at << ": " << result.errors;
      EXPECT_EQ(count_lines(result.errors), 1) << result.errors;
      EXPECT_NE(result.errors.find(damaged.string()), std::string::npos) << result.errors;
      EXPECT_TRUE(result.output.empty()) << result.output;
    }
  }
  EXPECT_GE(refused, 8);
  // A resume from a folder whose only checkpoint is damaged: exit 2, the file left as it was.
  std::string bytes = good;
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 1024; ++i) bytes[i] = static_cast<char>(rng());
  for (const auto& entry : std::filesystem::directory_iterator(run_)) {
    if (entry.path().extension() == ".pt") std::filesystem::remove(entry.path());
  }
  write_text(run_ / "checkpoint-last.pt", bytes);
  const auto resumed = run_trafo(base() + " --max-steps 4");
  EXPECT_EQ(resumed.exit_code, 2) << resumed.errors;
  EXPECT_NE(resumed.errors.find("none can be resumed"), std::string::npos) << resumed.errors;
  EXPECT_EQ(read_text(run_ / "checkpoint-last.pt"), bytes);
}

TEST_F(RunIntegrity, LoadersRefuseWhatIsNoRegularFile) {
  const auto fifo = make_temp_dir("fifo") / "checkpoint.pt";  // opening it for reading would wait for a writer
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path :
       std::vector<std::string>{"/dev/zero", "/dev/null", make_temp_dir("folder").string(), fifo.string()}) {
    const auto result = run_trafo("translate --threads 1 --checkpoint '" + path + "' < /dev/null");
    EXPECT_EQ(result.exit_code, 2) << path << ": " << result.errors;
    EXPECT_EQ(count_lines(result.errors), 1) << result.errors;
  }
}

// An output that is a named pipe no process reads: opening it to write used to wait for a reader for
// good. Each command says so at once (exit 2, one line); with a reader the output goes through it.
TEST_F(RunIntegrity, OutputsToAPipeNoProcessReadsAreRefusedAtOnce) {
  ASSERT_EQ(run_trafo(base() + " --max-steps 2").exit_code, 0);
  const auto dir = make_temp_dir("pipe-out");
  const auto pipe = dir / "out";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const auto checkpoint = quoted(run_ / "checkpoint-last.pt");
  const std::string source = quoted(data_ / "dev.en"), reference = quoted(data_ / "dev.de");
  for (const std::string& command :
       {"translate --threads 1 --checkpoint " + checkpoint + " --input " + source + " --output " + quoted(pipe),
        "eval --threads 1 --checkpoint " + checkpoint + " --src " + source + " --ref " + reference + " --output " +
            quoted(pipe),
        "average --force --out " + quoted(pipe) + " " + checkpoint}) {
    const auto result = run_command("timeout 60 '" + std::string(TRAFO_BINARY) + "' " + command);
    EXPECT_EQ(result.exit_code, 2) << command << ": " << result.errors;
    EXPECT_NE(result.errors.find("it is a named pipe that no process reads"), std::string::npos) << result.errors;
  }
  const auto read = run_command("cat " + quoted(pipe) + " > " + quoted(dir / "read.txt") + " & sleep 1; '" +
                                std::string(TRAFO_BINARY) + "' translate --threads 1 --checkpoint " + checkpoint +
                                " --input " + source + " --output " + quoted(pipe) + "; wait");
  EXPECT_EQ(read.exit_code, 0) << read.errors;
  EXPECT_EQ(lines_of(read_text(dir / "read.txt")).size(), lines_of(read_text(data_ / "dev.en")).size());
}

// --no-resume --overwrite that fails on its own input (here: training files with no text) leaves
// the old run whole: it is replaced only once the new run has read and checked everything.
TEST_F(RunIntegrity, OverwriteKeepsTheOldRunUntilTheNewOneIsChecked) {
  ASSERT_EQ(run_trafo(base() + " --max-steps 2").exit_code, 0);
  const auto checkpoint = read_text(run_ / "checkpoint-last.pt");
  const auto metrics = read_text(run_ / "metrics.jsonl");
  write_text(data_ / "train.en", "\n\n");
  write_text(data_ / "train.de", "\n\n");
  const auto failed = run_trafo(base() + " --max-steps 2 --no-resume --overwrite");
  EXPECT_EQ(failed.exit_code, 2) << failed.errors;
  EXPECT_EQ(read_text(run_ / "checkpoint-last.pt"), checkpoint);
  EXPECT_EQ(read_text(run_ / "metrics.jsonl"), metrics);
}

// A folder holding only checkpoint-best.pt (a user continuing from their best model), or only
// numbered checkpoints (killed before a validation wrote checkpoint-last.pt): the run continues
// from the newest of them instead of starting over on top of them.
TEST_F(RunIntegrity, ResumesFromTheNewestCheckpointWhateverItsName) {
  ASSERT_EQ(run_trafo(base() + " --max-steps 4 --checkpoint-every 2 --valid-every 0").exit_code, 0);
  std::filesystem::remove(run_ / "checkpoint-last.pt");
  std::filesystem::remove(run_ / "checkpoint-best.pt");
  ASSERT_TRUE(std::filesystem::exists(run_ / "checkpoint-4.pt"));
  auto resumed = run_trafo(base() + " --max-steps 6 --checkpoint-every 2 --valid-every 0");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming from " + (run_ / "checkpoint-4.pt").string()), std::string::npos)
      << resumed.errors;
  auto events = read_jsonl(run_ / "metrics.jsonl");
  EXPECT_EQ(events.back()["step"], 6);

  for (const auto& entry : std::filesystem::directory_iterator(run_)) {
    if (entry.path().filename() != "checkpoint-best.pt" && entry.path().extension() == ".pt") {
      std::filesystem::remove(entry.path());
    }
  }
  resumed = run_trafo(base() + " --max-steps 8 --valid-every 0");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming from " + (run_ / "checkpoint-best.pt").string()), std::string::npos)
      << resumed.errors;
  events = read_jsonl(run_ / "metrics.jsonl");
  EXPECT_EQ(events.back()["step"], 8);
}

// Where the run keeps a file of its own, something else: a named pipe (a resume used to pass over
// it, train, then wait for good to open it at the first save, deaf to SIGTERM), a folder (refused
// only at the first save, after the training was done), a device in a checkpoint's place (where the
// saves would be lost; a log may be one). Each is refused at start, in one line naming it, before a
// step; a dangling link of a checkpoint's name is named among what the resume passes over, and the
// run goes on from the checkpoint with the most steps.
TEST_F(RunIntegrity, SpecialFilesInTheRunFolderAreRefusedOrNamedBeforeAnyWork) {
  ASSERT_EQ(run_trafo(base() + " --max-steps 4 --checkpoint-every 2 --valid-every 0").exit_code, 0);
  const auto last = run_ / "checkpoint-last.pt";
  const auto metrics = read_text(run_ / "metrics.jsonl");
  const auto train = [&](const std::string& limits) {
    return run_command("timeout 120 '" + std::string(TRAFO_BINARY) + "' " + base() + limits + " --valid-every 0");
  };
  std::filesystem::remove(last);
  const std::vector<std::pair<std::string, std::function<void(const std::filesystem::path&)>>> specials = {
      {"a named pipe (FIFO)", [](const std::filesystem::path& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); }},
      {"a folder", [](const std::filesystem::path& p) { std::filesystem::create_directory(p); }},
      {"a character device", [](const std::filesystem::path& p) { std::filesystem::create_symlink("/dev/null", p); }},
  };
  for (const auto& name : {"checkpoint-last.pt", "metrics.jsonl", "train.log"}) {
    const auto path = run_ / name;
    const auto kept = std::filesystem::exists(path) ? read_text(path) : std::string();
    for (const auto& [kind, make] : specials) {
      if (kind == "a character device" && std::string(name) != "checkpoint-last.pt") continue;
      std::error_code ignored;
      std::filesystem::rename(path, run_ / "kept", ignored);
      make(path);
      const auto refused = train(" --max-steps 6");
      EXPECT_EQ(refused.exit_code, 2) << name << " as " << kind << ": " << refused.errors;
      const auto lines = lines_of(refused.errors);
      ASSERT_FALSE(lines.empty()) << name << " as " << kind;
      EXPECT_NE(lines.back().find(name + std::string(" is ") + kind), std::string::npos) << refused.errors;
      std::filesystem::remove(path, ignored);
      std::filesystem::rename(run_ / "kept", path, ignored);
    }
    if (!kept.empty()) {
      EXPECT_EQ(read_text(path), kept) << name;
    }
  }
  EXPECT_EQ(read_text(run_ / "metrics.jsonl"), metrics);  // not a step was taken
  std::filesystem::create_symlink(run_ / "gone.pt", last);
  const auto resumed = train(" --max-steps 6");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.errors;
  EXPECT_NE(resumed.errors.find("cannot resume from " + last.string() + ": cannot read " + last.string() +
                                ": it is a link to " + (run_ / "gone.pt").string() + ", which does not exist"),
            std::string::npos)
      << resumed.errors;
  EXPECT_NE(resumed.errors.find("resuming " + run_.string() + " at step 4"), std::string::npos) << resumed.errors;
  EXPECT_EQ(read_jsonl(run_ / "metrics.jsonl").back()["step"], 6);
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(last)));  // the save replaced the link
}

TEST_F(RunIntegrity, OneTrainerPerRunFolderAndNoStaleTemporaries) {
  std::filesystem::create_directories(run_);
  write_text(run_ / "checkpoint-last.pt.tmp-999999", "half a checkpoint");
  // Another command's temporary, its process alive (this test's), and a user's file that only
  // looks like one: neither is a killed run's, so both stay.
  const auto live = run_ / ("avg.pt.tmp-" + std::to_string(::getpid()));
  write_text(live, "being written");
  write_text(run_ / "notes.tmp-draft", "mine");
  const auto log = run_.parent_path() / "first.log";
  const int first = spawn_command("'" + std::string(TRAFO_BINARY) + "' " + base() +
                                  " --max-steps 100000 --valid-every 0 2>" + quoted(log));
  for (int i = 0; i < 1200 && read_text(run_ / "metrics.jsonl").find("\"train\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto second = run_trafo(base() + " --max-steps 2");
  EXPECT_EQ(second.exit_code, 2) << second.errors;
  EXPECT_NE(second.errors.find("in use"), std::string::npos) << second.errors;
  EXPECT_EQ(count_lines(second.errors), 1) << second.errors;
  EXPECT_FALSE(std::filesystem::exists(run_ / "checkpoint-last.pt.tmp-999999"));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(run_ / "notes.tmp-draft"));
  ::kill(first, SIGTERM);
  EXPECT_EQ(wait_for_exit(first, 120), 0) << read_text(log);
  for (const auto& event : read_jsonl(run_ / "metrics.jsonl")) EXPECT_TRUE(event.contains("event"));
}

// A log that cannot be written (a full disk) is a run-time failure, not silence.
TEST_F(RunIntegrity, AFullDiskForTheLogsIsExitOne) {
  for (const char* name : {"metrics.jsonl", "train.log"}) {
    util::remove_tree(run_);
    std::filesystem::create_directories(run_);
    std::filesystem::create_symlink("/dev/full", run_ / name);
    const auto result = run_trafo(base() + " --max-steps 2");
    EXPECT_EQ(result.exit_code, 1) << name << ": " << result.errors;
    EXPECT_NE(result.errors.find("trafo: error: cannot write " + (run_ / name).string()), std::string::npos)
        << result.errors;
  }
}

// Dev sentences longer than the model's positions, and training pairs longer than them, are left out
// or cut with a warning; the run trains and validates.
TEST_F(RunIntegrity, SentencesLongerThanThePositionsDoNotEndTheRun) {
  std::string long_line;
  for (int i = 0; i < 60; ++i) long_line += "the cat sees a dog ";
  write_text(data_ / "dev.en", read_text(data_ / "dev.en") + long_line + "\n");
  write_text(data_ / "dev.de", read_text(data_ / "dev.de") + long_line + "\n");
  write_text(data_ / "train.en", read_text(data_ / "train.en") + long_line + "\n");
  write_text(data_ / "train.de", read_text(data_ / "train.de") + long_line + "\n");
  const auto result = run_trafo(base() + " --max-steps 2 --max-positions 64");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_EQ(result.errors.find("Exception raised from"), std::string::npos) << result.errors;
  EXPECT_TRUE(std::filesystem::exists(run_ / "checkpoint-last.pt"));
}

}  // namespace
}  // namespace trafo::testing
