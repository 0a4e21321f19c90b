// One chunk of `trafo translate` input on arbitrary bytes: lines split at '\n', a trailing
// '\r' dropped, data::check_utf8 (an invalid line is emptied, as --skip-invalid does), then
// tokenization and a translation with a tiny random model made once (1 thread, at most 4 output
// pieces), greedy and sampled from all pieces (byte-fallback pieces decode to any byte, line
// breaks and control bytes included). Every translation must print as one line: one line out for
// every line in (decode/output_text.h). The model is the tests' tiny one cut to one layer each side: what is
// fuzzed is the way input lines reach the decoder (UTF-8, tokenization, lengths, batching,
// cutting long lines), and each decoding step is a fixed cost per input.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>
#include <utf8.h>

#include "fuzz_models.h"
#include "fuzz_support.h"
#include "model_support.h"  // tests/: the tests' tiny model config
#include "trafo/data/corpus.h"
#include "trafo/decode/translator.h"

using namespace trafo;

namespace {

constexpr int64_t kMaxOutputPieces = 4;

decode::DecodeOptions greedy_options() {
  decode::DecodeOptions options;
  options.beam = 1;
  options.max_length_a = 0.0;
  options.max_length_b = kMaxOutputPieces;
  options.batch_tokens = 256;
  return options;
}

decode::DecodeOptions sampled_options() {
  auto options = greedy_options();
  options.sampling_topk = 0;  // every piece, the 256 byte pieces included
  options.sampling_temperature = 4.0;  // flat: the rare pieces come up too
  return options;
}

decode::Translator make_translator(const decode::DecodeOptions& options) {
  auto config = testing::tiny_model_config(fuzz::small_tokenizer().vocab_size());
  config.encoder_layers = 1;
  config.decoder_layers = 1;
  return decode::Translator(fuzz::tiny_random_model(config), fuzz::small_tokenizer(), options);
}

decode::Translator& translator() {
  static decode::Translator instance = make_translator(greedy_options());
  return instance;
}

decode::Translator& sampler() {
  static decode::Translator instance = make_translator(sampled_options());
  return instance;
}

// Valid UTF-8 without a control character, a line or paragraph separator, or a space at either end.
bool prints_as_one_line(const std::string& text) {
  if (!utf8::is_valid(text.begin(), text.end())) return false;
  if (!text.empty() && (text.front() == ' ' || text.back() == ' ')) return false;
  for (auto it = text.begin(); it != text.end();) {
    const uint32_t c = utf8::next(it, text.end());
    if (c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029) return false;
  }
  return true;
}

void check_translations(decode::Translator& translator, const std::vector<std::string>& lines, int64_t first) {
  const auto results = translator.translate(lines, first);
  fuzz::check(results.size() == lines.size(), "one result per input line");
  for (size_t i = 0; i < results.size(); ++i) {
    fuzz::check(results[i].size() == 1, "greedy search gives exactly one hypothesis");
    const auto& best = results[i].front();
    fuzz::check(best.tokens.size() <= kMaxOutputPieces, "more output pieces than max_length_b");
    fuzz::check(lines[i].empty() || !best.tokens.empty() || best.text.empty(), "text without tokens");
    fuzz::check(prints_as_one_line(best.text), "a translation that does not print as one line");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  // The warning for a line cut to the model's limit would be most of the log, one per input.
  spdlog::set_level(spdlog::level::err);
  translator();
  sampler();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto lines = fuzz::split_lines(std::string_view(reinterpret_cast<const char*>(data), size));
  if (lines.empty()) return 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto& text = lines[i];
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (!fuzz::expect_trafo_errors("check_utf8", [&] { data::check_utf8(text, "input", static_cast<int64_t>(i) + 1); })) {
      text.clear();
    }
  }
  fuzz::expect_trafo_errors("Translator::translate", [&] { check_translations(translator(), lines, 0); });
  // The input's size picks the sentences' draws, so that the same line is sampled differently.
  fuzz::expect_trafo_errors("Translator::translate (sampled)",
                            [&] { check_translations(sampler(), lines, static_cast<int64_t>(size)); });
  return 0;
}
