// The translation service behind `trafo serve`, apart from HTTP: one model per direction, and
// decoders (threads of run_decoder) that batch the sentences of concurrent requests together.
//
// Requests wait in arrival order; the oldest one's direction and decoding options decide what is
// decoded next, and sentences are taken one at a time from every waiting request that shares them,
// in turn, within `batch_tokens` source pieces; the requests taken from go to the back of the line.
// - Greedy translation (the common case) runs as a continuous batch (decode/continuous.h): waiting
//   sentences of its kind join it between two steps while its budget lasts, and each leaves it the
//   step it finishes, its request answered as soon as its last sentence is. A request of another
//   kind at the front of the line stops sentences joining; the batch drains, and that request is next.
// - Beams, sampling, alignments and scores run as batches of their own. When the last batch held
//   several sentences, a new one first waits a moment (a tenth of that batch's time, at most 10 ms)
//   for that many more to arrive: closed-loop clients come back at once.
// - On CPU, several decoders may run side by side, each with a batch of its own, and the LibTorch
//   threads are shared among those with work: a lone decoder gets them all; under load each works
//   on one thread, and none waits at another's OpenMP barriers. The first decoder takes work first,
//   each next one only while the one before it has work, and each takes its share of the sentences.
// So a short request is answered within a batch or a few steps, however long the request before
// it, and a sentence's translation never depends on what shared its batch or on the threads (the
// decoders' results are batch-independent). Sampling draws per sentence index: a sampling request
// is decoded in runs of its own consecutive sentences, numbered as `trafo translate` numbers them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "trafo/decode/continuous.h"
#include "trafo/inference/translation.h"

namespace trafo::model {
class PackedInference;
}

namespace trafo::serve {

namespace detail {
class TranslationCache;
}

// One direction the service translates.
struct Direction {
  std::string source, target;      // language codes, as requests name them
  // The translation engine: the model (in eval mode on its device), its tokenizer, and the decoding
  // options of `trafo serve`'s command line with the target's tag.
  std::shared_ptr<const inference::Translation> engine;
  std::map<std::string, int> tags;  // the model's corpus tags and their pieces (a request's "tag" must be one)
};

// What one request asks of a direction.
struct Job {
  size_t direction = 0;
  inference::SearchOptions options;  // the direction's defaults with the request's changes
  std::vector<std::string> sentences;  // valid UTF-8, one line each
  bool alignment = false;           // also align each best translation to its source, word by word
  std::vector<std::string> targets;    // scoring: the translations whose log p is asked (one per sentence)
  std::vector<std::string> prefixes;   // none, or one per sentence: text its translation begins with
  // The request's own glossary (source term, target term), compiled for the direction by run(); it
  // replaces the server's --glossary. Empty: the options' glossary, if any.
  std::vector<std::pair<std::string, std::string>> glossary;
};

struct Outcome {
  std::vector<inference::Translated> translations;  // translating: per sentence, n-best and the best's links
  std::vector<inference::PairScore> scores;         // scoring: one per sentence
};

// Why a job was not done: the queue is full (Busy) or its deadline passed (TimedOut), or the
// service is stopping (Busy).
struct Busy : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct TimedOut : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ServiceStats {
  int64_t queued_sentences = 0;  // waiting, not yet in a batch
  int64_t batches = 0;
  int64_t sentences_decoded = 0;
  int64_t output_tokens = 0;     // pieces produced (eos not counted)
  double decoding_seconds = 0.0; // wall time in which a decoder was busy
  std::map<int64_t, int64_t> batch_sizes;  // how many batches held each number of sentences
  std::vector<int64_t> sentences_by_decoder;  // sentences decoded by each decoder
  int64_t cache_hits = 0;      // sentences answered from the translation cache
  int64_t cache_misses = 0;    // sentences the cache could have answered but did not hold
  int64_t cached_sentences = 0;  // sentences the cache holds now
};

class Service {
 public:
  // `max_queue`: sentences that may wait; `decoders`: batches decoded side by side (CPU);
  // `cache_sentences`: the translations kept to answer a sentence asked again (0: none; not for
  // sampling, scoring or a request's own glossary). Nothing is decoded until a thread calls run_decoder().
  Service(std::vector<Direction> directions, int64_t max_queue, int decoders = 1, int64_t cache_sentences = 0);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  const std::vector<Direction>& directions() const { return directions_; }
  // The direction from `source` to `target`, or -1.
  int find(const std::string& source, const std::string& target) const;

  // Runs `job` and waits for it; throws Busy, TimedOut, or trafo::InputError for a bad option.
  // Sentences the cache holds are answered from it, the others decoded.
  Outcome run(Job job, std::chrono::steady_clock::time_point deadline);

  // Decodes until stop() and the line is empty: the first decoder on the calling thread, the others
  // on threads of their own, sharing the calling thread's LibTorch threads (at::get_num_threads()).
  // Call it from the thread that loaded the models: its OpenMP threads then run as fast as in
  // `trafo translate`, where a second thread of the process decoded 1.5-2x slower with 2 threads
  // (AMD Zen 4, 2 vCPUs).
  void run_decoder();
  // Refuses new jobs; run_decoder returns once the waiting ones are done.
  void stop();
  ServiceStats stats() const;

 private:
  struct Pending;
  using Part = std::pair<std::shared_ptr<Pending>, std::vector<size_t>>;  // a job and sentences of it
  struct Decoder;  // a decoding thread and its batch
  // Queues `job` (validated, its glossary compiled) for the decoders and waits for it.
  Outcome decode(Job job, const std::string& key, std::chrono::steady_clock::time_point deadline);
  // Takes sentences of the waiting jobs of `key`, one from each in turn, up to `budget` source
  // pieces and `most` sentences (the first always); the jobs that gave go to the back of the line.
  // Under mutex_.
  std::vector<Part> take(const std::string& key, int64_t budget, int64_t most);
  // The decoding loop of `decoder`, on its thread.
  void decode_on(Decoder& decoder);
  // Whether `decoder` may take work: the first always, each next one while the one before has work.
  bool may_take(const Decoder& decoder) const;
  // The most sentences `decoder` takes into its running batch now: its share of the sentences
  // waiting and of those running in the decoders that could take them (idle, or running that
  // kind). Under mutex_.
  int64_t share(const Decoder& decoder, const std::string& key) const;
  // Marks `decoder` busy or idle, and counts the busy decoders and the time any is busy. Under mutex_.
  void set_busy(Decoder& decoder, bool busy);
  // The LibTorch threads `decoder` decodes with now, among the decoders with work. Under mutex_.
  int threads_for(const Decoder& decoder) const;
  // Greedy translation: the job's sentences join the continuous batch (decode/continuous.h).
  static bool joins_running_batch(const Job& job);
  // One step of `decoder`'s continuous batch, after `joining` joined it; the finished sentences go to
  // their jobs.
  void decode_step(Decoder& decoder, const std::vector<Part>& joining);
  // A batch of its own (beams, sampling, alignments, scores).
  void decode_batch(Decoder& decoder, const std::vector<Part>& parts);
  // `pending` fails with `error`; what it still had waiting leaves the line. Under mutex_.
  void fail(const std::shared_ptr<Pending>& pending, const std::exception_ptr& error);

  std::vector<Direction> directions_;
  int64_t max_queue_;
  std::vector<std::unique_ptr<Decoder>> decoders_;
  // Each model's weights stay packed while the service lives (model/linear.h): its decoders share them.
  std::vector<std::unique_ptr<model::PackedInference>> packed_;
  int threads_ = 1;  // LibTorch threads the decoders share (the caller of run_decoder's)
  std::unique_ptr<detail::TranslationCache> cache_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // idle decoders wait on it for jobs
  std::deque<std::shared_ptr<Pending>> waiting_;
  bool stopping_ = false;
  ServiceStats stats_;
  int busy_decoders_ = 0;  // decoders with work
  std::chrono::steady_clock::time_point busy_since_;  // since when a decoder has been busy
};

}  // namespace trafo::serve
