// Multi-head attention with the KV cache of step-wise decoding; the attention itself (and the choice
// of its kernel) is ops::attention.
#include "trafo/model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <torch/torch.h>

#include "trafo/ops/dispatch.h"

namespace trafo::model {

torch::Tensor padding_mask(const torch::Tensor& tokens, int64_t pad_id) {
  return tokens.ne(pad_id).unsqueeze(1).unsqueeze(1);  // [B,1,1,T]
}

torch::Tensor causal_mask(int64_t length, const torch::Device& device) {
  auto options = torch::TensorOptions().dtype(torch::kBool).device(device);
  return torch::ones({length, length}, options).tril().view({1, 1, length, length});
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

  ops::AttentionCall call;
  call.dropout = dropout_;
  call.training = is_training();
  call.cached_step = cache != nullptr;
  call.fused = fused_;
  call.weights = keep_weights_ ? &last_weights_ : nullptr;
  return out_proj(ops::attention(q, k, v, mask, call));  // [B,Tq,d]
}

}  // namespace trafo::model
