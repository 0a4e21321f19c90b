// `trafo serve` checked with real clients (tests/serve_check.py: LibreTranslate's own Python client,
// requests and raw sockets) against a toy model trained here, served on 127.0.0.1 only: served text
// equals `trafo translate`'s, a short request is not starved by a long one, bad requests and bounds
// get a status and a JSON reason, API keys, and SIGTERM/SIGINT finishing what is in flight.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "test_support.h"

namespace trafo::testing {
namespace {

class ServeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::filesystem::path(make_temp_dir("serve"));
    ASSERT_EQ(run_trafo("toy-corpus --out '" + (*root_ / "toy").string() + "'" + kToyCorpus).exit_code, 0);
  }

  // The checkpoint of `run`: "run", two corpora, the second tagged <bt> (the same pairs: enough to
  // serve a tag); "multi", a model of two target languages, the same pairs under >>de<< and >>fr<< (the
  // tag is what differs). Each test runs in a process of its own: a run is trained once and kept in the
  // build tree (kept_folder) for the binary under test.
  static std::filesystem::path checkpoint(const std::string& run) {
    const auto path = *root_ / run / "checkpoint-last.pt";
    if (std::filesystem::exists(path)) return path;
    const auto toy = *root_ / "toy";
    const std::string train = "'" + (toy / "train.en").string() + "," + (toy / "train.de").string();
    const std::string options =
        "--d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --vocab-size 400 --threads 1 "
        "--early-stopping 0 " +
        std::string(run == "multi" ? "--valid-tag '>>de<<' --max-steps 20 --valid-every 20"
                                   : "--max-steps 200 --valid-every 200 --lr 3e-3 --warmup-steps 30");
    const auto corpora = run == "multi" ? "--corpus " + train + ",1,>>de<<' --corpus " + train + ",1,>>fr<<'"
                                        : "--corpus " + train + "' --corpus " + train + ",1,<bt>'";
    const auto key = trafo_binary_stamp() + "\n" + kToyCorpus + "\n" + run + "\n" + options;
    const auto kept = kept_folder("serve-models", key, [&](const std::filesystem::path& making) {
      const auto trained = run_trafo("train --data-dir '" + toy.string() + "' --src-lang en --tgt-lang de --run-dir '" +
                                     making.string() + "' " + corpora + " " + options);
      EXPECT_EQ(trained.exit_code, 0) << trained.errors;
      return trained.exit_code == 0;
    });
    if (!kept.empty()) std::filesystem::copy(kept, *root_ / run, std::filesystem::copy_options::recursive);
    return path;
  }
  static void TearDownTestSuite() {
    delete root_;
    root_ = nullptr;
  }

  static void check(const std::string& name, const std::string& run = "run") {
    TRAFO_REQUIRE_PYTHON_MODULE("libretranslatepy");
    TRAFO_REQUIRE_PYTHON_MODULE("requests");
    ASSERT_NE(root_, nullptr);
    const auto work = make_temp_dir("serve-" + name);
    const auto result = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                    "/tests/serve_check.py' " + name + " --trafo '" + TRAFO_BINARY +
                                    "' --checkpoint '" + checkpoint(run).string() +
                                    "' --dev '" + (*root_ / "toy" / "dev.en").string() + "' --workdir '" +
                                    work.string() + "' --artifacts '" +
                                    (std::filesystem::path(TRAFO_BINARY).parent_path() / "test-artifacts").string() + "'");
    EXPECT_EQ(result.exit_code, 0) << result.output << result.errors;
    EXPECT_NE(result.output.find("ok"), std::string::npos) << result.output;
  }

  static constexpr const char* kToyCorpus = " --train 2000 --dev 50 --test 10";
  static std::filesystem::path* root_;
};

std::filesystem::path* ServeCli::root_ = nullptr;

TEST_F(ServeCli, ServedTextEqualsOfflineTextWhateverSharedTheBatch) { check("equal"); }
TEST_F(ServeCli, AOneSentenceRequestIsAnsweredWhileALongOneRuns) { check("fair"); }
TEST_F(ServeCli, BadRequestsAndBoundsGetAStatusAndAReasonAndTheServerStaysUp) { check("bad"); }
TEST_F(ServeCli, IdleSlowAndDeafClientsNeverTakeTheServerDown) { check("hostile"); }
TEST_F(ServeCli, ApiKeysAreRequiredAndNeverLogged) { check("keys"); }
TEST_F(ServeCli, SigtermAndSigintAnswerWhatIsInFlightThenExitZero) { check("stop"); }
TEST_F(ServeCli, BadStartsAreOneLineAndExitTwo) { check("start_errors"); }
TEST_F(ServeCli, SourceAutoAndDetectFindTheLanguagesServed) { check("detect"); }
TEST_F(ServeCli, ARepeatedSentenceIsAnsweredFromTheCacheAsDecoded) { check("cache"); }
TEST_F(ServeCli, TranslateSrcLangAutoGivesEachLineToItsLanguagesCheckpoint) { check("translate_auto"); }
TEST_F(ServeCli, DocumentsComeBackWholeAsOfflineAndOpenInLibreOffice) {
  TRAFO_REQUIRE_TOOL(run_command("command -v soffice").exit_code == 0, "soffice");
  check("documents");
}
TEST_F(ServeCli, ThePageTranslatesWhatIsTypedAndAFileInChromium) {
  TRAFO_REQUIRE_TOOL(run_command("command -v chromium").exit_code == 0, "chromium");
  TRAFO_REQUIRE_PYTHON_MODULE("websocket");
  check("page");
}
TEST_F(ServeCli, ACheckpointOfSeveralTargetsServesEach) { check("targets", "multi"); }

}  // namespace
}  // namespace trafo::testing
