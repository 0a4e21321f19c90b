#include "trafo/serve/http_server.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "api_context.h"
#include "file_store.h"
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

// The media type of a document by its extension.
std::string media_type(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> types = {
      {".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
      {".pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
      {".odt", "application/vnd.oasis.opendocument.text"},
      {".odp", "application/vnd.oasis.opendocument.presentation"},
      {".html", "text/html; charset=utf-8"},
      {".htm", "text/html; charset=utf-8"},
      {".txt", "text/plain; charset=utf-8"}};
  for (const auto& [extension, type] : types) {
    if (name.size() >= extension.size() && name.compare(name.size() - extension.size(), extension.size(), extension) == 0) {
      return type;
    }
  }
  return "application/octet-stream";
}

}  // namespace

namespace detail {
extern const std::string_view kPageHtml;  // src/serve/page.html, embedded by the build
}  // namespace detail

struct HttpServer::Impl {
  Service& service;
  ServerOptions options;
  ApiContext api{service, options};
  Metrics metrics;
  detail::FileStore files;
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
    return request.path == "/translate" || request.path == "/v1/translate" || request.path == "/v1/score" ||
           request.path == "/translate_file";
  }

  // GET /download_file/NAME: a document /translate_file translated, as an attachment.
  http::Response download(const std::string& name) {
    const auto file = files.find(name);
    if (!file) return refusal(404, "no such file: it was never made here, or is gone (files are kept an hour)");
    http::Response response;
    response.content_type = media_type(file->name);
    response.body = file->bytes;
    response.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + file->name + "\"");
    metrics.record("download_file", 200, 0, 0.0);
    return response;
  }

  http::Response page() {
    http::Response response;
    response.content_type = "text/html; charset=utf-8";
    response.body = std::string(detail::kPageHtml);
    metrics.record("page", 200, 0, 0.0);
    return response;
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
    if (path == "/translate_file" && method == "POST") {
      return route("translate_file", q,
                   [&](int64_t& n) { return detail::libretranslate_translate_file(api, q, files, n); });
    }
    if (path == "/" && method == "GET") return page();
    if (path == "/frontend/settings" && method == "GET") {
      return route("frontend/settings", q, [&](int64_t&) { return detail::libretranslate_frontend_settings(api); });
    }
    const std::string downloads = "/download_file/";
    if (path.rfind(downloads, 0) == 0 && method == "GET") return download(path.substr(downloads.size()));
    if (path == "/detect" && method == "POST") {
      return route("detect", q, [&](int64_t&) { return detail::libretranslate_detect(api, q); });
    }
    // Public, as LibreTranslate has them: clients ask which languages there are before they have a key.
    if (path == "/languages" && (method == "GET" || method == "POST")) {
      return route("languages", q, [&](int64_t&) { return detail::libretranslate_languages(service); });
    }
    if (path == "/health" && method == "GET") return route("health", q, [&](int64_t&) { return health(); });
    if (path == "/metrics" && method == "GET") return metrics_text(q);
    if (decodes(q) || path == "/detect" || path == "/languages" || path == "/health" || path == "/metrics" ||
        path == "/" || path == "/frontend/settings" || path.rfind(downloads, 0) == 0) {
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
  // A document, and the multipart form around it.
  t.message.max_body_bytes_at["/translate_file"] = i.options.limits.max_file_bytes + (int64_t{1} << 20);
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
