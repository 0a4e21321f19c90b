// The service behind `trafo serve`, without HTTP: each sentence is tokenized once, as its job is
// queued, and its ids go to the decoders; what they give is `trafo translate`'s text, tagged or not,
// in the running batch (greedy) and in batches of their own (beams).
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "toy_model_support.h"
#include "trafo/decode/translator.h"
#include "trafo/inference/loaded_model.h"
#include "trafo/serve/service.h"

namespace trafo::serve {
namespace {

using testing::kToyModel;
using testing::toy_sentences;

// Runs the service's decoders while it lives, and stops them however the test leaves (a thread left
// running would abort it).
struct Decoding {
  Service& service;
  std::thread thread{[this] { service.run_decoder(); }};
  ~Decoding() {
    service.stop();
    thread.join();
  }
};

// The toy model on the CPU in fp32, on 2 threads.
std::shared_ptr<const inference::LoadedModel> toy_model() {
  at::set_num_threads(2);
  inference::RuntimeOptions runtime;
  runtime.checkpoint = kToyModel;
  runtime.device = "cpu";
  runtime.threads = 2;
  runtime.precision = "fp32";
  return std::make_shared<const inference::LoadedModel>(inference::load_for_translation(runtime));
}

// The toy model as the direction en-de, with the default decoding options.
Direction toy_direction(const std::shared_ptr<const inference::LoadedModel>& loaded) {
  return {"en", "de", std::make_shared<const inference::Translation>(loaded, inference::SearchOptions{}), {}};
}

TEST(Service, ServedTranslationsAreTheTranslatorsTaggedOrNot) {
  const auto loaded = toy_model();
  const auto direction = toy_direction(loaded);
  const auto& tokenizer = loaded->tokenizer;
  auto sentences = toy_sentences(60);
  std::string very_long;
  for (int i = 0; i < 60; ++i) very_long += sentences[static_cast<size_t>(i)] + " ";
  sentences[3] = very_long;  // cut to the model's positions
  sentences[4] = "";

  // Greedy (the running batch) and beams (a batch of their own), each with and without a tag.
  std::vector<decode::DecodeOptions> kinds(4);
  kinds[2].beam = kinds[3].beam = 3;
  kinds[1].source_tag = kinds[3].source_tag = tokenizer.vocab_size() - 1;
  std::vector<std::vector<std::vector<decode::Hypothesis>>> offline;
  for (const auto& options : kinds) {
    offline.push_back(decode::Translator(loaded->model, tokenizer, options).translate(sentences));
  }

  Service service({direction}, /*max_queue=*/10000, /*decoders=*/2);
  std::vector<Outcome> outcomes;
  {
    const Decoding decoding{service};
    std::vector<std::future<Outcome>> served;  // the jobs at once, as concurrent requests
    for (const auto& options : kinds) {
      served.push_back(std::async(std::launch::async, [&, options] {
        Job job;
        job.options = options;
        job.sentences = sentences;
        return service.run(std::move(job), std::chrono::steady_clock::now() + std::chrono::minutes(5));
      }));
    }
    for (auto& outcome : served) outcomes.push_back(outcome.get());
  }

  for (size_t k = 0; k < kinds.size(); ++k) {
    ASSERT_EQ(outcomes[k].translations.size(), sentences.size()) << "kind " << k;
    for (size_t i = 0; i < sentences.size(); ++i) {
      const auto& got = outcomes[k].translations[i].hypotheses.front();
      const auto& expected = offline[k][i].front();
      EXPECT_EQ(got.tokens, expected.tokens) << "kind " << k << ", line " << i;
      EXPECT_EQ(got.text, expected.text) << "kind " << k << ", line " << i;
      EXPECT_NEAR(got.score, expected.score, 1e-4) << "kind " << k << ", line " << i;
    }
  }
  const auto best_texts = [](const std::vector<std::vector<decode::Hypothesis>>& results) {
    std::vector<std::string> texts;
    for (const auto& hypotheses : results) texts.push_back(hypotheses.front().text);
    return texts;
  };
  EXPECT_NE(best_texts(offline[0]), best_texts(offline[1])) << "the tag changed no translation: nothing shown";
  EXPECT_EQ(service.stats().sentences_decoded, static_cast<int64_t>(kinds.size() * sentences.size()));
}

// The translation cache answers a sentence asked again with the same options from memory, as
// decoding answered it; other options are other entries, the least recently used leave first, and
// sampling is never cached.
TEST(Service, TheCacheAnswersRepeatsAsDecodingDid) {
  const auto loaded = toy_model();
  const auto direction = toy_direction(loaded);
  const auto sentences = toy_sentences(4);
  Service service({direction}, /*max_queue=*/10000, /*decoders=*/1, /*cache_sentences=*/3);
  const Decoding decoding{service};
  const auto run = [&](std::vector<size_t> rows, int beam = 1, bool sampling = false) {
    Job job;
    job.options.beam = beam;
    if (sampling) job.options.sampling_topk = 0;
    for (const auto row : rows) job.sentences.push_back(sentences[row]);
    const auto outcome = service.run(std::move(job), std::chrono::steady_clock::now() + std::chrono::minutes(5));
    std::vector<std::string> texts;
    for (const auto& translated : outcome.translations) texts.push_back(translated.hypotheses.front().text);
    return texts;
  };
  const auto first = run({0, 1});
  EXPECT_EQ(service.stats().cache_misses, 2);
  EXPECT_EQ(run({1, 0}), (std::vector<std::string>{first[1], first[0]}));
  EXPECT_EQ(service.stats().cache_hits, 2);
  EXPECT_EQ(service.stats().sentences_decoded, 2);
  // A sentence held, among new ones: the new ones are decoded, the answer in the order asked.
  const auto mixed = run({2, 0, 3});
  EXPECT_EQ(mixed[1], first[0]);
  EXPECT_EQ(service.stats().cache_hits, 3);
  EXPECT_EQ(service.stats().sentences_decoded, 4);
  EXPECT_EQ(service.stats().cached_sentences, 3);  // 2, 0 and 3 held; 1, used least recently, left
  run({1});
  EXPECT_EQ(service.stats().cache_hits, 3);
  // Beams are other entries; sampling is never looked up.
  run({3}, /*beam=*/2);
  run({3}, /*beam=*/1, /*sampling=*/true);
  run({3}, /*beam=*/1, /*sampling=*/true);
  EXPECT_EQ(service.stats().cache_hits, 3);
  EXPECT_EQ(service.stats().cache_misses, 6);
  EXPECT_EQ(service.stats().sentences_decoded, 8);
}

}  // namespace
}  // namespace trafo::serve
