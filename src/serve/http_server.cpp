#include "trafo/serve/http_server.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "http_transport.h"
#include "request_fields.h"
#include "request_metrics.h"
#include "trafo/errors.h"

namespace trafo::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using detail::Fields;
using detail::HttpError;
using detail::Metrics;
using detail::split_lines;


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
  Metrics metrics;
  std::unique_ptr<http::Transport> transport;

  Impl(Service& service, ServerOptions options) : service(service), options(std::move(options)) {}

  void check_key(const Fields& fields) const { check_key(fields.has("api_key") ? fields.text("api_key") : ""); }

  void check_key(const std::string& given) const {
    if (options.api_keys.empty()) return;
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
      const auto found = direction.tags.find(tag);
      if (found == direction.tags.end()) throw HttpError(400, "tag " + tag + " is not one of the model's corpus tags");
      o.source_tag = found->second;
    }
    return o;
  }

  // POST /translate, as LibreTranslate answers it.
  json libretranslate(const http::Request& request, int64_t& sentences) {
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
  json native_translate(const http::Request& request, int64_t& sentences) {
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
  json native_score(const http::Request& request, int64_t& sentences) {
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
  http::Response route(const std::string& endpoint, const http::Request& request,
                       const std::function<json(int64_t&)>& answer) {
    const auto started = Clock::now();
    int64_t sentences = 0;
    http::Response response;
    try {
      response.body = answer(sentences).dump();
    } catch (const HttpError& error) {
      response.status = error.status;
      response.body = json({{"error", error.what()}}).dump();
    } catch (const std::exception& error) {
      response.status = 500;
      spdlog::error("{} failed: {}", endpoint, error.what());
      response.body = json({{"error", std::string("the server failed: ") + error.what()}})
                          .dump(-1, ' ', false, json::error_handler_t::replace);
    }
    if (response.status == 503) response.headers.emplace_back("Retry-After", "1");
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    metrics.record(endpoint, response.status, sentences, seconds);
    spdlog::debug("{} {} {} {} sentences {:.1f} ms", request.method, request.path, response.status, sentences,
                  seconds * 1e3);
    return response;
  }

  // GET /metrics: with --api-keys, the key comes as api_key or as a bearer token (as Prometheus sends it).
  http::Response metrics_text(const http::Request& request) {
    auto given = request.param("api_key");
    const auto authorization = request.header("authorization");
    if (authorization.rfind("Bearer ", 0) == 0) given = authorization.substr(7);
    try {
      check_key(given);
    } catch (const HttpError& error) {
      return refusal(error.status, error.what());
    }
    http::Response response;
    response.content_type = "text/plain; version=0.0.4";
    response.body = metrics.text(service.stats());
    return response;
  }

  json health() const {
    json directions = json::array();
    for (const auto& d : service.directions()) directions.push_back(d.source + "-" + d.target);
    return json{{"status", "ok"}, {"directions", directions}};
  }

  // Requests that decode go to a worker; the rest are cheap and answered on the connections' thread,
  // so that /health answers while every worker decodes.
  static bool decodes(const http::Request& request) {
    return request.path == "/translate" || request.path == "/v1/translate" || request.path == "/v1/score";
  }

  http::Response answer(const http::Request& q) {
    const auto method = q.method == "HEAD" ? std::string("GET") : q.method;
    const auto& path = q.path;
    if (path == "/translate" && method == "POST") return route("translate", q, [&](int64_t& n) { return libretranslate(q, n); });
    if (path == "/v1/translate" && method == "POST") {
      return route("v1/translate", q, [&](int64_t& n) { return native_translate(q, n); });
    }
    if (path == "/v1/score" && method == "POST") return route("v1/score", q, [&](int64_t& n) { return native_score(q, n); });
    // Public, as LibreTranslate has them: clients ask which languages there are before they have a key.
    if (path == "/languages" && (method == "GET" || method == "POST")) {
      return route("languages", q, [&](int64_t&) { return languages(); });
    }
    if (path == "/health" && method == "GET") return route("health", q, [&](int64_t&) { return health(); });
    if (path == "/metrics" && method == "GET") return metrics_text(q);
    if (decodes(q) || path == "/languages" || path == "/health" || path == "/metrics") {
      return refusal(405, q.method + " is not allowed here");
    }
    return refusal(404, "no such endpoint: " + path);
  }

  http::Response refusal(int status, const std::string& reason) {
    http::Response response;
    response.status = status;
    response.body = json({{"error", reason}}).dump(-1, ' ', false, json::error_handler_t::replace);
    if (status == 503) response.headers.emplace_back("Retry-After", "1");
    metrics.record("other", status, 0, 0.0);
    return response;
  }
};

HttpServer::HttpServer(Service& service, ServerOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {
  auto& i = *impl_;
  http::TransportOptions t;
  t.host = i.options.host;
  t.port = i.options.port;
  t.workers = i.options.limits.max_connections;
  t.message.max_body_bytes = i.options.limits.max_request_bytes;
  t.read_seconds = i.options.limits.read_seconds;
  http::Handlers handlers;
  handlers.answer = [&i](const http::Request& q) { return i.answer(q); };
  handlers.at_once = [](const http::Request& q) { return !Impl::decodes(q); };
  handlers.refusal = [&i](int status, const std::string& reason) { return i.refusal(status, reason); };
  i.transport = std::make_unique<http::Transport>(std::move(t), std::move(handlers));
}

HttpServer::~HttpServer() = default;

void HttpServer::bind() { impl_->transport->bind(); }

int HttpServer::port() const { return impl_->transport->port(); }

void HttpServer::serve() { impl_->transport->serve(); }

void HttpServer::stop() { impl_->transport->stop(); }

}  // namespace trafo::serve
