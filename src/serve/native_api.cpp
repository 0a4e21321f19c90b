// trafo's own API: POST /v1/translate (beams, n-best with scores, sampling, tags, alignments, target
// prefixes) and POST /v1/score (log-probabilities of given translations, as `trafo score-pairs`
// prints them).
#include <fmt/format.h>

#include "api_context.h"

namespace trafo::serve::detail {

using json = nlohmann::json;

json native_translate(const ApiContext& api, const http::Request& request, int64_t& sentences) {
  Fields fields(request);
  bool listed = false;
  std::vector<size_t> line_counts;
  auto job = api.job_of(fields, "text", line_counts, listed);
  if (job.sentences.size() != line_counts.size()) throw HttpError(400, "text: one line per item (no line breaks)");
  job.options = api.decoding(fields, api.service.directions()[job.direction]);
  job.alignment = fields.flag("alignment");
  if (fields.has("target_prefix")) {
    bool prefixes_listed = false;
    job.prefixes = fields.texts("target_prefix", prefixes_listed);
    if (job.prefixes.size() != job.sentences.size() || prefixes_listed != listed) {
      throw HttpError(400, "target_prefix: one per text, as text is given (a string, or a list as long)");
    }
    for (const auto& prefix : job.prefixes) {
      if (prefix.find('\n') != std::string::npos) throw HttpError(400, "target_prefix: one line per item (no line breaks)");
      if (static_cast<int64_t>(prefix.size()) > api.options.limits.max_line_bytes) {
        throw HttpError(413, fmt::format("a target_prefix of {} bytes: at most {} per line", prefix.size(),
                                         api.options.limits.max_line_bytes));
      }
    }
  }
  if (fields.has("glossary")) {
    job.glossary = fields.pairs("glossary", static_cast<size_t>(api.options.limits.max_sentences),
                                static_cast<size_t>(api.options.limits.max_line_bytes));
  }
  if (job.alignment && job.options.n_best > 1) throw HttpError(400, "alignment aligns the best translation: leave out n_best");
  sentences = static_cast<int64_t>(job.sentences.size());
  const bool alignment = job.alignment;
  const auto outcome = api.run_sentences(fields, std::move(job));
  json translations = json::array();
  for (const auto& translated : outcome.translations) {
    const auto& best = translated.hypotheses.front();
    json item = {{"text", best.text}, {"score", best.score}};
    if (translated.hypotheses.size() > 1 || fields.has("n_best")) {
      json hypotheses = json::array();
      for (const auto& h : translated.hypotheses) hypotheses.push_back({{"text", h.text}, {"score", h.score}});
      item["hypotheses"] = hypotheses;
    }
    if (alignment) item["alignment"] = inference::pharaoh(translated.alignment);
    translations.push_back(item);
  }
  return {{"translations", translations}};
}

json native_score(const ApiContext& api, const http::Request& request, int64_t& sentences) {
  Fields fields(request);
  bool listed = false, listed_too = false;
  std::vector<size_t> counts, counts_too;
  auto job = api.job_of(fields, "text", counts, listed);
  job.options = api.decoding(fields, api.service.directions()[job.direction]);
  job.targets = api.sentences_of(fields.texts("translation", listed_too), counts_too);
  if (job.sentences.size() != counts.size() || job.targets.size() != counts_too.size()) {
    throw HttpError(400, "text and translation: one line per item (no line breaks)");
  }
  if (job.sentences.size() != job.targets.size()) {
    throw HttpError(400, fmt::format("{} texts but {} translations", job.sentences.size(), job.targets.size()));
  }
  sentences = static_cast<int64_t>(job.sentences.size());
  const auto outcome = api.run(std::move(job));
  json scores = json::array();
  for (const auto& score : outcome.scores) {
    scores.push_back({{"log_prob", score.scored() ? json(score.log_prob) : json(nullptr)}, {"pieces", score.pieces}});
  }
  return {{"scores", scores}};
}

}  // namespace trafo::serve::detail
