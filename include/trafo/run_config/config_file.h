// TrainConfig as TOML: config files (--config), --dump-config, a run's config.toml and the config
// stored in checkpoints. The flat subset of TOML these use: `key = value` lines, quoted strings
// taken as written, # comments, blank lines; a UTF-8 byte order mark is allowed; after the keys,
// [[corpus]] tables of src, tgt, weight and tag (the corpora). Keys are the
// long option names (config_keys.h); an unknown key is an error (a misspelled key must never
// silently do nothing).
#pragma once

#include <set>
#include <string>

#include "trafo/run_config/options.h"

namespace trafo::run_config {

// Every key of `config`, one `key=value` line each, in config_keys() order. Reads back to the
// same config through read_config_text.
std::string to_toml(const TrainConfig& config);

// One corpus as a [[corpus]] table.
std::string corpus_toml(const CorpusSpec& corpus);

// Sets the keys of the TOML `text` (read from `path`, which messages name) in `config` and returns
// them. Keys in `keep` (given on the command line, which wins) are checked and left as they are.
// Throws trafo::InputError naming PATH:LINE for a line that is not `key = value`, a key set twice,
// an unknown key, a bad value, invalid UTF-8, or a [[corpus]] table without src or tgt (its header's line).
std::set<std::string> read_config_text(std::string text, const std::string& path, TrainConfig& config,
                                       const std::set<std::string>& keep = {});

// read_config_text on the file at `path`: a missing file, a directory or a file over 1 MiB is
// an InputError too.
std::set<std::string> read_config_file(const std::string& path, TrainConfig& config,
                                       const std::set<std::string>& keep = {});

}  // namespace trafo::run_config
