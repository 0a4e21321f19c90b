// Multi-head scaled dot-product attention for self- and cross-attention, batch first,
// with a KV cache for step-wise decoding (docs/design.md "Attention").
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "trafo/model/linear.h"
#include "trafo/ops/dispatch.h"

namespace trafo::model {

// Keys and values already computed: [B, h, T, d_k]. A decoder self-attention cache grows by one
// step per call (append); a cross-attention cache is filled once per source batch and reused.
class AttentionCache {
 public:
  torch::Tensor keys;    // [B,h,T,d_k]
  torch::Tensor values;  // [B,h,T,d_k]
  // Decoder self-attention whose rows joined a running batch at different steps (continuous
  // batching): row b's keys are positions starts[b] .. T-1. Empty: every row's begin at 0.
  std::vector<int64_t> starts;
  bool empty() const { return !keys.defined(); }
  // Keeps the batch rows in `index` (beam reordering, dropping finished sentences).
  void select(const torch::Tensor& index);
  // Puts k, v [B,h,steps,d_k] after the positions cached. keys and values are views of a storage
  // that doubles when full, so a step copies its own keys, not the whole cache.
  void append(const torch::Tensor& k, const torch::Tensor& v);

  // Continuous batching. Self-attention: `count` rows with no keys yet join, or rows `rows` (of
  // finished sentences) start again; their keys begin at the next position.
  void add_rows(int64_t count);
  void restart_rows(const std::vector<int64_t>& rows);
  // Cross-attention: rows with keys and values k, v [B2,h,S2,d_k] join, or take the places of rows
  // `rows` (one per row of k); the shorter source length is padded with zeros (the mask hides them).
  void add_rows(const torch::Tensor& k, const torch::Tensor& v);
  void put_rows(const std::vector<int64_t>& rows, const torch::Tensor& k, const torch::Tensor& v);
  // Self-attention: forgets positions 0 .. count-1, which no row reads (count ≤ every start).
  void drop_front(int64_t count);

 private:
  torch::Tensor key_storage_, value_storage_;  // [B,h,capacity,d_k]; undefined when keys were set directly
};

// Boolean "may attend" masks, broadcast to [B, 1, Tq, Tk].
torch::Tensor padding_mask(const torch::Tensor& tokens, int64_t pad_id);  // [B,T] -> [B,1,1,T]
torch::Tensor causal_mask(int64_t length, const torch::Device& device);   // [1,1,T,T]

// softmax(QKᵀ/√d_k + mask) V with explicit ops (ops/dispatch.h), the seeds' formula.
using ops::plain_attention;

class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  // Self-attention projects Q, K and V with one fused matrix; cross-attention projects Q from the
  // decoder and K, V (fused) from the encoder memory.
  MultiHeadAttentionImpl(int64_t d_model, int64_t heads, double dropout, bool self_attention);

  // query [B,Tq,d], memory [B,Tk,d] (ignored for self-attention), mask broadcastable to
  // [B,1,Tq,Tk] (undefined: attend everywhere), cache: see AttentionCache. Returns [B,Tq,d].
  // `causal`: the mask is the plain causal one over the queries themselves, which lets CUDA's SDPA
  // take its causal kernels instead of reading the mask.
  torch::Tensor forward(const torch::Tensor& query, const torch::Tensor& memory, const torch::Tensor& mask,
                        AttentionCache* cache = nullptr, bool causal = false);

  // Cross-attention: the keys and values [B,h,S,d_k] of encoder memory [B,S,d].
  std::pair<torch::Tensor, torch::Tensor> memory_keys_values(const torch::Tensor& memory);

  // Selects the plain path and keeps its weights [B,h,Tq,Tk] in last_weights().
  void set_keep_weights(bool keep) { keep_weights_ = keep; }
  // Uses at::scaled_dot_product_attention unless false (tests compare the two paths).
  void set_fused(bool fused) { fused_ = fused; }
  const torch::Tensor& last_weights() const { return last_weights_; }
  // Guided alignment (cross-attention): in training, each forward also keeps the first head's weights
  // [B,Tq,Tk] (fp32, before dropout, with their graph), which take_head_weights() hands over once.
  void set_keep_head_weights(bool keep) { keep_head_weights_ = keep; }
  torch::Tensor take_head_weights() { return std::move(head_weights_); }

  int64_t heads() const { return heads_; }
  bool is_self_attention() const { return self_attention_; }
  Linear qkv_proj{nullptr};  // self-attention: [3d, d]
  Linear q_proj{nullptr};    // cross-attention: [d, d]
  Linear kv_proj{nullptr};   // cross-attention: [2d, d]
  Linear out_proj{nullptr};  // [d, d]

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;  // [B,T,d] -> [B,h,T,d_k]
  int64_t d_model_, heads_;
  double dropout_;
  bool self_attention_;
  bool keep_weights_ = false;
  bool keep_head_weights_ = false;
  bool fused_ = true;
  torch::Tensor last_weights_;
  torch::Tensor head_weights_;
};
TORCH_MODULE(MultiHeadAttention);

}  // namespace trafo::model
