#include "trafo/serve/service.h"

#include <c10/core/InferenceMode.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <sstream>

#include "trafo/errors.h"
#include "trafo/report/alignment.h"
#include "trafo/util/memory.h"

namespace trafo::serve {

// A job in the line: what it asks, how far it has got, and its results.
struct Service::Pending {
  Job job;
  std::string key;              // jobs with the same key may share a batch
  std::vector<int64_t> pieces;  // source pieces per sentence (the batch budget counts them)
  size_t next = 0;              // the first sentence not yet taken into a batch
  size_t done = 0;              // sentences decoded
  Outcome outcome;
  std::exception_ptr error;     // a batch that failed fails every job in it
  std::condition_variable answered;  // run() waits on it; notified when finished() (under mutex_)
  bool finished() const { return error || done == job.sentences.size(); }
};

namespace {

// What must be equal for two jobs to share a batch: the direction and every decoding option.
std::string batch_key(const Job& job) {
  const auto& o = job.options;
  std::ostringstream key;
  key << job.direction << '|' << o.beam << '|' << o.length_penalty << '|' << o.n_best << '|' << o.max_length_a << '|'
      << o.max_length_b << '|' << o.batch_tokens << '|' << o.bf16 << '|' << o.source_tag << '|' << job.alignment << '|'
      << !job.targets.empty();
  return key.str();
}

}  // namespace

Service::Service(std::vector<Direction> directions, int64_t max_queue)
    : directions_(std::move(directions)), max_queue_(max_queue) {}

int Service::find(const std::string& source, const std::string& target) const {
  for (size_t i = 0; i < directions_.size(); ++i) {
    if (directions_[i].source == source && directions_[i].target == target) return static_cast<int>(i);
  }
  return -1;
}

void Service::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
}

ServiceStats Service::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

Outcome Service::run(Job job, std::chrono::steady_clock::time_point deadline) {
  decode::validate(job.options);
  const auto& direction = directions_.at(job.direction);
  auto pending = std::make_shared<Pending>();
  for (const auto& sentence : job.sentences) {
    pending->pieces.push_back(static_cast<int64_t>(direction.tokenizer->encode(sentence).size()) + 1);
  }
  pending->key = batch_key(job);
  if (job.options.sampling()) pending->key += "|sampling|" + std::to_string(reinterpret_cast<uintptr_t>(pending.get()));
  pending->job = std::move(job);
  if (pending->job.sentences.empty()) return {};
  std::unique_lock lock(mutex_);
  const auto count = static_cast<int64_t>(pending->job.sentences.size());
  if (stopping_) throw Busy("the service is stopping");
  if (stats_.queued_sentences + count > max_queue_) {
    throw Busy("the queue holds " + std::to_string(stats_.queued_sentences) + " sentences; at most " +
               std::to_string(max_queue_) + " may wait");
  }
  stats_.queued_sentences += count;
  waiting_.push_back(pending);
  work_.notify_one();
  if (!pending->answered.wait_until(lock, deadline, [&] { return pending->finished(); })) {
    // Sentences not yet taken leave the queue; those in a batch now are decoded and dropped.
    const auto it = std::find(waiting_.begin(), waiting_.end(), pending);
    if (it != waiting_.end()) {
      stats_.queued_sentences -= static_cast<int64_t>(pending->job.sentences.size() - pending->next);
      waiting_.erase(it);
    }
    throw TimedOut("the request took longer than its time limit");
  }
  if (pending->error) std::rethrow_exception(pending->error);
  return std::move(pending->outcome);
}

std::vector<Service::Part> Service::take(const std::string& key, int64_t budget) {
  int64_t pieces = 0;
  std::vector<std::shared_ptr<Pending>> sharing;
  for (const auto& p : waiting_) {
    if (p->key == key) sharing.push_back(p);
  }
  std::vector<std::vector<size_t>> taken(sharing.size());
  // One sentence from each job in turn, until the budget is spent (the first always goes in).
  for (bool took = true; took && pieces < budget;) {
    took = false;
    for (size_t j = 0; j < sharing.size() && pieces < budget; ++j) {
      auto& p = *sharing[j];
      if (p.next == p.job.sentences.size()) continue;
      if (pieces > 0 && pieces + p.pieces[p.next] > budget) continue;
      pieces += p.pieces[p.next];
      taken[j].push_back(p.next++);
      took = true;
    }
  }
  std::vector<Part> parts;
  for (size_t j = 0; j < sharing.size(); ++j) {
    if (taken[j].empty()) continue;
    stats_.queued_sentences -= static_cast<int64_t>(taken[j].size());
    parts.emplace_back(sharing[j], std::move(taken[j]));
    // A job that gave sentences goes to the back of the line, or leaves it when all are taken.
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), sharing[j]));
    if (sharing[j]->next < sharing[j]->job.sentences.size()) waiting_.push_back(sharing[j]);
  }
  return parts;
}

void Service::run_decoder() {
  c10::InferenceMode inference;
  auto released = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<Part> parts, joining;  // a batch of its own; sentences that join the running batch
    {
      std::unique_lock lock(mutex_);
      const bool running = continuous_ && continuous_->sentences() > 0;
      if (!running) {
        work_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
        if (waiting_.empty()) return;  // stopping, and nothing left
      }
      if (running) {
        // Sentences of the running batch's kind join it while its budget lasts. A job of another
        // kind at the front of the line stops them: the batch drains, and that job goes next.
        const int64_t room = continuous_->options().batch_tokens - continuous_->source_pieces();
        if (!waiting_.empty() && waiting_.front()->key == continuous_key_ && room > 0) {
          joining = take(continuous_key_, room);
        }
      } else if (joins_running_batch(waiting_.front()->job)) {
        continuous_key_ = waiting_.front()->key;
        joining = take(continuous_key_, std::max<int64_t>(1, waiting_.front()->job.options.batch_tokens));
      } else {
        // The clients of the last batch often send their next sentences at once: wait a moment (a
        // tenth of that batch's time, at most 10 ms) until they are back, so that they share the next
        // batch with those that waited, and their requests are read while nothing decodes. A lone
        // client (a batch of one, back already) never waits.
        const int64_t back =
            std::min(queued_after_last_batch_ + last_batch_sentences_, waiting_.front()->job.options.batch_tokens);
        if (last_batch_sentences_ > 1 && stats_.queued_sentences < back) {
          const auto moment = std::min(std::chrono::duration<double>(0.010), last_batch_seconds_ / 10);
          work_.wait_for(lock, moment, [&] { return stopping_ || stats_.queued_sentences >= back; });
        }
        parts = take(waiting_.front()->key, std::max<int64_t>(1, waiting_.front()->job.options.batch_tokens));
      }
    }
    if (!parts.empty()) {
      decode_batch(parts);
    } else {
      decode_step(joining);
    }
    // The allocator keeps freed pages for reuse (main.cpp); batches of every shape would hold the
    // high-water mark of each, so they go back to the system every few seconds.
    if (std::chrono::steady_clock::now() - released > std::chrono::seconds(10)) {
      util::release_free_memory();
      released = std::chrono::steady_clock::now();
    }
  }
}

bool Service::joins_running_batch(const Job& job) {
  return decode::ContinuousDecoder::supports(job.options) && !job.alignment && job.targets.empty();
}

void Service::decode_step(const std::vector<Part>& joining) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<decode::ContinuousDecoder::Finished> finished;
  std::exception_ptr error;
  int64_t rows = 0;
  try {
    if (!joining.empty()) {
      const auto& first = *joining.front().first;
      if (!continuous_ || decoder_key_ != first.key) {  // a batch of another kind starts
        auto& direction = directions_[first.job.direction];
        continuous_.reset();
        continuous_ = std::make_unique<decode::ContinuousDecoder>(direction.model, *direction.tokenizer, first.job.options);
        decoder_key_ = first.key;
      }
      std::vector<std::string> sources;
      for (const auto& [pending, rows_of_job] : joining) {
        for (const size_t row : rows_of_job) sources.push_back(pending->job.sentences[row]);
      }
      const auto tickets = continuous_->add(sources);
      size_t at = 0;
      for (const auto& [pending, rows_of_job] : joining) {
        for (const size_t row : rows_of_job) in_flight_[tickets[at++]] = {pending, row};
      }
    }
    if (continuous_) {
      rows = continuous_->sentences();
      finished = continuous_->step();
    }
  } catch (...) {
    error = std::current_exception();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::lock_guard lock(mutex_);
  if (error) {  // every sentence in the batch fails its job; the batch starts afresh
    for (const auto& [ticket, place] : in_flight_) fail(place.first, error);
    for (const auto& part : joining) fail(part.first, error);
    in_flight_.clear();
    continuous_.reset();
  }
  int64_t produced = 0;
  for (auto& done : finished) {
    const auto it = in_flight_.find(done.ticket);
    auto& [pending, row] = it->second;
    produced += static_cast<int64_t>(done.hypothesis.tokens.size());
    pending->outcome.results.resize(pending->job.sentences.size());
    pending->outcome.results[row] = {std::move(done.hypothesis)};
    pending->done += 1;
    if (pending->finished()) pending->answered.notify_one();
    in_flight_.erase(it);
  }
  stats_.batches += 1;
  stats_.sentences_decoded += static_cast<int64_t>(finished.size());
  stats_.output_tokens += produced;
  stats_.decoding_seconds += seconds;
  stats_.batch_sizes[rows] += 1;
}

void Service::fail(const std::shared_ptr<Pending>& pending, const std::exception_ptr& error) {
  // The job fails whole: what it still had waiting leaves the line.
  pending->error = error;
  pending->answered.notify_one();
  const auto it = std::find(waiting_.begin(), waiting_.end(), pending);
  if (it != waiting_.end()) {
    stats_.queued_sentences -= static_cast<int64_t>(pending->job.sentences.size() - pending->next);
    waiting_.erase(it);
  }
}

void Service::decode_batch(const std::vector<Part>& parts) {
  const auto started = std::chrono::steady_clock::now();
  const Job& first = parts.front().first->job;
  auto& direction = directions_[first.direction];
  std::vector<std::string> sources, targets;
  for (const auto& [pending, rows] : parts) {
    for (const size_t row : rows) {
      sources.push_back(pending->job.sentences[row]);
      if (!pending->job.targets.empty()) targets.push_back(pending->job.targets[row]);
    }
  }
  Outcome batch;
  std::exception_ptr error;
  try {
    if (!first.targets.empty()) {
      eval::PairScoreOptions options;
      options.batch_tokens = std::max<int64_t>(first.options.batch_tokens, direction.model->config().max_positions);
      options.bf16 = first.options.bf16;
      options.tag = first.options.source_tag;
      batch.scores = eval::score_pairs(direction.model, *direction.tokenizer, sources, targets, options);
    } else {
      decode::Translator translator(direction.model, *direction.tokenizer, first.options);
      // Sampling draws from (seed, sentence index): a sampling job's part is its own consecutive rows.
      const int64_t first_sentence = first.options.sampling() ? static_cast<int64_t>(parts.front().second.front()) : 0;
      batch.results = translator.translate(sources, first_sentence);
      if (first.alignment) {
        batch.alignments =
            report::align_best(direction.model, *direction.tokenizer, first.options.source_tag, sources, batch.results);
      }
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
        outcome.results.resize(count);
        outcome.results[row] = std::move(batch.results[at]);
        produced += static_cast<int64_t>(outcome.results[row].front().tokens.size());
        if (!batch.alignments.empty()) {
          outcome.alignments.resize(count);
          outcome.alignments[row] = batch.alignments[at];
        }
      }
      ++at;
    }
    pending->done += rows.size();
    if (pending->finished()) pending->answered.notify_one();
  }
  stats_.batches += 1;
  stats_.sentences_decoded += static_cast<int64_t>(sources.size());
  stats_.output_tokens += produced;
  stats_.decoding_seconds += seconds;
  stats_.batch_sizes[static_cast<int64_t>(sources.size())] += 1;
  last_batch_sentences_ = static_cast<int64_t>(sources.size());
  last_batch_seconds_ = std::chrono::duration<double>(seconds);
  queued_after_last_batch_ = stats_.queued_sentences;
}

}  // namespace trafo::serve
