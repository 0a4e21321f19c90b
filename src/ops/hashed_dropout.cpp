#include "trafo/ops/hashed_dropout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

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

// The loops are written plainly, with local offsets and __restrict, so that the compiler vectorises
// them, and compiled twice (isa.h): for the build's target and for AVX2 (eight hashes per
// instruction). Their arithmetic is exact but for one product an element: both give the same bits.

// out = in × (kept ? scale : 0), kept → mask, for elements [begin, end) of a call (numbered from 0).
TRAFO_INLINE_LOOP void masked_scale_loop(const float* __restrict in, float* __restrict out, uint8_t* __restrict mask,
                                         int64_t begin, int64_t end, MaskKey key, float scale) {
  const auto first = static_cast<uint32_t>(begin);
  in += begin;
  out += begin;
  mask += begin;
  for (int64_t j = 0; j < end - begin; ++j) {
    const uint32_t kept = mix(mix((first + static_cast<uint32_t>(j)) ^ key.key0) + key.key1) >= key.threshold;
    mask[j] = static_cast<uint8_t>(kept);
    out[j] = in[j] * (kept != 0 ? scale : 0.0f);
  }
}

TRAFO_INLINE_LOOP void apply_mask_loop(const float* __restrict in, float* __restrict out,
                                       const uint8_t* __restrict mask, int64_t begin, int64_t end, float scale) {
  for (int64_t i = begin; i < end; ++i) out[i] = in[i] * (mask[i] != 0 ? scale : 0.0f);
}

void masked_scale(const float* __restrict in, float* __restrict out, uint8_t* __restrict mask, int64_t begin,
                  int64_t end, MaskKey key, float scale) {
  masked_scale_loop(in, out, mask, begin, end, key, scale);
}

TRAFO_AVX2_FMA void masked_scale_avx2(const float* __restrict in, float* __restrict out, uint8_t* __restrict mask,
                                      int64_t begin, int64_t end, MaskKey key, float scale) {
  masked_scale_loop(in, out, mask, begin, end, key, scale);
}

void apply_mask(const float* __restrict in, float* __restrict out, const uint8_t* __restrict mask, int64_t begin,
                int64_t end, float scale) {
  apply_mask_loop(in, out, mask, begin, end, scale);
}

TRAFO_AVX2_FMA void apply_mask_avx2(const float* __restrict in, float* __restrict out,
                                    const uint8_t* __restrict mask, int64_t begin, int64_t end, float scale) {
  apply_mask_loop(in, out, mask, begin, end, scale);
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
    const float* source = in.data_ptr<float>();
    float* target = out.data_ptr<float>();
    uint8_t* kept = mask.data_ptr<uint8_t>();
    const auto kernel = cpu_has_avx2_fma() ? masked_scale_avx2 : masked_scale;
    at::parallel_for(0, in.numel(), kGrain, [&](int64_t begin, int64_t end) {
      kernel(source, target, kept, begin, end, key, scale);
    });
    ctx->save_for_backward({mask});  // released once backward has used it
    ctx->saved_data["scale"] = static_cast<double>(scale);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto mask = ctx->get_saved_variables()[0];
    const auto scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    if (at::GradMode::is_enabled()) {  // create_graph: the same product, differentiable
      return {grad_outputs[0] * mask.to(grad_outputs[0].scalar_type()) * scale, at::Tensor()};
    }
    const auto grad = grad_outputs[0].contiguous();
    auto grad_input = at::empty_like(grad);
    const float* source = grad.data_ptr<float>();
    float* target = grad_input.data_ptr<float>();
    const uint8_t* kept = mask.data_ptr<uint8_t>();
    const auto kernel = cpu_has_avx2_fma() ? apply_mask_avx2 : apply_mask;
    at::parallel_for(0, grad.numel(), kGrain, [&](int64_t begin, int64_t end) {
      kernel(source, target, kept, begin, end, scale);
    });
    return {grad_input, at::Tensor()};
  }
};

}  // namespace

bool hashed_dropout_applies(const at::Tensor& x, double p) {
  return cpu_fast_path(Kernel::hashed_dropout, {x}) && p < 1.0 && x.numel() < (int64_t{1} << 32);
}

at::Tensor hashed_dropout(const at::Tensor& x, double p) {
  note_run(Kernel::hashed_dropout);
  return HashedDropout::apply(x, p);
}

}  // namespace trafo::ops
