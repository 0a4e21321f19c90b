// What GET /metrics reports: requests and sentences by outcome and latencies, counted here, with the
// service's batches, queue and tokens, in Prometheus' text format.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trafo/serve/service.h"

namespace trafo::serve::detail {

// Counters for GET /metrics.
class Metrics {
 public:
  static constexpr double kLatencyBounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

  void record(const std::string& endpoint, int status, int64_t sentences, double seconds) {
    std::lock_guard lock(mutex_);
    const std::string outcome = status < 400 ? "ok" : status < 500 ? "refused" : "failed";
    requests_[{endpoint, std::to_string(status)}] += 1;
    sentences_[outcome] += sentences;
    if (status < 400) {
      auto& histogram = latency_[endpoint];
      histogram.resize(std::size(kLatencyBounds) + 1);
      size_t bucket = 0;
      while (bucket < std::size(kLatencyBounds) && seconds > kLatencyBounds[bucket]) ++bucket;
      histogram[bucket] += 1;
      latency_sum_[endpoint] += seconds;
    }
  }

  std::string text(const ServiceStats& stats) const {
    std::lock_guard lock(mutex_);
    std::ostringstream out;
    out << "# HELP trafo_requests_total Requests answered, by endpoint and HTTP status.\n"
           "# TYPE trafo_requests_total counter\n";
    for (const auto& [key, count] : requests_) {
      out << "trafo_requests_total{endpoint=\"" << key.first << "\",status=\"" << key.second << "\"} " << count << '\n';
    }
    out << "# HELP trafo_sentences_total Sentences in requests, by outcome (ok, refused: 4xx, failed: 5xx).\n"
           "# TYPE trafo_sentences_total counter\n";
    for (const char* outcome : {"ok", "refused", "failed"}) {
      const auto it = sentences_.find(outcome);
      out << "trafo_sentences_total{outcome=\"" << outcome << "\"} " << (it == sentences_.end() ? 0 : it->second)
          << '\n';
    }
    out << "# HELP trafo_request_seconds Time to answer a successful request.\n"
           "# TYPE trafo_request_seconds histogram\n";
    for (const auto& [endpoint, histogram] : latency_) {
      int64_t cumulative = 0;
      for (size_t i = 0; i < histogram.size(); ++i) {
        cumulative += histogram[i];
        const std::string le = i < std::size(kLatencyBounds) ? fmt::format("{}", kLatencyBounds[i]) : "+Inf";
        out << "trafo_request_seconds_bucket{endpoint=\"" << endpoint << "\",le=\"" << le << "\"} " << cumulative
            << '\n';
      }
      out << "trafo_request_seconds_sum{endpoint=\"" << endpoint << "\"} " << latency_sum_.at(endpoint) << '\n';
      out << "trafo_request_seconds_count{endpoint=\"" << endpoint << "\"} " << cumulative << '\n';
    }
    out << "# HELP trafo_batch_sentences Sentences per decoding batch, or per step of the continuous batch.\n"
           "# TYPE trafo_batch_sentences histogram\n";
    int64_t cumulative = 0, total = 0;
    for (const int64_t bound : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) {
      cumulative = 0;
      for (const auto& [size, count] : stats.batch_sizes) {
        if (size <= bound) cumulative += count;
      }
      out << "trafo_batch_sentences_bucket{le=\"" << bound << "\"} " << cumulative << '\n';
    }
    for (const auto& [size, count] : stats.batch_sizes) total += size * count;
    out << "trafo_batch_sentences_bucket{le=\"+Inf\"} " << stats.batches << '\n'
        << "trafo_batch_sentences_sum " << total << '\n'
        << "trafo_batch_sentences_count " << stats.batches << '\n';
    // One series of one value: its help, its type and the value.
    const auto single = [&out](const char* name, const char* type, const char* help, auto value) {
      out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
          << name << ' ' << value << '\n';
    };
    single("trafo_queue_sentences", "gauge", "Sentences waiting for a batch.", stats.queued_sentences);
    single("trafo_output_tokens_total", "counter", "Pieces produced by the decoder.", stats.output_tokens);
    out << "# HELP trafo_decoder_sentences_total Sentences decoded by each decoder (--decoders).\n"
           "# TYPE trafo_decoder_sentences_total counter\n";
    for (size_t i = 0; i < stats.sentences_by_decoder.size(); ++i) {
      out << "trafo_decoder_sentences_total{decoder=\"" << i << "\"} " << stats.sentences_by_decoder[i] << '\n';
    }
    single("trafo_decoding_seconds_total", "counter", "Time in which a decoder was busy.", stats.decoding_seconds);
    single("trafo_cache_hits_total", "counter", "Sentences answered from the translation cache (--cache-sentences).",
           stats.cache_hits);
    single("trafo_cache_misses_total", "counter", "Sentences looked up in the translation cache and decoded.",
           stats.cache_misses);
    single("trafo_cache_sentences", "gauge", "Translations the cache holds.", stats.cached_sentences);
    single("trafo_tokens_per_second", "gauge", "Pieces produced per second of decoding, since start.",
           stats.decoding_seconds > 0 ? static_cast<double>(stats.output_tokens) / stats.decoding_seconds : 0.0);
    return out.str();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> requests_;
  std::map<std::string, int64_t> sentences_;
  std::map<std::string, std::vector<int64_t>> latency_;
  std::map<std::string, double> latency_sum_;
};

}  // namespace trafo::serve::detail
