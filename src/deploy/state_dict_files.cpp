#include "state_dict_files.h"

#include <vector>

#include <torch/serialize.h>
#include <torch/torch.h>

#include "torch_legacy.h"
#include "trafo/checkpoint/safetensors.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::deploy {
namespace {

// `weights` with every floating-point tensor as contiguous float32.
std::map<std::string, at::Tensor> float32(std::map<std::string, at::Tensor> weights) {
  for (auto& [name, tensor] : weights) {
    if (tensor.is_floating_point()) tensor = tensor.to(torch::kFloat32).contiguous();
  }
  return weights;
}

}  // namespace

std::filesystem::path state_dict_file(const std::filesystem::path& folder) {
  std::error_code error;
  return std::filesystem::exists(folder / "model.safetensors", error) ? folder / "model.safetensors"
                                                                      : folder / "pytorch_model.bin";
}

std::map<std::string, at::Tensor> read_state_dict(const std::filesystem::path& folder) {
  namespace fs = std::filesystem;
  std::map<std::string, at::Tensor> weights;
  std::error_code error;
  if (fs::exists(folder / "model.safetensors", error)) {
    weights = checkpoint::read_safetensors(folder / "model.safetensors", checkpoint::Writer::kOther).tensors;
  } else if (fs::exists(folder / "pytorch_model.bin", error)) {
    const auto path = folder / "pytorch_model.bin";
    const auto bytes = util::read_file(path);
    if (is_legacy_torch_save(bytes)) return float32(read_legacy_state_dict(bytes, path.string()));
    if (bytes.rfind("PK\x03\x04", 0) != 0) {  // torch.save's zip form starts as every zip file does
      throw InputError(path.string() + " is in neither of torch.save's forms (a zip file, or before PyTorch 1.6 "
                       "five pickles and the storages)");
    }
    c10::IValue loaded;
    try {
      loaded = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const c10::Error& e) {
      throw InputError(path.string() + " is no state dict LibTorch reads (" + e.what_without_backtrace() + ")");
    }
    if (!loaded.isGenericDict()) throw InputError(path.string() + " holds no dict of tensors");
    for (const auto& entry : loaded.toGenericDict()) {
      if (!entry.key().isString() || !entry.value().isTensor()) continue;
      weights[entry.key().toStringRef()] = entry.value().toTensor();
    }
  } else {
    throw InputError(folder.string() + " holds neither model.safetensors nor pytorch_model.bin");
  }
  return float32(std::move(weights));
}

}  // namespace trafo::deploy
