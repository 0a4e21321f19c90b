// LibreTranslate's API, as its clients call it: POST /translate (q a string or a list, a form or
// JSON, alternatives) and GET|POST /languages.
#include <algorithm>
#include <map>
#include <optional>

#include "api_context.h"
#include "trafo/errors.h"
#include "trafo/inference/pages.h"

namespace trafo::serve::detail {
namespace {

using json = nlohmann::json;

// format "html": each text is a page (inference/pages.h); its runs of text are the job's
// sentences, aligned to their translations to place the inline tags.
json translate_pages(const ApiContext& api, const Fields& fields, Job job, int64_t& sentences) {
  if (fields.has("alternatives") && fields.integer("alternatives", 0, 0, api.options.limits.max_beam - 1) > 0) {
    throw HttpError(400, "alternatives: plain text only (not with format html)");
  }
  bool listed = false;
  std::optional<inference::Pages> pages;
  try {
    pages.emplace(fields.texts("q", listed));
  } catch (const InputError& e) {
    throw HttpError(400, std::string("q: ") + e.what());
  }
  job.sentences = pages->lines();
  api.check_limits(job.sentences, 0);
  job.alignment = true;
  sentences = static_cast<int64_t>(job.sentences.size());
  const auto outcome = job.sentences.empty() ? Outcome{} : api.run_sentences(fields, std::move(job));
  json translated = json::array();
  for (auto& page : pages->render(outcome.translations)) translated.push_back(std::move(page));
  return {{"translatedText", listed ? translated : translated.front()}};
}

}  // namespace

json libretranslate_translate(const ApiContext& api, const http::Request& request, int64_t& sentences) {
  Fields fields(request);
  auto job = api.job_for(fields);  // the key first
  const auto format = fields.text_or("format", "text");
  if (format == "html") return translate_pages(api, fields, std::move(job), sentences);
  if (format != "text") throw HttpError(400, "format \"" + format + "\": text or html");
  bool listed = false;
  std::vector<size_t> line_counts;
  job.sentences = api.sentences_of(fields.texts("q", listed), line_counts);
  const auto alternatives = fields.integer("alternatives", 0, 0, api.options.limits.max_beam - 1);
  if (alternatives > 0) {
    job.options.beam = std::max<int>(job.options.beam, static_cast<int>(alternatives) + 1);
    job.options.n_best = static_cast<int>(alternatives) + 1;
  }
  sentences = static_cast<int64_t>(job.sentences.size());
  const auto outcome = api.run_sentences(fields, std::move(job));
  json translated = json::array(), others = json::array();
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
    translated.push_back(text);
    others.push_back(alternative);
  }
  json answer = {{"translatedText", listed ? translated : translated.front()}};
  if (alternatives > 0) answer["alternatives"] = listed ? others : others.front();
  return answer;
}

json libretranslate_languages(const Service& service) {
  std::map<std::string, std::vector<std::string>> targets;
  for (const auto& d : service.directions()) targets[d.source].push_back(d.target);
  json list = json::array();
  for (const auto& [code, to] : targets) list.push_back({{"code", code}, {"name", code}, {"targets", to}});
  return list;
}

}  // namespace trafo::serve::detail
