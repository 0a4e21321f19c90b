// The output contract (docs/contracts.md) through the binary: one line out for every line in, whatever
// the model emits (sampling from every piece reaches the byte-fallback pieces, which decode to line
// breaks and control bytes), alignment links that point at printed words, and decoding options that
// would do nothing refused in one line.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/output_text.h"
#include "trafo/decode/translator.h"

namespace trafo::testing {
namespace {

bool has_control_byte(const std::string& text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) return true;
  }
  return false;
}

class OutputContract : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("output-contract"));
    write_synthetic_corpus(*dir_, "train", 300);
    write_synthetic_corpus(*dir_, "test", 40, /*seed=*/7);
    // Untrained, with a corpus tag: its pieces are near uniform, so sampling draws byte pieces often.
    data::TokenizerOptions tokenizer_options;
    tokenizer_options.vocab_size = 300;
    tokenizer_options.reserved = {"<bt>"};
    const auto tokenizer =
        data::Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, tokenizer_options);
    auto config = tiny_model_config(tokenizer.vocab_size());
    config.encoder_layers = 1;
    config.decoder_layers = 1;
    torch::manual_seed(5);
    model::Transformer model(config);
    const std::string run_config = "\n[[corpus]]\nsrc=\"train.en\"\ntgt=\"train.de\"\nweight=1\ntag=\"<bt>\"\n";
    checkpoint::save(*dir_ / "model.pt", checkpoint::Checkpoint{config, checkpoint::model_weights(model),
                                                                tokenizer.to_bytes(), run_config, std::nullopt, {}});
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string translate(const std::string& arguments) {
    return "translate --checkpoint " + quoted(*dir_ / "model.pt") + " --threads 1 --input " +
           quoted(*dir_ / "test.en") + " " + arguments;
  }
  static std::vector<std::string> inputs() { return lines_of(read_text(*dir_ / "test.en")); }

  static std::filesystem::path* dir_;
};
std::filesystem::path* OutputContract::dir_ = nullptr;

TEST(OneLine, ControlCharactersLineBreaksAndInvalidBytesBecomeOneLine) {
  EXPECT_EQ(decode::one_line("a cat sees a dog"), "a cat sees a dog");
  EXPECT_EQ(decode::one_line("a\ncat\r\nsees\ta\x0b\x1f" "dog"), "a cat sees a dog");
  EXPECT_EQ(decode::one_line("  two\n\nlines  "), "two lines");
  EXPECT_EQ(decode::one_line("nel\xC2\x85here, ls\xE2\x80\xA8par\xE2\x80\xA9" "end\x7f"), "nel here, ls par end");
  EXPECT_EQ(decode::one_line("bad \xFF byte, cut \xE2\x80"), "bad \xEF\xBF\xBD byte, cut \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(decode::one_line("\xC3\xA9t\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80"), "\xC3\xA9t\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80");
  EXPECT_EQ(decode::one_line("\n\r\t"), "");
  EXPECT_EQ(decode::count_words("  a  b\tc "), 3);
  EXPECT_EQ(decode::count_words(""), 0);
}

TEST_F(OutputContract, SampledTranslationsKeepOneLinePerInputLine) {
  const auto expected = inputs().size();
  for (const std::string options : {"--sampling-topk 0 --sampling-temperature 8 --seed 3",
                                    "--sampling-topk 1000000 --sampling-temperature 8 --seed 4",
                                    "--sampling-topk 0 --sampling-temperature 8 --seed 5 --buffer-lines 1"}) {
    const auto result = run_trafo(translate(options));
    ASSERT_EQ(result.exit_code, 0) << options << ": " << result.errors;
    const auto lines = lines_of(result.output);
    EXPECT_EQ(lines.size(), expected) << options;
    for (const auto& line : lines) EXPECT_FALSE(has_control_byte(line)) << options << ": " << line;
  }
  // The first draws, in this process: the pieces they take decode to line breaks or control bytes,
  // which the printed lines no longer hold.
  const auto saved = checkpoint::load(*dir_ / "model.pt", /*with_training_state=*/false);
  const auto tokenizer = data::Tokenizer::from_bytes(saved.tokenizer);
  decode::DecodeOptions sampling;
  sampling.sampling_topk = 0;
  sampling.sampling_temperature = 8;
  sampling.seed = 3;
  decode::Translator translator(checkpoint::make_model(saved, torch::kCPU), tokenizer, sampling);
  int raw_with_control = 0;
  for (const auto& hypotheses : translator.translate(inputs())) {
    raw_with_control += has_control_byte(tokenizer.decode(hypotheses.front().tokens)) ? 1 : 0;
    EXPECT_FALSE(has_control_byte(hypotheses.front().text)) << hypotheses.front().text;
  }
  EXPECT_GT(raw_with_control, 0);
}

TEST_F(OutputContract, NBestLinesStayOneLineEach) {
  const auto result = run_trafo(translate("--beam 3 --n-best 3"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto lines = lines_of(result.output);
  EXPECT_EQ(lines.size(), 3 * inputs().size());
  const std::regex format(R"(^\d+ \|\|\| [^\x00-\x1f\x7f]* \|\|\| -?\d+\.\d{4}$)");
  for (const auto& line : lines) EXPECT_TRUE(std::regex_match(line, format)) << line;
}

// An empty input line among others gives N lines too, each with its index (it gave one).
TEST_F(OutputContract, AnEmptyLineGivesNBestLinesToo) {
  const auto input = make_temp_dir("nbest-empty") / "input.txt";
  const auto sentences = inputs();
  write_text(input, sentences[0] + "\n\n" + sentences[1] + "\n");
  const auto result = run_trafo("translate --checkpoint " + quoted(*dir_ / "model.pt") +
                                " --threads 1 --beam 4 --n-best 3 --input " + quoted(input));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto lines = lines_of(result.output);
  ASSERT_EQ(lines.size(), 9u) << result.output;
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].substr(0, 2), std::to_string(i / 3) + " ") << lines[i];
  }
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(lines[i], "1 |||  ||| 0.0000");
}

TEST_F(OutputContract, EveryAlignmentLinkPointsAtAPrintedWord) {
  const auto sources = inputs();
  for (const std::string options : {"--alignment --sampling-topk 0 --sampling-temperature 8 --seed 6",
                                    "--alignment --sampling-topk 0 --sampling-temperature 8 --seed 7 --tag '<bt>'",
                                    "--alignment --max-length-a 0 --max-length-b 0", "--alignment"}) {
    const auto result = run_trafo(translate(options));
    ASSERT_EQ(result.exit_code, 0) << options << ": " << result.errors;
    const auto lines = lines_of(result.output);
    ASSERT_EQ(lines.size(), sources.size()) << options;
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto bar = lines[i].rfind(" ||| ");
      ASSERT_NE(bar, std::string::npos) << lines[i];
      const int target_words = decode::count_words(lines[i].substr(0, bar));
      const int source_words = decode::count_words(sources[i]);
      std::istringstream links(lines[i].substr(bar + 5));
      for (std::string link; links >> link;) {
        int source = -1, target = -1;
        ASSERT_EQ(std::sscanf(link.c_str(), "%d-%d", &source, &target), 2) << link;
        EXPECT_TRUE(source >= 0 && source < source_words) << options << ": " << link << " in " << lines[i];
        EXPECT_TRUE(target >= 0 && target < target_words) << options << ": " << link << " in " << lines[i];
      }
      if (target_words == 0) {
        EXPECT_EQ(lines[i].substr(bar + 5), "") << lines[i];
      }
    }
  }
}

TEST_F(OutputContract, DecodingOptionsThatWouldDoNothingAreRefused) {
  for (const std::string options :
       {"--sampling-topk -5", "--sampling-topp 0.5", "--sampling-temperature 2", "--seed 3", "--tag e",
        "--tag bt", "--tag '<xx>'", "--no-repeat-ngram -1", "--no-repeat-ngram 101", "--repetition-penalty 0.5",
        "--repetition-penalty nan"}) {
    const auto result = run_trafo(translate(options));
    EXPECT_EQ(result.exit_code, 2) << options << ": " << result.errors;
    const auto errors = lines_of(result.errors);
    ASSERT_FALSE(errors.empty()) << options;
    EXPECT_EQ(errors.back().rfind("trafo: error: ", 0), 0u) << options << ": " << result.errors;
    EXPECT_EQ(result.errors.find("error"), result.errors.rfind("error")) << options << ": " << result.errors;
    EXPECT_TRUE(result.output.empty()) << options;
  }
  const auto tag = run_trafo(translate("--tag e"));
  EXPECT_NE(tag.errors.find("its tags: <bt>"), std::string::npos) << tag.errors;
  const auto eval = run_trafo("eval --checkpoint " + quoted(*dir_ / "model.pt") + " --threads 1 --src " +
                              quoted(*dir_ / "test.en") + " --ref " + quoted(*dir_ / "test.de") + " --tag e");
  EXPECT_EQ(eval.exit_code, 2) << eval.errors;
  // The sampling options with --sampling-topk, and the model's own tag, are taken.
  EXPECT_EQ(run_trafo(translate("--sampling-topk 5 --sampling-topp 0.5 --sampling-temperature 2 --seed 3"))
                .exit_code, 0);
  EXPECT_EQ(run_trafo(translate("--tag '<bt>'")).exit_code, 0);
  EXPECT_EQ(run_trafo(translate("--no-repeat-ngram 3 --repetition-penalty 1.2 --beam 2")).exit_code, 0);
}

}  // namespace
}  // namespace trafo::testing
