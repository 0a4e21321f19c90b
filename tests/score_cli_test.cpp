// End-to-end tests of `trafo score` through the binary: JSON and text output, references from
// several files, the hypothesis from standard input, and the errors of bad input (exit code 2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_support.h"

namespace trafo::testing {
namespace {

// sacreBLEU's README example; with both references sacreBLEU 2.6.0 gives BLEU 48.530827009929865
// and chrF2 59.72751782684763.
const char* const kHyps =
    "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitten him.\n";
const char* const kRef1 = "The dog bit the man.\nIt was not unexpected.\nThe man bit him first.\n";
const char* const kRef2 =
    "The dog had bit the man.\nNo one was surprised.\nThe man had bitten the dog.\n";

class ScoreCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("score");
    write_text(dir_ / "hyp.txt", kHyps);
    write_text(dir_ / "ref1.txt", kRef1);
    write_text(dir_ / "ref2.txt", kRef2);
  }
  std::string path(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }

  std::filesystem::path dir_;
};

TEST_F(ScoreCli, JsonWithTwoReferences) {
  const auto result = run_trafo("score --ref " + path("ref1.txt") + " --ref " + path("ref2.txt") +
                                " --hyp " + path("hyp.txt") + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  ASSERT_EQ(result.output.find('\n'), result.output.size() - 1) << "one line: " << result.output;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_NEAR(json.at("bleu").get<double>(), 48.530827009929865, 1e-6);
  EXPECT_NEAR(json.at("chrf").get<double>(), 59.72751782684763, 1e-6);
  EXPECT_EQ(json.at("sentences").get<int>(), 3);
  EXPECT_EQ(json.at("signature")
                .get<std::string>()
                .rfind("nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:", 0),
            0u)
      << json.at("signature");
}

TEST_F(ScoreCli, TextLinesLikeSacrebleu) {
  const auto result = run_trafo("score --ref " + path("ref1.txt") + " --hyp " + path("hyp.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto newline = result.output.find('\n');
  ASSERT_NE(newline, std::string::npos);
  const std::string bleu_line = result.output.substr(0, newline);
  const std::string chrf_line = result.output.substr(newline + 1);
  EXPECT_EQ(bleu_line.rfind("BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:", 0), 0u)
      << bleu_line;
  // sacreBLEU 2.6.0 with the first reference only: 45.07 and 50.04.
  EXPECT_NE(bleu_line.find(" = 45.07 70.6/42.9/36.4/37.5 (BP = 1.000 ratio = 1.000 "
                           "hyp_len = 17 ref_len = 17)"),
            std::string::npos)
      << bleu_line;
  EXPECT_EQ(chrf_line.rfind("chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:", 0), 0u)
      << chrf_line;
  EXPECT_NE(chrf_line.find(" = 50.04"), std::string::npos) << chrf_line;
}

TEST_F(ScoreCli, HypothesisFromStandardInput) {
  for (const std::string hyp_option : {"", " --hyp -"}) {
    const auto result = run_trafo("score --ref " + path("ref1.txt") + " --ref " + path("ref2.txt") +
                                  hyp_option + " --json < " + path("hyp.txt"));
    ASSERT_EQ(result.exit_code, 0) << result.errors;
    const auto json = nlohmann::json::parse(result.output);
    EXPECT_NEAR(json.at("bleu").get<double>(), 48.530827009929865, 1e-6);
    EXPECT_EQ(json.at("sentences").get<int>(), 3);
  }
}

TEST_F(ScoreCli, MismatchedLineCountsNameBothCounts) {
  write_text(dir_ / "short.txt", "one\ntwo\nthree\nfour\nfive\n");
  const auto result = run_trafo("score --ref " + path("short.txt") + " --hyp " + path("hyp.txt"));
  EXPECT_EQ(result.exit_code, 2);
  // Both counts as words (the temporary folder's name may hold digits too).
  EXPECT_NE(result.errors.find(" 3 "), std::string::npos) << result.errors;
  EXPECT_NE(result.errors.find(" 5"), std::string::npos) << result.errors;
  EXPECT_TRUE(result.output.empty()) << result.output;
}

TEST_F(ScoreCli, MissingFileInvalidUtf8AndMissingReference) {
  const auto missing = run_trafo("score --ref " + path("nope.txt") + " --hyp " + path("hyp.txt"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.errors.find("nope.txt"), std::string::npos) << missing.errors;

  write_text(dir_ / "bad.txt", "fine\nbad \xff byte\nfine\n");
  const auto bad = run_trafo("score --ref " + path("ref1.txt") + " --hyp " + path("bad.txt"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.errors.find("bad.txt"), std::string::npos) << bad.errors;
  EXPECT_NE(bad.errors.find("line 2"), std::string::npos) << bad.errors;

  EXPECT_EQ(run_trafo("score --hyp " + path("hyp.txt")).exit_code, 2);
}

TEST_F(ScoreCli, EmptyHypothesisLinesScore) {
  write_text(dir_ / "empty.txt", "\n\n\n");
  const auto result =
      run_trafo("score --ref " + path("ref1.txt") + " --hyp " + path("empty.txt") + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json.at("bleu").get<double>(), 0.0);
  EXPECT_EQ(json.at("chrf").get<double>(), 0.0);
  EXPECT_EQ(json.at("sentences").get<int>(), 3);
}

// The same files through sacreBLEU's own command line in the project's virtual environment.
TEST_F(ScoreCli, AgreesWithTheSacrebleuCommandLine) {
  TRAFO_REQUIRE_PYTHON_MODULE("sacrebleu");
  const std::string python = std::string("'") + TRAFO_PYTHON + "'";
  write_text(dir_ / "uhyp.txt",
             "Der Bär läuft über die Straße — schnell!\n&quot;Hi&quot;, 3-4 U.S.A.\n\n");
  write_text(dir_ / "uref.txt",
             "Der Bär rennt über die Straße, schnell!\n\"Hi\", 3-4 USA.\nnothing here\n");
  const auto reference = run_command(python + " -m sacrebleu " + path("uref.txt") + " -i " +
                                     path("uhyp.txt") + " -m bleu chrf -f json -w 6");
  ASSERT_EQ(reference.exit_code, 0) << reference.errors;
  const auto expected = nlohmann::json::parse(reference.output);
  const auto ours =
      run_trafo("score --ref " + path("uref.txt") + " --hyp " + path("uhyp.txt") + " --json");
  ASSERT_EQ(ours.exit_code, 0) << ours.errors;
  const auto json = nlohmann::json::parse(ours.output);
  EXPECT_NEAR(json.at("bleu").get<double>(), expected.at(0).at("score").get<double>(), 1e-5);
  EXPECT_NEAR(json.at("chrf").get<double>(), expected.at(1).at("score").get<double>(), 1e-5);
}

}  // namespace
}  // namespace trafo::testing
