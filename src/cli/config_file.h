// TOML config files for a subcommand. CLI11 2.1 reads config files only for the top-level
// app, and its reader passes over lines it cannot make sense of, so trafo reads the file
// itself: the flat subset of TOML that --dump-config writes (`key = value` lines, quoted
// strings, # comments; a UTF-8 byte order mark is allowed). Each key is the long name of one
// of the subcommand's options; an option given on the command line wins over the file, yet
// the file's value is still checked; an unknown key is an error (a misspelled key must never
// silently do nothing).
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace trafo::cli {

// Throws trafo::InputError naming the file (and line where there is one) for a missing,
// unreadable or non-UTF-8 file, a directory, a line that is not `key = value`, a key set twice,
// an unknown key or a bad value. Keys for which `skip` returns true are passed over (a command
// that reads another command's config files takes only its own keys).
void apply_config_file(CLI::App& command, const std::string& path,
                       const std::function<bool(const std::string&)>& skip = {});

// Makes every integer option of `command` and its subcommands take plain decimal numbers
// (no octal or hex, no minus sign on an unsigned one) and every floating one finite values;
// call it once the options are added.
void add_number_checks(CLI::App& command);

// The effective config of `command` as TOML, one `key=value` line per option; reads back
// unchanged through apply_config_file.
std::string dump_config(const CLI::App& command);

}  // namespace trafo::cli
