// The service's decoders: each a thread that takes work from the line (service.cpp) and decodes it,
// as a running continuous batch (greedy translation) or as a batch of its own, with its share of the
// LibTorch threads.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <omp.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "service_state.h"
#include "trafo/util/memory.h"

namespace trafo::serve {

// MKL's threads for the calling thread alone, where LibTorch was built with MKL (its C name:
// mkl_service.h maps mkl_set_num_threads_local to it; the lower-case symbol takes a pointer).
extern "C" int MKL_Set_Num_Threads_Local(int threads) __attribute__((weak));

namespace {

// Sets the calling thread's LibTorch threads (OpenMP's and MKL's), leaving other threads' as they
// are: at::set_num_threads would also rebuild a pool of threads shared by the process.
void set_thread_threads(int threads) {
  omp_set_num_threads(threads);
  if (MKL_Set_Num_Threads_Local != nullptr) MKL_Set_Num_Threads_Local(threads);
}

// Counts a batch (or a step of the running batch) of `rows` sentences by decoder `index`, in which
// `decoded` sentences were finished with `produced` pieces. Under the service's lock.
void count_batch(ServiceStats& stats, size_t index, int64_t rows, int64_t decoded, int64_t produced) {
  stats.batches += 1;
  stats.sentences_decoded += decoded;
  stats.sentences_by_decoder[index] += decoded;
  stats.output_tokens += produced;
  stats.batch_sizes[rows] += 1;
}

}  // namespace

void Service::run_decoder() {
  threads_ = at::get_num_threads();
  // A decoder that fails outside a batch (out of memory) stops the service; the first failure is
  // rethrown here once every decoder has returned.
  std::mutex failed_lock;
  std::exception_ptr failed;
  const auto decode = [&](Decoder& decoder) {
    try {
      decode_on(decoder);
    } catch (...) {
      {
        std::lock_guard lock(failed_lock);
        if (!failed) failed = std::current_exception();
      }
      stop();
    }
  };
  std::vector<std::thread> others;
  for (size_t i = 1; i < decoders_.size(); ++i) others.emplace_back([&, i] { decode(*decoders_[i]); });
  decode(*decoders_.front());
  for (auto& thread : others) thread.join();
  if (failed) std::rethrow_exception(failed);
}

bool Service::may_take(const Decoder& decoder) const {
  return decoder.index == 0 || decoders_[decoder.index - 1]->busy;
}

int64_t Service::share(const Decoder& decoder, const std::string& key) const {
  int64_t sentences = stats_.queued_sentences, decoders = 0;
  for (const auto& d : decoders_) {
    if (d->busy && !(d->running > 0 && d->continuous_key == key)) continue;  // busy with another kind
    sentences += d->running;
    decoders += 1;
  }
  decoders = std::max<int64_t>(1, decoders);
  return std::max<int64_t>(0, (sentences + decoders - 1) / decoders - decoder.running);
}

void Service::set_busy(Decoder& decoder, bool busy) {
  if (decoder.busy == busy) return;
  const auto now = std::chrono::steady_clock::now();
  decoder.busy = busy;
  busy_decoders_ += busy ? 1 : -1;
  if (busy && busy_decoders_ == 1) busy_since_ = now;
  if (!busy && busy_decoders_ == 0) stats_.decoding_seconds += std::chrono::duration<double>(now - busy_since_).count();
  work_.notify_all();  // the next decoder may take work now, or no longer
}

int Service::threads_for(const Decoder& decoder) const {
  // The others decode on one thread each, so that only the first thread has OpenMP threads of its
  // own: libgomp counts every thread it keeps, and once they outnumber the cores its threads sleep at
  // each barrier instead of spinning (a lone sentence then took 4-5x as long, AMD Zen 3, 2 vCPUs).
  if (decoder.index > 0) return 1;
  const int others = busy_decoders_ - (decoder.busy ? 1 : 0);
  return std::max(1, threads_ - others);
}

void Service::decode_on(Decoder& me) {
  c10::InferenceMode inference;
  // LibTorch sets a thread's threads to the process's count on its first parallel_for, from a flag
  // of its own and from a flag inlined into this program: both go first, before the threads change
  // here. (Left to the inlined one, the second decoder's first product reset its one thread to two.)
  at::get_num_threads();
  at::internal::lazy_init_num_threads();
  auto released = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<Part> parts, joining;  // a batch of its own; sentences that join the running batch
    int threads = 0;
    {
      std::unique_lock lock(mutex_);
      const bool running = me.continuous && me.continuous->sentences() > 0;
      if (!running) {
        set_busy(me, false);
        work_.wait(lock, [&] { return stopping_ || (!waiting_.empty() && may_take(me)); });
        if (waiting_.empty()) return;  // stopping, and nothing left
      }
      if (running) {
        // Sentences of the running batch's kind join it while its budget lasts. A job of another
        // kind at the front of the line stops them: the batch drains, and that job goes next.
        const int64_t room = me.continuous->options().batch_tokens - me.continuous->source_pieces();
        if (!waiting_.empty() && waiting_.front()->key == me.continuous_key && room > 0) {
          joining = take(me.continuous_key, room, share(me, me.continuous_key));
        }
      } else if (joins_running_batch(waiting_.front()->job)) {
        me.continuous_key = waiting_.front()->key;
        joining = take(me.continuous_key, std::max<int64_t>(1, waiting_.front()->job.options.batch_tokens),
                       std::max<int64_t>(1, share(me, me.continuous_key)));
      } else {
        // The clients of the last batch often send their next sentences at once: wait a moment (a
        // tenth of that batch's time, at most 10 ms) until they are back, so that they share the next
        // batch with those that waited, and their requests are read while nothing decodes. A lone
        // client (a batch of one, back already) never waits.
        const int64_t back = std::min(me.queued_after_last_batch + me.last_batch_sentences,
                                      waiting_.front()->job.options.batch_tokens);
        if (me.last_batch_sentences > 1 && stats_.queued_sentences < back) {
          const auto moment = std::min(std::chrono::duration<double>(0.010), me.last_batch_seconds / 10);
          work_.wait_for(lock, moment, [&] { return stopping_ || stats_.queued_sentences >= back; });
        }
        if (!waiting_.empty()) {
          parts = take(waiting_.front()->key, std::max<int64_t>(1, waiting_.front()->job.options.batch_tokens),
                       std::numeric_limits<int64_t>::max());
        }
      }
      if (!running && parts.empty() && joining.empty()) continue;  // another decoder took the work
      me.running += static_cast<int64_t>(std::accumulate(
          joining.begin(), joining.end(), size_t{0}, [](size_t n, const Part& part) { return n + part.second.size(); }));
      set_busy(me, true);
      threads = threads_for(me);
    }
    if (threads != me.threads) {
      set_thread_threads(threads);
      me.threads = threads;
    }
    if (!parts.empty()) {
      decode_batch(me, parts);
    } else {
      decode_step(me, joining);
    }
    // The allocator keeps freed pages for reuse (main.cpp); batches of every shape would hold the
    // high-water mark of each, so they go back to the system every few seconds.
    if (me.index == 0 && std::chrono::steady_clock::now() - released > std::chrono::seconds(10)) {
      util::release_free_memory();
      released = std::chrono::steady_clock::now();
    }
  }
}

bool Service::joins_running_batch(const Job& job) {
  return decode::ContinuousDecoder::supports(job.options) && !job.alignment && job.targets.empty() &&
         job.prefixes.empty() && !job.options.glossary;
}

void Service::decode_step(Decoder& me, const std::vector<Part>& joining) {
  std::vector<decode::ContinuousDecoder::Finished> finished;
  std::exception_ptr error;
  int64_t rows = 0;
  try {
    if (!joining.empty()) {
      const auto& first = *joining.front().first;
      if (!me.continuous || me.decoder_key != first.key) {  // a batch of another kind starts
        const auto& engine = *directions_[first.job.direction].engine;
        me.continuous.reset();
        me.continuous =
            std::make_unique<decode::ContinuousDecoder>(engine.loaded().model, engine.tokenizer(), first.job.options);
        me.decoder_key = first.key;
      }
      std::vector<std::vector<int>> sources;
      for (const auto& [pending, rows_of_job] : joining) {
        for (const size_t row : rows_of_job) sources.push_back(pending->sentences.ids[row]);
      }
      const auto tickets = me.continuous->add_ids(sources);
      size_t at = 0;
      for (const auto& [pending, rows_of_job] : joining) {
        for (const size_t row : rows_of_job) me.in_flight[tickets[at++]] = {pending, row};
      }
    }
    if (me.continuous) {
      rows = me.continuous->sentences();
      finished = me.continuous->step();
    }
  } catch (...) {
    error = std::current_exception();
  }

  std::lock_guard lock(mutex_);
  if (error) {  // every sentence in the batch fails its job; the batch starts afresh
    for (const auto& [ticket, place] : me.in_flight) fail(place.first, error);
    for (const auto& part : joining) fail(part.first, error);
    me.in_flight.clear();
    me.continuous.reset();
  }
  int64_t produced = 0;
  for (auto& done : finished) {
    const auto it = me.in_flight.find(done.ticket);
    auto& [pending, row] = it->second;
    produced += static_cast<int64_t>(done.hypothesis.tokens.size());
    pending->outcome.translations.resize(pending->job.sentences.size());
    pending->outcome.translations[row].hypotheses = {std::move(done.hypothesis)};
    pending->done += 1;
    if (pending->finished()) pending->answered.notify_one();
    me.in_flight.erase(it);
  }
  me.running = me.continuous ? me.continuous->sentences() : 0;
  count_batch(stats_, me.index, rows, static_cast<int64_t>(finished.size()), produced);
}

void Service::decode_batch(Decoder& me, const std::vector<Part>& parts) {
  const auto started = std::chrono::steady_clock::now();
  const Job& first = parts.front().first->job;
  const auto& engine = *directions_[first.direction].engine;
  inference::Sentences sentences;  // the parts' rows, tokenized once with their requests
  std::vector<std::string> targets;
  for (const auto& [pending, rows] : parts) {
    const auto& prepared = pending->sentences;
    for (const size_t row : rows) {
      sentences.lines.push_back(prepared.lines[row]);
      sentences.ids.push_back(prepared.ids[row]);
      // Target prefixes: all the parts' jobs have them, or none (the batch key says so).
      if (!prepared.prefix_ids.empty()) sentences.prefix_ids.push_back(prepared.prefix_ids[row]);
      if (!pending->job.targets.empty()) targets.push_back(pending->job.targets[row]);
    }
  }
  Outcome batch;
  std::exception_ptr error;
  try {
    if (!first.targets.empty()) {
      batch.scores = engine.score(sentences, targets, /*per_piece=*/false, &first.options);
    } else {
      // Sampling draws from (seed, sentence index): a sampling job's part is its own consecutive rows.
      const int64_t first_sentence = first.options.sampling() ? static_cast<int64_t>(parts.front().second.front()) : 0;
      batch.translations = engine.translate(sentences, first.options, first.alignment, first_sentence);
    }
  } catch (...) {
    error = std::current_exception();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::lock_guard lock(mutex_);
  size_t at = 0;
  int64_t produced = 0;
  for (const auto& [pending, rows] : parts) {
    auto& outcome = pending->outcome;
    const size_t count = pending->job.sentences.size();
    if (error) {
      fail(pending, error);
      at += rows.size();
      continue;
    }
    for (const size_t row : rows) {
      if (!batch.scores.empty()) {
        outcome.scores.resize(count);
        outcome.scores[row] = batch.scores[at];
      } else {
        outcome.translations.resize(count);
        outcome.translations[row] = std::move(batch.translations[at]);
        produced += static_cast<int64_t>(outcome.translations[row].hypotheses.front().tokens.size());
      }
      ++at;
    }
    pending->done += rows.size();
    if (pending->finished()) pending->answered.notify_one();
  }
  const auto decoded = static_cast<int64_t>(sentences.lines.size());
  count_batch(stats_, me.index, decoded, decoded, produced);
  me.last_batch_sentences = decoded;
  me.last_batch_seconds = std::chrono::duration<double>(seconds);
  me.queued_after_last_batch = stats_.queued_sentences;
}

}  // namespace trafo::serve
