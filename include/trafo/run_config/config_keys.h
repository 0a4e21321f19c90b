// The keys of TrainConfig: one row per option, the one place an option is named, typed and
// described. Config files, --dump-config, config.toml and checkpoints write and read these keys
// (src/run_config/config_file.cpp); the command line binds one flag per row (src/cli/config_options.cpp).
// A new option is a member of TrainConfig's group for its heading (options.h), its row in config_keys.cpp
// and its check in validate().
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "trafo/run_config/options.h"

namespace trafo::run_config {

// Where a key's value lives in a config.
using Field = std::variant<std::string*, bool*, int*, int64_t*, uint64_t*, double*>;

struct ConfigKey {
  const char* name;               // the long option name and the config file's key: "d-model"
  const char* group;              // its section of --help
  const char* help;
  Field (*field)(TrainConfig&);
  bool flag = false;              // a bool the command line sets by its bare name (--tensorboard)
  bool show_default = true;       // --help shows the default
};

// Every key, in the order --dump-config writes them.
const std::vector<ConfigKey>& config_keys();

// The row of `name`, or nullptr.
const ConfigKey* find_config_key(const std::string& name);

// The value of `key` in `config` as a config file holds it: text as written, integers in
// decimal, floats in the shortest form that reads back exactly, bools as true/false.
std::string format_value(const ConfigKey& key, const TrainConfig& config);

// Sets `key` in `config` from its text: plain decimal integers (leading zeros are not octal,
// no minus sign for an unsigned one), finite decimal floats, true/false (or 1/0, yes/no, on/off).
// Throws trafo::InputError saying what is wrong with the text (the caller names the key).
void parse_value(const ConfigKey& key, const std::string& text, TrainConfig& config);

// The name of the value's kind, for --help: TEXT, BOOL, INT, UINT or FLOAT.
const char* type_name(const ConfigKey& key);

}  // namespace trafo::run_config
