// Nouns, adjectives, names, pronouns, adverbs and numbers of the toy language pair.
// German plurals, genders and weak masculine forms are spelled out, not derived.
#include <stdexcept>
#include <string>

#include "toy_lexicon.h"
#include "trafo/toy/toy_corpus.h"

namespace trafo::data::toy {
namespace {

constexpr Gender M = Gender::kMasculine;
constexpr Gender F = Gender::kFeminine;
constexpr Gender N = Gender::kNeuter;

constexpr uint32_t kToy = kThing | kPortable;
constexpr uint32_t kEdible = kFood | kPortable;

template <typename Entry>
const Entry& find_entry(const std::vector<Entry>& entries, std::string_view english,
                        const char* what) {
  for (const auto& entry : entries) {
    if (entry.english == english) return entry;
  }
  throw std::invalid_argument("the toy lexicon has no " + std::string(what) + " \"" +
                              std::string(english) + "\"");
}

}  // namespace

const std::vector<Noun>& nouns() {
  static const std::vector<Noun> table = {
      // People.
      {"man", "men", M, "Mann", "Männer", "", kPerson},
      {"woman", "women", F, "Frau", "Frauen", "", kPerson},
      {"child", "children", N, "Kind", "Kinder", "", kPerson},
      {"girl", "girls", N, "Mädchen", "Mädchen", "", kPerson},
      {"boy", "boys", M, "Junge", "Jungen", "Jungen", kPerson},
      {"teacher", "teachers", M, "Lehrer", "Lehrer", "", kPerson},
      {"doctor", "doctors", M, "Arzt", "Ärzte", "", kPerson},
      {"friend", "friends", M, "Freund", "Freunde", "", kPerson},
      {"baker", "bakers", M, "Bäcker", "Bäcker", "", kPerson},
      {"student", "students", M, "Student", "Studenten", "Studenten", kPerson},
      {"neighbour", "neighbours", M, "Nachbar", "Nachbarn", "Nachbarn", kPerson},
      {"farmer", "farmers", M, "Bauer", "Bauern", "Bauern", kPerson},
      {"king", "kings", M, "König", "Könige", "", kPerson},
      {"queen", "queens", F, "Königin", "Königinnen", "", kPerson},
      {"brother", "brothers", M, "Bruder", "Brüder", "", kPerson},
      {"sister", "sisters", F, "Schwester", "Schwestern", "", kPerson},
      {"mother", "mothers", F, "Mutter", "Mütter", "", kPerson},
      {"father", "fathers", M, "Vater", "Väter", "", kPerson},
      {"son", "sons", M, "Sohn", "Söhne", "", kPerson},
      {"daughter", "daughters", F, "Tochter", "Töchter", "", kPerson},
      // Animals.
      {"dog", "dogs", M, "Hund", "Hunde", "", kAnimal},
      {"cat", "cats", F, "Katze", "Katzen", "", kAnimal},
      {"horse", "horses", N, "Pferd", "Pferde", "", kAnimal},
      {"bird", "birds", M, "Vogel", "Vögel", "", kAnimal | kFlyer},
      {"duck", "ducks", F, "Ente", "Enten", "", kAnimal | kFlyer},
      {"mouse", "mice", F, "Maus", "Mäuse", "", kAnimal},
      {"cow", "cows", F, "Kuh", "Kühe", "", kAnimal},
      {"pig", "pigs", N, "Schwein", "Schweine", "", kAnimal},
      {"chicken", "chickens", N, "Huhn", "Hühner", "", kAnimal},
      {"goat", "goats", F, "Ziege", "Ziegen", "", kAnimal},
      {"frog", "frogs", M, "Frosch", "Frösche", "", kAnimal},
      {"lion", "lions", M, "Löwe", "Löwen", "Löwen", kAnimal},
      {"monkey", "monkeys", M, "Affe", "Affen", "Affen", kAnimal},
      {"bear", "bears", M, "Bär", "Bären", "Bären", kAnimal},
      {"elephant", "elephants", M, "Elefant", "Elefanten", "Elefanten", kAnimal},
      {"rabbit", "rabbits", M, "Hase", "Hasen", "Hasen", kAnimal},
      // Things.
      {"book", "books", N, "Buch", "Bücher", "", kToy | kOpenable | kReadable | kWritable},
      {"letter", "letters", M, "Brief", "Briefe", "", kToy | kOpenable | kReadable | kWritable},
      {"newspaper", "newspapers", F, "Zeitung", "Zeitungen", "", kToy | kReadable},
      {"ball", "balls", M, "Ball", "Bälle", "", kToy},
      {"car", "cars", N, "Auto", "Autos", "", kThing | kVehicle},
      {"bicycle", "bicycles", N, "Fahrrad", "Fahrräder", "", kThing | kVehicle},
      {"boat", "boats", N, "Boot", "Boote", "", kThing | kVehicle | kBuildable},
      {"train", "trains", M, "Zug", "Züge", "", kThing | kVehicle},
      {"house", "houses", N, "Haus", "Häuser", "", kThing | kBuildable},
      {"table", "tables", M, "Tisch", "Tische", "", kThing | kBuildable},
      {"chair", "chairs", M, "Stuhl", "Stühle", "", kToy | kBuildable},
      {"door", "doors", F, "Tür", "Türen", "", kThing | kOpenable},
      {"window", "windows", N, "Fenster", "Fenster", "", kThing | kOpenable},
      {"key", "keys", M, "Schlüssel", "Schlüssel", "", kToy},
      {"bag", "bags", F, "Tasche", "Taschen", "", kToy | kOpenable | kContainer},
      {"box", "boxes", F, "Kiste", "Kisten", "", kToy | kOpenable | kContainer | kBuildable},
      {"bottle", "bottles", F, "Flasche", "Flaschen", "", kToy | kOpenable | kContainer},
      {"cup", "cups", F, "Tasse", "Tassen", "", kToy | kContainer},
      {"plate", "plates", M, "Teller", "Teller", "", kToy},
      {"spoon", "spoons", M, "Löffel", "Löffel", "", kToy},
      {"pen", "pens", M, "Stift", "Stifte", "", kToy},
      {"lamp", "lamps", F, "Lampe", "Lampen", "", kToy},
      {"clock", "clocks", F, "Uhr", "Uhren", "", kToy},
      {"picture", "pictures", N, "Bild", "Bilder", "", kToy},
      {"flower", "flowers", F, "Blume", "Blumen", "", kToy},
      {"stone", "stones", M, "Stein", "Steine", "", kToy},
      {"tree", "trees", M, "Baum", "Bäume", "", kThing},
      {"gift", "gifts", N, "Geschenk", "Geschenke", "", kToy | kOpenable},
      {"hat", "hats", M, "Hut", "Hüte", "", kToy | kClothes},
      {"shoe", "shoes", M, "Schuh", "Schuhe", "", kToy | kClothes},
      {"jacket", "jackets", F, "Jacke", "Jacken", "", kToy | kClothes},
      {"song", "songs", N, "Lied", "Lieder", "", kSong | kWritable},
      {"story", "stories", F, "Geschichte", "Geschichten", "", kStory | kReadable | kWritable},
      // Food and drink.
      {"apple", "apples", M, "Apfel", "Äpfel", "", kEdible},
      {"egg", "eggs", N, "Ei", "Eier", "", kEdible | kCookable},
      {"banana", "bananas", F, "Banane", "Bananen", "", kEdible},
      {"pear", "pears", F, "Birne", "Birnen", "", kEdible},
      {"tomato", "tomatoes", F, "Tomate", "Tomaten", "", kEdible | kCookable},
      {"carrot", "carrots", F, "Karotte", "Karotten", "", kEdible | kCookable},
      {"sausage", "sausages", F, "Wurst", "Würste", "", kEdible | kCookable},
      {"cake", "cakes", M, "Kuchen", "Kuchen", "", kEdible | kBaked},
      {"biscuit", "biscuits", M, "Keks", "Kekse", "", kEdible | kBaked},
      {"bread", "", N, "Brot", "", "", kEdible | kBaked | kMass},
      {"soup", "", F, "Suppe", "", "", kFood | kCookable | kMass},
      {"cheese", "", M, "Käse", "", "", kEdible | kMass},
      {"milk", "", F, "Milch", "", "", kDrink | kMass},
      {"water", "", N, "Wasser", "", "", kDrink | kMass},
      {"coffee", "", M, "Kaffee", "", "", kDrink | kMass},
      {"tea", "", M, "Tee", "", "", kDrink | kMass},
      {"juice", "", M, "Saft", "", "", kDrink | kMass},
  };
  return table;
}

const std::vector<Adjective>& adjectives() {
  constexpr uint32_t kTale = kSong | kStory;
  static const std::vector<Adjective> table = {
      {"beautiful", "schön", 0, kAnimate | kThing | kTale},
      {"funny", "lustig", 0, kAnimate | kTale},
      {"sad", "traurig", 0, kAnimate | kTale},
      {"clever", "klug", 0, kAnimate},
      {"friendly", "freundlich", 0, kAnimate},
      {"happy", "glücklich", 0, kAnimate},
      {"hungry", "hungrig", 0, kAnimate},
      {"tired", "müde", 0, kAnimate},
      {"sick", "krank", 0, kAnimate},
      {"strong", "stark", 0, kAnimate},
      {"rich", "reich", 0, kPerson},
      {"loud", "laut", 0, kAnimate},
      {"quiet", "ruhig", 0, kAnimate},
      {"fast", "schnell", 0, kAnimate | kVehicle},
      {"slow", "langsam", 0, kAnimate | kVehicle},
      {"cheap", "billig", 0, kThing},
      {"clean", "sauber", 0, kThing | kAnimal},
      {"dirty", "schmutzig", 0, kThing | kAnimal},
      {"heavy", "schwer", 0, kPortable},
      {"empty", "leer", 0, kContainer},
      {"full", "voll", 0, kContainer},
      {"long", "lang", 0, kTale},
      {"short", "kurz", 0, kTale},
      {"fresh", "frisch", 0, kFood},
      {"sweet", "süß", 0, kFood},
      {"cold", "kalt", 0, kFood | kDrink},
      {"warm", "warm", 0, kFood | kDrink},
      {"hot", "heiß", 0, kFood | kDrink},
      {"small", "klein", 1, kAnimate | kThing},
      {"big", "groß", 1, kAnimate | kThing},
      {"old", "alt", 2, kAnimate | kThing | kTale},
      {"young", "jung", 2, kAnimate},
      {"new", "neu", 2, kThing | kTale},
      {"red", "rot", 3, kThing},
      {"blue", "blau", 3, kThing},
      {"green", "grün", 3, kThing},
      {"yellow", "gelb", 3, kThing},
      {"black", "schwarz", 3, kAnimal | kThing},
      {"white", "weiß", 3, kAnimal | kThing},
      {"brown", "braun", 3, kAnimal | kThing},
  };
  return table;
}

const std::vector<PronounEntry>& pronouns() {
  using P = PronounPerson;
  static const std::vector<PronounEntry> table = {
      {"I", "ich", P::kFirst, false},   {"you", "du", P::kSecond, false},
      {"he", "er", P::kThird, false},   {"she", "sie", P::kThird, false},
      {"we", "wir", P::kFirst, true},   {"they", "sie", P::kThird, true},
  };
  return table;
}

const std::vector<std::string_view>& names() {
  static const std::vector<std::string_view> table = {
      "Anna", "Maria", "Lena",  "Sophie", "Emma",  "Laura", "Julia", "Paul",
      "Thomas", "Max", "Felix", "Jonas",  "Lukas", "Peter", "David", "Jan",
  };
  return table;
}

const std::vector<Adverb>& adverbs() {
  static const std::vector<Adverb> table = {
      {"today", "heute",
       tense_bit(Tense::kPresent) | tense_bit(Tense::kPast) | tense_bit(Tense::kPerfect) | tense_bit(Tense::kFuture) |
           tense_bit(Tense::kCan)},
      {"now", "jetzt", tense_bit(Tense::kPresent) | tense_bit(Tense::kPerfect) | tense_bit(Tense::kCan)},
      {"often", "oft", tense_bit(Tense::kPresent) | tense_bit(Tense::kPast) | tense_bit(Tense::kCan)},
      {"sometimes", "manchmal", tense_bit(Tense::kPresent) | tense_bit(Tense::kPast) | tense_bit(Tense::kCan)},
      {"yesterday", "gestern", tense_bit(Tense::kPast)},
      {"tomorrow", "morgen", tense_bit(Tense::kFuture)},
      {"soon", "bald", tense_bit(Tense::kFuture)},
  };
  return table;
}

const Noun& find_noun(std::string_view english) { return find_entry(nouns(), english, "noun"); }

const Adjective& find_adjective(std::string_view english) {
  return find_entry(adjectives(), english, "adjective");
}

const Verb& find_verb(std::string_view english) { return find_entry(verbs(), english, "verb"); }

const ClauseVerb& find_clause_verb(std::string_view english) {
  for (const auto& verb : clause_verbs()) {
    if (verb.forms.english == english) return verb;
  }
  throw std::invalid_argument("the toy lexicon has no verb of saying or thinking \"" +
                              std::string(english) + "\"");
}

const Adverb& find_adverb(std::string_view english) {
  return find_entry(adverbs(), english, "adverb");
}

bool is_name(std::string_view name) {
  for (const auto& known : names()) {
    if (known == name) return true;
  }
  return false;
}

std::string english_number(int number) {
  static const char* const ones[] = {
      "",        "one",     "two",       "three",    "four",     "five",    "six",
      "seven",   "eight",   "nine",      "ten",      "eleven",   "twelve",  "thirteen",
      "fourteen", "fifteen", "sixteen",  "seventeen", "eighteen", "nineteen"};
  static const char* const tens[] = {"",      "",      "twenty",  "thirty", "forty",
                                     "fifty", "sixty", "seventy", "eighty", "ninety"};
  if (number < 2 || number > 99) throw std::invalid_argument("toy numbers run from 2 to 99");
  if (number < 20) return ones[number];
  const int unit = number % 10;
  return std::string(tens[number / 10]) + (unit ? std::string("-") + ones[unit] : "");
}

std::string german_number(int number) {
  static const char* const ones[] = {
      "",         "eins",      "zwei",     "drei",      "vier",      "fünf",    "sechs",
      "sieben",   "acht",      "neun",     "zehn",      "elf",       "zwölf",   "dreizehn",
      "vierzehn", "fünfzehn",  "sechzehn", "siebzehn",  "achtzehn",  "neunzehn"};
  static const char* const tens[] = {"",        "",        "zwanzig",  "dreißig", "vierzig",
                                     "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig"};
  if (number < 2 || number > 99) throw std::invalid_argument("toy numbers run from 2 to 99");
  if (number < 20) return ones[number];
  const int unit = number % 10;
  if (unit == 0) return tens[number / 10];
  // 21 is "einundzwanzig": the unit drops its s before "und".
  return std::string(unit == 1 ? "ein" : ones[unit]) + "und" + tens[number / 10];
}

}  // namespace trafo::data::toy
