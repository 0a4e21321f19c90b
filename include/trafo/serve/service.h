// The translation service behind `trafo serve`, apart from HTTP: one model per direction, and one
// decoding thread (the caller of run_decoder) that batches the sentences of concurrent requests together.
//
// Requests wait in arrival order; the oldest one's direction and decoding options decide what is
// decoded next, and sentences are taken one at a time from every waiting request that shares them,
// in turn, within `batch_tokens` source pieces; the requests taken from go to the back of the line.
// - Greedy translation (the common case) runs as one continuous batch (decode/continuous.h): waiting
//   sentences of its kind join it between two steps while its budget lasts, and each leaves it the
//   step it finishes, its request answered as soon as its last sentence is. A request of another
//   kind at the front of the line stops sentences joining; the batch drains, and that request is next.
// - Beams, sampling, alignments and scores run as batches of their own. When the last batch held
//   several sentences, a new one first waits a moment (a tenth of that batch's time, at most 10 ms)
//   for that many more to arrive: closed-loop clients come back at once.
// So a short request is answered within a batch or a few steps, however long the request before
// it, and a sentence's translation never depends on what shared its batch (the decoders' results
// are batch-independent). Sampling draws per sentence index: a sampling request is decoded in runs
// of its own consecutive sentences, numbered as `trafo translate` numbers them.
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
#include <vector>

#include "trafo/data/tokenizer.h"
#include "trafo/decode/continuous.h"
#include "trafo/decode/translator.h"
#include "trafo/eval/pair_scores.h"
#include "trafo/model/transformer.h"

namespace trafo::serve {

// One direction the service translates.
struct Direction {
  std::string source, target;      // language codes, as requests name them
  model::Transformer model = nullptr;  // in eval mode on its device
  std::shared_ptr<const data::Tokenizer> tokenizer;
  decode::DecodeOptions defaults;  // the decoding options of `trafo serve`'s command line
  std::map<std::string, int> tags;  // the model's corpus tags and their pieces (a request's "tag" must be one)
};

// What one request asks of a direction.
struct Job {
  size_t direction = 0;
  decode::DecodeOptions options;    // the direction's defaults with the request's changes
  std::vector<std::string> sentences;  // valid UTF-8, one line each
  bool alignment = false;           // also align each best translation to its source, word by word
  std::vector<std::string> targets;    // scoring: the translations whose log p is asked (one per sentence)
};

struct Outcome {
  std::vector<std::vector<decode::Hypothesis>> results;  // translating: n-best per sentence, best first
  std::vector<std::string> alignments;                   // with `alignment`: Pharaoh links per sentence
  std::vector<eval::PairScore> scores;                   // scoring: one per sentence
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
  double decoding_seconds = 0.0; // wall time spent in batches
  std::map<int64_t, int64_t> batch_sizes;  // how many batches held each number of sentences
};

class Service {
 public:
  // `max_queue`: sentences that may wait. Nothing is decoded until a thread calls run_decoder().
  Service(std::vector<Direction> directions, int64_t max_queue);
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  const std::vector<Direction>& directions() const { return directions_; }
  // The direction from `source` to `target`, or -1.
  int find(const std::string& source, const std::string& target) const;

  // Runs `job` and waits for it; throws Busy, TimedOut, or trafo::InputError for a bad option.
  Outcome run(Job job, std::chrono::steady_clock::time_point deadline);

  // Decodes on the calling thread until stop() and the line is empty. Call it from the thread that
  // loaded the models: LibTorch's threads (OpenMP's) then run as fast as in `trafo translate`, where
  // a second thread of the process decoded 1.5-2x slower with 2 threads (AMD Zen 4, 2 vCPUs).
  void run_decoder();
  // Refuses new jobs; run_decoder returns once the waiting ones are done.
  void stop();
  ServiceStats stats() const;

 private:
  struct Pending;
  using Part = std::pair<std::shared_ptr<Pending>, std::vector<size_t>>;  // a job and sentences of it
  // Takes sentences of the waiting jobs of `key`, one from each in turn, up to `budget` source
  // pieces (the first always); the jobs that gave go to the back of the line. Under mutex_.
  std::vector<Part> take(const std::string& key, int64_t budget);
  // Greedy translation: the job's sentences join the continuous batch (decode/continuous.h).
  static bool joins_running_batch(const Job& job);
  // One step of the continuous batch, after `joining` joined it; the finished sentences go to their jobs.
  void decode_step(const std::vector<Part>& joining);
  // A batch of its own (beams, sampling, alignments, scores).
  void decode_batch(const std::vector<Part>& parts);
  // `pending` fails with `error`; what it still had waiting leaves the line. Under mutex_.
  void fail(const std::shared_ptr<Pending>& pending, const std::exception_ptr& error);

  std::vector<Direction> directions_;
  int64_t max_queue_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // the decoding thread waits on it for jobs
  std::deque<std::shared_ptr<Pending>> waiting_;
  bool stopping_ = false;
  ServiceStats stats_;
  int64_t last_batch_sentences_ = 0;
  int64_t queued_after_last_batch_ = 0;  // sentences waiting when it ended
  std::chrono::duration<double> last_batch_seconds_{0.0};
  // The continuous batch: touched by the decoding thread only, but for continuous_key_.
  std::unique_ptr<decode::ContinuousDecoder> continuous_;
  std::string decoder_key_;     // the kind of job continuous_ was made for
  std::string continuous_key_;  // the kind of job that may join the running batch (under mutex_)
  std::map<int64_t, std::pair<std::shared_ptr<Pending>, size_t>> in_flight_;  // ticket -> job, sentence
};

}  // namespace trafo::serve
