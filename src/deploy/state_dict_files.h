// A Hugging Face folder's weights (internal to deploy/): model.safetensors, else pytorch_model.bin in
// either of torch.save's forms, the zip file (LibTorch's unpickler) or the one before PyTorch 1.6
// (torch_legacy.h). Neither unpickler runs code from the file.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace trafo::deploy {

// The state dict's tensors under their names, floating-point ones as contiguous float32. trafo::InputError,
// naming the file, for a folder with neither file, a corrupt one, or a pickle that is no dict of tensors.
std::map<std::string, at::Tensor> read_state_dict(const std::filesystem::path& folder);
// The file read_state_dict reads in `folder` (for messages).
std::filesystem::path state_dict_file(const std::filesystem::path& folder);

}  // namespace trafo::deploy
