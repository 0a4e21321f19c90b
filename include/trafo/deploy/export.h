// `trafo export --format NAME`: the formats a checkpoint can be written in, one row each. A new
// format is a function that turns a checkpoint into the files of its model folder, and its row in
// src/deploy/export.cpp; the folder is written by util::write_folder_atomically.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::deploy {

struct ExportFormat {
  const char* name;                         // --format
  const char* description;                  // for --help
  std::vector<std::string> quantizations;   // --quantization values it takes, the default first
  // The model folder's files (name, bytes) for a checkpoint and one of `quantizations`.
  std::vector<std::pair<std::string, std::string>> (*files)(const checkpoint::Checkpoint&, const std::string&);
  bool single_file = false;  // `files` gives one file, written as --out itself (a package), not a folder
};

const std::vector<ExportFormat>& export_formats();

// The row of `name`; trafo::InputError naming the formats there are otherwise.
const ExportFormat& export_format(const std::string& name);

// `asked`, or the format's default when empty; trafo::InputError when the format does not take it.
std::string pick_quantization(const ExportFormat& format, const std::string& asked);

// Writes `checkpoint` (read from the file `source`, which a reason the format cannot take it names)
// as `format` with `quantization` (pick_quantization's) into the folder `out` (new or empty, or any
// with `replace`), through util::write_folder_atomically; a single-file format writes the file `out`
// (new, or any with `replace`) through util::write_file_atomically.
void export_model(const checkpoint::Checkpoint& checkpoint, const std::filesystem::path& source,
                  const ExportFormat& format, const std::string& quantization, const std::filesystem::path& out,
                  bool replace);

}  // namespace trafo::deploy
