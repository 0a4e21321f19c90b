#include "trafo/serve/http_server.h"

#include <chrono>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "api_context.h"
#include "trafo/http/transport.h"
#include "request_metrics.h"
#include "trafo/errors.h"

namespace trafo::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using detail::ApiContext;
using detail::HttpError;
using detail::Metrics;

}  // namespace

struct HttpServer::Impl {
  Service& service;
  ServerOptions options;
  ApiContext api{service, options};
  Metrics metrics;
  std::unique_ptr<http::Transport> transport;

  Impl(Service& service, ServerOptions options) : service(service), options(std::move(options)) {}

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
      api.check_key(given);
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
    if (path == "/translate" && method == "POST") {
      return route("translate", q, [&](int64_t& n) { return detail::libretranslate_translate(api, q, n); });
    }
    if (path == "/v1/translate" && method == "POST") {
      return route("v1/translate", q, [&](int64_t& n) { return detail::native_translate(api, q, n); });
    }
    if (path == "/v1/score" && method == "POST") {
      return route("v1/score", q, [&](int64_t& n) { return detail::native_score(api, q, n); });
    }
    if (path == "/detect" && method == "POST") {
      return route("detect", q, [&](int64_t&) { return detail::libretranslate_detect(api, q); });
    }
    // Public, as LibreTranslate has them: clients ask which languages there are before they have a key.
    if (path == "/languages" && (method == "GET" || method == "POST")) {
      return route("languages", q, [&](int64_t&) { return detail::libretranslate_languages(service); });
    }
    if (path == "/health" && method == "GET") return route("health", q, [&](int64_t&) { return health(); });
    if (path == "/metrics" && method == "GET") return metrics_text(q);
    if (decodes(q) || path == "/detect" || path == "/languages" || path == "/health" || path == "/metrics") {
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
