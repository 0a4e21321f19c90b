#include "trafo/run_config/config_file.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/run_config/config_keys.h"
#include "trafo/util/numbers.h"

namespace trafo::run_config {
namespace {

// A config is a few dozen lines; a larger file is almost certainly the wrong file.
constexpr size_t kMaxConfigBytes = 1 << 20;

struct Entry {
  std::string key;
  std::string value;  // quotes removed
  int64_t line = 0;
  bool quoted = false;
  int table = -1;  // the [[corpus]] table it belongs to (0 for the first), -1: none
};

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::string read_config_bytes(const std::string& path) {
  if (path.empty()) throw InputError("--config needs a file name");
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) throw InputError("config file " + path + " does not exist");
  if (std::filesystem::is_directory(status)) throw InputError("config file " + path + " is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read config file " + path);
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw InputError("cannot read config file " + path);
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) throw InputError("config file " + path + " is larger than 1 MiB; not a config");
  return text;
}

// A bare (unquoted) TOML value: a number, true/false, inf or nan. Whether it suits the
// option is for the option's own conversion to say.
bool is_bare_value(const std::string& token) {
  if (token == "true" || token == "false" || token == "inf" || token == "nan") return true;
  const char first = token.front();
  return std::isdigit(static_cast<unsigned char>(first)) || first == '+' || first == '-' || first == '.';
}

// The value of one `key = value` line (after the '='): a quoted string, taken as written
// (to_toml writes strings without escapes, so none are read), or a bare token;
// then nothing but an optional # comment.
std::string value_text(const std::string& text, const std::function<void(const std::string&)>& fail) {
  if (text.empty() || text.front() == '#') fail("no value after '='");
  const char first = text.front();
  if (first == '[' || first == '{') fail("arrays and tables are not used by trafo's options");
  std::string value, rest;
  if (first == '"' || first == '\'') {
    if (text.compare(0, 3, std::string(3, first)) == 0) fail("multi-line strings are not used by trafo's options");
    const auto close = text.find(first, 1);
    if (close == std::string::npos) fail("the string has no closing " + std::string(1, first));
    value = text.substr(1, close - 1);
    rest = trim(text.substr(close + 1));
  } else {
    const auto end = text.find_first_of(" \t#");
    value = text.substr(0, end);
    rest = end == std::string::npos ? "" : trim(text.substr(end));
    if (!is_bare_value(value)) fail("text must be quoted: \"" + value + "\"");
  }
  if (!rest.empty() && rest.front() != '#') fail("unexpected '" + rest + "' after the value");
  return value;
}

struct Parsed {
  std::vector<Entry> entries;
  std::vector<int64_t> tables;  // the line of each [[corpus]] header, an empty table's too
};

// The flat subset of TOML that trafo's configs and --dump-config use: `key = value` lines,
// # comments, blank lines. Anything else is reported with its line.
Parsed parse_config(std::string text, const std::string& path) {
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // a UTF-8 byte order mark
  Parsed parsed;
  auto& entries = parsed.entries;
  std::map<std::string, int64_t> seen;
  std::istringstream lines(text);
  int64_t number = 0;
  int table = -1;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    auto fail = [&](const std::string& message) {
      throw InputError("config file " + path + ":" + std::to_string(number) + ": " + message);
    };
    if (!line.empty() && line.back() == '\r') line.pop_back();
    data::check_utf8(line, "config file " + path, number);
    for (const char c : line) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) fail("control character in the line");
    }
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    if (line == "[[corpus]]" || (line.rfind("[[corpus]]", 0) == 0 && trim(line.substr(10)).front() == '#')) {
      ++table;  // a new corpus table: its keys are its own
      parsed.tables.push_back(number);
      seen.clear();
      continue;
    }
    if (line.front() == '[') {
      fail("sections are not used: one 'key = value' per line, keys are the long option names; [[corpus]] tables "
           "(src, tgt, weight, tag) come last");
    }
    const auto equals = line.find('=');
    if (equals == std::string::npos) fail("expected 'key = value'");
    const std::string key = trim(line.substr(0, equals));
    if (key.empty()) fail("no key before '='");
    for (const char c : key) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') fail("'" + key + "' is not an option name");
    }
    const std::string value = value_text(trim(line.substr(equals + 1)), fail);
    if (const auto previous = seen.find(key); previous != seen.end()) {
      fail("key '" + key + "' is set twice (first on line " + std::to_string(previous->second) + ")");
    }
    seen.emplace(key, number);
    const char first = trim(line.substr(equals + 1)).front();
    entries.push_back({key, value, number, first == '"' || first == '\'', table});
  }
  return parsed;
}

// Sets the key of one [[corpus]] table's line in `corpus`.
void set_corpus_key(const Entry& entry, CorpusSpec& corpus) {
  const std::map<std::string, std::string*> texts = {{"src", &corpus.src},           {"tgt", &corpus.tgt},
                                                     {"tag", &corpus.tag},           {"alignment", &corpus.alignment},
                                                     {"src-lang", &corpus.src_lang}, {"tgt-lang", &corpus.tgt_lang}};
  if (const auto text = texts.find(entry.key); text != texts.end()) {
    if (!entry.quoted) throw InputError("text must be quoted: \"" + entry.value + "\"");
    *text->second = entry.value;
  } else if (entry.key == "weight") {
    util::parse_finite(entry.value, corpus.weight);
  } else {
    throw InputError("unknown key '" + entry.key +
                     "' (a [[corpus]] table holds src, tgt, weight, tag, alignment, src-lang and tgt-lang)");
  }
}

// Command-line options that steer the config machinery itself, never stored in a config.
bool is_meta(const std::string& name) { return name == "config" || name == "dump-config" || name == "help"; }

}  // namespace

std::string corpus_toml(const CorpusSpec& corpus) {
  auto quote = [](const std::string& text) {
    return text.find('"') == std::string::npos ? "\"" + text + "\"" : "'" + text + "'";
  };
  return "\n[[corpus]]\nsrc=" + quote(corpus.src) + "\ntgt=" + quote(corpus.tgt) +
         fmt::format("\nweight={}\n", corpus.weight) + "tag=" + quote(corpus.tag) + "\n" +
         (corpus.alignment.empty() ? "" : "alignment=" + quote(corpus.alignment) + "\n") +
         (corpus.src_lang.empty() ? "" : "src-lang=" + quote(corpus.src_lang) + "\n") +
         (corpus.tgt_lang.empty() ? "" : "tgt-lang=" + quote(corpus.tgt_lang) + "\n");
}

std::string to_toml(const TrainConfig& config) {
  std::string out;
  for (const auto& key : config_keys()) out += std::string(key.name) + "=" + format_value(key, config) + "\n";
  for (const auto& corpus : config.data.corpora) out += corpus_toml(corpus);
  return out;
}

std::set<std::string> read_config_text(std::string text, const std::string& path, TrainConfig& config,
                                       const std::set<std::string>& keep) {
  std::set<std::string> keys;
  TrainConfig scratch;  // where the values of keys in `keep` are checked
  const auto parsed = parse_config(std::move(text), path);
  std::vector<CorpusSpec> corpora(parsed.tables.size());
  for (const auto& entry : parsed.entries) {
    const std::string where = "config file " + path + ":" + std::to_string(entry.line) + ": ";
    if (entry.table >= 0) {
      try {
        set_corpus_key(entry, corpora[static_cast<size_t>(entry.table)]);
      } catch (const InputError& e) {
        throw InputError(where + "[[corpus]] " + entry.key + ": " + e.what());
      }
      continue;
    }
    if (is_meta(entry.key)) throw InputError(where + "'" + entry.key + "' cannot be set in a config file");
    const ConfigKey* key = find_config_key(entry.key);
    if (key == nullptr) throw InputError(where + "unknown key '" + entry.key + "'");
    if (!entry.quoted && std::holds_alternative<std::string*>(key->field(scratch))) {
      throw InputError(where + entry.key + ": text must be quoted: \"" + entry.value + "\"");
    }
    try {
      parse_value(*key, entry.value, keep.count(entry.key) > 0 ? scratch : config);
    } catch (const InputError& e) {
      throw InputError(where + entry.key + ": " + e.what());
    }
    keys.insert(entry.key);
  }
  // A table without its files would train on the other corpora alone, without a word.
  for (size_t i = 0; i < corpora.size(); ++i) {
    if (corpora[i].src.empty() || corpora[i].tgt.empty()) {
      throw InputError("config file " + path + ":" + std::to_string(parsed.tables[i]) + ": [[corpus]] table " +
                       std::to_string(i + 1) + " needs src and tgt files");
    }
  }
  if (!corpora.empty()) {
    keys.insert("corpus");
    if (keep.count("corpus") == 0) config.data.corpora = corpora;
  }
  return keys;
}

std::set<std::string> read_config_file(const std::string& path, TrainConfig& config,
                                       const std::set<std::string>& keep) {
  return read_config_text(read_config_bytes(path), path, config, keep);
}

}  // namespace trafo::run_config
