// What trafo serve's two API dialects share: the service and its limits, the key check, and the one
// function that turns a request's fields into a job (api_context.cpp). The dialects are
// libretranslate_api.cpp (POST /translate, /languages) and native_api.cpp (POST /v1/...);
// http_server.cpp routes to them, and http/transport.cpp moves the bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "request_fields.h"
#include "trafo/http/message.h"
#include "trafo/inference/language_detection.h"
#include "trafo/serve/http_server.h"
#include "trafo/serve/service.h"

namespace trafo::serve::detail {

// The language detector of the sources `service` translates from, with the identifiers its
// models' checkpoints hold.
inference::LanguageDetector detector_for(const Service& service);

struct ApiContext {
  Service& service;
  const ServerOptions& options;
  inference::LanguageDetector detector = detector_for(service);

  // 403 unless `given` is one of --api-keys (when there are any).
  void check_key(const std::string& given) const;
  // A job for the request's direction with its decoding defaults, the key checked; no sentences yet.
  Job job_for(const Fields& fields) const;
  // A job for direction `direction` with its decoding defaults (the key checked before).
  Job job_in(size_t direction) const;
  // The direction from `source` to `target`; 400 naming the directions there are.
  size_t direction_of(const std::string& source, const std::string& target) const;
  // The language `text` is in among those translated into `target`: 400 naming the language found
  // where no model here translates it into `target`, or where nothing can tell.
  inference::DetectedLanguage detect_source(const std::string& text, const std::string& target) const;
  // The job for the texts of `text_field`: the key checked, the direction found, each text split into
  // its lines and bounded by the limits (`line_counts` per text), and the direction's decoding
  // defaults. `listed`: the texts came as a list.
  Job job_of(const Fields& fields, const std::string& text_field, std::vector<size_t>& line_counts,
             bool& listed) const;
  // Each text's lines, one sentence each, checked against the limits; `line_counts` per text.
  std::vector<std::string> sentences_of(const std::vector<std::string>& texts, std::vector<size_t>& line_counts) const;
  // 413 for a line from `from` on longer than the limit, or more lines than the limit.
  void check_limits(const std::vector<std::string>& sentences, size_t from = 0) const;
  // The decoding options a request may change, over the direction's defaults.
  inference::SearchOptions decoding(const Fields& fields, const Direction& direction) const;
  // The service's answer within --request-timeout: 503 when busy or late, 400 for bad input.
  Outcome run(Job job) const;
  // run() with each line cut into its sentences, each decoded as a line of its own, and put back
  // together: the outcome per line. Not where the request says split_sentences false, nor with
  // target prefixes, which begin whole lines.
  Outcome run_sentences(const Fields& fields, Job job) const;
};

class FileStore;

// LibreTranslate's API.
nlohmann::json libretranslate_translate(const ApiContext& api, const http::Request& request, int64_t& sentences);
// A document translated, kept in `files`: {"translatedFileUrl": its GET /download_file address}.
nlohmann::json libretranslate_translate_file(const ApiContext& api, const http::Request& request, FileStore& files,
                                             int64_t& sentences);
nlohmann::json libretranslate_frontend_settings(const ApiContext& api);
nlohmann::json libretranslate_languages(const Service& service);
nlohmann::json libretranslate_detect(const ApiContext& api, const http::Request& request);

// trafo's own.
nlohmann::json native_translate(const ApiContext& api, const http::Request& request, int64_t& sentences);
nlohmann::json native_score(const ApiContext& api, const http::Request& request, int64_t& sentences);

}  // namespace trafo::serve::detail
