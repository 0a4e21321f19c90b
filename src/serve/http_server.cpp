#include "trafo/serve/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "connection_pool.h"
#include "request_fields.h"
#include "request_metrics.h"
#include "trafo/errors.h"

namespace trafo::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using detail::ConnectionPool;
using detail::Fields;
using detail::HttpError;
using detail::Metrics;
using detail::over_capacity;
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
      const auto found = direction.tags.find(tag);
      if (found == direction.tags.end()) throw HttpError(400, "tag " + tag + " is not one of the model's corpus tags");
      o.source_tag = found->second;
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
    // Decided from the headers, before anything of the body is read: crowded out (ConnectionPool):
    // 503; a body whose size --max-request-bytes cannot bound: refused. The library bounds a body
    // with a Content-Length only; a chunked one it would read whole, and a compressed one it would
    // unpack whole (a small body can unpack to gigabytes).
    server.set_pre_routing_handler([this](const httplib::Request& q, httplib::Response& r) {
      const auto refuse = [&](int status, const std::string& reason) {
        r.status = status;
        r.set_header("Connection", "close");
        r.set_content(json({{"error", reason}}).dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
        if (status != 503) metrics.record("other", status, 0, 0.0);
        return httplib::Server::HandlerResponse::Handled;
      };
      if (over_capacity) {
        r.set_header("Retry-After", "1");
        return refuse(503, "too many connections: try again later");
      }
      if (q.has_header("Transfer-Encoding")) {
        return refuse(411, "send the body with a Content-Length: bodies of another framing (Transfer-Encoding: " +
                               q.get_header_value("Transfer-Encoding") + ") are not accepted");
      }
      const auto encoding = q.get_header_value("Content-Encoding");
      if (!encoding.empty() && encoding != "identity") {
        return refuse(415, "send the body uncompressed: Content-Encoding " + encoding + " is not accepted");
      }
      return httplib::Server::HandlerResponse::Unhandled;
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

}  // namespace trafo::serve
