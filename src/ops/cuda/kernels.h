// trafo's own CUDA kernels, declared without CUDA's or LibTorch's headers: loss_rows.cu defines
// them where the build found nvcc, no_kernels.cpp where it did not (then built() is false and the
// callers keep LibTorch's ops).
#pragma once

#include <cstdint>

namespace trafo::ops::cuda {

// Whether this build holds the kernels below and they run on the current GPU (a kernel image for
// it, a runtime its driver takes): checked once, on a GPU; false where nvcc was not found.
bool built();

enum class Logits { f32, bf16 };

// Each row r of logits [rows, vocab] (row-major on the GPU, fp32 or bf16) with target[r]:
//   nll[r] = log Σ e^l − l_t,  smoothed[r] = (1 − ε)·nll[r] + ε·(log Σ e^l − mean(l))
// (both 0 where target[r] is pad_id), into terms[r] and terms[rows + r] (fp32). Where `gradient`,
// the row is replaced by the gradient of smoothed[r]: softmax − ε/V − (1 − ε)·onehot(t), zeros for
// padding. Math in fp32 whatever the logits' type. One block a row, on `stream` (a cudaStream_t),
// no host sync, so it can be captured in a CUDA graph.
void loss_rows(void* logits, Logits type, const int64_t* target, int64_t rows, int64_t vocab, float epsilon,
               int64_t pad_id, bool gradient, float* terms, void* stream);

}  // namespace trafo::ops::cuda
