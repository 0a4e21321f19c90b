// CTranslate2's model.bin: named variables (tensors and scalar flags) and aliases, written in
// name order as CTranslate2's own converters write them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

#include "trafo/deploy/ctranslate2.h"

namespace trafo::deploy {

class ModelBin {
 public:
  ModelBin(std::string spec_name, uint32_t spec_revision);
  // A float tensor (a weight, a bias, a table), stored as the quantization says.
  void add(const std::string& name, const at::Tensor& value);
  // Scalar flags and counts, stored as CTranslate2's specs declare them.
  void add_int8(const std::string& name, int8_t value);
  void add_int16(const std::string& name, int16_t value);
  // `name` reads the variable `target` (a tied matrix stored once).
  void alias(const std::string& name, const std::string& target);
  // Matrices named ".../weight" become int8 with a float32 ".../weight_scale" per row under kInt8.
  std::string serialize(Quantization quantization) const;

 private:
  std::string spec_name_;
  uint32_t spec_revision_;
  std::map<std::string, at::Tensor> variables_;
  std::map<std::string, std::string> aliases_;
};

}  // namespace trafo::deploy
