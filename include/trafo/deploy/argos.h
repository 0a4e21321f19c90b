// `trafo export --format argos`: an Argos Translate package (.argosmodel), which
// `argostranslate.package.install_from_path` installs and LibreTranslate then serves. The package is
// a zip holding one folder, translate-SRC_TGT-1_0/, with metadata.json (the languages), model/ (the
// CTranslate2 export: model.bin, config.json, shared_vocabulary.json) and sentencepiece.model.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::deploy {

// One file, "translate-SRC_TGT-1_0.argosmodel", and its bytes; `quantization` as for ctranslate2.
// Throws InputError when the checkpoint does not say its languages.
std::vector<std::pair<std::string, std::string>> argos_files(const checkpoint::Checkpoint& checkpoint,
                                                             const std::string& quantization);

// A zip archive of `entries` (path inside the archive, bytes), stored without compression, as every
// zip reader reads it. Throws InputError past the 4 GiB that a zip without its 64-bit extension holds.
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace trafo::deploy
