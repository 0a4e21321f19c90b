// The elements of a float32 or bfloat16 tensor as the ops kernels take them: floats, or each bf16's
// 16 bits (uint16_t), which the kernels widen to float and round back themselves.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <type_traits>

namespace trafo::ops {

template <typename T>
T* elements(const at::Tensor& x) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, uint16_t>, "float, or uint16_t for bf16");
  if constexpr (std::is_same_v<T, float>) {
    return x.data_ptr<float>();
  } else {
    return reinterpret_cast<uint16_t*>(x.data_ptr<at::BFloat16>());
  }
}

}  // namespace trafo::ops
