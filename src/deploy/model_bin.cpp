#include "model_bin.h"

#include <cfloat>
#include <limits>

#include <torch/torch.h>

#include "trafo/errors.h"

namespace trafo::deploy {
namespace {

constexpr uint32_t kBinaryVersion = 6;

// CTranslate2's DataType enum (include/ctranslate2/types.h).
uint8_t type_id(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return 0;
    case at::kChar: return 1;
    case at::kShort: return 2;
    case at::kInt: return 3;
    case at::kHalf: return 4;
    case at::kBFloat16: return 5;
    default: throw std::logic_error("no CTranslate2 type for " + std::string(c10::toString(type)));
  }
}

bool is_matrix_weight(const std::string& name, const at::Tensor& value) {
  const std::string suffix = "/weight";
  return value.dim() == 2 && name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Per row: scale = 127 / max|w| (127 for an all-zero row), w·scale rounded half to even, as int8.
std::pair<at::Tensor, at::Tensor> int8_rows(const at::Tensor& weight) {
  auto amax = weight.abs().amax(1);                                       // [rows]
  amax = torch::where(amax == 0, torch::full_like(amax, 127.0), amax);
  amax = amax.clamp_min(127.0f / FLT_MAX);                                // the scale stays finite
  const auto scale = 127.0 / amax;                                        // float32 [rows]
  const auto quantized = (weight * scale.unsqueeze(1)).round().to(at::kChar);
  return {quantized, scale};
}

class Writer {
 public:
  void u8(uint8_t value) { raw(&value, 1); }
  void u16(uint16_t value) { raw(&value, 2); }
  void u32(uint32_t value) { raw(&value, 4); }
  void text(const std::string& value) {  // length with the NUL, bytes, NUL
    if (value.size() + 1 > std::numeric_limits<uint16_t>::max()) throw std::logic_error("name too long: " + value);
    u16(static_cast<uint16_t>(value.size() + 1));
    bytes_ += value;
    u8(0);
  }
  void variable(const std::string& name, const at::Tensor& value) {
    const auto data = value.contiguous();
    const auto size = data.numel() * static_cast<int64_t>(data.element_size());
    if (size > std::numeric_limits<uint32_t>::max()) throw InputError(name + " is too large for CTranslate2 (4 GiB per variable)");
    text(name);
    u8(static_cast<uint8_t>(data.dim()));
    for (const auto dim : data.sizes()) u32(static_cast<uint32_t>(dim));
    u8(type_id(data.scalar_type()));
    u32(static_cast<uint32_t>(size));
    raw(data.data_ptr(), static_cast<size_t>(size));
  }
  std::string take() { return std::move(bytes_); }

 private:
  void raw(const void* data, size_t size) { bytes_.append(static_cast<const char*>(data), size); }  // little-endian, as x86
  std::string bytes_;
};

}  // namespace

ModelBin::ModelBin(std::string spec_name, uint32_t spec_revision)
    : spec_name_(std::move(spec_name)), spec_revision_(spec_revision) {}

void ModelBin::add(const std::string& name, const at::Tensor& value) {
  variables_[name] = value.detach().to(torch::kCPU, torch::kFloat);
}

void ModelBin::add_int8(const std::string& name, int8_t value) {
  variables_[name] = torch::full({}, value, torch::kChar);
}

void ModelBin::add_int16(const std::string& name, int16_t value) {
  variables_[name] = torch::full({}, value, torch::kShort);
}

void ModelBin::alias(const std::string& name, const std::string& target) { aliases_[name] = target; }

std::string ModelBin::serialize(Quantization quantization) const {
  std::map<std::string, at::Tensor> stored;  // in name order, the scales beside their matrices
  for (const auto& [name, value] : variables_) {
    if (!value.is_floating_point()) {
      stored[name] = value;
    } else if (quantization == Quantization::kInt8 && is_matrix_weight(name, value)) {
      auto [quantized, scale] = int8_rows(value);
      stored[name] = quantized;
      stored[name + "_scale"] = scale;
    } else {
      stored[name] = value.to(quantization == Quantization::kBFloat16 ? at::kBFloat16 : at::kFloat);
    }
  }
  Writer out;
  out.u32(kBinaryVersion);
  out.text(spec_name_);
  out.u32(spec_revision_);
  out.u32(static_cast<uint32_t>(stored.size()));
  for (const auto& [name, value] : stored) out.variable(name, value);
  out.u32(static_cast<uint32_t>(aliases_.size()));
  for (const auto& [name, target] : aliases_) {
    out.text(name);
    out.text(target);
  }
  return out.take();
}

}  // namespace trafo::deploy
