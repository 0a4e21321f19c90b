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
  if (!starts.empty()) {
    const auto rows = index.cpu().contiguous();
    const auto* row = rows.data_ptr<int64_t>();
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < rows.numel(); ++i) kept.push_back(starts.at(static_cast<size_t>(row[i])));
    starts = std::move(kept);
  }
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

void AttentionCache::add_rows(int64_t count) {
  const int64_t before = empty() ? static_cast<int64_t>(starts.size()) : keys.size(0);
  const int64_t length = empty() ? 0 : keys.size(2);
  if (starts.empty()) starts.assign(static_cast<size_t>(before), 0);
  starts.insert(starts.end(), static_cast<size_t>(count), length);
  if (empty()) return;  // the first append makes the storage, with every row
  const auto grow = [&](const torch::Tensor& storage) {
    auto sizes = storage.sizes().vec();
    sizes[0] = count;
    return torch::cat({storage, torch::zeros(sizes, storage.options())}, 0);
  };
  key_storage_ = grow(key_storage_);
  value_storage_ = grow(value_storage_);
  keys = key_storage_.narrow(2, 0, length);
  values = value_storage_.narrow(2, 0, length);
}

void AttentionCache::restart_rows(const std::vector<int64_t>& rows) {
  const int64_t length = empty() ? 0 : keys.size(2);
  if (starts.empty()) starts.assign(static_cast<size_t>(empty() ? 0 : keys.size(0)), 0);
  for (const int64_t row : rows) starts.at(static_cast<size_t>(row)) = length;
}

namespace {

// x [B,h,S,d_k] with positions of zeros after S up to `width`.
torch::Tensor padded_to(const torch::Tensor& x, int64_t width) {
  return x.size(2) == width ? x : torch::constant_pad_nd(x, {0, 0, 0, width - x.size(2)});
}

}  // namespace

void AttentionCache::add_rows(const torch::Tensor& k, const torch::Tensor& v) {
  if (empty()) {
    keys = k;
    values = v;
    return;
  }
  const int64_t width = std::max(keys.size(2), k.size(2));
  keys = torch::cat({padded_to(keys, width), padded_to(k, width)}, 0);
  values = torch::cat({padded_to(values, width), padded_to(v, width)}, 0);
}

void AttentionCache::put_rows(const std::vector<int64_t>& rows, const torch::Tensor& k, const torch::Tensor& v) {
  if (rows.empty()) return;
  const int64_t width = std::max(keys.size(2), k.size(2));
  if (width > keys.size(2)) {
    keys = padded_to(keys, width);
    values = padded_to(values, width);
  }
  const auto index = torch::tensor(rows, torch::kLong).to(keys.device());
  keys.index_copy_(0, index, padded_to(k, width).to(keys.dtype()));
  values.index_copy_(0, index, padded_to(v, width).to(values.dtype()));
}

void AttentionCache::drop_front(int64_t count) {
  if (count == 0) return;
  for (auto& start : starts) start -= count;
  if (empty()) return;
  const int64_t length = keys.size(2) - count;
  key_storage_ = key_storage_.narrow(2, count, key_storage_.size(2) - count).contiguous();
  value_storage_ = value_storage_.narrow(2, count, value_storage_.size(2) - count).contiguous();
  keys = key_storage_.narrow(2, 0, length);
  values = value_storage_.narrow(2, 0, length);
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

std::pair<torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::memory_keys_values(const torch::Tensor& memory) {
  auto kv = kv_proj(memory).chunk(2, -1);  // 2 × [B,S,d]
  return {split_heads(kv[0]), split_heads(kv[1])};
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& memory,
                                              const torch::Tensor& mask, AttentionCache* cache, bool causal) {
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
      std::tie(k, v) = memory_keys_values(memory);
      if (cache != nullptr) {
        cache->keys = k;
        cache->values = v;
      }
    }
  }

  if (keep_head_weights_ && is_training()) {
    // The first head's softmax(q kᵀ / √d_k) over the keys it may attend to, as the attention uses it.
    auto scores = at::matmul(q.select(1, 0), k.select(1, 0).transpose(-1, -2)).to(torch::kFloat) /
                  std::sqrt(static_cast<double>(q.size(-1)));  // [B,Tq,Tk]
    if (mask.defined()) scores = scores.masked_fill(mask.select(1, 0).logical_not(), -std::numeric_limits<float>::infinity());
    head_weights_ = torch::softmax(scores, -1);
  }

  ops::AttentionCall call;
  if (self_attention_ && cache != nullptr && !cache->starts.empty()) call.starts = &cache->starts;
  call.dropout = dropout_;
  call.training = is_training();
  call.cached_step = cache != nullptr;
  call.causal = causal && cache == nullptr;
  call.fused = fused_;
  call.weights = keep_weights_ ? &last_weights_ : nullptr;
  return out_proj(ops::attention(q, k, v, mask, call));  // [B,Tq,d]
}

}  // namespace trafo::model
