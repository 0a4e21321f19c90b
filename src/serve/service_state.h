// What the service's line (service.cpp) and its decoders (decoders.cpp) both read: a job waiting in
// the line, and a decoding thread with its running batch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trafo/serve/service.h"

namespace trafo::serve {

// A job in the line: what it asks, how far it has got, and its results.
struct Service::Pending {
  Job job;
  std::string key;              // jobs with the same key may share a batch
  // The sentences tokenized once by run() (the engine's prepare: source ids after the tag, prefixes'
  // target pieces): the batch budget counts them, and the decoders decode them.
  inference::Sentences sentences;
  size_t next = 0;              // the first sentence not yet taken into a batch
  size_t done = 0;              // sentences decoded
  Outcome outcome;
  std::exception_ptr error;     // a batch that failed fails every job in it
  std::condition_variable answered;  // run() waits on it; notified when finished() (under mutex_)
  bool finished() const { return error || done == job.sentences.size(); }
  // Sentence `row`'s source pieces with eos: what the batch budget counts.
  int64_t pieces(size_t row) const { return static_cast<int64_t>(sentences.ids[row].size()) + 1; }
};

// A decoding thread: its running batch, and what the line knows of it.
struct Service::Decoder {
  size_t index = 0;
  int threads = 0;      // the LibTorch threads this thread decodes with now
  // Under mutex_:
  bool busy = false;    // decoding: a running batch with sentences, or a batch of its own
  int64_t running = 0;  // sentences in its running batch
  std::string continuous_key;  // the kind of job that may join the running batch
  // The decoder's thread alone:
  std::unique_ptr<decode::ContinuousDecoder> continuous;  // the running batch
  std::string decoder_key;  // the kind of job `continuous` was made for
  std::map<int64_t, std::pair<std::shared_ptr<Pending>, size_t>> in_flight;  // ticket -> job, sentence
  int64_t last_batch_sentences = 0;
  int64_t queued_after_last_batch = 0;  // sentences waiting when it ended
  std::chrono::duration<double> last_batch_seconds{0.0};
};

}  // namespace trafo::serve
