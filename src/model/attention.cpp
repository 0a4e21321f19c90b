// Scaled dot-product attention, then multi-head attention over it, with the KV cache of step-wise
// decoding. The one-query kernel of a decoding step is ops::step_attention.
#include "trafo/model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <torch/torch.h>

#include "trafo/model/dropout.h"
#include "trafo/ops/eligibility.h"
#include "trafo/ops/step_attention.h"

namespace trafo::model {

torch::Tensor padding_mask(const torch::Tensor& tokens, int64_t pad_id) {
  return tokens.ne(pad_id).unsqueeze(1).unsqueeze(1);  // [B,1,1,T]
}

torch::Tensor causal_mask(int64_t length, const torch::Device& device) {
  auto options = torch::TensorOptions().dtype(torch::kBool).device(device);
  return torch::ones({length, length}, options).tril().view({1, 1, length, length});
}

torch::Tensor plain_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const torch::Tensor& mask, double dropout, bool training, torch::Tensor* weights) {
  // 1. how well each query matches each key, 2. scaled by 1/√d_k so that the softmax does not
  // saturate as d_k grows; positions that may not be attended to get −∞
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;  // [B,h,Tq,Tk]
  if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  // 3. weights that sum to 1 over the keys
  auto probabilities = torch::softmax(scores, -1);
  if (weights != nullptr) *weights = probabilities;
  if (training && dropout > 0.0) probabilities = model::dropout(probabilities, dropout, true);
  // 4. each query's context: the values weighted
  return torch::matmul(probabilities, v);  // [B,h,Tq,d_k]
}

void AttentionCache::select(const torch::Tensor& index) {
  if (empty()) return;
  if (!key_storage_.defined()) {
    keys = keys.index_select(0, index);
    values = values.index_select(0, index);
    return;
  }
  const int64_t length = keys.size(2);
  key_storage_ = key_storage_.index_select(0, index);
  value_storage_ = value_storage_.index_select(0, index);
  keys = key_storage_.narrow(2, 0, length);
  values = value_storage_.narrow(2, 0, length);
}

void AttentionCache::append(const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t length = empty() ? 0 : keys.size(2);
  const int64_t steps = k.size(2);
  if (!key_storage_.defined() || length + steps > key_storage_.size(2)) {
    const int64_t capacity = std::max<int64_t>(2 * (length + steps), 16);
    const auto grow = [&](const torch::Tensor& filled, const torch::Tensor& fresh) {
      auto storage = torch::empty({fresh.size(0), fresh.size(1), capacity, fresh.size(3)}, fresh.options());
      if (length > 0) storage.narrow(2, 0, length).copy_(filled);
      return storage;
    };
    key_storage_ = grow(keys, k);
    value_storage_ = grow(values, v);
  }
  key_storage_.narrow(2, length, steps).copy_(k);
  value_storage_.narrow(2, length, steps).copy_(v);
  keys = key_storage_.narrow(2, 0, length + steps);
  values = value_storage_.narrow(2, 0, length + steps);
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t heads, double dropout, bool self_attention)
    : d_model_(d_model), heads_(heads), dropout_(dropout), self_attention_(self_attention) {
  if (self_attention) {
    qkv_proj = register_module("qkv_proj", Linear(d_model, 3 * d_model));
  } else {
    q_proj = register_module("q_proj", Linear(d_model, d_model));
    kv_proj = register_module("kv_proj", Linear(d_model, 2 * d_model));
  }
  out_proj = register_module("out_proj", Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::split_heads(const torch::Tensor& x) const {
  return x.view({x.size(0), x.size(1), heads_, d_model_ / heads_}).transpose(1, 2);
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& memory,
                                              const torch::Tensor& mask, AttentionCache* cache) {
  torch::Tensor q, k, v;
  if (self_attention_) {
    auto qkv = qkv_proj(query).chunk(3, -1);  // 3 × [B,Tq,d]
    q = split_heads(qkv[0]);
    k = split_heads(qkv[1]);
    v = split_heads(qkv[2]);
    if (cache != nullptr) {
      cache->append(k, v);
      k = cache->keys;  // [B,h,Tpast+Tq,d_k]
      v = cache->values;
    }
  } else {
    q = split_heads(q_proj(query));
    if (cache != nullptr && !cache->empty()) {
      k = cache->keys;
      v = cache->values;
    } else {
      auto kv = kv_proj(memory).chunk(2, -1);  // 2 × [B,Tk,d]
      k = split_heads(kv[0]);
      v = split_heads(kv[1]);
      if (cache != nullptr) {
        cache->keys = k;
        cache->values = v;
      }
    }
  }

  if (cache != nullptr && query.size(1) == 1 && !keep_weights_ && ops::step_attention_applies(q, k, v, mask)) {
    return out_proj(ops::step_attention(q, k, v, mask));  // [B,1,d]
  }
  // SDPA with dropout on the CPU runs its math path with a serial Bernoulli mask: where the hashed
  // mask applies the plain path is the same math with it (under bf16 autocast q is bf16 and SDPA
  // computes in fp32).
  const bool cpu_dropout = is_training() && dropout_ > 0.0 && ops::cpu_fast_path(ops::Kernel::hashed_dropout, {q});
  torch::Tensor context;  // [B,h,Tq,d_k]
  if (keep_weights_ || !fused_ || cpu_dropout) {
    context = plain_attention(q, k, v, mask, dropout_, is_training(), keep_weights_ ? &last_weights_ : nullptr);
  } else {
    const double dropout = is_training() ? dropout_ : 0.0;
    const auto attn_mask = mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt;
    context = at::scaled_dot_product_attention(q, k, v, attn_mask, dropout);
  }
  context = context.transpose(1, 2).reshape({query.size(0), query.size(1), d_model_});  // [B,Tq,d]
  return out_proj(context);
}

}  // namespace trafo::model
