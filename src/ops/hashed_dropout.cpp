#include "trafo/ops/hashed_dropout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include "elements.h"
#include "isa.h"
#include "trafo/ops/eligibility.h"

namespace trafo::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A bijective 32-bit mixer ("lowbias32", C. Wellons); two rounds with two keys per call.
inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

struct MaskKey {
  uint32_t key0, key1;
  uint32_t threshold;  // an element is kept where its hash ≥ threshold = p × 2^32
};

constexpr int64_t kGrain = 1 << 15;

// Elements are float32 or bfloat16 (stored as its 16 bits); the arithmetic is in float32 either way
// and a bf16 result is rounded to nearest even, as LibTorch rounds (a NaN stays a quiet NaN).
inline float widen(float x) { return x; }
inline float widen(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &wide, sizeof x);
  return x;
}
inline void narrow(float x, float& out) { out = x; }
inline void narrow(float x, uint16_t& out) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const bool nan = (bits & 0x7fffffffU) > 0x7f800000U;
  out = static_cast<uint16_t>(nan ? 0x7fc0U : (bits + 0x7fffU + ((bits >> 16) & 1U)) >> 16);
}

// The loops are written plainly, with local offsets and __restrict, so that the compiler vectorises
// them, and compiled thrice (isa.h): for the build's target, for AVX2 (eight hashes per instruction)
// and for AVX-512 (sixteen). Their arithmetic is exact but for one product an element: all give the
// same bits.

// out = in × (kept ? scale : 0), kept → mask, for elements [begin, end) of a call (numbered from 0).
template <typename T>
TRAFO_INLINE_LOOP void masked_scale_loop(const T* __restrict in, T* __restrict out, uint8_t* __restrict mask,
                                         int64_t begin, int64_t end, MaskKey key, float scale) {
  const auto first = static_cast<uint32_t>(begin);
  in += begin;
  out += begin;
  mask += begin;
  for (int64_t j = 0; j < end - begin; ++j) {
    const uint32_t kept = mix(mix((first + static_cast<uint32_t>(j)) ^ key.key0) + key.key1) >= key.threshold;
    mask[j] = static_cast<uint8_t>(kept);
    narrow(widen(in[j]) * (kept != 0 ? scale : 0.0f), out[j]);
  }
}

template <typename T>
TRAFO_INLINE_LOOP void apply_mask_loop(const T* __restrict in, T* __restrict out, const uint8_t* __restrict mask,
                                       int64_t begin, int64_t end, float scale) {
  for (int64_t i = begin; i < end; ++i) narrow(widen(in[i]) * (mask[i] != 0 ? scale : 0.0f), out[i]);
}

template <typename T>
void masked_scale(const T* __restrict in, T* __restrict out, uint8_t* __restrict mask, int64_t begin, int64_t end,
                  MaskKey key, float scale) {
  masked_scale_loop(in, out, mask, begin, end, key, scale);
}

template <typename T>
TRAFO_AVX2_FMA void masked_scale_avx2(const T* __restrict in, T* __restrict out, uint8_t* __restrict mask,
                                      int64_t begin, int64_t end, MaskKey key, float scale) {
  masked_scale_loop(in, out, mask, begin, end, key, scale);
}

template <typename T>
TRAFO_AVX512 void masked_scale_avx512(const T* __restrict in, T* __restrict out, uint8_t* __restrict mask,
                                      int64_t begin, int64_t end, MaskKey key, float scale) {
  masked_scale_loop(in, out, mask, begin, end, key, scale);
}

template <typename T>
void apply_mask(const T* __restrict in, T* __restrict out, const uint8_t* __restrict mask, int64_t begin, int64_t end,
                float scale) {
  apply_mask_loop(in, out, mask, begin, end, scale);
}

template <typename T>
TRAFO_AVX2_FMA void apply_mask_avx2(const T* __restrict in, T* __restrict out, const uint8_t* __restrict mask,
                                    int64_t begin, int64_t end, float scale) {
  apply_mask_loop(in, out, mask, begin, end, scale);
}

template <typename T>
TRAFO_AVX512 void apply_mask_avx512(const T* __restrict in, T* __restrict out, const uint8_t* __restrict mask,
                                    int64_t begin, int64_t end, float scale) {
  apply_mask_loop(in, out, mask, begin, end, scale);
}

// out = in × mask × scale, drawing the mask into `mask` (masked_scale) or applying it (apply_mask).
template <typename T>
void mask_and_scale(const at::Tensor& in, const at::Tensor& out, const at::Tensor& mask, const MaskKey* key,
                    float scale) {
  const T* source = elements<T>(in);
  T* target = elements<T>(out);
  uint8_t* kept = mask.data_ptr<uint8_t>();
  const Isa isa = cpu_isa();
  const auto draw = isa == Isa::avx512 ? masked_scale_avx512<T> : isa == Isa::avx2 ? masked_scale_avx2<T> : masked_scale<T>;
  const auto apply = isa == Isa::avx512 ? apply_mask_avx512<T> : isa == Isa::avx2 ? apply_mask_avx2<T> : apply_mask<T>;
  at::parallel_for(0, in.numel(), kGrain, [&](int64_t begin, int64_t end) {
    if (key != nullptr) {
      draw(source, target, kept, begin, end, *key, scale);
    } else {
      apply(source, target, kept, begin, end, scale);
    }
  });
}

void mask_and_scale(const at::Tensor& in, const at::Tensor& out, const at::Tensor& mask, const MaskKey* key,
                    float scale) {
  if (in.scalar_type() == at::kBFloat16) {
    mask_and_scale<uint16_t>(in, out, mask, key, scale);
  } else {
    mask_and_scale<float>(in, out, mask, key, scale);
  }
}

MaskKey draw_key(double p) {
  auto generator = at::detail::getDefaultCPUGenerator();
  uint64_t bits;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    bits = at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
  }
  const double threshold = std::ldexp(p, 32);
  return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32),
          static_cast<uint32_t>(std::min(threshold, 4294967295.0))};
}

class HashedDropout : public torch::autograd::Function<HashedDropout> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double p) {
    const auto in = x.contiguous();
    auto out = at::empty_like(in);
    auto mask = at::empty(in.sizes(), in.options().dtype(at::kByte));
    const MaskKey key = draw_key(p);
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    mask_and_scale(in, out, mask, &key, scale);
    ctx->save_for_backward({mask});  // released once backward has used it
    ctx->saved_data["scale"] = static_cast<double>(scale);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto mask = ctx->get_saved_variables()[0];
    const auto scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const auto& upstream = grad_outputs[0];
    const auto dtype = upstream.scalar_type();
    // create_graph, or a gradient of a dtype the loops do not take: the same product, differentiable
    if (at::GradMode::is_enabled() || (dtype != at::kFloat && dtype != at::kBFloat16)) {
      return {upstream * mask.to(dtype) * scale, at::Tensor()};
    }
    const auto grad = upstream.contiguous();
    auto grad_input = at::empty_like(grad);
    mask_and_scale(grad, grad_input, mask, nullptr, scale);
    return {grad_input, at::Tensor()};
  }
};

}  // namespace

bool hashed_dropout_applies(const at::Tensor& x, double p) {
  return cpu_fast_path(Kernel::hashed_dropout, {x}) && p < 1.0 && x.numel() < (int64_t{1} << 32);
}

at::Tensor hashed_dropout(const at::Tensor& x, double p) {
  note_run(Kernel::hashed_dropout, cpu_isa());
  return HashedDropout::apply(x, p);
}

}  // namespace trafo::ops
