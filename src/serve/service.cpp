// The service's line: jobs wait in it, in arrival order, until the decoders (decoders.cpp) take
// their sentences.
#include "trafo/serve/service.h"

#include <algorithm>
#include <exception>
#include <sstream>

#include "service_state.h"
#include "trafo/model/linear.h"
#include "translation_cache.h"

namespace trafo::serve {

namespace {

// What must be equal for two jobs to share a batch: the direction and every decoding option.
std::string batch_key(const Job& job) {
  const auto& o = job.options;
  std::ostringstream key;
  key << job.direction << '|' << o.beam << '|' << o.length_penalty << '|' << o.n_best << '|' << o.max_length_a << '|'
      << o.max_length_b << '|' << o.batch_tokens << '|' << o.bf16 << '|' << o.source_tag << '|' << job.alignment << '|'
      << !job.targets.empty() << '|' << !job.prefixes.empty() << '|' << o.glossary.get() << '|' << o.sampling_topk
      << '|' << o.sampling_topp << '|' << o.sampling_temperature << '|' << o.seed << '|' << o.retry_off_target << '|'
      << o.no_repeat_ngram << '|' << o.repetition_penalty;
  return key.str();
}

}  // namespace

Service::Service(std::vector<Direction> directions, int64_t max_queue, int decoders, int64_t cache_sentences)
    : directions_(std::move(directions)), max_queue_(max_queue) {
  if (cache_sentences > 0) cache_ = std::make_unique<detail::TranslationCache>(cache_sentences);
  for (int i = 0; i < std::max(1, decoders); ++i) {
    decoders_.push_back(std::make_unique<Decoder>());
    decoders_.back()->index = static_cast<size_t>(i);
  }
  stats_.sentences_by_decoder.assign(decoders_.size(), 0);
  for (auto& direction : directions_) {
    auto model = direction.engine->loaded().model;
    packed_.push_back(std::make_unique<model::PackedInference>(*model));
  }
}

Service::~Service() = default;

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
  auto stats = stats_;
  stats.cached_sentences = cache_ ? cache_->size() : 0;
  if (busy_decoders_ > 0) {
    stats.decoding_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
  }
  return stats;
}

Outcome Service::run(Job job, std::chrono::steady_clock::time_point deadline) {
  const auto& engine = *directions_.at(job.direction).engine;
  // A request's own glossary makes a batch of its own: its pointer is in the batch key.
  if (!job.glossary.empty()) job.options.glossary = engine.glossary(job.glossary);
  inference::validate(job.options);
  const auto key = batch_key(job);
  // Sampling draws, scores and a request's own glossary (a pointer in the key, compiled anew for
  // each request) are never cached.
  const bool cached = cache_ && !job.options.sampling() && job.targets.empty() && job.glossary.empty();
  if (!cached) return decode(std::move(job), key, deadline);

  // The sentences the cache holds are answered from it; the others are decoded, then kept.
  const auto entry = [&](const Job& of, size_t i) {
    return key + '\n' + of.sentences[i] + '\n' + (of.prefixes.empty() ? std::string() : of.prefixes[i]);
  };
  Outcome outcome;
  outcome.translations.resize(job.sentences.size());
  Job missing = job;
  missing.sentences.clear();
  missing.prefixes.clear();
  std::vector<size_t> missing_rows;
  for (size_t i = 0; i < job.sentences.size(); ++i) {
    if (auto hit = cache_->find(entry(job, i))) {
      outcome.translations[i] = std::move(*hit);
      continue;
    }
    missing_rows.push_back(i);
    missing.sentences.push_back(job.sentences[i]);
    if (!job.prefixes.empty()) missing.prefixes.push_back(job.prefixes[i]);
  }
  {
    std::lock_guard lock(mutex_);
    stats_.cache_misses += static_cast<int64_t>(missing_rows.size());
    stats_.cache_hits += static_cast<int64_t>(job.sentences.size() - missing_rows.size());
  }
  if (missing_rows.empty()) return outcome;
  auto decoded = decode(std::move(missing), key, deadline);
  for (size_t j = 0; j < missing_rows.size(); ++j) {
    cache_->store(entry(job, missing_rows[j]), decoded.translations[j]);
    outcome.translations[missing_rows[j]] = std::move(decoded.translations[j]);
  }
  return outcome;
}

Outcome Service::decode(Job job, const std::string& key, std::chrono::steady_clock::time_point deadline) {
  const auto& engine = *directions_.at(job.direction).engine;
  auto pending = std::make_shared<Pending>();
  pending->sentences = engine.prepare(job.sentences, job.prefixes, job.options.source_tag);
  pending->key = key;
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
  work_.notify_all();
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

std::vector<Service::Part> Service::take(const std::string& key, int64_t budget, int64_t most) {
  int64_t pieces = 0;
  std::vector<std::shared_ptr<Pending>> sharing;
  for (const auto& p : waiting_) {
    if (p->key == key) sharing.push_back(p);
  }
  std::vector<std::vector<size_t>> taken(sharing.size());
  // One sentence from each job in turn, until the budget is spent (the first always goes in).
  int64_t count = 0;
  for (bool took = true; took && pieces < budget && count < most;) {
    took = false;
    for (size_t j = 0; j < sharing.size() && pieces < budget && count < most; ++j) {
      auto& p = *sharing[j];
      if (p.next == p.job.sentences.size()) continue;
      if (pieces > 0 && pieces + p.pieces(p.next) > budget) continue;
      pieces += p.pieces(p.next);
      taken[j].push_back(p.next++);
      took = true;
      ++count;
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

}  // namespace trafo::serve
