#include "config_file.h"

#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "trafo/errors.h"

namespace trafo::cli {
namespace {

// Options that steer the config machinery itself, never stored in a config.
bool is_meta(const std::string& name) { return name == "config" || name == "dump-config" || name == "help"; }

}  // namespace

void apply_config_file(CLI::App& command, const std::string& path,
                       const std::function<bool(const std::string&)>& skip) {
  if (!std::ifstream(path)) throw InputError("cannot read config file " + path);
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_file(path);
  } catch (const CLI::Error& e) {
    throw InputError("config file " + path + ": " + e.what());
  }
  for (const auto& item : items) {
    const std::string key = item.fullname();
    if (key == "++" || key == "--" || is_meta(key)) continue;  // CLI11's section markers
    if (skip && skip(key)) continue;
    CLI::Option* option = command.get_option_no_throw("--" + key);
    if (option == nullptr) throw InputError("config file " + path + ": unknown key '" + key + "'");
    if (option->count() > 0) continue;  // the command line wins
    try {
      option->add_result(item.inputs);
      option->run_callback();
    } catch (const CLI::Error& e) {
      throw InputError("config file " + path + ": " + key + ": " + e.what());
    }
  }
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
