// Reading checkpoints of format 2 (a LibTorch archive behind a checksum line), which trafo wrote
// before its checkpoints became safetensors files. Internal to checkpoint/.
#pragma once

#include <string>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::checkpoint::detail {

// Whether a file's first bytes are format 2's header line.
bool is_legacy_checkpoint(const std::string& prefix);

// The checkpoint in `bytes` (the file `path`), its checksums checked, its model config parsed; the
// caller checks the rest as for any checkpoint. Throws trafo::InputError naming `path`.
Checkpoint read_legacy_checkpoint(const std::string& bytes, const std::string& path, bool with_training_state);

}  // namespace trafo::checkpoint::detail
