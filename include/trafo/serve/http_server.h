// The HTTP face of the translation service (docs/guide-serving.md has the endpoints):
//   POST /translate, POST /translate_file, LibreTranslate's API (and GET /, a page to try it)
//   GET /download_file/NAME, POST /detect,
//   GET|POST /languages, GET /frontend/settings
//   POST /v1/translate, POST /v1/score     trafo's own: beams, n-best with scores, sampling, tags,
//                                          alignments, log-probabilities of given translations
//   GET /health, GET /metrics              liveness, and Prometheus' text format
// Every answer is JSON (metrics aside); an error is {"error": "..."} with its status
// (docs/guide-serving.md "Limits and errors"). The bytes move in http/transport.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trafo/serve/service.h"

namespace trafo::serve {

struct Limits {
  int64_t max_request_bytes = int64_t{1} << 20;  // a body past this: 413
  int64_t max_sentences = 10000;                 // lines in one request: 413
  int64_t max_line_bytes = 10000;                // one line: 413
  int64_t max_file_bytes = int64_t{16} << 20;    // a document sent to /translate_file: 413 past it
  int max_connections = 64;                      // requests that decode at once; as many wait, then 503
  int max_beam = 16;                             // a request's beam: 400 past it
  double request_seconds = 60.0;                 // waiting for the decoder: 503 past it
  double read_seconds = 5.0;                     // a request must arrive whole in this time
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 5000;                    // 0: any free port (port() says which)
  Limits limits;
  std::vector<std::string> api_keys;  // not empty: requests but /health and /languages carry one
};

class HttpServer {
 public:
  HttpServer(Service& service, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the address; throws trafo::InputError when it cannot (taken, not an address here).
  void bind();
  int port() const;
  // Answers requests until stop(); returns once the connections in flight are done.
  void serve();
  // Stops accepting (any thread, a signal's waiter included).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads an --api-keys file: one key a line, blank lines and lines starting with '#' skipped.
// Throws InputError for a missing or empty file.
std::vector<std::string> read_api_keys(const std::string& path);

}  // namespace trafo::serve
