// End-to-end tests of `trafo translate` and `trafo eval` through the binary, with a tiny random
// model and tokenizer saved as a checkpoint in the test: line counts, empty lines, the n-best
// format, interactive reading, eval's JSON, and the errors of bad input (exit code 2).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"
#include "trafo/model/loss.h"

namespace trafo::testing {
namespace {

// Exit code 2 and one "trafo: error:" line that holds `words`.
void expect_one_error(const CommandResult& result, const std::string& words) {
  EXPECT_EQ(result.exit_code, 2) << result.errors;
  size_t errors = 0;
  for (const auto& line : lines_of(result.errors)) errors += line.rfind("trafo: error:", 0) == 0;
  EXPECT_EQ(errors, 1u) << result.errors;
  EXPECT_NE(result.errors.find(words), std::string::npos) << result.errors;
}

class TranslateCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("translate"));
    write_synthetic_corpus(*dir_, "train", 300);
    write_synthetic_corpus(*dir_, "test", 12, /*seed=*/7);
    save_model("model.pt", "train", 11);
  }
  // A 1+1-layer model, untrained (seed `seed`), with a 300-piece tokenizer learned from NAME.{en,de}.
  static void save_model(const std::string& file, const std::string& name, uint64_t seed) {
    data::TokenizerOptions tokenizer_options;
    tokenizer_options.vocab_size = 300;
    const auto tokenizer = data::Tokenizer::train({*dir_ / (name + ".en"), *dir_ / (name + ".de")}, tokenizer_options);
    auto config = tiny_model_config(tokenizer.vocab_size());
    config.encoder_layers = 1;
    config.decoder_layers = 1;
    torch::manual_seed(seed);
    model::Transformer model(config);
    checkpoint::save(*dir_ / file, checkpoint::Checkpoint{config, checkpoint::model_weights(model),
                                                          tokenizer.to_bytes(), "", std::nullopt, {}});
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string path(const std::string& name) { return quoted(*dir_ / name); }
  static std::string translate(const std::string& arguments) {
    return "translate --checkpoint " + path("model.pt") + " --threads 1 " + arguments;
  }

  static std::filesystem::path* dir_;
};
std::filesystem::path* TranslateCli::dir_ = nullptr;

// A line of several sentences (a paragraph) is cut into them, each translated as it would be alone,
// and joined with the line's own spaces: a model trained on sentences drops sentences of a paragraph
// given whole. --split-sentences off translates it whole; alignments, n-best lists and HTML runs
// follow the sentences.
TEST_F(TranslateCli, AParagraphIsTranslatedSentenceBySentence) {
  const std::vector<std::string> sentences = {"The cat sees a dog.", "Red birds fly over the river.", "Sun!"};
  const std::string paragraph = sentences[0] + " " + sentences[1] + "  " + sentences[2];
  write_text(*dir_ / "sentences.txt", sentences[0] + "\n" + sentences[1] + "\n" + sentences[2] + "\n");
  write_text(*dir_ / "paragraph.txt", paragraph + "\n" + sentences[1] + "\n");
  const auto alone = run_trafo(translate("--input " + path("sentences.txt")));
  ASSERT_EQ(alone.exit_code, 0) << alone.errors;
  const auto each = lines_of(alone.output);
  ASSERT_EQ(each.size(), 3u);
  const auto joined = run_trafo(translate("--input " + path("paragraph.txt")));
  ASSERT_EQ(joined.exit_code, 0) << joined.errors;
  EXPECT_EQ(lines_of(joined.output), (std::vector<std::string>{each[0] + " " + each[1] + "  " + each[2], each[1]}));
  const auto whole = run_trafo(translate("--split-sentences off --input " + path("paragraph.txt")));
  ASSERT_EQ(whole.exit_code, 0) << whole.errors;
  EXPECT_NE(lines_of(whole.output).front(), lines_of(joined.output).front()) << "splitting changed nothing";

  // Word links point into the whole line on either side, each sentence's after the words before it.
  const auto aligned = run_trafo(translate("--alignment --input " + path("paragraph.txt")));
  ASSERT_EQ(aligned.exit_code, 0) << aligned.errors;
  const auto line = lines_of(aligned.output).front();
  const auto bar = line.find(" ||| ");
  ASSERT_NE(bar, std::string::npos) << line;
  EXPECT_EQ(line.substr(0, bar), lines_of(joined.output).front());
  const auto words = [](const std::string& text) {
    std::istringstream in(text);
    return static_cast<int>(std::distance(std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()));
  };
  const int source_words = words(paragraph), target_words = words(line.substr(0, bar));
  std::istringstream links(line.substr(bar + 5));
  int linked = 0, past_first = 0;
  for (std::string link; links >> link; ++linked) {
    const int s = std::stoi(link.substr(0, link.find('-'))), t = std::stoi(link.substr(link.find('-') + 1));
    EXPECT_LT(s, source_words) << link;
    EXPECT_LT(t, target_words) << link;
    past_first += s >= words(sentences[0]);
  }
  EXPECT_GT(past_first, 0) << "no link from the second or third sentence: " << line;

  // The n-best of a paragraph: the k-th of each sentence's, joined.
  const auto nbest_alone = lines_of(run_trafo(translate("--beam 2 --n-best 2 --input " + path("sentences.txt"))).output);
  const auto nbest = lines_of(run_trafo(translate("--beam 2 --n-best 2 --input " + path("paragraph.txt"))).output);
  ASSERT_EQ(nbest_alone.size(), 6u);
  ASSERT_EQ(nbest.size(), 4u);
  const auto text_of = [](const std::string& row) {
    const auto at = row.find(" ||| ") + 5;
    return row.substr(at, row.find(" ||| ", at) - at);
  };
  EXPECT_EQ(text_of(nbest[0]), text_of(nbest_alone[0]) + " " + text_of(nbest_alone[2]) + "  " + text_of(nbest_alone[4]));
  EXPECT_EQ(text_of(nbest[1]), text_of(nbest_alone[1]) + " " + text_of(nbest_alone[3]) + "  " + text_of(nbest_alone[5]));

  // An HTML run of several sentences: the same joined translation inside its element.
  write_text(*dir_ / "paragraph.html", "<p>" + sentences[0] + " " + sentences[1] + "</p>");
  const auto page = run_trafo(translate("--format html --input " + path("paragraph.html")));
  ASSERT_EQ(page.exit_code, 0) << page.errors;
  EXPECT_NE(page.output.find(each[0] + " " + each[1]), std::string::npos) << page.output;
}

TEST_F(TranslateCli, KeepsLineCountAndEmptyLines) {
  write_text(*dir_ / "input.txt", "the cat sees a dog\n\nred bird flies over the river\n\nsun\n");
  for (const std::string& how : {" < " + path("input.txt"), " --input " + path("input.txt")}) {
    const auto result = run_trafo(translate("--max-length-b 3" + how));
    ASSERT_EQ(result.exit_code, 0) << result.errors;
    const auto lines = lines_of(result.output);
    ASSERT_EQ(lines.size(), 5u) << result.output;
    EXPECT_EQ(lines[1], "");
    EXPECT_EQ(lines[3], "");
  }
  // No input, no output.
  const auto empty = run_trafo(translate("--output " + path("out.txt")) + " < /dev/null");
  ASSERT_EQ(empty.exit_code, 0) << empty.errors;
  EXPECT_EQ(read_text(*dir_ / "out.txt"), "");
  // Through a pipe, into a file, and a last line without a newline.
  const auto piped = run_command("printf 'a dog\\n\\nthe sun' | '" + std::string(TRAFO_BINARY) + "' " +
                                 translate("--output " + path("out.txt")));
  ASSERT_EQ(piped.exit_code, 0) << piped.errors;
  EXPECT_EQ(lines_of(read_text(*dir_ / "out.txt")).size(), 3u);
}

// --glossary: where a source term occurs, the translation holds its target term, greedy or beam
// (an untrained model would not write it); a line without the term translates as without the
// glossary; a malformed glossary, or one with sampling, is a one-line input error.
TEST_F(TranslateCli, GlossaryTermsAppearWhereTheirSourcesOccur) {
  const auto input = *dir_ / "test.en";
  const auto sources = lines_of(read_text(input));
  ASSERT_GE(sources.size(), 4u);
  // A source word of the first line, and two German words of a training line as its term.
  const std::string word = sources.front().substr(0, sources.front().find(' '));
  const auto german = lines_of(read_text(*dir_ / "train.de")).front();
  const std::string term = german.substr(0, german.find(' ', german.find(' ') + 1));
  ASSERT_FALSE(word.empty());
  ASSERT_FALSE(term.empty());
  write_text(*dir_ / "glossary.tsv", "# terms\n\n" + word + "\t" + term + "\n");
  const auto has_word = [&](const std::string& line) {
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (w == word) return true;
    }
    return false;
  };
  size_t with_term = 0;
  for (const std::string beam : {"1", "4"}) {
    SCOPED_TRACE("beam " + beam);
    const auto plain = run_trafo(translate("--beam " + beam + " --input " + quoted(input)));
    const auto glossed = run_trafo(translate("--beam " + beam + " --input " + quoted(input) + " --glossary " +
                                             path("glossary.tsv")));
    ASSERT_EQ(plain.exit_code, 0) << plain.errors;
    ASSERT_EQ(glossed.exit_code, 0) << glossed.errors;
    const auto free = lines_of(plain.output), lines = lines_of(glossed.output);
    ASSERT_EQ(lines.size(), sources.size());
    ASSERT_EQ(free.size(), sources.size());
    with_term = 0;
    for (size_t i = 0; i < sources.size(); ++i) {
      if (has_word(sources[i])) {
        ++with_term;
        EXPECT_NE(lines[i].find(term), std::string::npos) << "'" << lines[i] << "' holds '" << term << "'";
        EXPECT_EQ(free[i].find(term), std::string::npos) << "the model alone would write it: no test";
      } else {
        EXPECT_EQ(lines[i], free[i]) << "line " << i;
      }
    }
  }
  EXPECT_GE(with_term, 1u);
  // A term before punctuation ends its word there; inside a longer word it does not match.
  write_text(*dir_ / "punctuated.en", word + ", " + word + ".\n" + word + "x\n");
  const auto punctuated = run_trafo(translate("--input " + path("punctuated.en") + " --glossary " + path("glossary.tsv")));
  ASSERT_EQ(punctuated.exit_code, 0) << punctuated.errors;
  const auto marked = lines_of(punctuated.output);
  ASSERT_EQ(marked.size(), 2u);
  EXPECT_NE(marked[0].find(term), std::string::npos) << marked[0];
  EXPECT_EQ(marked[1].find(term), std::string::npos) << marked[1];
  write_text(*dir_ / "bad-glossary.tsv", word + "\t" + term + "\n" + word + " without a tab\n");
  expect_one_error(run_trafo(translate("--input " + quoted(input) + " --glossary " + path("bad-glossary.tsv"))),
            "bad-glossary.tsv:2");
  expect_one_error(run_trafo(translate("--input " + quoted(input) + " --glossary " + path("glossary.tsv") +
                                " --sampling-topk 5")),
            "--glossary and --sampling-topk");
}

// --format html: Python's HTML parser finds the output well-formed, with every tag of the page
// once and what is not translated as it was, and each run of text reads as the plain translation
// of the run's words; input that is not a page, or options that need lines, are one-line errors.
TEST_F(TranslateCli, HtmlPagesKeepEveryTagAndTranslateEachRunAsALine) {
  const auto s = lines_of(read_text(*dir_ / "test.en"));
  ASSERT_GE(s.size(), 9u);
  const auto first_space = s[2].find(' ');
  ASSERT_NE(first_space, std::string::npos);
  const std::string page =
      "<!DOCTYPE html>\n<html><head><title>" + s[0] + "</title></head>\n<body>\n<h1>" + s[1] + "</h1>\n<p>" +
      s[2].substr(0, first_space) + " <b>" + s[2].substr(first_space + 1) + "</b>\n <a href=\"/x?a=1&amp;b=2\" title=\"t\">" +
      s[3] + "</a><br>" + s[4] + "</p>\n<pre>keep  this &lt;</pre>\n<ul><li>" + s[5] + " <img src=\"i.png\"> <i>" + s[6] +
      "</i></li></ul>\n<p translate=\"no\">" + s[7] + "</p><p>" + s[8] + " <code>make  all</code> now<!-- c --></p></body></html>\n";
  write_text(*dir_ / "page.html", page);
  // The runs' text as plain lines, in document order.
  write_text(*dir_ / "runs.txt", s[0] + "\n" + s[1] + "\n" + s[2] + " " + s[3] + " " + s[4] + "\n" + s[5] + " " + s[6] +
                                     "\n" + s[8] + " now\n");
  for (const std::string beam : {"1", "3"}) {
    SCOPED_TRACE("beam " + beam);
    const auto html = run_trafo(translate("--beam " + beam + " --format html --input " + path("page.html") +
                                          " --output " + path("page.out.html")));
    ASSERT_EQ(html.exit_code, 0) << html.errors;
    const auto plain = run_trafo(translate("--beam " + beam + " --input " + path("runs.txt") + " --output " +
                                           path("runs.out.txt")));
    ASSERT_EQ(plain.exit_code, 0) << plain.errors;
    const auto checked = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR + "/tests/html_check.py' " +
                                     path("page.html") + " " + path("page.out.html") + " " + path("runs.out.txt"));
    EXPECT_EQ(checked.exit_code, 0) << checked.output << checked.errors << "\n" << read_text(*dir_ / "page.out.html");
    EXPECT_EQ(checked.output, "ok\n");
  }
  write_text(*dir_ / "bad.html", "<p>caf\xe9</p>");
  expect_one_error(run_trafo(translate("--format html --input " + path("bad.html"))), "bad.html: the HTML is not valid UTF-8");
  expect_one_error(run_trafo(translate("--format html --n-best 2 --beam 2 --input " + path("page.html"))), "--format html");
  expect_one_error(run_trafo(translate("--format html --skip-invalid --input " + path("page.html"))), "--skip-invalid");
  expect_one_error(run_trafo(translate("--format xml --input " + path("page.html"))), "--format");
}

// A document (--format auto, by its extension) comes back whole in its own format: every entry of
// the archive in its order, those without text as they were (tests/document_check.py); an HTML file
// is a page as with --format html. Bad documents and outputs are one-line errors.
TEST_F(TranslateCli, DocumentsAreWrittenWholeInTheirOwnFormat) {
  const auto fixtures = std::filesystem::path(TRAFO_SOURCE_DIR) / "tests" / "fixtures" / "documents";
  const std::string check = std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR + "/tests/document_check.py' ";
  for (const std::string name : {"word.docx", "text.odt", "slides.pptx"}) {
    const auto done = run_trafo(translate("--input " + quoted(fixtures / name) + " --output " + path("out-" + name)));
    ASSERT_EQ(done.exit_code, 0) << name << ": " << done.errors;
    const auto compared = run_command(check + "compare " + quoted(fixtures / name) + " " + path("out-" + name));
    EXPECT_EQ(compared.exit_code, 0) << name << ": " << compared.output;
  }
  const auto s = lines_of(read_text(*dir_ / "test.en"));
  write_text(*dir_ / "doc.html", "<p>" + s[0] + " <b>" + s[1] + "</b></p>");
  EXPECT_EQ(run_trafo(translate("--input " + path("doc.html"))).output,
            run_trafo(translate("--format html --input " + path("doc.html"))).output);
  expect_one_error(run_trafo(translate("--input " + quoted(fixtures / "word.docx") + " --output " + path("x.odt"))),
                   "a document is written in its own format, as .docx");
  expect_one_error(run_trafo(translate("--format document")), "--format document reads the file --input names");
  write_text(*dir_ / "letter.docx", "Dear friend, this is not a zip.");
  expect_one_error(run_trafo(translate("--input " + path("letter.docx") + " --output " + path("y.docx"))),
                   "letter.docx: the Word document is not a zip archive");
  expect_one_error(run_trafo(translate("--max-file-bytes 100 --input " + quoted(fixtures / "word.docx"))),
                   "larger than 100 bytes");
  expect_one_error(run_trafo(translate("--format document --input " + path("test.en"))), "the extension .en");
}

// --target-prefix: each translation begins with its line's text, greedy or beam; an empty line
// leaves its translation as it was; a file of another length is a one-line input error.
TEST_F(TranslateCli, TargetPrefixesBeginTheirTranslations) {
  const auto input = *dir_ / "test.en";
  const auto plain = run_trafo(translate("--max-length-b 6 --input " + quoted(input)));
  ASSERT_EQ(plain.exit_code, 0) << plain.errors;
  const auto free = lines_of(plain.output);
  ASSERT_GE(free.size(), 4u);
  // Target text the tokenizer knows: the first two words of a German training line.
  const auto german = lines_of(read_text(*dir_ / "train.de")).front();
  const auto second_space = german.find(' ', german.find(' ') + 1);
  const std::string words = german.substr(0, second_space);
  ASSERT_FALSE(words.empty());
  std::string prefix_text;
  for (size_t i = 0; i < free.size(); ++i) prefix_text += (i == 0 || i == 2 ? words : "") + "\n";
  write_text(*dir_ / "prefix.txt", prefix_text);
  for (const std::string beam : {"1", "3"}) {
    const auto prefixed = run_trafo(translate("--max-length-b 6 --beam " + beam + " --input " + quoted(input) +
                                              " --target-prefix " + path("prefix.txt")));
    ASSERT_EQ(prefixed.exit_code, 0) << prefixed.errors;
    const auto lines = lines_of(prefixed.output);
    ASSERT_EQ(lines.size(), free.size());
    for (const size_t i : {size_t{0}, size_t{2}}) {
      EXPECT_EQ(lines[i].rfind(words, 0), 0u) << "'" << lines[i] << "' begins with '" << words << "'? beam " << beam;
    }
    if (beam == "1") {
      for (size_t i = 0; i < free.size(); ++i) {
        if (i != 0 && i != 2) {
          EXPECT_EQ(lines[i], free[i]) << "line " << i;
        }
      }
    }
  }
  const auto error_lines = [](const std::string& errors) {
    size_t count = 0;
    for (const auto& line : lines_of(errors)) count += line.rfind("trafo: error:", 0) == 0;
    return count;
  };
  write_text(*dir_ / "short-prefix.txt", "\n\n");
  const auto short_file = run_trafo(translate("--input " + quoted(input) + " --target-prefix " + path("short-prefix.txt")));
  EXPECT_EQ(short_file.exit_code, 2) << short_file.errors;
  EXPECT_EQ(error_lines(short_file.errors), 1u) << short_file.errors;
  EXPECT_NE(short_file.errors.find("--target-prefix"), std::string::npos) << short_file.errors;
  write_text(*dir_ / "long-prefix.txt", prefix_text + "one more\n");
  const auto long_file = run_trafo(translate("--input " + quoted(input) + " --target-prefix " + path("long-prefix.txt") +
                                             " --output " + path("long-prefix.out")));
  EXPECT_EQ(long_file.exit_code, 2) << long_file.errors;
  EXPECT_EQ(error_lines(long_file.errors), 1u) << long_file.errors;
  EXPECT_NE(long_file.errors.find("has " + std::to_string(free.size() + 1) + " lines"), std::string::npos)
      << long_file.errors;
}

TEST_F(TranslateCli, NBestLinesHaveIndexTextAndScore) {
  write_text(*dir_ / "nbest.txt", "the cat\n\nbig green tree\n");
  const auto result = run_trafo(translate("--beam 4 --n-best 3 --input " + path("nbest.txt")));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto lines = lines_of(result.output);
  ASSERT_EQ(lines.size(), 9u) << result.output;  // 3 for each line, the empty one's too
  const std::regex format(R"(^(\d+) \|\|\| (.*) \|\|\| (-?\d+\.\d{4})$)");
  std::vector<int> indices;
  double previous = 0.0;
  for (const auto& line : lines) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, format)) << line;
    const int index = std::stoi(match[1]);
    const double score = std::stod(match[3]);
    if (!indices.empty() && indices.back() == index) {
      EXPECT_LE(score, previous + 1e-9) << line;
    }
    indices.push_back(index);
    previous = score;
  }
  EXPECT_EQ(indices, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
}

TEST_F(TranslateCli, InteractiveWriterGetsEachLineBackAtOnce) {
  // The second line is written only after the first translation came back: a reader that
  // waits for more input before translating would hang here until `read -t` gives up.
  const auto fifo_dir = make_temp_dir("fifo");
  write_text(fifo_dir / "talk.sh",
             "set -e\ncd '" + fifo_dir.string() + "'\nmkfifo in out\n'" + std::string(TRAFO_BINARY) + "' " +
                 translate("") + " < in > out &\nexec 3>in 4<out\necho 'the cat' >&3\n" +
                 "read -t 60 first <&4 || { echo 'no answer to the first line'; exit 1; }\n"
                 "echo 'a dog' >&3\nexec 3>&-\nread -t 60 second <&4\nwait\necho answered\n");
  const auto result = run_command("bash '" + (fifo_dir / "talk.sh").string() + "'");
  EXPECT_EQ(result.exit_code, 0) << result.output << result.errors;
  EXPECT_EQ(result.output, "answered\n");
}

TEST_F(TranslateCli, InvalidUtf8IsAnErrorUnlessSkipped) {
  write_text(*dir_ / "bad.txt", "the cat\nbad \xff byte\nthe dog\n");
  const auto failed = run_trafo(translate("--input " + path("bad.txt")));
  EXPECT_EQ(failed.exit_code, 2);
  EXPECT_NE(failed.errors.find("bad.txt:2"), std::string::npos) << failed.errors;
  const auto skipped = run_trafo(translate("--skip-invalid --input " + path("bad.txt")));
  ASSERT_EQ(skipped.exit_code, 0) << skipped.errors;
  const auto lines = lines_of(skipped.output);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "");
}

TEST_F(TranslateCli, EvalJsonHasTheScoresAndTheLoss) {
  const auto result = run_trafo("eval --checkpoint " + path("model.pt") + " --src " + path("test.en") + " --ref " +
                                path("test.de") + " --json --threads 1 --precision fp32 --output " + path("hyps.txt"));  // compared with fp32 sums
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  ASSERT_EQ(result.output.find('\n'), result.output.size() - 1) << "one line: " << result.output;
  const auto json = nlohmann::json::parse(result.output);
  for (const char* field : {"bleu", "chrf", "loss", "ppl", "sentences", "seconds", "signature"}) {
    EXPECT_TRUE(json.contains(field)) << field;
  }
  EXPECT_EQ(json["sentences"], 12);
  EXPECT_EQ(lines_of(read_text(*dir_ / "hyps.txt")).size(), 12u);
  EXPECT_NEAR(json["ppl"].get<double>(), std::exp(json["loss"].get<double>()), 1e-6 * json["ppl"].get<double>());

  // The loss is the mean NLL per target token (eos included), here summed pair by pair.
  const auto loaded = checkpoint::load(*dir_ / "model.pt", false);
  auto model = checkpoint::make_model(loaded, torch::kCPU);
  const auto tokenizer = data::Tokenizer::from_bytes(loaded.tokenizer);
  const auto sources = lines_of(read_text(*dir_ / "test.en")), targets = lines_of(read_text(*dir_ / "test.de"));
  torch::NoGradGuard no_grad;
  double sum = 0.0;
  int64_t count = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    auto src = tokenizer.encode(sources[i]), tgt = tokenizer.encode(targets[i]);
    src.push_back(data::Tokenizer::kEos);
    std::vector<int64_t> tgt_in = {data::Tokenizer::kBos}, tgt_out(tgt.begin(), tgt.end());
    tgt_in.insert(tgt_in.end(), tgt.begin(), tgt.end());
    tgt_out.push_back(data::Tokenizer::kEos);
    const auto logits = model(torch::tensor(std::vector<int64_t>(src.begin(), src.end())).unsqueeze(0),
                              torch::tensor(tgt_in).unsqueeze(0));
    const auto [nll, tokens] = model::token_nll(logits, torch::tensor(tgt_out).unsqueeze(0), 0);
    sum += nll.item<double>();
    count += tokens.item<int64_t>();
  }
  EXPECT_NEAR(json["loss"].get<double>(), sum / static_cast<double>(count), 1e-4);

  const auto text = run_trafo("eval --checkpoint " + path("model.pt") + " --src " + path("test.en") + " --ref " +
                              path("test.de") + " --beam 2 --threads 1");
  ASSERT_EQ(text.exit_code, 0) << text.errors;
  EXPECT_NE(text.output.find("BLEU|nrefs:1|"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("chrF2|nrefs:1|"), std::string::npos) << text.output;
}

// Exit code 2 and exactly one line on stderr, without a stack trace.
void expect_translate_error(const CommandResult& result, const std::string& expected) {
  EXPECT_EQ(result.exit_code, 2) << result.errors;
  EXPECT_EQ(std::count(result.errors.begin(), result.errors.end(), '\n'), 1) << result.errors;
  EXPECT_NE(result.errors.find(expected), std::string::npos) << result.errors;
  EXPECT_EQ(result.errors.find("frame #"), std::string::npos) << result.errors;
  EXPECT_EQ(result.output, "");
}

TEST_F(TranslateCli, SamplingGivesTheSameLinesWhateverTheBatchAndOthersForAnotherSeed) {
  write_text(*dir_ / "sample.txt", "the cat sees a dog\nred bird\nthe sun and the moon\nbig tree\nthe river\nsky\n");
  // fp32 in both runs: --precision auto times the model at start, and on a busy machine one run may
  // pick bf16 and draw from other probabilities; the batch and the threads are what is compared.
  const std::string sampling =
      " --precision fp32 --sampling-topk 0 --sampling-temperature 1.5 --input " + path("sample.txt");
  const auto whole = run_trafo(translate("--seed 1" + sampling));
  ASSERT_EQ(whole.exit_code, 0) << whole.errors;
  ASSERT_EQ(lines_of(whole.output).size(), 6u);
  const auto one_by_one = run_trafo("translate --checkpoint " + path("model.pt") +
                                    " --threads 2 --seed 1 --buffer-lines 1 --batch-tokens 8" + sampling);
  ASSERT_EQ(one_by_one.exit_code, 0) << one_by_one.errors;
  EXPECT_EQ(one_by_one.output, whole.output);
  const auto other = run_trafo(translate("--seed 2" + sampling));
  ASSERT_EQ(other.exit_code, 0) << other.errors;
  EXPECT_NE(other.output, whole.output);
  const auto beam = run_trafo(translate("--beam 4 --sampling-topk 5 --input " + path("sample.txt")));
  EXPECT_EQ(beam.exit_code, 2);
  EXPECT_NE(beam.errors.find("--beam 1"), std::string::npos) << beam.errors;
}

TEST_F(TranslateCli, AnEnsembleAveragesLogProbabilities) {
  // A second model of the same tokenizer, and one of another tokenizer.
  save_model("second.pt", "train", 12);
  write_synthetic_corpus(*dir_, "other", 100, /*seed=*/9);
  save_model("third.pt", "other", 13);
  // fp32 in every run: auto times the model at start and may pick differently from one run to the next.
  const std::string input = " --precision fp32 --max-length-b 5 --input " + path("test.en");
  for (const std::string beam : {" --beam 1", " --beam 4"}) {
    const auto alone = run_trafo(translate(beam + input));
    ASSERT_EQ(alone.exit_code, 0) << alone.errors;
    const auto itself = run_trafo(translate("--checkpoint " + path("model.pt") + beam + input));
    ASSERT_EQ(itself.exit_code, 0) << itself.errors;
    EXPECT_EQ(itself.output, alone.output) << "an ensemble of a model with itself is the model" << beam;
    const auto pair = run_trafo(translate("--checkpoint " + path("second.pt") + beam + input));
    EXPECT_EQ(pair.exit_code, 0) << pair.errors;
  }
  // eval: the ensemble's loss is the mean of its models' (the mean of their log-probabilities).
  auto loss = [&](const std::string& checkpoints) {
    const auto result = run_trafo("eval " + checkpoints + " --threads 1 --precision fp32 --json --src " +
                                  path("test.en") + " --ref " + path("test.de"));
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    return result.exit_code == 0 ? nlohmann::json::parse(result.output)["loss"].get<double>() : 0.0;
  };
  const double first = loss("-c " + path("model.pt")), second = loss("-c " + path("second.pt"));
  EXPECT_NEAR(loss("-c " + path("model.pt") + " -c " + path("model.pt")), first, 1e-6);
  EXPECT_NEAR(loss("-c " + path("model.pt") + " -c " + path("second.pt")), (first + second) / 2, 1e-5);
  const auto mixed = run_trafo(translate("--checkpoint " + path("third.pt") + input));
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.errors.find("different tokenizers"), std::string::npos) << mixed.errors;
}

TEST_F(TranslateCli, MissingOrBrokenCheckpointIsAnInputError) {
  expect_translate_error(run_trafo("translate --checkpoint " + path("absent.pt") + " < /dev/null"), "absent.pt");
  write_text(*dir_ / "garbage.pt", std::string(4096, 'x'));
  expect_translate_error(run_trafo("translate --checkpoint " + path("garbage.pt") + " < /dev/null"), "garbage.pt");
  const auto bytes = read_text(*dir_ / "model.pt");
  write_text(*dir_ / "cut.pt", bytes.substr(0, bytes.size() / 2));
  expect_translate_error(run_trafo("translate --checkpoint " + path("cut.pt") + " < /dev/null"), "cut.pt");
  expect_translate_error(
      run_trafo("eval --checkpoint " + path("cut.pt") + " --src " + path("test.en") + " --ref " + path("test.de")),
      "cut.pt");
}

TEST_F(TranslateCli, BadUsageIsAnInputError) {
  write_text(*dir_ / "short.de", "one line\n");
  expect_translate_error(
      run_trafo("eval --checkpoint " + path("model.pt") + " --src " + path("test.en") + " --ref " + path("short.de")),
      "12");
  expect_translate_error(run_trafo(translate("--beam 2 --n-best 3") + " < /dev/null"), "n-best");
  // A line without end is no sentence: refused at 1 MiB, not read until memory runs out.
  const auto endless = run_trafo(translate("--input /dev/zero"));
  EXPECT_EQ(endless.exit_code, 2) << endless.errors;
  EXPECT_NE(endless.errors.find("trafo: error: /dev/zero holds a line longer than 1 MiB"), std::string::npos)
      << endless.errors;
  if (!torch::cuda::is_available()) {
    expect_translate_error(run_trafo(translate("--device cuda") + " < /dev/null"), "cuda");
  }
}

}  // namespace
}  // namespace trafo::testing
