// torch.save's format before PyTorch 1.6 (internal to deploy/), in which older Hugging Face
// repositories keep pytorch_model.bin: five pickles (a magic number, the format version, the
// writer's sizes, the object, its storages' keys), then each storage's element count and bytes.
#pragma once

#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace trafo::deploy {

// Whether `bytes` start as that format does (its magic number, pickled).
bool is_legacy_torch_save(const std::string& bytes);

// The state dict in `bytes`: each tensor under its key. A restricted unpickler reads it: it builds
// dicts, lists, tuples, numbers, strings and tensors, and the first other class it meets stops it
// (trafo::InputError naming `path` and the class), so no code in the file runs. trafo::InputError
// too for a truncated or malformed file, and for an object that is no dict of tensors.
std::map<std::string, at::Tensor> read_legacy_state_dict(const std::string& bytes, const std::string& path);

}  // namespace trafo::deploy
