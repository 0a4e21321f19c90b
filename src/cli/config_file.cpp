#include "config_file.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <CLI/CLI.hpp>

#include "trafo/data/corpus.h"
#include "trafo/errors.h"

namespace trafo::cli {
namespace {

// A config is a few dozen lines; a larger file is almost certainly the wrong file.
constexpr size_t kMaxConfigBytes = 1 << 20;

// Options that steer the config machinery itself, never stored in a config.
bool is_meta(const std::string& name) { return name == "config" || name == "dump-config" || name == "help"; }

struct Entry {
  std::string key;
  std::string value;  // quotes removed
  int64_t line = 0;
};

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::string read_config_text(const std::string& path) {
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
// (CLI11 writes --dump-config strings without escapes, so none are read), or a bare token;
// then nothing but an optional # comment.
std::string parse_value(const std::string& text, const std::function<void(const std::string&)>& fail) {
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

// The flat subset of TOML that trafo's configs and --dump-config use: `key = value` lines,
// # comments, blank lines. Anything else is reported with its line.
std::vector<Entry> parse_config(std::string text, const std::string& path) {
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // a UTF-8 byte order mark
  std::vector<Entry> entries;
  std::map<std::string, int64_t> seen;
  std::istringstream lines(text);
  int64_t number = 0;
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
    if (line.front() == '[') fail("sections are not used: one 'key = value' per line, keys are the long option names");
    const auto equals = line.find('=');
    if (equals == std::string::npos) fail("expected 'key = value'");
    const std::string key = trim(line.substr(0, equals));
    if (key.empty()) fail("no key before '='");
    for (const char c : key) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') fail("'" + key + "' is not an option name");
    }
    const std::string value = parse_value(trim(line.substr(equals + 1)), fail);
    if (const auto previous = seen.find(key); previous != seen.end()) {
      fail("key '" + key + "' is set twice (first on line " + std::to_string(previous->second) + ")");
    }
    seen.emplace(key, number);
    entries.push_back({key, value, number});
  }
  return entries;
}

// Sets the option to the file's value, unless the command line gave it: the command line wins,
// but the file's value is converted and checked all the same (on the option, then the command
// line's value is put back), so a broken file fails whichever keys the command line repeats.
void set_or_check(CLI::Option& option, const std::string& value) {
  const auto given = option.results();
  option.clear();
  option.add_result(std::vector<std::string>{value});
  option.run_callback();
  if (given.empty()) return;
  option.clear();
  option.add_result(given);
  option.run_callback();
}

// Whether `text` is a decimal integer; drops its leading zeros, which CLI11 would read as octal.
bool plain_integer(std::string& text, bool with_sign) {
  const size_t sign = with_sign && !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (sign == text.size()) return false;
  for (size_t i = sign; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  const auto first = text.find_first_not_of('0', sign);
  text.erase(sign, (first == std::string::npos ? text.size() - 1 : first) - sign);
  return true;
}

}  // namespace

void apply_config_file(CLI::App& command, const std::string& path,
                       const std::function<bool(const std::string&)>& skip) {
  for (const auto& entry : parse_config(read_config_text(path), path)) {
    const std::string where = "config file " + path + ":" + std::to_string(entry.line) + ": ";
    if (is_meta(entry.key)) throw InputError(where + "'" + entry.key + "' cannot be set in a config file");
    if (skip && skip(entry.key)) continue;
    CLI::Option* option = command.get_option_no_throw("--" + entry.key);
    if (option == nullptr) throw InputError(where + "unknown key '" + entry.key + "'");
    try {
      set_or_check(*option, entry.value);
    } catch (const CLI::Error& e) {
      throw InputError(where + entry.key + ": " + e.what());
    }
  }
}

void add_number_checks(CLI::App& command) {
  // CLI11 2.1 reads integers with base detection (010 is 8, 0x10 is 16), "-1" into an unsigned
  // as 2^64 - 1, and floats including inf and nan; options take plain decimal numbers only
  // (010 is 10).
  const CLI::Validator integer(
      [](std::string& text) {
        return plain_integer(text, true) ? std::string() : "'" + text + "' is not a whole decimal number";
      },
      "");
  const CLI::Validator unsigned_integer(
      [](std::string& text) {
        if (!text.empty() && text[0] == '-') return "must not be negative, not " + text;
        return plain_integer(text, false) ? std::string() : "'" + text + "' is not a whole decimal number";
      },
      "");
  const CLI::Validator finite(
      [](std::string& text) {
        const bool decimal = !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string::npos;
        char* end = nullptr;
        const double value = decimal ? std::strtod(text.c_str(), &end) : 0.0;
        const bool ok = decimal && end == text.c_str() + text.size() && std::isfinite(value);
        return ok ? std::string() : "'" + text + "' is not a finite decimal number";
      },
      "");
  for (CLI::Option* option : command.get_options()) {
    const std::string type = option->get_type_name();
    auto is = [&](const std::string& name) { return type == name || type.rfind(name + ":", 0) == 0; };
    if (is("INT")) option->transform(integer);  // a transform may rewrite the text: 010 → 10
    if (is("UINT")) option->transform(unsigned_integer);
    if (is("FLOAT")) option->check(finite);
  }
  for (CLI::App* subcommand : command.get_subcommands({})) add_number_checks(*subcommand);
}

std::string dump_config(const CLI::App& command) {
  std::istringstream all(command.config_to_str(true, false));
  std::string out;
  for (std::string line; std::getline(all, line);) {
    const std::string key = line.substr(0, line.find('='));
    if (!is_meta(key)) out += line + "\n";
  }
  return out;
}

}  // namespace trafo::cli
