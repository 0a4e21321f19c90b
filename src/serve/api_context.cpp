#include "api_context.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "trafo/errors.h"

namespace trafo::serve::detail {
namespace {

// Compares without returning early, so that the time taken says nothing of how much matched.
bool same_key(const std::string& given, const std::string& key) {
  unsigned char difference = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) {
    difference |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
  }
  return difference == 0;
}

std::string offered_directions(const Service& service) {
  std::string offered;
  for (const auto& d : service.directions()) offered += (offered.empty() ? "" : ", ") + d.source + "-" + d.target;
  return offered;
}

}  // namespace

inference::LanguageDetector detector_for(const Service& service) {
  std::vector<std::string> sources;
  std::vector<metrics::LanguageId> identifiers;
  std::vector<const inference::LoadedModel*> seen;
  for (const auto& d : service.directions()) {
    if (std::find(sources.begin(), sources.end(), d.source) == sources.end()) sources.push_back(d.source);
    const auto* model = &d.engine->loaded();
    if (std::find(seen.begin(), seen.end(), model) != seen.end() || model->inference.language_id.empty()) continue;
    seen.push_back(model);
    identifiers.push_back(metrics::LanguageId::from_json(model->inference.language_id));
  }
  return inference::LanguageDetector(std::move(sources), std::move(identifiers));
}

size_t ApiContext::direction_of(const std::string& source, const std::string& target) const {
  const int found = service.find(source, target);
  if (found < 0) {
    throw HttpError(400, source + " to " + target + " is not a direction this server translates (it has: " +
                             offered_directions(service) + ")");
  }
  return static_cast<size_t>(found);
}

inference::DetectedLanguage ApiContext::detect_source(const std::string& text, const std::string& target) const {
  std::vector<std::string> into;  // the sources translated into `target`
  for (const auto& d : service.directions()) {
    if (d.target == target) into.push_back(d.source);
  }
  if (into.empty()) {
    throw HttpError(400, "no model here translates into " + target + " (it has: " + offered_directions(service) + ")");
  }
  std::string other;
  const auto found = detector.detect(text, &into, &other);
  if (!found.empty()) return found.front();
  if (other.empty()) {
    throw HttpError(400, "source \"auto\": cannot tell the language of the text; name the source language");
  }
  throw HttpError(400, "source \"auto\": the text is in " + other + ", which no model here translates into " + target +
                           " (it has: " + offered_directions(service) + ")");
}

Job ApiContext::job_in(size_t direction) const {
  Job job;
  job.direction = direction;
  job.options = service.directions()[direction].engine->options();
  return job;
}

void ApiContext::check_key(const std::string& given) const {
  if (options.api_keys.empty()) return;
  bool found = false;
  for (const auto& key : options.api_keys) found |= same_key(given, key);
  if (!found) throw HttpError(403, given.empty() ? "Visit the operator of this server for an API key" : "Invalid API key");
}

Job ApiContext::job_for(const Fields& fields) const {
  check_key(fields.has("api_key") ? fields.text("api_key") : "");
  const auto source = fields.text("source"), target = fields.text("target");
  if (source == "auto") throw HttpError(400, "source \"auto\" is taken by /translate only: name the source language");
  return job_in(direction_of(source, target));
}

Outcome ApiContext::run_sentences(const Fields& fields, Job job) const {
  const bool split = (!fields.has("split_sentences") || fields.flag("split_sentences")) && job.prefixes.empty();
  const auto cut = service.directions()[job.direction].engine->split(job.sentences, split);
  const int n_best = job.options.n_best;
  job.sentences = cut.sentences;
  auto outcome = run(std::move(job));
  outcome.translations = inference::Translation::join(cut, std::move(outcome.translations), n_best);
  return outcome;
}

Job ApiContext::job_of(const Fields& fields, const std::string& text_field, std::vector<size_t>& line_counts,
                       bool& listed) const {
  auto job = job_for(fields);
  job.sentences = sentences_of(fields.texts(text_field, listed), line_counts);
  return job;
}

std::vector<std::string> ApiContext::sentences_of(const std::vector<std::string>& texts,
                                                  std::vector<size_t>& line_counts) const {
  std::vector<std::string> sentences;
  for (const auto& text : texts) {
    const auto lines = split_lines(text);
    line_counts.push_back(lines.size());
    sentences.insert(sentences.end(), lines.begin(), lines.end());
    check_limits(sentences, sentences.size() - lines.size());
  }
  return sentences;
}

void ApiContext::check_limits(const std::vector<std::string>& sentences, size_t from) const {
  for (size_t i = from; i < sentences.size(); ++i) {
    if (static_cast<int64_t>(sentences[i].size()) > options.limits.max_line_bytes) {
      throw HttpError(413, fmt::format("a line of {} bytes: at most {} per line", sentences[i].size(),
                                       options.limits.max_line_bytes));
    }
  }
  if (static_cast<int64_t>(sentences.size()) > options.limits.max_sentences) {
    throw HttpError(413, fmt::format("more than {} lines in one request", options.limits.max_sentences));
  }
}

inference::SearchOptions ApiContext::decoding(const Fields& fields, const Direction& direction) const {
  auto o = direction.engine->options();
  o.beam = static_cast<int>(fields.integer("beam", o.beam, 1, options.limits.max_beam));
  o.n_best = static_cast<int>(fields.integer("n_best", 1, 1, o.beam));
  o.length_penalty = fields.number("length_penalty", o.length_penalty);
  o.max_length_a = fields.number("max_length_a", o.max_length_a);
  o.max_length_b = fields.integer("max_length_b", o.max_length_b, 0, 1000000);
  o.no_repeat_ngram = static_cast<int>(fields.integer("no_repeat_ngram", o.no_repeat_ngram, 0, 100));
  o.repetition_penalty = fields.number("repetition_penalty", o.repetition_penalty);
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

Outcome ApiContext::run(Job job) const {
  using Clock = std::chrono::steady_clock;
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

}  // namespace trafo::serve::detail
