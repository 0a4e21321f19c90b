// trafo distill end to end on the toy corpus with tiny models: stage 1 is the teacher's beam
// search, stage 2 drops the least likely share, the student trains with the teacher's tokenizer;
// a kill during stage 1 loses only the chunk under way and the rerun translates no chunk twice; a
// changed teacher is refused with nothing lost; bad input is one line and exit 2.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/checkpoint.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

const char kTiny[] = " --d-model 16 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 32 --threads 1";
const char kStudent[] =
    " --d-model 16 --heads 2 --encoder-layers 2 --decoder-layers 1 --d-ff 32 --threads 1 --max-steps 2"
    " --valid-every 2 --valid-max-sentences 2";

class DistillCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(make_temp_dir("distill"));
    ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(*dir_ / "toy") + " --train 600 --dev 5 --test 5").exit_code, 0);
    for (const auto& [name, seed] : {std::pair<std::string, int>{"teacher", 1}, {"other", 2}}) {
      const auto trained = run_trafo("train --data-dir " + quoted(*dir_ / "toy") + " --run-dir " + quoted(*dir_ / name) +
                                     kTiny + " --vocab-size 400 --max-steps 3 --valid-every 3 --valid-max-sentences 2" +
                                     " --seed " + std::to_string(seed) + " --cache-dir " + quoted(*dir_ / "cache"));
      ASSERT_EQ(trained.exit_code, 0) << trained.errors;
    }
  }
  static void TearDownTestSuite() { delete dir_; }

  static fs::path teacher() { return *dir_ / "teacher" / "checkpoint-last.pt"; }
  static std::string distill(const fs::path& run, const std::string& more = "") {
    return "distill --teacher " + quoted(teacher()) + " --data-dir " + quoted(*dir_ / "toy") + " --run-dir " +
           quoted(run) + kStudent + " --cache-dir " + quoted(*dir_ / "cache") + more;
  }
  // The chunk files of a run, name -> modification time.
  static std::map<std::string, fs::file_time_type> chunks(const fs::path& run) {
    std::map<std::string, fs::file_time_type> out;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(run / "distill" / "chunks", error)) {
      if (entry.path().extension() == ".tsv") out[entry.path().filename().string()] = entry.last_write_time();
    }
    return out;
  }
  // The distilled lines of a run's chunks, in order: LOG_PROB, TEXT.
  static std::vector<std::pair<double, std::string>> distilled(const fs::path& run) {
    std::vector<std::pair<double, std::string>> out;
    for (const auto& [name, time] : chunks(run)) {
      for (const auto& line : lines_of(read_text(run / "distill" / "chunks" / name))) {
        const auto tab = line.find('\t');
        out.emplace_back(std::stod(line.substr(0, tab)), line.substr(tab + 1));
      }
    }
    return out;
  }
  static fs::path* dir_;
};
fs::path* DistillCli::dir_ = nullptr;

TEST_F(DistillCli, TheStudentLearnsTheTeachersBeamTranslationsWithItsTokenizer) {
  const auto run = *dir_ / "student";
  const auto result = run_trafo(distill(run, " --distill-chunk-lines 128"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;

  // Stage 1 is `trafo translate --beam 4` of the training sources, line for line.
  const auto sources = *dir_ / "toy" / "train.en";
  const auto beam = run_trafo("translate --checkpoint " + quoted(teacher()) + " --beam 4 --threads 1 --input " +
                              quoted(sources) + " --output " + quoted(*dir_ / "beam.de"));
  ASSERT_EQ(beam.exit_code, 0) << beam.errors;
  const auto expected = lines_of(read_text(*dir_ / "beam.de"));
  const auto lines = distilled(run);
  ASSERT_EQ(lines.size(), 600u);
  EXPECT_EQ(chunks(run).size(), 5u) << "600 lines in chunks of 128";
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_EQ(lines[i].second, expected[i]) << "line " << i + 1;

  // Stage 2 keeps 95%: no pair kept is less likely to the teacher than one dropped.
  const auto kept_src = lines_of(read_text(run / "distill" / "corpus1.en"));
  const auto kept_tgt = lines_of(read_text(run / "distill" / "corpus1.de"));
  ASSERT_EQ(kept_src.size(), 570u);
  ASSERT_EQ(kept_tgt.size(), 570u);
  const auto all_sources = lines_of(read_text(sources));
  double lowest_kept = INFINITY, highest_dropped = -INFINITY;
  size_t k = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (k < kept_src.size() && kept_src[k] == all_sources[i] && kept_tgt[k] == lines[i].second) {
      lowest_kept = std::min(lowest_kept, lines[i].first);
      ++k;
    } else {
      highest_dropped = std::max(highest_dropped, lines[i].first);
    }
  }
  EXPECT_EQ(k, 570u) << "the kept pairs are in corpus order";
  EXPECT_LE(highest_dropped, lowest_kept);
  EXPECT_NE(result.errors.find("kept 570 of 600 pairs"), std::string::npos) << result.errors;

  // Stage 3: the student has the teacher's tokenizer and the shape asked, and translates as any model.
  const auto student = checkpoint::load(run / "checkpoint-last.pt", false);
  EXPECT_EQ(student.tokenizer, checkpoint::load(teacher(), false).tokenizer);
  EXPECT_EQ(student.model_config.encoder_layers, 2);
  EXPECT_EQ(student.model_config.decoder_layers, 1);
  EXPECT_NE(read_text(run / "train.log").find("distill stage 1"), std::string::npos);
  // train.log says what the student buys: its speed and weights against the teacher's.
  EXPECT_NE(read_text(run / "train.log").find("distill: the student translates"), std::string::npos) << result.errors;
  EXPECT_NE(result.errors.find("dev sentences/s (greedy, fp32, 5 sentences) against its teacher's"), std::string::npos)
      << result.errors;
  const auto translated = run_trafo("translate --checkpoint " + quoted(run / "checkpoint-last.pt") + " --input " +
                                    quoted(*dir_ / "toy" / "test.en") + " --threads 1");
  EXPECT_EQ(translated.exit_code, 0) << translated.errors;
  EXPECT_EQ(lines_of(translated.output).size(), 5u);

  // The same command again: stages 1 and 2 are there, stage 3's run is resumed (already done).
  const auto before = chunks(run);
  const auto again = run_trafo(distill(run, " --distill-chunk-lines 128"));
  ASSERT_EQ(again.exit_code, 0) << again.errors;
  EXPECT_NE(again.errors.find("all 5 chunks translated before"), std::string::npos) << again.errors;
  EXPECT_NE(again.errors.find("the filtered corpora are there from before"), std::string::npos) << again.errors;
  EXPECT_EQ(chunks(run), before);

  // --no-resume alone over a student is refused before any stage; with --overwrite the student
  // trains again on the teacher's translations kept from before (they would come out the same).
  const auto refused = run_trafo(distill(run, " --distill-chunk-lines 128 --no-resume"));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.errors.find("holds a student: drop --no-resume"), std::string::npos) << refused.errors;
  const auto overwritten = run_trafo(distill(run, " --distill-chunk-lines 128 --no-resume --overwrite"));
  ASSERT_EQ(overwritten.exit_code, 0) << overwritten.errors;
  EXPECT_NE(overwritten.errors.find("all 5 chunks translated before"), std::string::npos) << overwritten.errors;
  EXPECT_NE(overwritten.errors.find("starting " + run.string() + " at step 0"), std::string::npos) << overwritten.errors;
  EXPECT_EQ(chunks(run), before);

  // A changed teacher is refused in one line, and nothing distilled goes.
  const auto other = run_trafo("distill --teacher " + quoted(*dir_ / "other" / "checkpoint-last.pt") + " --data-dir " +
                               quoted(*dir_ / "toy") + " --run-dir " + quoted(run) + kStudent +
                               " --distill-chunk-lines 128 --cache-dir " + quoted(*dir_ / "cache"));
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.errors.find("trafo: error: run folder " + run.string() + " was distilled with another teacher"),
            std::string::npos)
      << other.errors;
  EXPECT_NE(other.errors.find("--no-resume --overwrite"), std::string::npos) << other.errors;
  EXPECT_EQ(chunks(run), before);
  EXPECT_EQ(lines_of(read_text(run / "distill" / "corpus1.de")), kept_tgt);
  // So is another filter once a student trained on the first one's pairs.
  const auto filter = run_trafo(distill(run, " --distill-chunk-lines 128 --distill-filter 0.1"));
  EXPECT_EQ(filter.exit_code, 2);
  EXPECT_NE(filter.errors.find("--distill-filter 0.05 kept"), std::string::npos) << filter.errors;
  EXPECT_EQ(lines_of(read_text(run / "distill" / "corpus1.de")), kept_tgt);
  // With --no-resume --overwrite, the other teacher translates again.
  const auto retaught = run_trafo("distill --teacher " + quoted(*dir_ / "other" / "checkpoint-last.pt") + " --data-dir " +
                                  quoted(*dir_ / "toy") + " --run-dir " + quoted(run) + kStudent +
                                  " --distill-chunk-lines 128 --no-resume --overwrite --cache-dir " +
                                  quoted(*dir_ / "cache"));
  ASSERT_EQ(retaught.exit_code, 0) << retaught.errors;
  EXPECT_NE(retaught.errors.find("5 of 5 chunks to translate"), std::string::npos) << retaught.errors;
  EXPECT_EQ(chunks(run).size(), 5u);
}

// SIGKILL while the teacher translates: the chunks written stay whole, and the rerun translates only
// the others; the result is the result of a run never killed.
TEST_F(DistillCli, AKillInStageOneLosesOnlyTheChunkUnderWay) {
  const auto run = *dir_ / "killed";
  const int pid = spawn_command("'" + std::string(TRAFO_BINARY) + "' " + distill(run, " --distill-chunk-lines 10") +
                                " >/dev/null 2>&1");
  for (int waited = 0; chunks(run).size() < 3 && waited < 60000; waited += 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (wait_for_exit(pid, 0) != -1) FAIL() << "distill ended before it was killed";
  }
  ::kill(pid, SIGKILL);
  ASSERT_EQ(wait_for_exit(pid, 60), 128 + SIGKILL);
  const auto at_kill = chunks(run);
  ASSERT_GE(at_kill.size(), 3u);
  ASSERT_LT(at_kill.size(), 60u) << "killed after stage 1";

  const auto rerun = run_trafo(distill(run, " --distill-chunk-lines 10"));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.errors;
  const auto left = std::to_string(60 - at_kill.size()) + " of 60 chunks to translate";
  EXPECT_NE(rerun.errors.find(left), std::string::npos) << "expected '" << left << "' in:\n" << rerun.errors;
  const auto after = chunks(run);
  EXPECT_EQ(after.size(), 60u);
  for (const auto& [name, time] : at_kill) {
    ASSERT_TRUE(after.count(name)) << name << " was translated again";
    EXPECT_EQ(after.at(name), time) << name << " was written again";
  }
  const auto whole = *dir_ / "never-killed";
  ASSERT_EQ(run_trafo(distill(whole, " --distill-chunk-lines 10")).exit_code, 0);
  EXPECT_EQ(distilled(run), distilled(whole));
  EXPECT_EQ(read_text(run / "distill" / "corpus1.de"), read_text(whole / "distill" / "corpus1.de"));
}

TEST_F(DistillCli, BadInputIsOneLineAndExitTwoBeforeAnythingIsWritten) {
  const auto de_en = *dir_ / "de-en";
  ASSERT_EQ(run_trafo("train --data-dir " + quoted(*dir_ / "toy") + " --src-lang de --tgt-lang en --run-dir " +
                      quoted(de_en) + kTiny + " --vocab-size 400 --max-steps 1 --valid-every 1 --valid-max-sentences 1" +
                      " --cache-dir " + quoted(*dir_ / "cache"))
                .exit_code,
            0);
  const auto empty = *dir_ / "empty";
  fs::create_directories(empty);
  write_text(empty / "train.en", "\n \n");  // lines, but no text
  write_text(empty / "train.de", "\n\n");
  write_text(empty / "dev.en", "a\n");
  write_text(empty / "dev.de", "b\n");
  const auto run = *dir_ / "refused";
  const std::string toy = " --data-dir " + quoted(*dir_ / "toy") + " --run-dir " + quoted(run);
  const std::pair<std::string, std::string> cases[] = {
      {"distill --teacher " + quoted(*dir_ / "missing.pt") + toy, "missing.pt"},
      {"distill --teacher " + quoted(de_en / "checkpoint-last.pt") + toy, "translates into en"},
      {"distill --teacher " + quoted(teacher()) + "," + quoted(de_en / "checkpoint-last.pt") + toy,
       "the models of an ensemble must translate alike"},
      {"distill --teacher " + quoted(teacher()) + " --data-dir " + quoted(empty) + " --run-dir " + quoted(run),
       "is empty: nothing to distill"},
      {"distill --teacher " + quoted(teacher()) + " --data-dir " + quoted(*dir_ / "toy") + " --run-dir " +
           quoted(*dir_ / "teacher"),
       "holds a run of trafo train, not of trafo distill"},
      {"distill" + toy, "--teacher"},
      {"distill --teacher " + quoted(teacher()) + toy + " --distill-filter 1.5", "--distill-filter"},
      {"distill --teacher " + quoted(teacher()) + toy + " --distill-mix some", "--distill-mix"},
      {"distill --teacher " + quoted(teacher()) + toy + " --nproc 2", "--nproc"},
      {"train --vocab-from " + quoted(teacher()) + " --init-from " + quoted(teacher()) + toy,
       "brings its own tokenizer"},
  };
  for (const auto& [arguments, expected] : cases) {
    const auto result = run_trafo(arguments + " --threads 1 --cache-dir " + quoted(*dir_ / "cache"));
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.errors;
    const auto lines = lines_of(result.errors);
    ASSERT_FALSE(lines.empty()) << arguments;
    EXPECT_EQ(lines.back().rfind("trafo: error: ", 0), 0u) << arguments << "\n" << result.errors;
    EXPECT_NE(lines.back().find(expected), std::string::npos) << arguments << "\n" << result.errors;
    EXPECT_FALSE(fs::exists(run / "distill")) << arguments;
  }
  EXPECT_TRUE(fs::exists(*dir_ / "teacher" / "checkpoint-last.pt"));

  // A teacher that answers every line with nothing (a learning rate this high collapses it onto end
  // of sentence): stage 2 says so, where training would only find a corpus of no text.
  const auto mute = *dir_ / "mute";
  ASSERT_EQ(run_trafo("train --data-dir " + quoted(*dir_ / "toy") + " --run-dir " + quoted(mute) + kTiny +
                      " --vocab-size 400 --max-steps 20 --valid-every 20 --valid-max-sentences 1 --lr 1.0" +
                      " --warmup-steps 1 --cache-dir " + quoted(*dir_ / "cache"))
                .exit_code,
            0);
  const auto silent = run_trafo("distill --teacher " + quoted(mute / "checkpoint-last.pt") + " --data-dir " +
                                quoted(*dir_ / "toy") + " --run-dir " + quoted(*dir_ / "from-mute") + kStudent +
                                " --cache-dir " + quoted(*dir_ / "cache"));
  EXPECT_EQ(silent.exit_code, 2) << silent.errors;
  EXPECT_NE(lines_of(silent.errors).back().find("are all empty: it has not learned to translate yet"),
            std::string::npos)
      << silent.errors;
}

// A student is a model as any other: exported to CTranslate2 and to transformers (a 2-layer
// encoder over a 1-layer decoder), the real runtimes translate as trafo does. Teacher and student are trained enough here
// that their choices are clear (an untrained model's near-ties fall either way in another runtime).
TEST_F(DistillCli, AStudentExportsToCTranslate2AndTransformersAndTranslatesAsTrafo) {
  TRAFO_REQUIRE_PYTHON_MODULE("ctranslate2");
  TRAFO_REQUIRE_PYTHON_MODULE("transformers");
  TRAFO_REQUIRE_PYTHON_MODULE("sentencepiece");
  const auto toy = *dir_ / "toy-4000";
  ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(toy) + " --train 4000 --dev 10 --test 50").exit_code, 0);
  const std::string model = " --data-dir " + quoted(toy) + " --threads 2 --d-model 64 --heads 4 --d-ff 128" +
                            " --batch-tokens 1500 --lr 0.003 --warmup-steps 50 --max-steps 300 --valid-every 300" +
                            " --valid-max-sentences 10 --cache-dir " + quoted(*dir_ / "cache");
  const auto teacher = run_trafo("train --run-dir " + quoted(*dir_ / "teacher-4000") + model +
                                 " --vocab-size 500 --encoder-layers 2 --decoder-layers 2");
  ASSERT_EQ(teacher.exit_code, 0) << teacher.errors;
  const auto run = *dir_ / "exported";
  const auto distilled = run_trafo("distill --teacher " + quoted(*dir_ / "teacher-4000" / "checkpoint-last.pt") +
                                   " --run-dir " + quoted(run) + model + " --encoder-layers 2 --decoder-layers 1");
  ASSERT_EQ(distilled.exit_code, 0) << distilled.errors;
  const auto student = run / "checkpoint-last.pt";
  const auto sources = toy / "test.en";
  const auto ours = *dir_ / "student.trafo.txt", theirs = *dir_ / "student.ct2.txt";
  const auto translated = run_trafo("translate --checkpoint " + quoted(student) + " --threads 2 --precision fp32 --input " +
                                    quoted(sources) + " --output " + quoted(ours) + " --max-length-a 0 --max-length-b 20");
  ASSERT_EQ(translated.exit_code, 0) << translated.errors;
  const auto folder = *dir_ / "student-ct2";
  const auto exported = run_trafo("export --checkpoint " + quoted(student) + " --format ctranslate2 --out " +
                                  quoted(folder) + " --quantization float32");
  ASSERT_EQ(exported.exit_code, 0) << exported.errors;
  const auto decoded = run_command("'" + std::string(TRAFO_PYTHON) + "' '" + TRAFO_SOURCE_DIR +
                                   "/bench/ctranslate2_decode.py' " + quoted(folder) + " " + quoted(sources) +
                                   " --output " + quoted(theirs) + " --threads 2 --beam 1 --max-decoding-length 20");
  ASSERT_EQ(decoded.exit_code, 0) << decoded.errors;
  // As trafo prints a translation: runs of spaces made one, none at either end (a translation cut at
  // its length limit may end in a word-start piece).
  auto printed = [](std::string line) {
    std::string out;
    for (const char c : line) {
      if (c != ' ' || (!out.empty() && out.back() != ' ')) out += c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  const auto a = lines_of(read_text(ours)), b = lines_of(read_text(theirs));
  ASSERT_EQ(a.size(), b.size());
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += printed(a[i]) == printed(b[i]);
  EXPECT_GE(same, a.size() - 1) << "lines translated alike: " << same << " of " << a.size();
  // transformers (a pre-norm student exports as Pegasus): generate() and its scores as trafo's.
  {
    const auto hf = *dir_ / "student-hf";
    const auto exported_hf =
        run_trafo("export --format huggingface --checkpoint " + quoted(student) + " --out " + quoted(hf));
    ASSERT_EQ(exported_hf.exit_code, 0) << exported_hf.errors;
    const std::string fp32 = " --threads 1 --precision fp32";
    const auto hf_translations = *dir_ / "student.hf-trafo.de", hf_scores = *dir_ / "student.scores";
    ASSERT_EQ(run_trafo("translate --checkpoint " + quoted(student) + " --input " + quoted(sources) + " --output " +
                        quoted(hf_translations) + fp32).exit_code, 0);
    ASSERT_EQ(run_trafo("score-pairs --checkpoint " + quoted(student) + " --src " + quoted(sources) + " --tgt " +
                        quoted(hf_translations) + fp32 + " > " + quoted(hf_scores)).exit_code, 0);
    const auto checked = run_command("'" + std::string(TRAFO_PYTHON) + "' '" + TRAFO_SOURCE_DIR +
                                     "/tests/huggingface_check.py' " + quoted(hf) + " " + quoted(sources) + " " +
                                     quoted(hf_translations) + " " + quoted(hf_scores));
    EXPECT_EQ(checked.exit_code, 0) << checked.output << checked.errors;
  }
}

// A teacher gone once its translations are made (its run moved on, its file removed) leaves the
// student free to go on.
TEST_F(DistillCli, AStudentGoesOnWhenItsTeacherIsGone) {
  const auto copy = *dir_ / "teacher-copy.pt";
  fs::copy_file(teacher(), copy, fs::copy_options::overwrite_existing);
  const auto run = *dir_ / "orphan";
  const auto command = "distill --teacher " + quoted(copy) + " --data-dir " + quoted(*dir_ / "toy") + " --run-dir " +
                       quoted(run) + kStudent + " --cache-dir " + quoted(*dir_ / "cache");
  ASSERT_EQ(run_trafo(command).exit_code, 0);
  fs::remove(copy);
  auto longer = command;
  longer.replace(longer.find("--max-steps 2"), 13, "--max-steps 4");
  const auto again = run_trafo(longer);
  ASSERT_EQ(again.exit_code, 0) << again.errors;
  EXPECT_NE(again.errors.find("is gone, and stages 1 and 2 are done: the student goes on"), std::string::npos)
      << again.errors;
  EXPECT_NE(again.errors.find("resuming " + run.string() + " at step 2"), std::string::npos) << again.errors;
}

// --vocab-from: `trafo train` takes a checkpoint's tokenizer instead of learning one.
TEST_F(DistillCli, TrainVocabFromTakesTheCheckpointsTokenizer) {
  const auto run = *dir_ / "vocab-from";
  const auto result = run_trafo("train --data-dir " + quoted(*dir_ / "toy") + " --run-dir " + quoted(run) + kTiny +
                                " --vocab-from " + quoted(teacher()) + " --vocab-size 1000 --max-steps 1 --valid-every 1" +
                                " --valid-max-sentences 1 --cache-dir " + quoted(*dir_ / "cache"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_EQ(checkpoint::load(run / "checkpoint-last.pt", false).tokenizer, checkpoint::load(teacher(), false).tokenizer);
}

}  // namespace
}  // namespace trafo::testing
