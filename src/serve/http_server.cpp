#include "trafo/serve/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <utf8.h>

#include "trafo/errors.h"

namespace trafo::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A request's fault, answered with `status` and {"error": message}.
struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

// Connections are served by `workers` threads; up to as many more wait for one. Past that, a
// connection is served by one spare thread that answers 503 at once (over_capacity), so that a crowd
// of clients is told to come back instead of waiting without end.
thread_local bool over_capacity = false;

class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(int workers) : limit_(static_cast<size_t>(workers)) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(jobs_, false); });
    threads_.emplace_back([this] { work(overflow_, true); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      auto& queue = busy_ + jobs_.size() >= 2 * limit_ ? overflow_ : jobs_;
      queue.push_back(std::move(fn));
    }
    wake_.notify_all();
  }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
  }

 private:
  void work(std::deque<std::function<void()>>& queue, bool overflow) {
    over_capacity = overflow;
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue.empty(); });
        if (queue.empty()) return;
        fn = std::move(queue.front());
        queue.pop_front();
        if (!overflow) ++busy_;
      }
      fn();
      if (!overflow) {
        std::lock_guard lock(mutex_);
        --busy_;
      }
    }
  }

  size_t limit_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_, overflow_;
  std::vector<std::thread> threads_;
};

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
    out << "# HELP trafo_batch_sentences Sentences per decoding batch.\n"
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
    out << "# HELP trafo_queue_sentences Sentences waiting for a batch.\n"
           "# TYPE trafo_queue_sentences gauge\n"
           "trafo_queue_sentences "
        << stats.queued_sentences << '\n';
    out << "# HELP trafo_output_tokens_total Pieces produced by the decoder.\n"
           "# TYPE trafo_output_tokens_total counter\n"
           "trafo_output_tokens_total "
        << stats.output_tokens << '\n';
    out << "# HELP trafo_decoding_seconds_total Time spent decoding batches.\n"
           "# TYPE trafo_decoding_seconds_total counter\n"
           "trafo_decoding_seconds_total "
        << stats.decoding_seconds << '\n';
    out << "# HELP trafo_tokens_per_second Pieces produced per second of decoding, since start.\n"
           "# TYPE trafo_tokens_per_second gauge\n"
           "trafo_tokens_per_second "
        << (stats.decoding_seconds > 0 ? static_cast<double>(stats.output_tokens) / stats.decoding_seconds : 0.0)
        << '\n';
    return out.str();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> requests_;
  std::map<std::string, int64_t> sentences_;
  std::map<std::string, std::vector<int64_t>> latency_;
  std::map<std::string, double> latency_sum_;
};

// A request's fields, from a JSON object or a form (application/x-www-form-urlencoded or
// multipart), as LibreTranslate takes both.
class Fields {
 public:
  explicit Fields(const httplib::Request& request) : request_(request) {
    const auto type = request.get_header_value("Content-Type");
    if (type.rfind("application/json", 0) == 0) {
      try {
        body_ = json::parse(request.body);
      } catch (const json::exception&) {
        throw HttpError(400, "the body is not valid JSON");
      }
      if (!body_->is_object()) throw HttpError(400, "the body must be a JSON object");
    }
  }

  bool has(const std::string& name) const {
    if (body_) return body_->contains(name) && !(*body_)[name].is_null();
    return request_.has_param(name) || request_.has_file(name);
  }

  std::string text(const std::string& name) const {
    if (!has(name)) throw HttpError(400, "Invalid request: missing " + name + " parameter");
    std::string value;
    if (body_) {
      const auto& field = (*body_)[name];
      if (!field.is_string()) throw HttpError(400, name + " must be a string");
      value = field.get<std::string>();
    } else {
      value = request_.has_param(name) ? request_.get_param_value(name) : request_.get_file_value(name).content;
    }
    utf8_checked(value, name);
    return value;
  }

  std::string text_or(const std::string& name, const std::string& otherwise) const {
    return has(name) ? text(name) : otherwise;
  }

  // A string or a list of strings (a form may repeat the field); `listed` says which it was.
  std::vector<std::string> texts(const std::string& name, bool& listed) const {
    if (!has(name)) throw HttpError(400, "Invalid request: missing " + name + " parameter");
    std::vector<std::string> values;
    listed = false;
    if (body_) {
      const auto& field = (*body_)[name];
      if (field.is_string()) {
        values.push_back(field.get<std::string>());
      } else if (field.is_array()) {
        listed = true;
        for (const auto& item : field) {
          if (!item.is_string()) throw HttpError(400, name + " must be a string or a list of strings");
          values.push_back(item.get<std::string>());
        }
      } else {
        throw HttpError(400, name + " must be a string or a list of strings");
      }
    } else {
      const size_t count = request_.get_param_value_count(name);
      listed = count > 1;
      for (size_t i = 0; i < count; ++i) values.push_back(request_.get_param_value(name, i));
      if (count == 0) values.push_back(request_.get_file_value(name).content);
    }
    if (listed && values.empty()) throw HttpError(400, name + " is an empty list");
    for (const auto& value : values) utf8_checked(value, name);
    return values;
  }

  double number(const std::string& name, double otherwise) const {
    if (!has(name)) return otherwise;
    if (body_) {
      const auto& field = (*body_)[name];
      if (!field.is_number()) throw HttpError(400, name + " must be a number");
      return field.get<double>();
    }
    const auto value = request_.get_param_value(name);
    try {
      size_t used = 0;
      const double parsed = std::stod(value, &used);
      if (used != value.size() || !std::isfinite(parsed)) throw std::invalid_argument(value);
      return parsed;
    } catch (const std::exception&) {
      throw HttpError(400, name + " must be a number, not '" + value.substr(0, 40) + "'");
    }
  }

  int64_t integer(const std::string& name, int64_t otherwise, int64_t low, int64_t high) const {
    const double value = number(name, static_cast<double>(otherwise));
    if (value != std::floor(value) || value < static_cast<double>(low) || value > static_cast<double>(high)) {
      throw HttpError(400, fmt::format("{} must be a whole number from {} to {}", name, low, high));
    }
    return static_cast<int64_t>(value);
  }

  bool flag(const std::string& name) const {
    if (!has(name)) return false;
    if (body_) {
      const auto& field = (*body_)[name];
      if (!field.is_boolean()) throw HttpError(400, name + " must be true or false");
      return field.get<bool>();
    }
    const auto value = request_.get_param_value(name);
    if (value == "true" || value == "1") return true;
    if (value == "false" || value == "0") return false;
    throw HttpError(400, name + " must be true or false");
  }

 private:
  static void utf8_checked(const std::string& value, const std::string& name) {
    if (!utf8::is_valid(value.begin(), value.end())) throw HttpError(400, name + " is not valid UTF-8");
  }

  const httplib::Request& request_;
  std::optional<json> body_;
};

// The lines of each text (a text may hold several lines: each is translated on its own).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    const auto end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    if (end == std::string::npos) return lines;
    start = end + 1;
  }
}

// Compares without returning early, so that the time taken says nothing of how much matched.
bool same_key(const std::string& given, const std::string& key) {
  unsigned char difference = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) {
    difference |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
  }
  return difference == 0;
}

}  // namespace

struct HttpServer::Impl {
  Service& service;
  ServerOptions options;
  httplib::Server server;
  Metrics metrics;
  int listening_socket = -1;
  int bound_port = -1;

  Impl(Service& service, ServerOptions options) : service(service), options(std::move(options)) {}

  void check_key(const Fields& fields) const {
    if (options.api_keys.empty()) return;
    const std::string given = fields.has("api_key") ? fields.text("api_key") : "";
    bool found = false;
    for (const auto& key : options.api_keys) found |= same_key(given, key);
    if (!found) throw HttpError(403, given.empty() ? "Visit the operator of this server for an API key" : "Invalid API key");
  }

  size_t direction(const Fields& fields) const {
    const auto source = fields.text("source"), target = fields.text("target");
    if (source == "auto") throw HttpError(400, "source \"auto\": this server detects no language; name the source language");
    const int found = service.find(source, target);
    if (found < 0) {
      std::string offered;
      for (const auto& d : service.directions()) offered += (offered.empty() ? "" : ", ") + d.source + "-" + d.target;
      throw HttpError(400, source + " to " + target + " is not a direction this server translates (it has: " +
                               offered + ")");
    }
    return static_cast<size_t>(found);
  }

  // Each text's lines, one sentence each, checked against the limits; `line_counts` per text.
  std::vector<std::string> sentences_of(const std::vector<std::string>& texts, std::vector<size_t>& line_counts) const {
    std::vector<std::string> sentences;
    for (const auto& text : texts) {
      const auto lines = split_lines(text);
      line_counts.push_back(lines.size());
      for (const auto& line : lines) {
        if (static_cast<int64_t>(line.size()) > options.limits.max_line_bytes) {
          throw HttpError(413, fmt::format("a line of {} bytes: at most {} per line", line.size(),
                                           options.limits.max_line_bytes));
        }
        sentences.push_back(line);
      }
      if (static_cast<int64_t>(sentences.size()) > options.limits.max_sentences) {
        throw HttpError(413, fmt::format("more than {} lines in one request", options.limits.max_sentences));
      }
    }
    return sentences;
  }

  Outcome run(Job job) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(options.limits.request_seconds));
    try {
      return service.run(std::move(job), deadline);
    } catch (const Busy& busy) {
      throw HttpError(503, busy.what());
    } catch (const TimedOut& late) {
      throw HttpError(503, late.what());
    } catch (const InputError& bad) {
      throw HttpError(400, bad.what());
    }
  }

  // The decoding options a request may change, over the direction's defaults.
  decode::DecodeOptions decoding(const Fields& fields, const Direction& direction) const {
    auto o = direction.defaults;
    o.beam = static_cast<int>(fields.integer("beam", o.beam, 1, options.limits.max_beam));
    o.n_best = static_cast<int>(fields.integer("n_best", 1, 1, o.beam));
    o.length_penalty = fields.number("length_penalty", o.length_penalty);
    o.max_length_a = fields.number("max_length_a", o.max_length_a);
    o.max_length_b = fields.integer("max_length_b", o.max_length_b, 0, 1000000);
    if (fields.has("sampling_topk")) {
      o.sampling_topk = fields.integer("sampling_topk", 0, 0, 1000000000);
      o.sampling_topp = fields.number("sampling_topp", 1.0);
      o.sampling_temperature = fields.number("sampling_temperature", 1.0);
      o.seed = static_cast<uint64_t>(fields.integer("seed", 0, 0, int64_t{1} << 53));
    } else if (fields.has("sampling_topp") || fields.has("sampling_temperature") || fields.has("seed")) {
      throw HttpError(400, "sampling_topp, sampling_temperature and seed need sampling_topk");
    }
    if (fields.has("tag")) {
      const auto tag = fields.text("tag");
      const int id = direction.tokenizer->reserved_id(tag);
      if (id < 0 || std::find(direction.tags.begin(), direction.tags.end(), tag) == direction.tags.end()) {
        throw HttpError(400, "tag " + tag + " is not one of the model's corpus tags");
      }
      o.source_tag = id;
    }
    return o;
  }

  // POST /translate, as LibreTranslate answers it.
  json libretranslate(const httplib::Request& request, int64_t& sentences) {
    Fields fields(request);
    check_key(fields);
    bool listed = false;
    const auto texts = fields.texts("q", listed);
    const auto format = fields.text_or("format", "text");
    if (format != "text") throw HttpError(400, "format \"" + format + "\": this server translates plain text only");
    Job job;
    job.direction = direction(fields);
    const auto& d = service.directions()[job.direction];
    job.options = d.defaults;
    const auto alternatives = fields.integer("alternatives", 0, 0, options.limits.max_beam - 1);
    if (alternatives > 0) {
      job.options.beam = std::max<int>(job.options.beam, static_cast<int>(alternatives) + 1);
      job.options.n_best = static_cast<int>(alternatives) + 1;
    }
    std::vector<size_t> line_counts;
    job.sentences = sentences_of(texts, line_counts);
    sentences = static_cast<int64_t>(job.sentences.size());
    const auto outcome = run(std::move(job));
    json translated = json::array(), others = json::array();
    size_t at = 0;
    for (const size_t lines : line_counts) {
      std::string text;
      std::vector<std::string> alternative(static_cast<size_t>(alternatives));
      for (size_t i = 0; i < lines; ++i, ++at) {
        const auto& hypotheses = outcome.results[at];
        text += (i ? "\n" : "") + hypotheses.front().text;
        for (size_t k = 0; k < alternative.size(); ++k) {
          // A sentence with fewer distinct hypotheses repeats its best one.
          const auto& h = k + 1 < hypotheses.size() ? hypotheses[k + 1] : hypotheses.front();
          alternative[k] += (i ? "\n" : "") + h.text;
        }
      }
      translated.push_back(text);
      others.push_back(alternative);
    }
    json answer = {{"translatedText", listed ? translated : translated.front()}};
    if (alternatives > 0) answer["alternatives"] = listed ? others : others.front();
    return answer;
  }

  // POST /v1/translate: what trafo adds.
  json native_translate(const httplib::Request& request, int64_t& sentences) {
    Fields fields(request);
    check_key(fields);
    bool listed = false;
    const auto texts = fields.texts("text", listed);
    Job job;
    job.direction = direction(fields);
    job.options = decoding(fields, service.directions()[job.direction]);
    job.alignment = fields.flag("alignment");
    if (job.alignment && job.options.n_best > 1) throw HttpError(400, "alignment aligns the best translation: leave out n_best");
    std::vector<size_t> line_counts;
    job.sentences = sentences_of(texts, line_counts);
    if (job.sentences.size() != texts.size()) throw HttpError(400, "text: one line per item (no line breaks)");
    sentences = static_cast<int64_t>(job.sentences.size());
    const auto outcome = run(std::move(job));
    json translations = json::array();
    for (size_t i = 0; i < outcome.results.size(); ++i) {
      const auto& best = outcome.results[i].front();
      json item = {{"text", best.text}, {"score", best.score}};
      if (outcome.results[i].size() > 1 || fields.has("n_best")) {
        json hypotheses = json::array();
        for (const auto& h : outcome.results[i]) hypotheses.push_back({{"text", h.text}, {"score", h.score}});
        item["hypotheses"] = hypotheses;
      }
      if (!outcome.alignments.empty()) item["alignment"] = outcome.alignments[i];
      translations.push_back(item);
    }
    return {{"translations", translations}};
  }

  // POST /v1/score: log p of given translations, as `trafo score-pairs` prints them.
  json native_score(const httplib::Request& request, int64_t& sentences) {
    Fields fields(request);
    check_key(fields);
    bool listed = false, listed_too = false;
    Job job;
    job.direction = direction(fields);
    job.options = decoding(fields, service.directions()[job.direction]);
    std::vector<size_t> counts, counts_too;
    job.sentences = sentences_of(fields.texts("text", listed), counts);
    job.targets = sentences_of(fields.texts("translation", listed_too), counts_too);
    if (job.sentences.size() != counts.size() || job.targets.size() != counts_too.size()) {
      throw HttpError(400, "text and translation: one line per item (no line breaks)");
    }
    if (job.sentences.size() != job.targets.size()) {
      throw HttpError(400, fmt::format("{} texts but {} translations", job.sentences.size(), job.targets.size()));
    }
    sentences = static_cast<int64_t>(job.sentences.size());
    const auto outcome = run(std::move(job));
    json scores = json::array();
    for (const auto& score : outcome.scores) {
      scores.push_back({{"log_prob", score.scored() ? json(score.log_prob) : json(nullptr)}, {"pieces", score.pieces}});
    }
    return {{"scores", scores}};
  }

  json languages() const {
    std::map<std::string, std::vector<std::string>> targets;
    for (const auto& d : service.directions()) targets[d.source].push_back(d.target);
    json list = json::array();
    for (const auto& [code, to] : targets) list.push_back({{"code", code}, {"name", code}, {"targets", to}});
    return list;
  }

  // Runs `answer` for a route: JSON back, HttpError as {"error": ...}, and the metrics counted.
  void route(const std::string& endpoint, const httplib::Request& request, httplib::Response& response,
             const std::function<json(int64_t&)>& answer) {
    const auto started = Clock::now();
    int64_t sentences = 0;
    int status = 200;
    std::string body;
    try {
      body = answer(sentences).dump();
    } catch (const HttpError& error) {
      status = error.status;
      body = json({{"error", error.what()}}).dump();
    } catch (const std::exception& error) {
      status = 500;
      spdlog::error("{} failed: {}", endpoint, error.what());
      body = json({{"error", std::string("the server failed: ") + error.what()}}).dump(-1, ' ', false,
                                                                                      json::error_handler_t::replace);
    }
    response.status = status;
    if (status == 503) response.set_header("Retry-After", "1");
    response.set_content(body, "application/json");
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    metrics.record(endpoint, status, sentences, seconds);
    spdlog::debug("{} {} {} {} sentences {:.1f} ms", request.method, request.path, status, sentences, seconds * 1e3);
  }

  void add_routes() {
    server.Post("/translate", [this](const httplib::Request& q, httplib::Response& r) {
      route("translate", q, r, [&](int64_t& n) { return libretranslate(q, n); });
    });
    auto languages_route = [this](const httplib::Request& q, httplib::Response& r) {
      route("languages", q, r, [&](int64_t&) {
        if (!options.api_keys.empty() && (q.has_param("api_key") || !q.body.empty())) check_key(Fields(q));
        return languages();
      });
    };
    server.Get("/languages", languages_route);
    server.Post("/languages", languages_route);
    server.Post("/v1/translate", [this](const httplib::Request& q, httplib::Response& r) {
      route("v1/translate", q, r, [&](int64_t& n) { return native_translate(q, n); });
    });
    server.Post("/v1/score", [this](const httplib::Request& q, httplib::Response& r) {
      route("v1/score", q, r, [&](int64_t& n) { return native_score(q, n); });
    });
    server.Get("/health", [this](const httplib::Request& q, httplib::Response& r) {
      route("health", q, r, [&](int64_t&) {
        json directions = json::array();
        for (const auto& d : service.directions()) directions.push_back(d.source + "-" + d.target);
        return json{{"status", "ok"}, {"directions", directions}};
      });
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
      r.set_content(metrics.text(service.stats()), "text/plain; version=0.0.4");
    });
    // Crowded out (ConnectionPool): 503 before anything is read past the headers.
    server.set_pre_routing_handler([](const httplib::Request&, httplib::Response& r) {
      if (!over_capacity) return httplib::Server::HandlerResponse::Unhandled;
      r.status = 503;
      r.set_header("Retry-After", "1");
      r.set_header("Connection", "close");
      r.set_content(json({{"error", "too many connections: try again later"}}).dump(), "application/json");
      return httplib::Server::HandlerResponse::Handled;
    });
    // The library's own refusals (413 for a body past the limit, 404, 400 for a bad request line)
    // get a JSON reason too.
    server.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& q, httplib::Response& r) {
      if (!r.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      std::string reason = "error " + std::to_string(r.status);
      if (r.status == 404) reason = "no such endpoint: " + q.path;
      if (r.status == 405) reason = q.method + " is not allowed here";
      if (r.status == 413) reason = fmt::format("the request is larger than {} bytes", options.limits.max_request_bytes);
      if (r.status == 400) reason = "a malformed request";
      r.set_content(json({{"error", reason}}).dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
      if (r.status == 413 || r.status == 404) metrics.record("other", r.status, 0, 0.0);
      return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_exception_handler([](const httplib::Request&, httplib::Response& r, std::exception_ptr) {
      r.status = 500;
      r.set_content(json({{"error", "the server failed"}}).dump(), "application/json");
    });
  }
};

HttpServer::HttpServer(Service& service, ServerOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {
  auto& s = impl_->server;
  const auto& limits = impl_->options.limits;
  const int workers = limits.max_connections;
  s.new_task_queue = [workers] { return new ConnectionPool(workers); };
  s.set_payload_max_length(static_cast<size_t>(limits.max_request_bytes));
  const auto read_seconds = static_cast<time_t>(std::ceil(limits.read_seconds));
  s.set_read_timeout(read_seconds, 0);
  s.set_write_timeout(read_seconds, 0);
  s.set_keep_alive_timeout(read_seconds);
  s.set_keep_alive_max_count(1000);
  // The listening socket, caught as the library makes it, so that its backlog can be raised after
  // bind (the library listens with a backlog of 5: a burst of clients would wait a second each).
  s.set_socket_options([this](int socket) {
    impl_->listening_socket = socket;
    int yes = 1;
    ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // Answers go out in two writes (head, body): without TCP_NODELAY (which accepted connections
    // inherit) the body waits for the client's delayed ACK, 40 ms on Linux.
    ::setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  });
  impl_->add_routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::bind() {
  const auto& o = impl_->options;
  bool bound = false;
  if (o.port == 0) {
    const int port = impl_->server.bind_to_any_port(o.host);
    bound = port > 0;
    impl_->bound_port = port;
  } else {
    bound = impl_->server.bind_to_port(o.host, o.port);
    impl_->bound_port = o.port;
  }
  if (!bound) {
    throw InputError(fmt::format("cannot listen on {}:{} (taken, or not an address of this machine)", o.host, o.port));
  }
  if (impl_->listening_socket >= 0) ::listen(impl_->listening_socket, SOMAXCONN);
}

int HttpServer::port() const { return impl_->bound_port; }

void HttpServer::serve() { impl_->server.listen_after_bind(); }

void HttpServer::stop() { impl_->server.stop(); }

std::vector<std::string> read_api_keys(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read --api-keys " + path);
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    keys.push_back(line.substr(start));
  }
  if (keys.empty()) throw InputError("--api-keys " + path + " holds no key (one a line)");
  return keys;
}

}  // namespace trafo::serve
