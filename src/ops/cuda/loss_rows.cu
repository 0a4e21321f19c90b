// The label-smoothed cross-entropy's rows on CUDA (kernels.h): one pass over a row reads its
// largest logit and their sum, one its Σ e^(l − max), one writes its gradient in place. A row of a
// 32k vocabulary (64 KB in bf16) stays in L2 between the passes, so the logits cross memory once
// read and once written, where LibTorch's log_softmax, its backward and the casts around them
// cross it about six times in fp32.
#include "kernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace trafo::ops::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

__device__ inline float load(const float* p) { return *p; }
__device__ inline float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }

// The block's sum (Sum) or max of `v`, in every thread. `scratch` holds kWarps floats.
template <bool Sum>
__device__ float block_reduce(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = Sum ? v + other : fmaxf(v, other);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // scratch may still be read by the previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kWarps ? scratch[lane] : (Sum ? 0.0f : -INFINITY);
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = Sum ? v + other : fmaxf(v, other);
  }
  return v;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) loss_rows_kernel(T* logits, const int64_t* target, int64_t rows,
                                                             int64_t vocab, float epsilon, int64_t pad_id,
                                                             bool gradient, float* terms) {
  __shared__ float scratch[kWarps];
  const int64_t r = blockIdx.x;
  T* row = logits + r * vocab;
  const int64_t t = target[r];
  if (t == pad_id || t < 0 || t >= vocab) {  // padding (an id out of range is the caller's error, not a fault)
    if (threadIdx.x == 0) terms[r] = terms[rows + r] = 0.0f;
    if (gradient) {
      for (int64_t j = threadIdx.x; j < vocab; j += kThreads) store(row + j, 0.0f);
    }
    return;
  }
  const float at_target = load(row + t);  // read before any thread overwrites the row
  float largest = -INFINITY, total = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float l = load(row + j);
    largest = fmaxf(largest, l);
    total += l;
  }
  largest = block_reduce<false>(largest, scratch);
  total = block_reduce<true>(total, scratch);
  float exp_total = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) exp_total += expf(load(row + j) - largest);
  exp_total = block_reduce<true>(exp_total, scratch);
  const float log_total = largest + logf(exp_total);
  if (threadIdx.x == 0) {
    const float nll = log_total - at_target;
    terms[r] = (1.0f - epsilon) * nll + epsilon * (log_total - total / static_cast<float>(vocab));
    terms[rows + r] = nll;
  }
  if (!gradient) return;
  const float inverse = 1.0f / exp_total, spread = epsilon / static_cast<float>(vocab);
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float g = expf(load(row + j) - largest) * inverse - spread - (j == t ? 1.0f - epsilon : 0.0f);
    store(row + j, g);
  }
}

}  // namespace

// Checked once: a kernel image for this GPU (or PTX it can compile) and a runtime the driver takes.
bool built() {
  static const bool runs = [] {
    cudaFuncAttributes f32{}, bf16{};
    const bool ok = cudaFuncGetAttributes(&f32, loss_rows_kernel<float>) == cudaSuccess &&
                    cudaFuncGetAttributes(&bf16, loss_rows_kernel<__nv_bfloat16>) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();  // leave no error behind for LibTorch's next call
    return ok;
  }();
  return runs;
}

void loss_rows(void* logits, Logits type, const int64_t* target, int64_t rows, int64_t vocab, float epsilon,
               int64_t pad_id, bool gradient, float* terms, void* stream) {
  if (rows == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(static_cast<unsigned>(rows));
  if (type == Logits::bf16) {
    loss_rows_kernel<<<grid, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(logits), target, rows, vocab, epsilon,
                                               pad_id, gradient, terms);
  } else {
    loss_rows_kernel<<<grid, kThreads, 0, s>>>(static_cast<float*>(logits), target, rows, vocab, epsilon, pad_id,
                                               gradient, terms);
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) throw std::runtime_error(std::string("CUDA loss kernel: ") + cudaGetErrorString(error));
}

}  // namespace trafo::ops::cuda
