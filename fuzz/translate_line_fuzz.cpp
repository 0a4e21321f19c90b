// One chunk of `trafo translate` input on arbitrary bytes: lines split at '\n', a trailing
// '\r' dropped, data::check_utf8 (an invalid line is emptied, as --skip-invalid does), then
// tokenization and a greedy translation with a tiny random model made once (1 thread,
// at most 4 output pieces). The model is the tests' tiny one cut to one layer each side: what is
// fuzzed is the way input lines reach the decoder (UTF-8, tokenization, lengths, batching,
// cutting long lines), and each decoding step is a fixed cost per input.
#include <cstddef>
#include <cstdint>
#include <memory>

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

decode::Translator& translator() {
  static decode::Translator instance = [] {
    auto config = testing::tiny_model_config(fuzz::small_tokenizer().vocab_size());
    config.encoder_layers = 1;
    config.decoder_layers = 1;
    return decode::Translator(fuzz::tiny_random_model(config), fuzz::small_tokenizer(), greedy_options());
  }();
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  // The warning for a line cut to the model's limit would be most of the log, one per input.
  spdlog::set_level(spdlog::level::err);
  translator();
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
  fuzz::expect_trafo_errors("Translator::translate", [&] {
    const auto results = translator().translate(lines);
    fuzz::check(results.size() == lines.size(), "one result per input line");
    for (size_t i = 0; i < results.size(); ++i) {
      fuzz::check(results[i].size() == 1, "greedy search gives exactly one hypothesis");
      const auto& best = results[i].front();
      fuzz::check(best.tokens.size() <= kMaxOutputPieces, "more output pieces than max_length_b");
      fuzz::check(lines[i].empty() || !best.tokens.empty() || best.text.empty(), "text without tokens");
      fuzz::check(utf8::is_valid(best.text.begin(), best.text.end()), "the translation is not valid UTF-8");
    }
  });
  return 0;
}
