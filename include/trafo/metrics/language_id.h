// Which language a line is in, for the off-target rate of a model of several target languages
// (`trafo eval`): a character n-gram classifier learned from text of each language, as the
// corpora's target sides give it, and kept in the checkpoint. Offline, small and fast: n-grams of
// 1 to 3 characters (code points, lowercased; each word padded with a space) with their
// log-probabilities per language, the most frequent `kept` of each; a line is the language whose
// n-grams make it most likely (naive Bayes; an n-gram a language did not keep counts as half of one
// seen once).
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace trafo::metrics {

class LanguageId {
 public:
  static LanguageId learn(const std::map<std::string, std::vector<std::string>>& lines_by_language,
                          size_t kept = 3000);
  // InputError when `json` is not what to_json() writes.
  static LanguageId from_json(const std::string& json);
  std::string to_json() const;

  std::vector<std::string> languages() const;
  bool empty() const { return profiles_.empty(); }
  // The most likely language of `line` (valid UTF-8); "" for a line without a character that is
  // not a space.
  std::string identify(const std::string& line) const;

 private:
  struct Profile {
    std::unordered_map<std::string, double> log_p;
    double unseen = 0.0;
  };
  std::map<std::string, Profile> profiles_;
};

}  // namespace trafo::metrics
