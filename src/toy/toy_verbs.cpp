// The verbs of the toy language pair. Each row: English base, 3rd singular, past,
// participle; German infinitive (also the plural), ich, du, er/sie/es, participle; the
// auxiliary of the German perfect; frames; and the tags of subjects, objects, recipients
// and companions ("with ...") it takes.
#include "toy_lexicon.h"

namespace trafo::data::toy {
namespace {

constexpr Auxiliary H = Auxiliary::kHaben;
constexpr Auxiliary S = Auxiliary::kSein;
constexpr uint32_t kI = kIntransitive;
constexpr uint32_t kT = kTransitive;
constexpr uint32_t kD = kDitransitive;

}  // namespace

const std::vector<Verb>& verbs() {
  static const std::vector<Verb> table = {
      // Transitive verbs, some of which may also stand alone ("the woman reads").
      {"see", "sees", "saw", "seen", "sehen", "sehe", "siehst", "sieht", "gesehen", H, kT,
       kAnimate, kAnimate | kThing | kFood, 0, 0},
      {"find", "finds", "found", "found", "finden", "finde", "findest", "findet", "gefunden", H,
       kT, kAnimate, kAnimate | kPortable, 0, 0},
      {"look for", "looks for", "looked for", "looked for", "suchen", "suche", "suchst", "sucht",
       "gesucht", H, kT, kAnimate, kAnimate | kPortable, 0, 0},
      {"buy", "buys", "bought", "bought", "kaufen", "kaufe", "kaufst", "kauft", "gekauft", H, kT,
       kPerson, kAnimal | kThing | kFood | kDrink, 0, 0},
      {"sell", "sells", "sold", "sold", "verkaufen", "verkaufe", "verkaufst", "verkauft",
       "verkauft", H, kT, kPerson, kAnimal | kThing | kFood, 0, 0},
      {"read", "reads", "read", "read", "lesen", "lese", "liest", "liest", "gelesen", H, kI | kT,
       kPerson, kReadable, 0, 0},
      {"write", "writes", "wrote", "written", "schreiben", "schreibe", "schreibst", "schreibt",
       "geschrieben", H, kI | kT, kPerson, kWritable, 0, 0},
      {"eat", "eats", "ate", "eaten", "essen", "esse", "isst", "isst", "gegessen", H, kI | kT,
       kAnimate, kFood, 0, 0},
      {"drink", "drinks", "drank", "drunk", "trinken", "trinke", "trinkst", "trinkt",
       "getrunken", H, kI | kT, kAnimate, kDrink, 0, 0},
      {"cook", "cooks", "cooked", "cooked", "kochen", "koche", "kochst", "kocht", "gekocht", H,
       kI | kT, kPerson, kCookable, 0, 0},
      {"bake", "bakes", "baked", "baked", "backen", "backe", "backst", "backt", "gebacken", H,
       kI | kT, kPerson, kBaked, 0, 0},
      {"love", "loves", "loved", "loved", "lieben", "liebe", "liebst", "liebt", "geliebt", H, kT,
       kPerson, kAnimate, 0, 0},
      {"know", "knows", "knew", "known", "kennen", "kenne", "kennst", "kennt", "gekannt", H, kT,
       kPerson, kAnimate | kSong | kStory, 0, 0},
      {"visit", "visits", "visited", "visited", "besuchen", "besuche", "besuchst", "besucht",
       "besucht", H, kT, kPerson, kPerson, 0, 0},
      {"meet", "meets", "met", "met", "treffen", "treffe", "triffst", "trifft", "getroffen", H,
       kT, kPerson, kPerson, 0, 0},
      {"ask", "asks", "asked", "asked", "fragen", "frage", "fragst", "fragt", "gefragt", H, kT,
       kPerson, kPerson, 0, 0},
      {"call", "calls", "called", "called", "rufen", "rufe", "rufst", "ruft", "gerufen", H, kT,
       kPerson, kAnimate, 0, 0},
      {"feed", "feeds", "fed", "fed", "füttern", "füttere", "fütterst", "füttert", "gefüttert", H,
       kT, kPerson, kAnimal, 0, 0},
      {"wash", "washes", "washed", "washed", "waschen", "wasche", "wäschst", "wäscht",
       "gewaschen", H, kT, kPerson, kAnimate | kVehicle | kClothes, 0, 0},
      {"paint", "paints", "painted", "painted", "malen", "male", "malst", "malt", "gemalt", H,
       kI | kT, kPerson, kAnimate | kThing, 0, 0},
      {"draw", "draws", "drew", "drawn", "zeichnen", "zeichne", "zeichnest", "zeichnet",
       "gezeichnet", H, kI | kT, kPerson, kAnimate | kThing, 0, 0},
      {"open", "opens", "opened", "opened", "öffnen", "öffne", "öffnest", "öffnet", "geöffnet", H,
       kT, kPerson, kOpenable, 0, 0},
      {"close", "closes", "closed", "closed", "schließen", "schließe", "schließt", "schließt",
       "geschlossen", H, kT, kPerson, kOpenable, 0, 0},
      {"carry", "carries", "carried", "carried", "tragen", "trage", "trägst", "trägt",
       "getragen", H, kT, kAnimate, kPortable, 0, 0},
      {"take", "takes", "took", "taken", "nehmen", "nehme", "nimmst", "nimmt", "genommen", H, kT,
       kPerson, kPortable, 0, 0},
      {"fetch", "fetches", "fetched", "fetched", "holen", "hole", "holst", "holt", "geholt", H,
       kT, kAnimate, kPortable, 0, 0},
      {"need", "needs", "needed", "needed", "brauchen", "brauche", "brauchst", "braucht",
       "gebraucht", H, kT, kPerson, kThing | kFood | kDrink, 0, 0},
      {"forget", "forgets", "forgot", "forgotten", "vergessen", "vergesse", "vergisst",
       "vergisst", "vergessen", H, kT, kPerson, kPortable | kSong | kStory, 0, 0},
      {"lose", "loses", "lost", "lost", "verlieren", "verliere", "verlierst", "verliert",
       "verloren", H, kT, kPerson, kPortable, 0, 0},
      {"build", "builds", "built", "built", "bauen", "baue", "baust", "baut", "gebaut", H, kT,
       kPerson, kBuildable, 0, 0},
      {"sing", "sings", "sang", "sung", "singen", "singe", "singst", "singt", "gesungen", H,
       kI | kT, kPerson | kFlyer, kSong, 0, 0},
      {"hear", "hears", "heard", "heard", "hören", "höre", "hörst", "hört", "gehört", H, kT,
       kAnimate, kAnimate | kSong | kStory, 0, 0},
      {"receive", "receives", "received", "received", "bekommen", "bekomme", "bekommst",
       "bekommt", "bekommen", H, kT, kPerson, kPortable, 0, 0},
      // Verbs with a recipient: "gives the ball to the child" / "gibt dem Kind den Ball".
      {"tell", "tells", "told", "told", "erzählen", "erzähle", "erzählst", "erzählt", "erzählt",
       H, kT | kD, kPerson, kStory, kPerson, 0},
      {"give", "gives", "gave", "given", "geben", "gebe", "gibst", "gibt", "gegeben", H, kD,
       kPerson, kPortable, kAnimate, 0},
      {"show", "shows", "showed", "shown", "zeigen", "zeige", "zeigst", "zeigt", "gezeigt", H, kD,
       kPerson, kAnimal | kThing, kPerson, 0},
      {"bring", "brings", "brought", "brought", "bringen", "bringe", "bringst", "bringt",
       "gebracht", H, kT | kD, kAnimate, kPortable, kPerson, 0},
      {"send", "sends", "sent", "sent", "schicken", "schicke", "schickst", "schickt",
       "geschickt", H, kT | kD, kPerson, kPortable, kPerson, 0},
      // Intransitive verbs; those of motion take "sein" in the perfect.
      {"sleep", "sleeps", "slept", "slept", "schlafen", "schlafe", "schläfst", "schläft",
       "geschlafen", H, kI, kAnimate, 0, 0, 0},
      {"laugh", "laughs", "laughed", "laughed", "lachen", "lache", "lachst", "lacht", "gelacht",
       H, kI, kPerson, 0, 0, 0},
      {"cry", "cries", "cried", "cried", "weinen", "weine", "weinst", "weint", "geweint", H, kI,
       kPerson, 0, 0, 0},
      {"work", "works", "worked", "worked", "arbeiten", "arbeite", "arbeitest", "arbeitet",
       "gearbeitet", H, kI, kPerson, 0, 0, kPerson},
      {"play", "plays", "played", "played", "spielen", "spiele", "spielst", "spielt", "gespielt",
       H, kI, kAnimate, 0, 0, kAnimate | kPortable},
      {"dance", "dances", "danced", "danced", "tanzen", "tanze", "tanzt", "tanzt", "getanzt", H,
       kI, kPerson, 0, 0, kPerson},
      {"wait", "waits", "waited", "waited", "warten", "warte", "wartest", "wartet", "gewartet", H,
       kI, kAnimate, 0, 0, kAnimate},
      {"swim", "swims", "swam", "swum", "schwimmen", "schwimme", "schwimmst", "schwimmt",
       "geschwommen", S, kI, kAnimate, 0, 0, kAnimate},
      {"run", "runs", "ran", "run", "laufen", "laufe", "läufst", "läuft", "gelaufen", S, kI,
       kAnimate, 0, 0, kAnimate},
      {"go", "goes", "went", "gone", "gehen", "gehe", "gehst", "geht", "gegangen", S, kI,
       kAnimate, 0, 0, kAnimate},
      {"come", "comes", "came", "come", "kommen", "komme", "kommst", "kommt", "gekommen", S, kI,
       kAnimate, 0, 0, kAnimate},
      {"drive", "drives", "drove", "driven", "fahren", "fahre", "fährst", "fährt", "gefahren", S,
       kI, kPerson, 0, 0, kPerson},
      {"fly", "flies", "flew", "flown", "fliegen", "fliege", "fliegst", "fliegt", "geflogen", S,
       kI, kPerson | kFlyer, 0, 0, kPerson | kFlyer},
      {"travel", "travels", "travelled", "travelled", "reisen", "reise", "reist", "reist",
       "gereist", S, kI, kPerson, 0, 0, kPerson},
      {"hike", "hikes", "hiked", "hiked", "wandern", "wandere", "wanderst", "wandert",
       "gewandert", S, kI, kPerson, 0, 0, kAnimate},
      {"stay", "stays", "stayed", "stayed", "bleiben", "bleibe", "bleibst", "bleibt",
       "geblieben", S, kI, kAnimate, 0, 0, 0},
      {"jump", "jumps", "jumped", "jumped", "springen", "springe", "springst", "springt",
       "gesprungen", S, kI, kAnimate, 0, 0, 0},
  };
  return table;
}

const std::vector<ClauseVerb>& clause_verbs() {
  static const std::vector<ClauseVerb> table = {
      {{"say", "says", "said", "said", "sagen", "sage", "sagst", "sagt", "gesagt", H, 0, kPerson,
        0, 0, 0},
       true, true},
      {{"know", "knows", "knew", "known", "wissen", "weiß", "weißt", "weiß", "gewusst", H, 0,
        kPerson, 0, 0, 0},
       false, true},
      {{"think", "thinks", "thought", "thought", "denken", "denke", "denkst", "denkt", "gedacht",
        H, 0, kPerson, 0, 0, 0},
       false, true},
      {{"believe", "believes", "believed", "believed", "glauben", "glaube", "glaubst", "glaubt",
        "geglaubt", H, 0, kPerson, 0, 0, 0},
       false, true},
      {{"hope", "hopes", "hoped", "hoped", "hoffen", "hoffe", "hoffst", "hofft", "gehofft", H, 0,
        kPerson, 0, 0, 0},
       false, false},
  };
  return table;
}

}  // namespace trafo::data::toy
