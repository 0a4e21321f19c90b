// Dropout with a counter-based mask. LibTorch's CPU dropout draws one Bernoulli sample per element
// from a serial generator (14% of a training step here); this hashes (seed, element index) on all
// threads instead. Same semantics: each element kept with probability 1 − p and scaled by
// 1 / (1 − p). One seed per call comes from LibTorch's default CPU generator, so
// torch::manual_seed makes runs repeatable, whatever the thread count and the CPU's ISA. Takes
// float32 and bfloat16 (what bf16 autocast makes of activations; LibTorch's bf16 dropout costs 16%
// of a bf16 step): a bf16 element's mask is the one a float32 element at its index would get.
#pragma once

#include <ATen/core/Tensor.h>

namespace trafo::ops {

// The eligibility rule (ops/eligibility.h) for x, p < 1 and fewer than 2^32 elements.
bool hashed_dropout_applies(const at::Tensor& x, double p);

// x with each element kept with probability 1 − p and scaled by 1 / (1 − p), else 0; the backward
// applies the same mask. Needs hashed_dropout_applies(x, p).
at::Tensor hashed_dropout(const at::Tensor& x, double p);

}  // namespace trafo::ops
