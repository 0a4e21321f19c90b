// LibreTranslate's API, as its clients call it: POST /translate (q a string or a list, a form or
// JSON, alternatives, source "auto"), POST /translate_file, POST /detect, GET|POST /languages and
// GET /frontend/settings.
#include <algorithm>
#include <map>
#include <optional>

#include "api_context.h"
#include "file_store.h"
#include "trafo/documents/document.h"
#include "trafo/errors.h"
#include "trafo/inference/pages.h"
#include "trafo/text/languages.h"

namespace trafo::serve::detail {
namespace {

using json = nlohmann::json;

// The texts of one direction, translated: each text's translation and, with alternatives, its
// next-best ones.
struct Translations {
  std::vector<std::string> texts;
  std::vector<std::vector<std::string>> alternatives;
};

// HTML pages parsed; 400 naming `field` for one that is not.
inference::Pages parse_pages(const std::vector<std::string>& texts, const std::string& field) {
  try {
    return inference::Pages(texts);
  } catch (const InputError& e) {
    throw HttpError(400, field + ": " + e.what());
  }
}

// Each page's runs of text (inference/pages.h) are the job's sentences, aligned to their
// translations to place the inline tags.
Translations translate_pages(const ApiContext& api, const Fields& fields, Job job, const inference::Pages& pages,
                             int64_t& sentences) {
  job.sentences = pages.lines();
  api.check_limits(job.sentences, 0);
  job.alignment = true;
  sentences += static_cast<int64_t>(job.sentences.size());
  const auto outcome = job.sentences.empty() ? Outcome{} : api.run_sentences(fields, std::move(job));
  return {pages.render(outcome.translations), {}};
}

// format "text": each text's lines translated, the line breaks kept; `alternatives` next-best ones
// from a beam of at least alternatives + 1.
Translations translate_lines(const ApiContext& api, const Fields& fields, Job job, const std::vector<std::string>& texts,
                             int64_t alternatives, int64_t& sentences) {
  std::vector<size_t> line_counts;
  job.sentences = api.sentences_of(texts, line_counts);
  if (alternatives > 0) {
    job.options.beam = std::max<int>(job.options.beam, static_cast<int>(alternatives) + 1);
    job.options.n_best = static_cast<int>(alternatives) + 1;
  }
  sentences += static_cast<int64_t>(job.sentences.size());
  const auto outcome = api.run_sentences(fields, std::move(job));
  Translations out;
  size_t at = 0;
  for (const size_t lines : line_counts) {
    std::string text;
    std::vector<std::string> alternative(static_cast<size_t>(alternatives));
    for (size_t i = 0; i < lines; ++i, ++at) {
      const auto& hypotheses = outcome.translations[at].hypotheses;
      text += (i ? "\n" : "") + hypotheses.front().text;
      for (size_t k = 0; k < alternative.size(); ++k) {
        // A sentence with fewer distinct hypotheses repeats its best one.
        const auto& h = k + 1 < hypotheses.size() ? hypotheses[k + 1] : hypotheses.front();
        alternative[k] += (i ? "\n" : "") + h.text;
      }
    }
    out.texts.push_back(std::move(text));
    out.alternatives.push_back(std::move(alternative));
  }
  return out;
}

}  // namespace

json libretranslate_translate(const ApiContext& api, const http::Request& request, int64_t& sentences) {
  Fields fields(request);
  api.check_key(fields.has("api_key") ? fields.text("api_key") : "");
  const auto source = fields.text("source"), target = fields.text("target");
  const auto format = fields.text_or("format", "text");
  if (format != "text" && format != "html") throw HttpError(400, "format \"" + format + "\": text or html");
  const auto alternatives = fields.integer("alternatives", 0, 0, api.options.limits.max_beam - 1);
  if (format == "html" && alternatives > 0) throw HttpError(400, "alternatives: plain text only (not with format html)");
  bool listed = false;
  const auto texts = fields.texts("q", listed);
  // The texts by direction: the one named, or with source "auto" each text's own.
  std::vector<inference::DetectedLanguage> detected;
  std::map<size_t, std::vector<size_t>> by_direction;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (source != "auto") {
      by_direction[api.direction_of(source, target)].push_back(i);
      continue;
    }
    detected.push_back(api.detect_source(texts[i], target));
    by_direction[api.direction_of(detected.back().language, target)].push_back(i);
  }
  std::vector<std::string> translated(texts.size());
  std::vector<std::vector<std::string>> others(texts.size());
  sentences = 0;
  for (const auto& [direction, indices] : by_direction) {
    std::vector<std::string> group;
    for (const size_t i : indices) group.push_back(texts[i]);
    const auto done = format == "html" ? translate_pages(api, fields, api.job_in(direction), parse_pages(group, "q"), sentences)
                                       : translate_lines(api, fields, api.job_in(direction), group, alternatives, sentences);
    for (size_t k = 0; k < indices.size(); ++k) {
      translated[indices[k]] = done.texts[k];
      if (!done.alternatives.empty()) others[indices[k]] = done.alternatives[k];
    }
  }
  json answer = {{"translatedText", listed ? json(translated) : json(translated.front())}};
  if (alternatives > 0) answer["alternatives"] = listed ? json(others) : json(others.front());
  if (!detected.empty()) {
    json languages = json::array();
    for (const auto& d : detected) languages.push_back({{"confidence", d.confidence}, {"language", d.language}});
    answer["detectedLanguage"] = listed ? languages : languages.front();
  }
  return answer;
}

json libretranslate_translate_file(const ApiContext& api, const http::Request& request, FileStore& files,
                                   int64_t& sentences) {
  Fields fields(request);
  api.check_key(fields.has("api_key") ? fields.text("api_key") : "");
  const auto name = request.file_name("file");
  if (name.empty() || !request.has_param("file")) {
    throw HttpError(400, "file: send the document as the multipart/form-data file field \"file\", with its name");
  }
  documents::Format format;
  try {
    format = documents::format_of(name);
  } catch (const InputError& e) {
    throw HttpError(400, e.what());
  }
  std::optional<documents::Document> document;
  try {
    documents::Limits limits;
    limits.max_file_bytes = api.options.limits.max_file_bytes;
    document.emplace(format, request.param("file"), limits);
  } catch (const documents::DocumentTooLarge& e) {
    throw HttpError(413, name + ": " + e.what());
  } catch (const InputError& e) {
    throw HttpError(400, name + ": " + e.what());
  }
  const bool text = document->format() == documents::Format::kText;
  const auto pages = text ? std::nullopt : std::optional<inference::Pages>(parse_pages(document->pages(), name));
  const auto& runs = text ? document->lines() : pages->lines();
  // With source "auto", the language of the document's first kilobytes of text.
  auto source = fields.text("source");
  const auto target = fields.text("target");
  if (source == "auto") {
    std::string sample;
    for (size_t i = 0; i < runs.size() && sample.size() < 2000; ++i) sample += runs[i] + "\n";
    source = api.detect_source(sample, target).language;
  }
  const auto job = api.job_in(api.direction_of(source, target));
  sentences = 0;
  const auto translated = text ? translate_lines(api, fields, job, runs, 0, sentences).texts
                               : translate_pages(api, fields, job, *pages, sentences).texts;
  const auto download = files.keep({name, document->write(translated)});
  const auto host = request.header("host");
  return {{"translatedFileUrl", "http://" + (host.empty() ? api.options.host : host) + "/download_file/" + download}};
}

json libretranslate_frontend_settings(const ApiContext& api) {
  const auto& directions = api.service.directions();
  const std::string target = directions.empty() ? "" : directions.front().target;
  const bool keys = !api.options.api_keys.empty();
  return {{"charLimit", -1},
          {"frontendTimeout", 500},
          {"apiKeys", keys},
          {"keyRequired", keys},
          {"suggestions", false},
          {"filesTranslation", true},
          {"supportedFilesFormat", documents::extensions()},
          {"language",
           {{"source", {{"code", "auto"}, {"name", "Auto Detect"}}},
            {"target", {{"code", target}, {"name", target.empty() ? target : text::language_name(target)}}}}}};
}

json libretranslate_detect(const ApiContext& api, const http::Request& request) {
  Fields fields(request);
  api.check_key(fields.has("api_key") ? fields.text("api_key") : "");
  std::string other;
  const auto found = api.detector.detect(fields.text("q"), nullptr, &other);
  json list = json::array();
  for (const auto& d : found) list.push_back({{"confidence", d.confidence}, {"language", d.language}});
  // Text in a language no model here takes: what it is, so that the client can say so.
  if (found.empty() && !other.empty()) list.push_back({{"confidence", 0.0}, {"language", other}});
  return list;
}

json libretranslate_languages(const Service& service) {
  std::map<std::string, std::vector<std::string>> targets;
  for (const auto& d : service.directions()) targets[d.source].push_back(d.target);
  json list = json::array();
  for (const auto& [code, to] : targets) {
    list.push_back({{"code", code}, {"name", text::language_name(code)}, {"targets", to}});
  }
  return list;
}

}  // namespace trafo::serve::detail
