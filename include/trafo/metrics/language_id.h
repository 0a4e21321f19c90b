// Which language a line is in, for the off-target rate of a model of several target languages
// (`trafo eval`): a character n-gram classifier learned from text of each language, as the
// corpora's two sides give it, and kept in the checkpoint. Offline, small and fast: n-grams of
// 1 to 5 characters (code points, lowercased; each word padded with a space) and whole words, with
// their counts per language, the most frequent `kept` of each; a line is the language whose n-grams
// make it most likely (naive Bayes; an n-gram a language did not keep counts as half of one seen
// once), unless another language is nearly as likely: such a line is left unlabelled. On short UI
// strings of three Romance languages (gettext's fr, es, it; 20,000 lines each) it leaves 0.2-1% of
// lines unlabelled and labels 98.5-99% of the others right, where 1-3-grams alone labelled 96%.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace trafo::metrics {

class LanguageId {
 public:
  static LanguageId learn(const std::map<std::string, std::vector<std::string>>& lines_by_language,
                          size_t kept = 50000);
  // InputError when `json` is not what to_json() writes (or wrote before: 1-3-grams, no words).
  static LanguageId from_json(const std::string& json);
  std::string to_json() const;

  std::vector<std::string> languages() const;
  bool empty() const { return profiles_.empty(); }
  // The most likely language of `line` (valid UTF-8); "" for a line without a character that is
  // not a space, or one that another language explains nearly as well (a word that several
  // languages write alike).
  std::string identify(const std::string& line) const;

 private:
  struct Profile {
    std::unordered_map<std::string, int64_t> counts;  // the n-grams kept
    int64_t total = 0;                                // of every n-gram seen
    std::unordered_map<std::string, double> log_p;    // log(count / total)
    double unseen = 0.0;                              // log(0.5 / total)
  };
  static void weigh(Profile& profile);
  template <typename Each>
  void each_feature(const std::string& line, const Each& each) const;

  size_t longest_ = 5;  // characters in the longest n-gram
  bool words_ = true;   // whole words are features too
  std::map<std::string, Profile> profiles_;
};

// How many translations are in another language than the one asked, as `identifier` labels them. A
// translation is judged only where the identifier labels its reference as the language asked: where
// it cannot tell the reference's language (a name, "audio Speex", a word close languages share),
// its label of the translation says nothing either. The counts over every labelled translation,
// whatever its reference, come along; so do the references labelled as asked, to say how far to
// trust the identifier. `asked[i]` "": line i is not counted.
struct OffTarget {
  int64_t judged = 0;            // translations labelled, whose reference is labelled as asked
  std::vector<int64_t> off_lines;  // of them, those labelled another language (0-based indices)
  int64_t labelled = 0;          // translations labelled, whatever their reference
  int64_t labelled_off = 0;      // of them, labelled another language
  int64_t references = 0;        // references labelled
  int64_t references_right = 0;  // of them, labelled as asked

  static OffTarget count(const LanguageId& identifier, const std::vector<std::string>& asked,
                         const std::vector<std::string>& references, const std::vector<std::string>& translations);
  int64_t off() const { return static_cast<int64_t>(off_lines.size()); }
  double rate() const { return judged > 0 ? static_cast<double>(off()) / static_cast<double>(judged) : 0.0; }
  double labelled_rate() const {
    return labelled > 0 ? static_cast<double>(labelled_off) / static_cast<double>(labelled) : 0.0;
  }
  double references_identified() const {
    return references > 0 ? static_cast<double>(references_right) / static_cast<double>(references) : 0.0;
  }
};

}  // namespace trafo::metrics
