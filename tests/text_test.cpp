// Sentences of a line (text/sentences.h, ICU's sentence breaks with each language's abbreviations).
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace trafo::text
