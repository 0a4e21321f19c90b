// `trafo report`, TensorBoard event files and `trafo attention`: a hand-written tiny run folder
// whose page loads in headless Chromium with every chart drawn and no console errors; event files
// read back by TensorBoard's own Python reader; attention weights that are distributions with
// the causal and padding zeros in place, labelled with the tokenizer's pieces.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "test_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/inference/attention_weights.h"
#include "trafo/report/attention_maps.h"
#include "trafo/report/html_report.h"
#include "trafo/report/run_advice.h"
#include "trafo/train/tensorboard.h"

namespace trafo::testing {
namespace {

// stderr ends in one "trafo: error: ..." line (logs may come before it).
bool ends_in_one_error_line(const std::string& errors) {
  const auto at = errors.find("trafo: error: ");
  return at != std::string::npos && errors.find('\n', at) == errors.size() - 1;
}

bool have_chromium() { return run_command("command -v chromium").exit_code == 0; }

std::string event(const std::string& name, int step, double time_s, nlohmann::json fields = nlohmann::json::object()) {
  fields["event"] = name;
  fields["step"] = step;
  fields["epoch"] = 1;
  fields["time_s"] = time_s;
  return fields.dump() + "\n";
}

// A run as trafo train logs it: start, train events, two validations with samples, checkpoints, end.
std::string tiny_run(double speed) {
  std::string text = event("start", 0, 0.0, {{"config", "lr = 0.001\n# <b>not bold</b>\n"}, {"version", "0.1.0"},
                                             {"torch", "2.11.0"}, {"threads", 2}, {"device", "cpu"}});
  for (int step = 10; step <= 40; step += 10) {
    text += event("train", step, step * speed,
                  {{"loss", 6.0 - step / 10.0}, {"lr", 1e-4 * step}, {"grad_norm", 1.5},
                   {"tgt_tokens_per_s", 900.0 + step}, {"skipped_updates", 0}});
    if (step % 20 == 0) {
      text += event("valid", step, step * speed + 1,
                    {{"loss", 5.0 - step / 20.0}, {"ppl", 100.0 / step}, {"bleu", step / 2.0}, {"chrf", step * 1.0},
                     {"best", true},
                     {"samples", {{{"src", "the cat </script><b>"}, {"ref", "die Katze"}, {"hyp", "die Hund"}}}}});
      text += event("checkpoint", step, step * speed + 2, {{"path", "runs/tiny/checkpoint-best.pt"}, {"best", true}});
    }
  }
  return text + event("end", 40, 40 * speed + 3, {{"reason", "steps"}});
}

struct PageCheck {
  std::string dom, log;
};

PageCheck load_in_chromium(const std::filesystem::path& page) {
  const auto profile = make_temp_dir("chromium-profile");
  const auto result = run_command("timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                                  "--enable-logging=stderr --v=0 --user-data-dir=" + quoted(profile) +
                                  " --dump-dom " + quoted(std::filesystem::path("file://" + std::filesystem::absolute(page).string())));
  EXPECT_EQ(result.exit_code, 0) << result.errors;
  return {result.output, result.errors};
}

// Every curve has its two charts, all drawn, and the browser logged nothing from the page.
void expect_all_charts_drawn(const PageCheck& check) {
  const auto expected = 2 * report::report_curves().size();
  EXPECT_NE(check.dom.find("data-charts-expected=\"" + std::to_string(expected) + "\""), std::string::npos);
  EXPECT_NE(check.dom.find("data-charts-drawn=\"" + std::to_string(expected) + "\""), std::string::npos)
      << check.log;
  for (const auto& curve : report::report_curves()) {
    for (const char* axis : {"step", "time"}) {
      EXPECT_NE(check.dom.find("data-curve=\"" + curve.id + "\" data-axis=\"" + axis + "\""), std::string::npos);
    }
  }
  EXPECT_EQ(check.log.find("CONSOLE"), std::string::npos) << check.log;
}

TEST(Report, TinyRunLoadsInChromium) {
  TRAFO_REQUIRE_TOOL(have_chromium(), "chromium");
  const auto dir = make_temp_dir("report");
  std::filesystem::create_directories(dir / "tiny");
  write_text(dir / "tiny" / "metrics.jsonl", tiny_run(1.5));
  const auto result = run_trafo("report " + quoted(dir / "tiny") + " --out " + quoted(dir / "report.html"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const std::string page = read_text(dir / "report.html");
  // Self-contained: nothing fetched; samples and config escaped; the best checkpoint shown.
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_NE(page.find("&lt;b&gt;not bold&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(page.find("the cat &lt;/script&gt;&lt;b&gt;"), std::string::npos);
  EXPECT_NE(page.find("runs/tiny/checkpoint-best.pt"), std::string::npos);
  EXPECT_NE(page.find("step 40: BLEU 20.00, chrF 40.00"), std::string::npos);
  expect_all_charts_drawn(load_in_chromium(dir / "report.html"));
}

TEST(Report, SeveralRunsOverlayAndMalformedLinesAreLeftOut) {
  TRAFO_REQUIRE_TOOL(have_chromium(), "chromium");
  const auto dir = make_temp_dir("report");
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  write_text(dir / "a" / "metrics.jsonl", tiny_run(1.0));
  std::string second = tiny_run(2.0);
  second.insert(second.find('\n') + 1, "{\"event\": \"train\", \"step\": 5, \"loss\n[1, 2]\n");
  write_text(dir / "b" / "metrics.jsonl", second);
  const auto result = run_trafo("report " + quoted(dir / "a") + " " + quoted(dir / "b") + " -o " + quoted(dir / "r.html"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_NE(result.errors.find("metrics.jsonl line 2: not valid JSON"), std::string::npos) << result.errors;
  EXPECT_NE(result.errors.find("metrics.jsonl line 3: not a JSON object"), std::string::npos) << result.errors;
  const std::string page = read_text(dir / "r.html");
  EXPECT_NE(page.find("line 2: not valid JSON"), std::string::npos);
  const std::regex run_names("\"name\":\"[^\"]*/(a|b)\"");
  EXPECT_EQ(std::distance(std::sregex_iterator(page.begin(), page.end(), run_names), std::sregex_iterator()), 2);
  expect_all_charts_drawn(load_in_chromium(dir / "r.html"));
}

// A run of several directions (its valid events hold each direction's figures, their macro average
// at the top): each direction is a dashed line of its own on the dev charts, and the summary names
// each direction's figures at the best validation.
TEST(Report, EachDirectionHasItsOwnDevCurves) {
  std::string text;
  std::istringstream events(tiny_run(1.0));
  for (std::string line; std::getline(events, line);) {
    auto event = nlohmann::json::parse(line);
    if (event["event"] == "valid") {
      const double bleu = event["bleu"].get<double>();
      event["directions"] = {{"en-fr", {{"loss", 2.0}, {"ppl", 7.4}, {"bleu", bleu + 3}, {"chrf", 50.0}}},
                             {"en-de", {{"loss", 2.5}, {"ppl", 12.2}, {"bleu", bleu - 3}, {"chrf", 40.0}}}};
    }
    text += event.dump() + "\n";
  }
  const auto dir = make_temp_dir("report");
  std::filesystem::create_directories(dir / "multi");
  write_text(dir / "multi" / "metrics.jsonl", text);
  const auto result = run_trafo("report " + quoted(dir / "multi") + " --out " + quoted(dir / "report.html"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const std::string page = read_text(dir / "report.html");
  const std::string opening = "<script type=\"application/json\" id=\"trafo-data\">";
  const auto begin = page.find(opening) + opening.size();
  const auto data = nlohmann::json::parse(page.substr(begin, page.find("</script>", begin) - begin));
  std::map<std::string, nlohmann::json> lines;
  for (const auto& run : data["runs"]) lines[run["name"].get<std::string>()] = run;
  ASSERT_EQ(lines.size(), 3u) << data["runs"].dump();
  const auto& run = data["runs"][0];
  const auto name = run["name"].get<std::string>();
  const auto& fr = lines.at(name + " · en-fr");
  const auto& de = lines.at(name + " · en-de");
  EXPECT_FALSE(run["dashed"].get<bool>());
  EXPECT_TRUE(fr["dashed"].get<bool>());
  EXPECT_NE(fr["color"], run["color"]);
  EXPECT_NE(fr["color"], de["color"]);
  // steps 20 and 40: macro BLEU 10 and 20, en-fr 3 above, en-de 3 below; no train curves of their own
  EXPECT_EQ(run["points"]["dev_bleu"][1][2].get<double>(), 20.0);
  EXPECT_EQ(fr["points"]["dev_bleu"][1][2].get<double>(), 23.0);
  EXPECT_EQ(de["points"]["dev_bleu"][0][2].get<double>(), 7.0);
  EXPECT_EQ(de["points"]["dev_chrf"].size(), 2u);
  EXPECT_FALSE(fr["points"].contains("train_loss"));
  EXPECT_NE(page.find("en-de: BLEU 17.00, chrF 40.00; en-fr: BLEU 23.00, chrF 50.00"), std::string::npos)
      << "the best validation's figures by direction";
  if (have_chromium()) expect_all_charts_drawn(load_in_chromium(dir / "report.html"));
}

TEST(Report, NothingToDrawIsExitCode2) {
  const auto dir = make_temp_dir("report");
  std::filesystem::create_directories(dir / "empty");
  std::filesystem::create_directories(dir / "garbage");
  write_text(dir / "garbage" / "metrics.jsonl", "not json\n");
  std::filesystem::create_directories(dir / "blank");
  write_text(dir / "blank" / "metrics.jsonl", "");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"missing", "does not exist"},
      {"empty", "holds no metrics.jsonl"},
      {"garbage", "line 1: not valid JSON"},
      {"blank", "holds no usable events"}};
  for (const auto& [name, message] : cases) {
    const auto result = run_trafo("report " + quoted(dir / name) + " --out " + quoted(dir / "r.html"));
    EXPECT_EQ(result.exit_code, 2) << name;
    EXPECT_NE(result.errors.find(message), std::string::npos) << result.errors;
    EXPECT_TRUE(ends_in_one_error_line(result.errors)) << result.errors;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "r.html"));
}

// A run of validations at steps 10, 20, ... with these dev losses (the best marked by loss), and a train
// event with each of `train_losses` between consecutive validations.
report::RunMetrics run_of(const std::vector<double>& dev_losses, const std::vector<double>& train_losses) {
  report::RunMetrics run;
  run.events.push_back(nlohmann::json::parse(event("start", 0, 0.0)));
  double best = 1e9;
  for (size_t i = 0; i < dev_losses.size(); ++i) {
    const int step = 10 * static_cast<int>(i + 1);
    if (i < train_losses.size()) {
      run.events.push_back(nlohmann::json::parse(event("train", step - 5, step, {{"loss", train_losses[i]}})));
    }
    const bool is_best = dev_losses[i] < best;
    best = std::min(best, dev_losses[i]);
    run.events.push_back(nlohmann::json::parse(
        event("valid", step, step, {{"loss", dev_losses[i]}, {"bleu", 10.0 + static_cast<double>(i)}, {"best", is_best}})));
  }
  return run;
}

TEST(RunAdvice, ARunThatEndsAtItsBestValidationIsStillImproving) {
  const auto advice = report::run_advice(run_of({3.0, 2.5, 2.2}, {4.0, 3.5, 3.0}));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_NE(advice[0].find("ended while still improving"), std::string::npos) << advice[0];
  EXPECT_NE(advice[0].find("step 30: BLEU 12.00, dev loss 2.2000"), std::string::npos) << advice[0];
  EXPECT_NE(advice[0].find("--max-steps"), std::string::npos) << advice[0];
  // Too few validations to tell, or a last validation that is not the best: nothing to say.
  EXPECT_TRUE(report::run_advice(run_of({3.0, 2.5}, {4.0, 3.5})).empty());
  EXPECT_TRUE(report::run_advice(run_of({3.0, 2.5, 2.6}, {4.0, 3.5, 3.0})).empty());
}

TEST(RunAdvice, DevLossRisingWhileTrainingLossFallsIsOverfitting) {
  const auto advice = report::run_advice(run_of({3.0, 2.0, 2.1, 2.2, 2.4}, {4.0, 3.0, 2.5, 2.0, 1.5}));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_NE(advice[0].find("dev loss rose at each of the last 3 validations (2.0000 at step 20 to 2.4000 at step 50)"),
            std::string::npos)
      << advice[0];
  EXPECT_NE(advice[0].find("training loss fell (3.0000 to 1.5000)"), std::string::npos) << advice[0];
  EXPECT_NE(advice[0].find("checkpoint-best.pt (step 20)"), std::string::npos) << advice[0];
  // Two rises are not yet a trend; a training loss that rises too is no overfitting.
  EXPECT_TRUE(report::run_advice(run_of({3.0, 2.0, 2.0, 2.1, 2.2}, {4.0, 3.0, 2.5, 2.0, 1.5})).empty());
  EXPECT_TRUE(report::run_advice(run_of({3.0, 2.0, 2.1, 2.2, 2.4}, {4.0, 3.0, 3.1, 3.2, 3.3})).empty());
}

TEST(RunAdvice, TrainLogTheEndEventAndReportSayIt) {
  const auto dir = make_temp_dir("advice");
  std::filesystem::create_directories(dir / "data");
  write_synthetic_corpus(dir / "data", "train", 120, 1);
  write_synthetic_corpus(dir / "data", "dev", 8, 2);
  const auto run = dir / "run";
  const auto trained = run_trafo("train --data-dir " + quoted(dir / "data") + " --src-lang en --tgt-lang de --run-dir " +
                                 quoted(run) +
                                 " --vocab-size 300 --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1"
                                 " --d-ff 64 --batch-tokens 200 --threads 1 --lr 3e-3 --warmup-steps 5 --max-steps 6"
                                 " --valid-every 2 --valid-max-sentences 4 --early-stopping-metric loss --precision fp32");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto end = read_jsonl(run / "metrics.jsonl").back();
  ASSERT_EQ(end["event"], "end");
  ASSERT_TRUE(end.contains("advice")) << end.dump();
  const std::string sentence = end["advice"][0];
  EXPECT_NE(sentence.find("ended while still improving: its last validation (step 6"), std::string::npos) << sentence;
  EXPECT_NE(read_text(run / "train.log").find(sentence), std::string::npos);
  const auto reported = run_trafo("report " + quoted(run) + " --out " + quoted(dir / "report.html"));
  ASSERT_EQ(reported.exit_code, 0) << reported.errors;
  EXPECT_NE(reported.errors.find(sentence), std::string::npos) << reported.errors;
  EXPECT_NE(read_text(dir / "report.html").find("ended while still improving"), std::string::npos);
}

TEST(TensorBoard, Crc32cOfTheStandardCheckString) {
  EXPECT_EQ(train::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(train::crc32c("", 0), 0u);
}

TEST(TensorBoard, ItsPythonReaderReadsTheScalarsBack) {
  TRAFO_REQUIRE_PYTHON_MODULE("tensorboard");
  const auto dir = make_temp_dir("tensorboard");
  {
    train::TensorBoardWriter writer(dir / "tensorboard");
    for (int step = 50; step <= 150; step += 50) {
      writer.scalars("train", {{"loss", 8.0 / step}, {"lr", 1e-5 * step}, {"resumed", true}, {"note", "x"}}, step);
    }
    writer.scalar("valid/bleu", 12.5, 100, 1.7e9);
  }
  write_text(dir / "read.py",
             "import json, sys\n"
             "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
             "acc = EventAccumulator(sys.argv[1]); acc.Reload()\n"
             "tags = acc.Tags()['scalars']\n"
             "print(json.dumps({t: [[e.step, e.value, e.wall_time] for e in acc.Scalars(t)] for t in tags}))\n");
  const auto result = run_command(std::string("'") + TRAFO_PYTHON + "' " + quoted(dir / "read.py") + " " +
                                  quoted(dir / "tensorboard"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto scalars = nlohmann::json::parse(result.output);
  ASSERT_EQ(scalars.size(), 3u) << result.output;  // train/loss, train/lr, valid/bleu
  ASSERT_EQ(scalars["train/loss"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const int step = 50 * (i + 1);
    EXPECT_EQ(scalars["train/loss"][i][0], step);
    EXPECT_NEAR(scalars["train/loss"][i][1].get<double>(), 8.0 / step, 1e-6);
    EXPECT_NEAR(scalars["train/lr"][i][1].get<double>(), 1e-5 * step, 1e-9);
  }
  EXPECT_EQ(scalars["valid/bleu"][0][0], 100);
  EXPECT_FLOAT_EQ(scalars["valid/bleu"][0][1].get<float>(), 12.5f);
  EXPECT_DOUBLE_EQ(scalars["valid/bleu"][0][2].get<double>(), 1.7e9);
}


// A tiny random model and its tokenizer, saved as a checkpoint for the CLI.
class AttentionPicture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("attention"));
    write_synthetic_corpus(*dir_, "train", 300);
    data::TokenizerOptions tokenizer_options;
    tokenizer_options.vocab_size = 300;
    tokenizer_ = new data::Tokenizer(data::Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, tokenizer_options));
    auto config = tiny_model_config(tokenizer_->vocab_size());
    config.max_positions = 24;
    torch::manual_seed(5);
    model_ = new model::Transformer(config);
    (*model_)->eval();
    checkpoint::save(*dir_ / "model.pt", checkpoint::Checkpoint{config, checkpoint::model_weights(*model_),
                                                                tokenizer_->to_bytes(), "", std::nullopt, {}});
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokenizer_;
    delete dir_;
  }
  static std::string attention(const std::string& arguments) {
    return "attention --checkpoint " + quoted(*dir_ / "model.pt") + " --threads 1 " + arguments;
  }

  static std::filesystem::path* dir_;
  static data::Tokenizer* tokenizer_;
  static model::Transformer* model_;
};
std::filesystem::path* AttentionPicture::dir_ = nullptr;
data::Tokenizer* AttentionPicture::tokenizer_ = nullptr;
model::Transformer* AttentionPicture::model_ = nullptr;

TEST_F(AttentionPicture, RowsAreDistributionsWithCausalAndPaddingZeros) {
  // Two sentences: the second one's source is padded after 3 pieces, its target after 2.
  const auto src = torch::tensor({5, 6, 7, 8, 9, 3, 10, 11, 3, 0, 0, 0}, torch::kLong).view({2, 6});
  const auto tgt_in = torch::tensor({2, 12, 13, 14, 2, 15, 0, 0}, torch::kLong).view({2, 4});
  const auto weights = inference::attention_weights(*model_, src, tgt_in);
  ASSERT_EQ(weights.size(), 2u + 2u * 2u);
  for (size_t m = 0; m < weights.size(); ++m) {
    const auto& w = weights[m];  // [B,h,Tq,Tk]
    ASSERT_EQ(w.dim(), 4);
    EXPECT_TRUE(torch::allclose(w.sum(-1), torch::ones_like(w.sum(-1)), 1e-5, 1e-6)) << "module " << m;
    const bool decoder_self = m >= 2 && (m - 2) % 2 == 0;
    if (decoder_self) {
      EXPECT_EQ(w.triu(1).abs().max().item<float>(), 0.0f) << "future position seen, module " << m;
    } else {  // encoder self-attention and cross-attention: keys are the source
      EXPECT_EQ(w[1].narrow(-1, 3, 3).abs().max().item<float>(), 0.0f) << "weight on source padding, module " << m;
    }
  }
}

TEST_F(AttentionPicture, LabelsAreTheTokenizersPieces) {
  const std::string source = "the cat sees a dog", target = "dogen aen seesen caten theen";
  const auto maps = report::extract_attention(*model_, *tokenizer_, source, target, {});
  auto with = [](std::vector<std::string> pieces, const std::string& front, const std::string& back) {
    if (!front.empty()) pieces.insert(pieces.begin(), front);
    if (!back.empty()) pieces.push_back(back);
    return pieces;
  };
  const std::string bos = tokenizer_->piece(data::Tokenizer::kBos), eos = tokenizer_->piece(data::Tokenizer::kEos);
  EXPECT_EQ(maps.source_pieces, with(tokenizer_->pieces(source), "", eos));
  EXPECT_EQ(maps.target_inputs, with(tokenizer_->pieces(target), bos, ""));
  EXPECT_EQ(maps.target_outputs, with(tokenizer_->pieces(target), "", eos));
  ASSERT_EQ(maps.maps.size(), 6u);
  for (const auto& map : maps.maps) {
    EXPECT_EQ(map.weights.size(0), 2);
    EXPECT_EQ(map.weights.size(1), static_cast<int64_t>(map.rows.size())) << map.kind;
    EXPECT_EQ(map.weights.size(2), static_cast<int64_t>(map.columns.size())) << map.kind;
  }
  EXPECT_EQ(maps.maps[0].kind, "cross");
  EXPECT_EQ(maps.maps[0].rows, maps.target_outputs);
  EXPECT_EQ(maps.maps[0].columns, maps.source_pieces);
}

TEST_F(AttentionPicture, CommandWritesPicturesAndJson) {
  const auto result = run_trafo(attention("--src 'the cat sees a dog' --json --max-length-b 4"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["source_pieces"].size(), tokenizer_->pieces("the cat sees a dog").size() + 1);
  EXPECT_FALSE(json["forced"].get<bool>());
  for (const auto& map : json["maps"]) {
    for (const auto& matrix : map["heads"]) {
      for (const auto& row : matrix) {
        double sum = 0;
        for (const auto& weight : row) sum += weight.get<double>();
        EXPECT_NEAR(sum, 1.0, 1e-4);
      }
    }
  }
  for (const std::string out : {"a.svg", "a.html"}) {
    const auto drawn = run_trafo(attention("--src 'red bird' --tgt 'birden reden' --out " + quoted(*dir_ / out)));
    ASSERT_EQ(drawn.exit_code, 0) << drawn.errors;
    const auto picture = read_text(*dir_ / out);
    EXPECT_NE(picture.find("<svg"), std::string::npos);
    EXPECT_NE(picture.find("average of heads"), std::string::npos);
    EXPECT_NE(picture.find(tokenizer_->pieces("birden reden").front()), std::string::npos);
  }
}

// On a CPU where auto would take bf16 for training and for decoding (posed), the weights drawn are
// still computed in fp32: every row sums to 1 within fp32 rounding, and --precision is no option.
TEST_F(AttentionPicture, WeightsAreFp32WhateverTheCpuFavours) {
  const auto result = run_command("TRAFO_TEST_HOOKS=cpu_flags=avx512_bf16,bf16_speedup=4,bf16_decoding_speedup=4 '" +
                                  std::string(TRAFO_BINARY) + "' " +
                                  attention("--src 'the cat sees a dog and the big red bird' --json"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  for (const auto& map : nlohmann::json::parse(result.output)["maps"]) {
    for (const auto& matrix : map["heads"]) {
      for (const auto& row : matrix) {
        double sum = 0;
        for (const auto& weight : row) sum += weight.get<double>();
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
  }
  EXPECT_EQ(run_trafo(attention("--src 'sun' --precision bf16")).exit_code, 2);
}

TEST_F(AttentionPicture, BadInputIsOneLineAndExitCode2) {
  std::string long_text;
  for (int i = 0; i < 30; ++i) long_text += "river ";
  const std::vector<std::string> cases = {"--src '" + long_text + "'", "--src 'sun' --tgt '" + long_text + "'",
                                          "--src ''", "--src 'sun' --out picture.png"};
  for (const auto& arguments : cases) {
    const auto result = run_trafo(attention(arguments));
    EXPECT_EQ(result.exit_code, 2) << arguments;
    EXPECT_TRUE(ends_in_one_error_line(result.errors)) << result.errors;
  }
  const auto result = run_trafo(attention("--src '" + long_text + "'"));
  EXPECT_NE(result.errors.find("this model takes at most 23"), std::string::npos) << result.errors;
}

}  // namespace
}  // namespace trafo::testing
