// TOML config files for a subcommand. CLI11 2.1 reads config files only for the top-level
// app, so a subcommand applies its file here: each key is the long name of one of its
// options; an option given on the command line wins over the file; an unknown key is an
// error (a misspelled key must never silently do nothing).
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace trafo::cli {

// Throws trafo::InputError for an unreadable file, an unknown key or a bad value.
// Keys for which `skip` returns true are passed over (a command that reads another command's
// config files takes only its own keys).
void apply_config_file(CLI::App& command, const std::string& path,
                       const std::function<bool(const std::string&)>& skip = {});

// The effective config of `command` as TOML, one `key=value` line per option; reads back
// unchanged through apply_config_file.
std::string dump_config(const CLI::App& command);

}  // namespace trafo::cli
