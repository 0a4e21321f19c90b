#include "trafo/ops/step_attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include "elements.h"
#include "isa.h"
#include "trafo/ops/eligibility.h"
#include "vectors.h"


namespace trafo::ops {
namespace {

// Where the tensors of one call lie, in floats: q [B,h,d_k], k and v [B,h,T,d_k] with d_k
// contiguous, mask [B,T] contiguous (true: may attend) or null, starts [B] (row b's keys begin at
// position starts[b]) or null, out [B,h·d_k] contiguous.
struct Shape {
  int64_t heads, length, d_k;
  int64_t q_batch, q_head;          // strides of q
  int64_t k_batch, k_head, k_time;  // strides of k
  int64_t v_batch, v_head, v_time;  // strides of v
  float scale;                      // 1/√d_k
};

#if defined(__x86_64__)

// out[b, h·d_k + j] for the rows r = b·heads + h in [begin, end) (the formula in step_attention.h),
// d_k a multiple of S::kLanes. T: float, or uint16_t for bf16 (widened on load, the scores,
// weights and context in fp32, the output rounded once).
template <typename S, typename T>
TRAFO_INLINE_LOOP void step_rows_loop(const T* q, const T* k, const T* v, const bool* mask, const int64_t* starts,
                                      T* out, const Shape& s, int64_t begin, int64_t end) {
  using V = typename S::V;
  constexpr int64_t lanes = S::kLanes;
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  std::vector<float> weights(static_cast<size_t>((s.length + lanes - 1) / lanes * lanes));
  for (int64_t row = begin; row < end; ++row) {
    const int64_t b = row / s.heads, h = row % s.heads;
    // A row that starts late reads its own keys from position 0, as a batch of its own would: the
    // same lanes hold the same scores, so the sums run in the same order.
    const int64_t start = starts != nullptr ? starts[b] : 0;
    const int64_t length = s.length - start;
    const int64_t padded = (length + lanes - 1) / lanes * lanes;
    const T* q_row = q + b * s.q_batch + h * s.q_head;
    const T* k_row = k + b * s.k_batch + h * s.k_head + start * s.k_time;
    const T* v_row = v + b * s.v_batch + h * s.v_head + start * s.v_time;
    const bool* mask_row = mask != nullptr ? mask + b * s.length + start : nullptr;
    T* out_row = out + row * s.d_k;

    // scores: q·k_t · scale, −∞ where masked and past the end
    for (int64_t t = 0; t < padded; ++t) {
      float score = minus_infinity;
      if (t < length && (mask_row == nullptr || mask_row[t])) {
        const T* k_t = k_row + t * s.k_time;
        V dot = S::mul(S::load(q_row), S::load(k_t));
        for (int64_t j = lanes; j < s.d_k; j += lanes) dot = S::fmadd(S::load(q_row + j), S::load(k_t + j), dot);
        score = S::sum(dot) * s.scale;
      }
      weights[t] = score;
    }
    V largest = S::set(minus_infinity);
    for (int64_t t = 0; t < padded; t += lanes) largest = S::max(largest, S::load(&weights[t]));
    const float top = S::largest(largest);
    if (top == minus_infinity) {
      for (int64_t j = 0; j < s.d_k; ++j) out_row[j] = T{0};
      continue;
    }
    // weights: e^(score − top), and their sum
    V total = S::zero();
    for (int64_t t = 0; t < padded; t += lanes) {
      const V e = exp_nonpositive<S>(S::sub(S::load(&weights[t]), S::set(top)));
      S::store(&weights[t], e);
      total = S::add(total, e);
    }
    const float inverse_total = 1.0f / S::sum(total);
    // context: Σ_t weight_t v_t / Σ_t weight_t
    alignas(64) float context[256];
    for (int64_t j = 0; j < s.d_k; j += lanes) S::store(context + j, S::zero());
    for (int64_t t = 0; t < length; ++t) {
      if (weights[t] == 0.0f) continue;
      const V w = S::set(weights[t]);
      const T* v_t = v_row + t * s.v_time;
      for (int64_t j = 0; j < s.d_k; j += lanes) S::store(context + j, S::fmadd(w, S::load(v_t + j), S::load(context + j)));
    }
    const V scale = S::set(inverse_total);
    for (int64_t j = 0; j < s.d_k; j += lanes) S::store(out_row + j, S::mul(S::load(context + j), scale));
  }
}

template <typename T>
TRAFO_AVX2_FMA void step_rows_avx2(const T* q, const T* k, const T* v, const bool* mask, const int64_t* starts, T* out,
                                   const Shape& s, int64_t begin, int64_t end) {
  step_rows_loop<Avx2>(q, k, v, mask, starts, out, s, begin, end);
}

template <typename T>
TRAFO_AVX512 void step_rows_avx512(const T* q, const T* k, const T* v, const bool* mask, const int64_t* starts,
                                   T* out, const Shape& s, int64_t begin, int64_t end) {
  step_rows_loop<Avx512>(q, k, v, mask, starts, out, s, begin, end);
}

#else  // not x86-64: cpu_isa() is none, callers take at::scaled_dot_product_attention

template <typename T>
void step_rows_avx2(const T*, const T*, const T*, const bool*, const int64_t*, T*, const Shape&, int64_t, int64_t) {}
template <typename T>
void step_rows_avx512(const T*, const T*, const T*, const bool*, const int64_t*, T*, const Shape&, int64_t, int64_t) {}

#endif

// Every row and head of one call, on all threads, T the elements' type (elements.h).
template <typename T>
void run_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const bool* mask, const int64_t* starts,
              const at::Tensor& out, const Shape& shape, Isa isa) {
  const T* q_data = elements<T>(q);
  const T* k_data = elements<T>(k);
  const T* v_data = elements<T>(v);
  T* out_data = elements<T>(out);
  at::parallel_for(0, q.size(0) * shape.heads, 8, [&](int64_t begin, int64_t end) {
    (isa == Isa::avx512 ? step_rows_avx512<T> : step_rows_avx2<T>)(q_data, k_data, v_data, mask, starts, out_data,
                                                                    shape, begin, end);
  });
}

}  // namespace

bool step_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  if (!cpu_fast_path(Kernel::step_attention, {q, k, v})) return false;
  // fp32, or bf16 under bf16 autocast (where SDPA would run in bf16)
  const bool autocast = at::autocast::is_autocast_enabled(at::kCPU);
  if (autocast && at::autocast::get_autocast_dtype(at::kCPU) != at::kBFloat16) return false;
  for (const auto* t : {&q, &k, &v}) {
    if (t->stride(3) != 1 || t->scalar_type() != (autocast ? at::kBFloat16 : at::kFloat)) return false;
  }
  if (mask.defined() && (mask.scalar_type() != at::kBool || mask.dim() != 4 || mask.size(1) != 1 ||
                         mask.size(2) != 1 || mask.size(3) != k.size(2))) {
    return false;
  }
  return q.size(3) % 8 == 0 && q.size(3) <= 256;
}

at::Tensor step_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                          const std::vector<int64_t>* starts) {
  // zmm rows where d_k fills them (a d_k of 8 · odd stays on ymm)
  const Isa isa = cpu_isa() == Isa::avx512 && q.size(3) % 16 == 0 ? Isa::avx512 : Isa::avx2;
  note_run(Kernel::step_attention, isa);
  const int64_t batch = q.size(0), heads = q.size(1), d_k = q.size(3);
  at::Tensor mask_rows;  // [B,T]
  if (mask.defined()) mask_rows = mask.expand({batch, 1, 1, k.size(2)}).reshape({batch, k.size(2)}).contiguous();
  const Shape shape{heads,       k.size(2),   d_k,         q.stride(0),
                    q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                    v.stride(0), v.stride(1), v.stride(2), static_cast<float>(1.0 / std::sqrt(d_k))};
  auto context = at::empty({batch, 1, heads * d_k}, q.options());
  const bool* mask_data = mask_rows.defined() ? mask_rows.data_ptr<bool>() : nullptr;
  const int64_t* start_data = starts != nullptr && !starts->empty() ? starts->data() : nullptr;
  if (q.scalar_type() == at::kBFloat16) {
    run_rows<uint16_t>(q, k, v, mask_data, start_data, context, shape, isa);
  } else {
    run_rows<float>(q, k, v, mask_data, start_data, context, shape, isa);
  }
  return context;
}

namespace {

// q, k, v, mask of one sequence as step_attention's rows: query i is row i, over every key.
struct QueryRows {
  at::Tensor q, k, v, mask;
};

QueryRows query_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  const int64_t queries = q.size(2), keys = k.size(2);
  QueryRows rows;
  rows.q = q.permute({2, 1, 0, 3});                                    // [Tq,h,1,d_k]
  rows.k = k.expand({queries, k.size(1), keys, k.size(3)});            // [Tq,h,Tk,d_k], one copy of k
  rows.v = v.expand({queries, v.size(1), keys, v.size(3)});            // [Tq,h,Tk,d_k]
  if (mask.defined()) rows.mask = mask.expand({1, 1, queries, keys}).permute({2, 0, 1, 3});  // [Tq,1,1,Tk]
  return rows;
}

}  // namespace

bool query_rows_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& mask) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || q.size(0) != 1 || k.size(0) != 1 || v.size(0) != 1 ||
      k.size(2) > kMaxQueryRowsKeys || q.size(1) != k.size(1) || q.size(3) != k.size(3) || !k.sizes().equals(v.sizes())) {
    return false;
  }
  if (mask.defined() && (mask.dim() != 4 || mask.size(0) != 1 || mask.size(1) != 1 ||
                         (mask.size(2) != 1 && mask.size(2) != q.size(2)) || mask.size(3) != k.size(2))) {
    return false;
  }
  const auto rows = query_rows(q, k, v, mask);
  return step_attention_applies(rows.q, rows.k, rows.v, rows.mask);
}

at::Tensor query_rows_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  const auto rows = query_rows(q, k, v, mask);
  return step_attention(rows.q, rows.k, rows.v, rows.mask).view({1, q.size(2), -1});  // [1,Tq,h·d_k]
}

}  // namespace trafo::ops
