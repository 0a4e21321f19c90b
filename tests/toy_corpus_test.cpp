// The toy corpus generator: deterministic, unique across splits, grammatical by its own
// rules (verb-final subordinate clauses, verb second, verb-first questions), hand-checked
// gold pairs, and the "needs attention" numbers of data/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.h"
#include "trafo/toy/toy_corpus.h"
#include "trafo/errors.h"
#include "trafo/metrics/bleu.h"

namespace trafo::data {
namespace {

// --- Building sentences by hand. ---

NounPhrase noun(Determiner determiner, std::string word, std::vector<std::string> adjectives = {},
                bool plural = false) {
  NounPhrase phrase;
  phrase.word = std::move(word);
  phrase.determiner = determiner;
  phrase.adjectives = std::move(adjectives);
  phrase.plural = plural;
  return phrase;
}
NounPhrase the(std::string word, std::vector<std::string> adjectives = {}) {
  return noun(Determiner::kThe, std::move(word), std::move(adjectives));
}
NounPhrase a(std::string word, std::vector<std::string> adjectives = {}) {
  return noun(Determiner::kA, std::move(word), std::move(adjectives));
}
NounPhrase plural(Determiner determiner, std::string word,
                  std::vector<std::string> adjectives = {}) {
  return noun(determiner, std::move(word), std::move(adjectives), true);
}
NounPhrase counted(int count, std::string word, std::vector<std::string> adjectives = {}) {
  NounPhrase phrase = noun(Determiner::kNumber, std::move(word), std::move(adjectives), true);
  phrase.count = count;
  return phrase;
}
NounPhrase name(std::string word) {
  NounPhrase phrase;
  phrase.kind = NounPhrase::Kind::kName;
  phrase.word = std::move(word);
  return phrase;
}
NounPhrase pronoun(Pronoun which) {
  NounPhrase phrase;
  phrase.kind = NounPhrase::Kind::kPronoun;
  phrase.pronoun = which;
  return phrase;
}

struct C {
  Clause clause;
  C(NounPhrase subject, std::string verb) {
    clause.subject = std::move(subject);
    clause.verb = std::move(verb);
  }
  C& object(NounPhrase phrase) { return clause.object = std::move(phrase), *this; }
  C& to(NounPhrase phrase) { return clause.recipient = std::move(phrase), *this; }
  C& with(NounPhrase phrase) { return clause.companion = std::move(phrase), *this; }
  C& is(std::string adjective) { return clause.predicate = std::move(adjective), *this; }
  C& tense(Tense tense) { return clause.tense = tense, *this; }
  C& negated() { return clause.negated = true, *this; }
};

struct S {
  Sentence sentence;
  S(const C& main) { sentence.main = main.clause; }  // NOLINT: implicit on purpose
  S& adverb(std::string word) { return sentence.adverb = std::move(word), *this; }
  S& question() { return sentence.question = true, *this; }
  S& joined(Connective connective, const C& subordinate) {
    sentence.connective = connective;
    sentence.subordinate = subordinate.clause;
    return *this;
  }
  S& because(const C& clause) { return joined(Connective::kBecause, clause); }
  S& although(const C& clause) { return joined(Connective::kAlthough, clause); }
  S& when(const C& clause) { return joined(Connective::kIf, clause); }
  S& that(const C& clause) { return joined(Connective::kThat, clause); }
  S& first() { return sentence.subordinate_first = true, *this; }
};

struct Gold {
  Sentence sentence;
  std::string english;
  std::string german;
};

// Hand-checked pairs: each German sentence was read for agreement, case and word order.
std::vector<Gold> gold_pairs() {
  using D = Determiner;
  using P = Pronoun;
  using T = Tense;
  return {
      {S(C(the("man"), "see").object(the("dog"))).sentence, "The man sees the dog.",
       "Der Mann sieht den Hund."},
      {S(C(the("woman"), "give").object(the("ball")).to(the("child"))).sentence,
       "The woman gives the ball to the child.", "Die Frau gibt dem Kind den Ball."},
      {S(C(the("man"), "see").object(the("dog"))).adverb("today").sentence,
       "Today the man sees the dog.", "Heute sieht der Mann den Hund."},
      {S(C(the("man"), "see").object(the("dog")).tense(T::kPerfect)).sentence,
       "The man has seen the dog.", "Der Mann hat den Hund gesehen."},
      {S(C(the("child"), "go").with(the("dog")).tense(T::kPerfect)).sentence,
       "The child has gone with the dog.", "Das Kind ist mit dem Hund gegangen."},
      {S(C(the("man"), "see").object(the("dog")).negated()).sentence,
       "The man does not see the dog.", "Der Mann sieht den Hund nicht."},
      {S(C(the("man"), "see").object(a("dog")).negated()).sentence,
       "The man does not see a dog.", "Der Mann sieht keinen Hund."},
      {S(C(the("man"), "see").object(the("dog"))).question().sentence,
       "Does the man see the dog?", "Sieht der Mann den Hund?"},
      {S(C(the("man"), "laugh")).because(C(the("dog"), "sleep")).sentence,
       "The man laughs because the dog sleeps.", "Der Mann lacht, weil der Hund schläft."},
      {S(C(name("Anna"), "say"))
           .that(C(the("man"), "see").object(the("dog")).tense(T::kPerfect))
           .sentence,
       "Anna says that the man has seen the dog.",
       "Anna sagt, dass der Mann den Hund gesehen hat."},
      {S(C(the("child"), "play").tense(T::kCan).negated())
           .because(C(the("dog"), "be").is("tired"))
           .first()
           .sentence,
       "Because the dog is tired, the child cannot play.",
       "Weil der Hund müde ist, kann das Kind nicht spielen."},
      {S(C(counted(3, "dog", {"small"}), "play").with(a("ball", {"red"}))).sentence,
       "Three small dogs play with a red ball.", "Drei kleine Hunde spielen mit einem roten Ball."},
      {S(C(the("woman", {"old"}), "read").object(a("book", {"new"}))).sentence,
       "The old woman reads a new book.", "Die alte Frau liest ein neues Buch."},
      {S(C(a("man", {"young"}), "buy").object(the("cat", {"small", "black"}))).sentence,
       "A young man buys the small black cat.", "Ein junger Mann kauft die kleine schwarze Katze."},
      {S(C(plural(D::kThe, "child"), "feed")
             .object(plural(D::kThe, "horse", {"hungry"}))
             .tense(T::kFuture))
           .sentence,
       "The children will feed the hungry horses.",
       "Die Kinder werden die hungrigen Pferde füttern."},
      {S(C(pronoun(P::kI), "be").is("tired")).sentence, "I am tired.", "Ich bin müde."},
      {S(C(pronoun(P::kYou), "drink").object(the("milk", {"cold"})).negated()).sentence,
       "You do not drink the cold milk.", "Du trinkst die kalte Milch nicht."},
      {S(C(pronoun(P::kWe), "travel").with(plural(D::kOur, "friend")).tense(T::kPerfect))
           .sentence,
       "We have travelled with our friends.", "Wir sind mit unseren Freunden gereist."},
      {S(C(name("Paul"), "see").object(counted(21, "bird")).tense(T::kPast))
           .adverb("yesterday")
           .sentence,
       "Yesterday Paul saw twenty-one birds.", "Gestern hat Paul einundzwanzig Vögel gesehen."},
      {S(C(the("girl"), "eat").object(the("apple")).tense(T::kPast)).question().sentence,
       "Did the girl eat the apple?", "Hat das Mädchen den Apfel gegessen?"},
      {S(C(the("teacher"), "show").object(the("picture")).to(the("boy"))).sentence,
       "The teacher shows the picture to the boy.", "Der Lehrer zeigt dem Jungen das Bild."},
      {S(C(the("doctor"), "give").object(plural(D::kNone, "apple")).to(the("horse")).negated())
           .sentence,
       "The doctor does not give any apples to the horse.", "Der Arzt gibt dem Pferd keine Äpfel."},
      {S(C(name("Maria"), "know")).that(C(the("dog"), "be").is("small").negated()).sentence,
       "Maria knows that the dog is not small.", "Maria weiß, dass der Hund nicht klein ist."},
      {S(C(the("cat"), "sleep")).although(C(the("dog"), "be").is("loud")).sentence,
       "The cat sleeps although the dog is loud.", "Die Katze schläft, obwohl der Hund laut ist."},
      {S(C(the("mother"), "sing").tense(T::kFuture)).when(C(the("child"), "laugh")).first()
           .sentence,
       "If the child laughs, the mother will sing.",
       "Wenn das Kind lacht, wird die Mutter singen."},
      {S(C(noun(D::kThis, "student"), "write").object(the("letter")).tense(T::kPerfect).negated())
           .sentence,
       "This student has not written the letter.",
       "Dieser Student hat den Brief nicht geschrieben."},
      {S(C(plural(D::kThis, "woman"), "be").is("happy")).sentence, "These women are happy.",
       "Diese Frauen sind glücklich."},
      {S(C(noun(D::kMy, "brother"), "open").object(the("door")).tense(T::kCan)).sentence,
       "My brother can open the door.", "Mein Bruder kann die Tür öffnen."},
      {S(C(noun(D::kOur, "neighbour"), "meet").object(the("king")).tense(T::kPerfect)).sentence,
       "Our neighbour has met the king.", "Unser Nachbar hat den König getroffen."},
      {S(C(pronoun(P::kShe), "run").with(a("elephant", {"big"}))).sentence,
       "She runs with a big elephant.", "Sie läuft mit einem großen Elefanten."},
      {S(C(pronoun(P::kThey), "come").tense(T::kFuture).negated()).sentence,
       "They will not come.", "Sie werden nicht kommen."},
      {S(C(the("coffee"), "be").is("hot")).question().sentence, "Is the coffee hot?",
       "Ist der Kaffee heiß?"},
      {S(C(the("bread"), "be").is("fresh").tense(T::kPast)).sentence, "The bread was fresh.",
       "Das Brot war frisch."},
      {S(C(plural(D::kThe, "dog"), "be").is("hungry").tense(T::kPerfect)).sentence,
       "The dogs have been hungry.", "Die Hunde sind hungrig gewesen."},
      {S(C(the("baker"), "bake").object(a("cake"))).adverb("often").sentence,
       "Often the baker bakes a cake.", "Oft backt der Bäcker einen Kuchen."},
      {S(C(pronoun(P::kHe), "play").with(plural(D::kThe, "child")).negated()).sentence,
       "He does not play with the children.", "Er spielt nicht mit den Kindern."},
      {S(C(the("man"), "think")).that(C(counted(99, "mouse"), "be").is("small")).sentence,
       "The man thinks that ninety-nine mice are small.",
       "Der Mann denkt, dass neunundneunzig Mäuse klein sind."},
      {S(C(pronoun(P::kWe), "visit").object(name("Anna")).tense(T::kFuture))
           .adverb("tomorrow")
           .sentence,
       "Tomorrow we will visit Anna.", "Morgen werden wir Anna besuchen."},
      {S(C(the("father"), "be").is("tired"))
           .because(C(plural(D::kThe, "child"), "sleep").tense(T::kPerfect).negated())
           .first()
           .sentence,
       "Because the children have not slept, the father is tired.",
       "Weil die Kinder nicht geschlafen haben, ist der Vater müde."},
      {S(C(name("Lena"), "look for").object(plural(D::kThe, "key"))).question().sentence,
       "Does Lena look for the keys?", "Sucht Lena die Schlüssel?"},
      {S(C(the("woman"), "tell").object(a("story", {"funny"})).to(plural(D::kThe, "child")))
           .sentence,
       "The woman tells a funny story to the children.",
       "Die Frau erzählt den Kindern eine lustige Geschichte."},
      {S(C(the("girl"), "swim").tense(T::kPerfect)).question().sentence, "Has the girl swum?",
       "Ist das Mädchen geschwommen?"},
      {S(C(the("man"), "find").object(the("key", {"small"})).tense(T::kCan).negated()).sentence,
       "The man cannot find the small key.", "Der Mann kann den kleinen Schlüssel nicht finden."},
      {S(C(pronoun(P::kI), "see").object(plural(D::kNone, "bird", {"small"})).negated()).sentence,
       "I do not see any small birds.", "Ich sehe keine kleinen Vögel."},
      {S(C(the("woman"), "see").object(a("elephant", {"old"}))).sentence,
       "The woman sees an old elephant.", "Die Frau sieht einen alten Elefanten."},
      {S(C(the("child"), "play").with(a("ball", {"beautiful", "small"}))).sentence,
       "The child plays with a beautiful small ball.",
       "Das Kind spielt mit einem schönen kleinen Ball."},
      {S(C(the("horse", {"white"}), "run")).adverb("now").sentence, "Now the white horse runs.",
       "Jetzt läuft das weiße Pferd."},
      {S(C(pronoun(P::kYou), "read")).sentence, "You read.", "Du liest."},
      {S(C(noun(D::kMy, "daughter"), "open").object(a("bottle")).tense(T::kPast).negated())
           .sentence,
       "My daughter did not open a bottle.", "Meine Tochter hat keine Flasche geöffnet."},
      {S(C(the("cow"), "be").is("tired").tense(T::kFuture)).question().sentence,
       "Will the cow be tired?", "Wird die Kuh müde sein?"},
      {S(C(pronoun(P::kI), "send").object(a("letter")).to(noun(D::kMy, "mother"))
             .tense(T::kPerfect))
           .sentence,
       "I have sent a letter to my mother.", "Ich habe meiner Mutter einen Brief geschickt."},
      {S(C(noun(D::kThis, "water"), "be").is("cold")).sentence, "This water is cold.",
       "Dieses Wasser ist kalt."},
      {S(C(plural(D::kMy, "sister"), "dance").with(the("student"))).sentence,
       "My sisters dance with the student.", "Meine Schwestern tanzen mit dem Studenten."},
      {S(C(pronoun(P::kYou), "be").is("hungry").tense(T::kPast)).adverb("yesterday").sentence,
       "Yesterday you were hungry.", "Gestern warst du hungrig."},
      {S(C(pronoun(P::kHe), "wash").object(the("car", {"dirty"})).tense(T::kCan)).sentence,
       "He can wash the dirty car.", "Er kann das schmutzige Auto waschen."},
      {S(C(the("king"), "stay")).because(C(the("queen"), "be").is("sick")).sentence,
       "The king stays because the queen is sick.",
       "Der König bleibt, weil die Königin krank ist."},
      {S(C(pronoun(P::kWe), "eat"))
           .although(C(plural(D::kThe, "tomato"), "be").is("cold").tense(T::kPast))
           .sentence,
       "We eat although the tomatoes were cold.", "Wir essen, obwohl die Tomaten kalt waren."},
      {S(C(pronoun(P::kI), "be").is("clever")).question().sentence, "Am I clever?",
       "Bin ich klug?"},
      {S(C(name("Max"), "say").tense(T::kPast))
           .that(C(pronoun(P::kShe), "fly").tense(T::kPerfect))
           .sentence,
       "Max said that she has flown.", "Max hat gesagt, dass sie geflogen ist."},
      {S(C(the("child"), "wait").with(noun(D::kOur, "cat"))).sentence,
       "The child waits with our cat.", "Das Kind wartet mit unserer Katze."},
  };
}

std::vector<std::string> split_words(std::string text) {
  for (auto& c : text) {
    if (c == ',' || c == '.' || c == '?') c = ' ';
  }
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

bool contains_run(const std::vector<std::string>& words, const std::vector<std::string>& run) {
  return std::search(words.begin(), words.end(), run.begin(), run.end()) != words.end();
}

bool one_of(const std::string& word, const std::set<std::string>& choices) {
  return choices.count(word) > 0;
}

const std::set<std::string> kPerfectAuxiliaries = {"habe", "hast", "hat", "haben",
                                                   "bin",  "bist", "ist", "sind"};
const std::set<std::string> kFutureAuxiliaries = {"werde", "wirst", "wird", "werden"};
const std::set<std::string> kCanAuxiliaries = {"kann", "kannst", "können"};

#ifdef TRAFO_SOURCE_DIR
std::string read_readme() {
  std::ifstream in(std::filesystem::path(TRAFO_SOURCE_DIR) / "data" / "README.md");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
#endif

// --- Tests. ---

TEST(ToyCorpus, GoldPairsAreRenderedExactly) {
  const auto gold = gold_pairs();
  EXPECT_GE(gold.size(), 50u);
  for (const auto& pair : gold) {
    const ToySample sample = render_toy_sentence(pair.sentence);
    EXPECT_EQ(sample.pair.source, pair.english);
    EXPECT_EQ(sample.pair.target, pair.german) << "for " << pair.english;
  }
}

TEST(ToyCorpus, SameSeedSameCorpusOtherSeedOtherCorpus) {
  const ToyCorpusOptions options{300, 50, 50, 7};
  const ToySplits first = generate_toy_corpus(options);
  const ToySplits again = generate_toy_corpus(options);
  ToyCorpusOptions other_seed = options;
  other_seed.seed = 8;
  const ToySplits other = generate_toy_corpus(other_seed);
  auto sources = [](const std::vector<SentencePair>& pairs) {
    std::vector<std::string> result;
    for (const auto& pair : pairs) result.push_back(pair.source + "\t" + pair.target);
    return result;
  };
  EXPECT_EQ(sources(first.train), sources(again.train));
  EXPECT_EQ(sources(first.dev), sources(again.dev));
  EXPECT_EQ(sources(first.test), sources(again.test));
  EXPECT_EQ(first.train_reordered, again.train_reordered);
  EXPECT_NE(sources(first.train), sources(other.train));
  EXPECT_NE(sources(first.test), sources(other.test));
}

TEST(ToyCorpus, CountsAndNoSentenceTwice) {
  const ToySplits splits = generate_toy_corpus({2000, 300, 300, 1});
  ASSERT_EQ(splits.train.size(), 2000u);
  ASSERT_EQ(splits.dev.size(), 300u);
  ASSERT_EQ(splits.test.size(), 300u);
  std::set<std::string> sources;
  for (const auto* split : {&splits.train, &splits.dev, &splits.test}) {
    for (const auto& pair : *split) {
      EXPECT_TRUE(sources.insert(pair.source).second) << "twice: " << pair.source;
      const size_t english_words = split_words(pair.source).size();
      const size_t german_words = split_words(pair.target).size();
      EXPECT_TRUE(english_words >= 2 && english_words <= 20) << pair.source;
      EXPECT_TRUE(german_words >= 2 && german_words <= 20) << pair.target;
      EXPECT_EQ(pair.source.find('\n'), std::string::npos);
    }
  }
}

TEST(ToyCorpus, DevAndTestDoNotDependOnTrainSize) {
  const ToySplits small = generate_toy_corpus({10, 100, 100, 3});
  const ToySplits large = generate_toy_corpus({3000, 100, 100, 3});
  for (size_t i = 0; i < small.test.size(); ++i) {
    EXPECT_EQ(small.dev[i].source, large.dev[i].source);
    EXPECT_EQ(small.test[i].source, large.test[i].source);
  }
}

TEST(ToyCorpus, SubordinateClausesEndWithTheFiniteVerb) {
  int checked = 0;
  for (const auto& sample : sample_toy_sentences(11, 4000)) {
    const auto words = split_words(sample.pair.target);
    for (const auto& clause : sample.german_clauses) {
      ASSERT_TRUE(contains_run(words, clause.words)) << sample.pair.target;
      if (!clause.subordinate) continue;
      ++checked;
      EXPECT_TRUE(one_of(clause.words.front(),
                         {"weil", "Weil", "obwohl", "Obwohl", "wenn", "Wenn", "dass"}))
          << sample.pair.target;
      EXPECT_EQ(clause.words.back(), clause.finite_verb) << sample.pair.target;
      if (!clause.nonfinite_verb.empty()) {
        EXPECT_EQ(clause.words[clause.words.size() - 2], clause.nonfinite_verb)
            << sample.pair.target;
      }
      const Clause& subordinate = *sample.sentence.subordinate;
      switch (subordinate.tense) {
        case Tense::kPast:  // "weil der Hund müde war", "weil der Mann den Hund gesehen hat"
          EXPECT_TRUE(one_of(clause.words.back(), subordinate.verb == "be"
                                                      ? std::set<std::string>{"war", "warst",
                                                                              "waren"}
                                                      : kPerfectAuxiliaries))
              << sample.pair.target;
          break;
        case Tense::kPerfect:
          EXPECT_TRUE(one_of(clause.words.back(), kPerfectAuxiliaries)) << sample.pair.target;
          break;
        case Tense::kFuture:
          EXPECT_TRUE(one_of(clause.words.back(), kFutureAuxiliaries)) << sample.pair.target;
          break;
        case Tense::kCan:
          EXPECT_TRUE(one_of(clause.words.back(), kCanAuxiliaries)) << sample.pair.target;
          break;
        case Tense::kPresent: break;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(ToyCorpus, MainClausesPutTheVerbSecondOrFirst) {
  int perfect = 0, fronted = 0, questions = 0;
  for (const auto& sample : sample_toy_sentences(12, 4000)) {
    const Sentence& sentence = sample.sentence;
    const auto& main = sentence.subordinate_first ? sample.german_clauses[1]
                                                  : sample.german_clauses[0];
    ASSERT_FALSE(main.subordinate);
    if (sentence.question) {
      ++questions;
      EXPECT_EQ(main.words.front(), main.finite_verb) << sample.pair.target;
      EXPECT_EQ(sample.pair.target.back(), '?');
      EXPECT_EQ(sample.pair.source.back(), '?');
      EXPECT_TRUE(one_of(split_words(sample.pair.source).front(),
                         {"Do", "Does", "Did", "Has", "Have", "Will", "Can", "Am", "Is", "Are",
                          "Was", "Were"}))
          << sample.pair.source;
    } else if (!sentence.adverb.empty()) {
      ++fronted;  // "Heute sieht der Mann den Hund": the verb right after the adverb.
      EXPECT_EQ(main.words[1], main.finite_verb) << sample.pair.target;
    } else if (sentence.subordinate_first) {
      EXPECT_EQ(main.words.front(), main.finite_verb) << sample.pair.target;
    }
    // The participle or infinitive closes the main clause ("hat den Hund gesehen"), before
    // an extraposed dass-clause.
    if (!main.nonfinite_verb.empty()) {
      EXPECT_EQ(main.words.back(), main.nonfinite_verb) << sample.pair.target;
      perfect += sentence.main.tense == Tense::kPerfect ? 1 : 0;
    }
  }
  EXPECT_GT(perfect, 200);
  EXPECT_GT(fronted, 200);
  EXPECT_GT(questions, 200);
}

TEST(ToyCorpus, EnglishUsesDoSupportForNegation) {
  for (const auto& sample : sample_toy_sentences(13, 3000)) {
    const Clause& main = sample.sentence.main;
    if (sample.sentence.question || !main.negated || main.verb == "be" ||
        sample.sentence.subordinate_first || main.tense != Tense::kPresent) {
      continue;
    }
    const std::string& english = sample.pair.source;
    EXPECT_TRUE(english.find(" does not ") != std::string::npos ||
                english.find(" do not ") != std::string::npos)
        << english;
  }
}

TEST(ToyCorpus, BaselineDiffersFromReorderedReferences) {
  int reordered = 0;
  for (const auto& sample : sample_toy_sentences(14, 2000)) {
    if (!sample.reordered) continue;
    ++reordered;
    EXPECT_NE(word_for_word_baseline(sample.pair.source), sample.pair.target)
        << sample.pair.source;
  }
  EXPECT_GT(reordered, 1000);
  EXPECT_EQ(word_for_word_baseline("The man sleeps."), "Der Mann schläft.");
  EXPECT_EQ(word_for_word_baseline("Today the man does not see the dog."),
            "Heute der Mann nicht sehen der Hund.");
}

// The numbers data/README.md reports: BLEU of the word-for-word baseline and the share of
// reordered pairs on the default test set (seed 1).
TEST(ToyCorpus, DefaultTestSetNeedsAttention) {
  ToyCorpusOptions options;
  options.train = 0;  // dev and test do not depend on it
  const ToySplits splits = generate_toy_corpus(options);
  std::vector<std::string> baseline, references;
  for (const auto& pair : splits.test) {
    baseline.push_back(word_for_word_baseline(pair.source));
    references.push_back(pair.target);
  }
  const double bleu = metrics::corpus_bleu(baseline, {references}).score;
  const double share = 100.0 * static_cast<double>(splits.test_reordered) /
                       static_cast<double>(splits.test.size());
  std::printf("word-for-word baseline BLEU %.1f, reordered %.1f%% of the test set\n", bleu,
              share);
  EXPECT_LT(bleu, 30.0);
  EXPECT_GT(share, 60.0);
#ifdef TRAFO_SOURCE_DIR
  const std::string readme = read_readme();
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "| %.1f%% (train:", share);
  EXPECT_NE(readme.find(numbers), std::string::npos) << "data/README.md should say " << numbers;
  std::snprintf(numbers, sizeof numbers, "| %.1f (chrF", bleu);
  EXPECT_NE(readme.find(numbers), std::string::npos) << "data/README.md should say " << numbers;
#endif
}

#ifdef TRAFO_SOURCE_DIR
TEST(ToyCorpus, ReadmeListsTheGoldPairsAndNumbers) {
  const std::string readme = read_readme();
  for (const auto& pair : gold_pairs()) {
    const std::string row = "| " + pair.english + " | " + pair.german + " |";
    EXPECT_NE(readme.find(row), std::string::npos) << "data/README.md lacks " << row;
  }
}
#endif

TEST(ToyCorpus, RejectsBadOptionsAndStructures) {
  EXPECT_THROW(generate_toy_corpus({-1, 10, 10, 1}), InputError);
  EXPECT_THROW(generate_toy_corpus({10, -1, 10, 1}), InputError);
  EXPECT_THROW(generate_toy_corpus({kMaxToyCorpusPairs, 1, 0, 1}), InputError);
  auto render = [](const S& sentence) { return render_toy_sentence(sentence.sentence); };
  const NounPhrase a_dogs = noun(Determiner::kA, "dog", {}, true);
  EXPECT_THROW(render(S(C(the("man"), "see").object(a_dogs))), std::invalid_argument);
  EXPECT_THROW(render(S(C(the("man"), "see").object(pronoun(Pronoun::kI)))),
               std::invalid_argument);
  EXPECT_THROW(render(S(C(the("man"), "see").object(the("unicorn")))), std::invalid_argument);
  EXPECT_THROW(render(S(C(the("man"), "sleep").object(the("dog")))), std::invalid_argument);
  EXPECT_THROW(render(S(C(the("milk"), "be").is("cold").tense(Tense::kCan))),
               std::invalid_argument);
  EXPECT_THROW(render(S(C(the("man"), "see").object(counted(3, "dog")).negated())),
               std::invalid_argument);
  EXPECT_THROW(render(S(C(the("man"), "see").object(the("dog")).tense(Tense::kPast))
                          .adverb("tomorrow")),
               std::invalid_argument);
}

TEST(ToyCorpus, WritesSixFilesOneSentenceALine) {
  const auto dir = trafo::testing::make_temp_dir("toy-corpus");
  write_toy_corpus(dir / "toy", {40, 5, 6, 2});
  auto lines = [](const std::filesystem::path& path) {
    std::ifstream in(path);
    int count = 0;
    for (std::string line; std::getline(in, line);) ++count;
    return count;
  };
  EXPECT_EQ(lines(dir / "toy" / "train.en"), 40);
  EXPECT_EQ(lines(dir / "toy" / "train.de"), 40);
  EXPECT_EQ(lines(dir / "toy" / "dev.en"), 5);
  EXPECT_EQ(lines(dir / "toy" / "dev.de"), 5);
  EXPECT_EQ(lines(dir / "toy" / "test.en"), 6);
  EXPECT_EQ(lines(dir / "toy" / "test.de"), 6);
  // A folder that cannot be made: its parent is a file.
  EXPECT_THROW(write_toy_corpus(dir / "toy" / "train.en" / "sub", {1, 1, 1, 1}), InputError);
}

TEST(ToyReferenceAlignment, LinksTheContentWordsItIsSureOf) {
  using Links = std::vector<std::pair<int, int>>;
  EXPECT_EQ(toy_reference_alignment("Anna sees the small dog.", "Anna sieht den kleinen Hund."),
            (Links{{0, 0}, {1, 1}, {3, 3}, {4, 4}}));
  // A word twice on a side is left out; function words are never linked.
  EXPECT_EQ(toy_reference_alignment("The dog sees the dog.", "Der Hund sieht den Hund."), (Links{{2, 2}}));
  EXPECT_TRUE(toy_reference_alignment("", "").empty());
}

// toy-corpus --alignments writes, for each pair of each split, the reference alignment as Pharaoh.
TEST(ToyReferenceAlignment, TheCommandWritesItForEverySplit) {
  const auto dir = trafo::testing::make_temp_dir("toy-align");
  const auto made = trafo::testing::run_trafo("toy-corpus --out '" + (dir / "toy").string() +
                                              "' --train 30 --dev 4 --test 5 --alignments");
  ASSERT_EQ(made.exit_code, 0) << made.errors;
  const auto lines = [&](const std::string& name) {
    std::ifstream in(dir / "toy" / name);
    std::vector<std::string> all;
    for (std::string line; std::getline(in, line);) all.push_back(line);
    return all;
  };
  size_t links = 0;
  for (const std::string split : {"train", "dev", "test"}) {
    const auto en = lines(split + ".en"), de = lines(split + ".de"), align = lines(split + ".align");
    ASSERT_EQ(align.size(), en.size()) << split;
    for (size_t i = 0; i < en.size(); ++i) {
      std::string expected;
      for (const auto& [s, t] : toy_reference_alignment(en[i], de[i])) {
        expected += (expected.empty() ? "" : " ") + std::to_string(s) + "-" + std::to_string(t);
        ++links;
      }
      EXPECT_EQ(align[i], expected) << split << " line " << i;
    }
  }
  EXPECT_GT(links, 39u);
  // Without the flag, no .align file is written or in the way.
  const auto plain = trafo::testing::run_trafo("toy-corpus --out '" + (dir / "plain").string() + "' --train 3 --dev 1 --test 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.errors;
  EXPECT_FALSE(std::filesystem::exists(dir / "plain" / "train.align"));
}

}  // namespace
}  // namespace trafo::data
