#include "trafo/metrics/language_id.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "text.h"
#include "trafo/errors.h"

namespace trafo::metrics {
namespace {

constexpr size_t kLongest = 3;  // characters in the longest n-gram

// Each n-gram of `line` (1 to kLongest characters of " word ", lowercased), as UTF-8.
template <typename Each>
void each_ngram(const std::string& line, const Each& each) {
  for (const auto& word : text::split(text::lowercase(text::decode(line)))) {
    const std::u32string padded = U" " + word + U" ";
    for (size_t n = 1; n <= kLongest; ++n) {
      for (size_t at = 0; at + n <= padded.size(); ++at) {
        if (n == 1 && padded[at] == U' ') continue;  // a space alone says nothing
        each(text::encode(std::u32string_view(padded).substr(at, n)));
      }
    }
  }
}

}  // namespace

LanguageId LanguageId::learn(const std::map<std::string, std::vector<std::string>>& lines_by_language, size_t kept) {
  LanguageId id;
  for (const auto& [language, lines] : lines_by_language) {
    std::unordered_map<std::string, double> counts;
    double total = 0.0;
    for (const auto& line : lines) {
      each_ngram(line, [&](const std::string& ngram) {
        counts[ngram] += 1.0;
        total += 1.0;
      });
    }
    if (total == 0.0) continue;
    std::vector<std::pair<std::string, double>> ranked(counts.begin(), counts.end());
    const auto keep = std::min(kept, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(),
                      [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    Profile profile;
    for (size_t i = 0; i < keep; ++i) profile.log_p[ranked[i].first] = std::log(ranked[i].second / total);
    profile.unseen = std::log(0.5 / total);
    id.profiles_[language] = std::move(profile);
  }
  return id;
}

std::string LanguageId::to_json() const {
  nlohmann::json languages = nlohmann::json::object();
  for (const auto& [language, profile] : profiles_) {
    // sorted, so that the same profiles always give the same text
    const std::map<std::string, double> ngrams(profile.log_p.begin(), profile.log_p.end());
    languages[language] = {{"unseen", profile.unseen}, {"ngrams", ngrams}};
  }
  return nlohmann::json{{"kind", "char-ngrams-1-3"}, {"languages", languages}}.dump();
}

LanguageId LanguageId::from_json(const std::string& json) {
  try {
    const auto parsed = nlohmann::json::parse(json);
    if (parsed.at("kind") != "char-ngrams-1-3") throw InputError("a language identifier of another kind");
    LanguageId id;
    for (const auto& [language, profile] : parsed.at("languages").items()) {
      auto& into = id.profiles_[language];
      into.unseen = profile.at("unseen").get<double>();
      for (const auto& [ngram, log_p] : profile.at("ngrams").items()) into.log_p[ngram] = log_p.get<double>();
    }
    return id;
  } catch (const nlohmann::json::exception&) {
    throw InputError("a language identifier that is not what trafo writes");
  }
}

std::vector<std::string> LanguageId::languages() const {
  std::vector<std::string> names;
  for (const auto& [language, profile] : profiles_) names.push_back(language);
  return names;
}

std::string LanguageId::identify(const std::string& line) const {
  std::map<std::string, double> score;
  bool any = false;
  each_ngram(line, [&](const std::string& ngram) {
    any = true;
    for (const auto& [language, profile] : profiles_) {
      const auto found = profile.log_p.find(ngram);
      score[language] += found != profile.log_p.end() ? found->second : profile.unseen;
    }
  });
  if (!any) return "";
  std::string best;
  double best_score = -std::numeric_limits<double>::infinity();
  for (const auto& [language, value] : score) {
    if (value > best_score) {
      best = language;
      best_score = value;
    }
  }
  return best;
}

}  // namespace trafo::metrics
