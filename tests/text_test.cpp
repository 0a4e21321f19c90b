// Sentences of a line (text/sentences.h, ICU's sentence breaks with each language's abbreviations).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "trafo/inference/language_detection.h"
#include "trafo/text/languages.h"
#include "trafo/text/sentences.h"

namespace trafo::text {
namespace {

using Strings = std::vector<std::string>;

TEST(Sentences, AParagraphIsCutIntoItsSentencesAndItsSpacesKept) {
  const SentenceSplitter english("en");
  const auto cut = english.split(
      "The slow big father thinks that my man will close the book. Now two strong teachers draw a funny duck.  "
      "Soon Julia will not eat a sweet tomato.");
  EXPECT_EQ(cut.sentences, (Strings{"The slow big father thinks that my man will close the book.",
                                    "Now two strong teachers draw a funny duck.",
                                    "Soon Julia will not eat a sweet tomato."}));
  EXPECT_EQ(cut.gaps, (Strings{" ", "  "}));
  // The language's abbreviations end no sentence; a question or an exclamation does.
  EXPECT_EQ(english.split("Mr. Smith met Prof. Jones at noon. Why? Because!").sentences,
            (Strings{"Mr. Smith met Prof. Jones at noon.", "Why?", "Because!"}));
  // ... as whole words: German lists "am.", which ends "kam." too (ICU's own filter kept it whole).
  EXPECT_EQ(SentenceSplitter("de").split("Herr Dr. Müller kam. Er sagte z.B. nichts.").sentences,
            (Strings{"Herr Dr. Müller kam.", "Er sagte z.B. nichts."}));
  // One sentence, none, and a language ICU has no rules of its own for.
  EXPECT_EQ(english.split("  One sentence without its stop  ").sentences, (Strings{"One sentence without its stop"}));
  EXPECT_TRUE(english.split("   ").sentences.empty());
  EXPECT_TRUE(english.split("").sentences.empty());
  EXPECT_EQ(SentenceSplitter("").split("Ünï cödé. Ärger again.").sentences, (Strings{"Ünï cödé.", "Ärger again."}));
  EXPECT_EQ(SentenceSplitter("xx-unknown").split("A b. C d.").sentences, (Strings{"A b.", "C d."}));
}

// CLD2's guesses, then the languages served: the best of them first, a short string CLD2 cannot tell
// taken by the models' own identifier (or by the one language there is), another language named.
// /languages names each code as LibreTranslate does, in English.
TEST(Languages, CodesHaveTheirEnglishNames) {
  EXPECT_EQ(text::language_name("de"), "German");
  EXPECT_EQ(text::language_name("en"), "English");
  EXPECT_EQ(text::language_name("zh"), "Chinese");
  EXPECT_EQ(text::language_name("qq"), "qq");
}

TEST(Languages, TheLanguagesServedAreFoundAndAnotherIsNamed) {
  const std::string english = "The slow big father thinks that my man will close the book.";
  const std::string german = "Der langsame große Vater denkt, dass mein Mann das Buch schließen wird.";
  const std::string french = "Ceci est une longue phrase écrite en français, une langue que personne ne traduit.";
  const auto guessed = guess_languages(english);
  ASSERT_FALSE(guessed.guesses.empty());
  EXPECT_EQ(guessed.guesses.front().language, "en");
  EXPECT_TRUE(guessed.reliable);
  EXPECT_TRUE(guess_languages("ok").guesses.empty());

  const inference::LanguageDetector both({"en", "de"}, {});
  EXPECT_EQ(both.detect(german).front().language, "de");
  EXPECT_GT(both.detect(german).front().confidence, 50.0);
  std::string other;
  EXPECT_TRUE(both.detect(french, nullptr, &other).empty());
  EXPECT_EQ(other, "fr");
  const std::vector<std::string> only_english = {"en"};
  EXPECT_EQ(both.detect("ok", &only_english).front().language, "en");
  EXPECT_EQ(both.detect("ok", &only_english).front().confidence, 0.0);
  EXPECT_TRUE(both.detect("ok").empty()) << "two languages and nothing to tell them by";

  // The models' own identifier tells short strings apart where CLD2 cannot.
  std::map<std::string, std::vector<std::string>> lines;
  for (int i = 0; i < 50; ++i) {
    lines["en"].push_back("open the file and save the file " + std::to_string(i));
    lines["de"].push_back("öffne die Datei und speichere die Datei " + std::to_string(i));
  }
  const inference::LanguageDetector known({"en", "de"}, {metrics::LanguageId::learn(lines)});
  ASSERT_TRUE(guess_languages("die Datei").guesses.empty() || !guess_languages("die Datei").reliable);
  const auto found = known.detect("die Datei");
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().language, "de");

  // Among the languages served, the identifier decides where CLD2 is sure and wrong; CLD2 alone
  // still says when the text is in none of them.
  const std::string ui_string = "désactivation de la correspondance de motif de cone";
  ASSERT_TRUE(guess_languages(ui_string).reliable);
  ASSERT_EQ(guess_languages(ui_string).guesses.front().language, "en");
  std::map<std::string, std::vector<std::string>> ui;
  for (int i = 0; i < 50; ++i) {
    ui["fr"].push_back("désactivation de la correspondance du motif " + std::to_string(i));
    ui["fr"].push_back("le cone de la table " + std::to_string(i));
    ui["en"].push_back("disable the pattern matching of the cone " + std::to_string(i));
  }
  const inference::LanguageDetector english_french({"en", "fr"}, {metrics::LanguageId::learn(ui)});
  EXPECT_EQ(english_french.detect(ui_string).front().language, "fr");
  EXPECT_EQ(english_french.detect(english).front().language, "en");
  EXPECT_TRUE(known.detect(french, nullptr, &other).empty());
  EXPECT_EQ(other, "fr");
}

}  // namespace
}  // namespace trafo::text
