#include "trafo/model/transformer.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "trafo/ops/packed_gemm.h"
#include "trafo/ops/step_attention.h"

namespace trafo::model {

static_assert(kFastPackedPieces <= ops::kMaxQueryRowsKeys && kFastPackedPieces <= ops::kMaxPackedRows);

EncoderLayerImpl::EncoderLayerImpl(const ModelConfig& c) {
  const bool pre_norm = norm_position(c) == NormPosition::kPre;
  self_attention = register_module("self_attention", MultiHeadAttention(c.d_model, c.heads, attention_dropout_rate(c), true));
  feed_forward = register_module("feed_forward", FeedForward(c.d_model, c.d_ff, activation_dropout_rate(c), activation_of(c)));
  attention_residual = register_module("attention_residual", Residual(c.d_model, c.dropout, pre_norm));
  feed_forward_residual = register_module("feed_forward_residual", Residual(c.d_model, c.dropout, pre_norm));
}

torch::Tensor EncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& src_mask) {
  auto h = attention_residual(x, [&](const torch::Tensor& y) { return self_attention(y, y, src_mask); });
  return feed_forward_residual(h, [&](const torch::Tensor& y) { return feed_forward(y); });
}

void DecoderCache::select(const torch::Tensor& index) {
  for (auto& cache : self_attention) cache.select(index);
  for (auto& cache : cross_attention) cache.select(index);
}

void DecoderCache::drop_unread() {
  if (self_attention.empty() || self_attention.front().starts.empty()) return;
  const auto& starts = self_attention.front().starts;
  const int64_t unread = *std::min_element(starts.begin(), starts.end());
  for (auto& cache : self_attention) cache.drop_front(unread);
  length -= unread;
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c) {
  const bool pre_norm = norm_position(c) == NormPosition::kPre;
  self_attention = register_module("self_attention", MultiHeadAttention(c.d_model, c.heads, attention_dropout_rate(c), true));
  cross_attention = register_module("cross_attention", MultiHeadAttention(c.d_model, c.heads, attention_dropout_rate(c), false));
  feed_forward = register_module("feed_forward", FeedForward(c.d_model, c.d_ff, activation_dropout_rate(c), activation_of(c)));
  self_residual = register_module("self_residual", Residual(c.d_model, c.dropout, pre_norm));
  cross_residual = register_module("cross_residual", Residual(c.d_model, c.dropout, pre_norm));
  feed_forward_residual = register_module("feed_forward_residual", Residual(c.d_model, c.dropout, pre_norm));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                        const torch::Tensor& self_mask, const torch::Tensor& src_mask,
                                        AttentionCache* self_cache, AttentionCache* cross_cache) {
  // Without a cache the self mask is the plain causal one (TransformerImpl::decode).
  const bool causal = self_cache == nullptr && self_mask.defined();
  auto h = self_residual(x, [&](const torch::Tensor& y) { return self_attention(y, y, self_mask, self_cache, causal); });
  h = cross_residual(h, [&](const torch::Tensor& y) { return cross_attention(y, memory, src_mask, cross_cache); });
  return feed_forward_residual(h, [&](const torch::Tensor& y) { return feed_forward(y); });
}

TransformerImpl::TransformerImpl(const ModelConfig& config) : config_(config) {
  validate(config_);
  const auto& c = config_;
  source_embedding = register_module("source_embedding", TokenEmbedding(c.vocab_size, c.d_model, c.pad_id));
  if (c.tie_embeddings) {
    target_embedding = source_embedding;
    // Zeros: a new model starts as one without it (trafo import sets MarianMT's final_logits_bias).
    if (c.output_bias) tied_output_bias = register_parameter("output_bias", torch::zeros({c.vocab_size}));
  } else {
    target_embedding = register_module("target_embedding", TokenEmbedding(c.vocab_size, c.d_model, c.pad_id));
    output_projection = register_module("output_projection", Linear(c.d_model, c.vocab_size));
  }
  positions = register_module("positions", position_kind(c.positions).make(c));
  embedding_dropout = register_module("embedding_dropout", Dropout(c.dropout));
  for (int64_t i = 0; i < c.encoder_layers; ++i) encoder_layers->push_back(EncoderLayer(c));
  for (int64_t i = 0; i < c.decoder_layers; ++i) decoder_layers->push_back(DecoderLayer(c));
  register_module("encoder_layers", encoder_layers);
  register_module("decoder_layers", decoder_layers);
  if (norm_position(c) == NormPosition::kPre) {
    encoder_norm = register_module("encoder_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
    decoder_norm = register_module("decoder_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  }
  initialize();
}

void TransformerImpl::initialize() {
  torch::NoGradGuard no_grad;
  // Xavier-uniform for every projection; for the fused QKV/KV matrices, per [d, d] block as if separate.
  for (const auto& module : modules(false)) {
    if (auto* linear = module->as<Linear>()) {
      const auto& w = linear->weight;
      const int64_t blocks = std::max<int64_t>(1, w.size(0) / w.size(1));
      for (const auto& block : w.chunk(blocks, 0)) torch::nn::init::xavier_uniform_(block);
      torch::nn::init::zeros_(linear->bias);
    }
  }
  // The output projection (when untied) is a vocabulary-wide matrix; plain Xavier over it.
  if (output_projection) torch::nn::init::xavier_uniform_(output_projection->weight);
  const double std = std::pow(static_cast<double>(config_.d_model), -0.5);
  for (auto& embedding : {source_embedding, target_embedding}) {
    torch::nn::init::normal_(embedding->embedding->weight, 0.0, std);
    embedding->embedding->weight[config_.pad_id].zero_();
  }
}

bool TransformerImpl::skipped(double layerdrop) const {
  // One draw per layer and step from the CPU's default generator, which checkpoints keep: a resumed
  // run skips the layers an uninterrupted one would.
  return layerdrop > 0.0 && is_training() && torch::rand({}, torch::kDouble).item<double>() < layerdrop;
}

torch::Tensor TransformerImpl::encoder_stack(torch::Tensor x, const torch::Tensor& src_mask) {
  for (const auto& layer : *encoder_layers) {
    if (!skipped(config_.encoder_layerdrop)) x = layer->as<EncoderLayer>()->forward(x, src_mask);
  }
  return encoder_norm ? encoder_norm(x) : x;
}

torch::Tensor TransformerImpl::encode(const torch::Tensor& src) {
  return encoder_stack(embedding_dropout(positions->embed(source_embedding(src), 0)), source_mask(src));  // [B,S,d]
}

std::pair<torch::Tensor, torch::Tensor> TransformerImpl::encode_rows(const torch::Tensor& src) {
  const int64_t rows = src.size(0), width = src.size(1);
  const auto long_options = torch::TensorOptions().dtype(torch::kLong).device(src.device());
  const auto kept = src.ne(config_.pad_id).flatten().nonzero().squeeze(1);  // [P] places in [B*S]
  const int64_t count = kept.size(0);
  const auto tokens = src.flatten().index_select(0, kept).unsqueeze(0);  // [1,P]
  const auto column = torch::arange(width, long_options).repeat({rows}).index_select(0, kept);  // [P]
  const auto row = torch::arange(rows, long_options).repeat_interleave(width).index_select(0, kept);  // [P]
  const auto same_sentence = row.unsqueeze(1).eq(row.unsqueeze(0)).view({1, 1, count, count});  // [1,1,P,P]
  auto x = source_embedding(tokens).view({count, 1, -1});  // [P,1,d]
  x = embedding_dropout(positions->embed_rows(x, column).view({1, count, -1}));  // [1,P,d]
  return {encoder_stack(x, same_sentence), kept};
}

namespace {

// rows [1,P,e] of the places `kept` [P] of a [B,S] batch -> [B,S,e], zeros elsewhere.
torch::Tensor laid_out(const torch::Tensor& rows, const torch::Tensor& kept, int64_t batch, int64_t width) {
  auto padded = torch::zeros({batch * width, rows.size(2)}, rows.options());
  padded.index_copy_(0, kept, rows.squeeze(0));
  return padded.view({batch, width, -1});
}

}  // namespace

torch::Tensor TransformerImpl::encode_packed(const torch::Tensor& src) {
  const auto [rows, kept] = encode_rows(src);
  return laid_out(rows, kept, src.size(0), src.size(1));  // [B,S,d]
}

torch::Tensor TransformerImpl::decode(const torch::Tensor& tgt_in, const torch::Tensor& memory,
                                      const torch::Tensor& src_mask, DecoderCache* cache) {
  const int64_t offset = cache != nullptr ? cache->length : 0;
  const int64_t steps = tgt_in.size(1);
  // A single new step may attend to every cached position: no mask needed.
  torch::Tensor self_mask;
  if (steps > 1) {
    self_mask = causal_mask(offset + steps, tgt_in.device()).narrow(2, offset, steps);  // [1,1,T,offset+T]
  }
  const std::vector<int64_t>* starts = cache != nullptr && !cache->self_attention.empty() &&
                                               !cache->self_attention.front().starts.empty()
                                           ? &cache->self_attention.front().starts
                                           : nullptr;
  torch::Tensor x = target_embedding(tgt_in);  // [B,T,d]
  if (starts != nullptr) {  // rows that joined late count their positions from their own start
    std::vector<int64_t> rows;
    for (const int64_t start : *starts) rows.push_back(offset - start);
    x = positions->embed_rows(x, torch::tensor(rows, torch::kLong).to(tgt_in.device()));
  } else {
    x = positions->embed(x, offset);
  }
  x = embedding_dropout(x);
  for (size_t i = 0; i < decoder_layers->size(); ++i) {
    if (cache == nullptr && skipped(config_.decoder_layerdrop)) continue;
    auto* self_cache = cache != nullptr ? &cache->self_attention[i] : nullptr;
    auto* cross_cache = cache != nullptr ? &cache->cross_attention[i] : nullptr;
    x = decoder_layers[i]->as<DecoderLayer>()->forward(x, memory, self_mask, src_mask, self_cache, cross_cache);
  }
  if (cache != nullptr) cache->length += steps;
  return decoder_norm ? decoder_norm(x) : x;
}

torch::Tensor TransformerImpl::output_logits(const torch::Tensor& hidden) {
  if (output_projection) return output_projection(hidden);
  if (!packed_inference_) return at::linear(hidden, output_weight(), output_bias());  // [B,T,V]
  return tied_output_.linear(hidden, output_weight(), output_bias());
}

const torch::Tensor& TransformerImpl::output_weight() const {
  return output_projection ? output_projection->weight : source_embedding->embedding->weight;
}

torch::Tensor TransformerImpl::output_bias() const {
  return output_projection ? output_projection->bias : tied_output_bias;
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt_in) {
  const auto memory = encode(src);
  return output_logits(decode(tgt_in, memory, source_mask(src)));
}

void TransformerImpl::join(DecoderCache& cache, const torch::Tensor& src, const std::vector<int64_t>& reuse) {
  const int64_t batch = src.size(0), width = src.size(1);
  const auto encoded = encode_rows(src);
  const auto& rows = encoded.first;   // [1,P,d]
  const auto& kept = encoded.second;  // [P]
  // [1,h,P,d_k] -> [B2,h,S,d_k] as split heads lay them out, zeros at the pads
  const auto laid_out_heads = [&](const torch::Tensor& x) {
    const auto merged = x.transpose(1, 2).reshape({1, x.size(2), -1});  // [1,P,h·d_k]
    return laid_out(merged, kept, batch, width).view({batch, width, x.size(1), x.size(3)}).transpose(1, 2);
  };
  const auto reused = static_cast<int64_t>(reuse.size());
  const int64_t added = batch - reused;
  for (size_t i = 0; i < decoder_layers->size(); ++i) {
    const auto [packed_keys, packed_values] =
        decoder_layers[i]->as<DecoderLayer>()->cross_attention->memory_keys_values(rows);
    const auto keys = laid_out_heads(packed_keys), values = laid_out_heads(packed_values);
    cache.cross_attention[i].put_rows(reuse, keys.narrow(0, 0, reused), values.narrow(0, 0, reused));
    cache.self_attention[i].restart_rows(reuse);
    if (added > 0) {
      cache.cross_attention[i].add_rows(keys.narrow(0, reused, added), values.narrow(0, reused, added));
      cache.self_attention[i].add_rows(added);
    }
  }
}

DecoderCache TransformerImpl::make_cache() const {
  DecoderCache cache;
  cache.self_attention.resize(decoder_layers->size());
  cache.cross_attention.resize(decoder_layers->size());
  return cache;
}

int64_t TransformerImpl::parameter_count() const {
  int64_t count = 0;
  for (const auto& p : parameters()) count += p.numel();
  return count;
}

std::vector<MultiHeadAttention> TransformerImpl::attention_modules() const {
  std::vector<MultiHeadAttention> result;
  for (const auto& layer : *encoder_layers) result.push_back(layer->as<EncoderLayer>()->self_attention);
  for (const auto& layer : *decoder_layers) {
    result.push_back(layer->as<DecoderLayer>()->self_attention);
    result.push_back(layer->as<DecoderLayer>()->cross_attention);
  }
  return result;
}

void TransformerImpl::set_keep_attention_weights(bool keep) {
  for (auto& attention : attention_modules()) attention->set_keep_weights(keep);
}

void TransformerImpl::set_fused_attention(bool fused) {
  for (auto& attention : attention_modules()) attention->set_fused(fused);
}

void TransformerImpl::set_guided_layer(int64_t layer) {
  for (size_t i = 0; i < decoder_layers->size(); ++i) {
    decoder_layers[i]->as<DecoderLayer>()->cross_attention->set_keep_head_weights(static_cast<int64_t>(i) == layer);
  }
  guided_layer_ = layer;
}

torch::Tensor TransformerImpl::take_guided_weights() {
  if (guided_layer_ < 0 || guided_layer_ >= static_cast<int64_t>(decoder_layers->size())) return {};
  return decoder_layers[static_cast<size_t>(guided_layer_)]->as<DecoderLayer>()->cross_attention->take_head_weights();
}

void TransformerImpl::set_packed_inference(bool packed) {
  packed_inference_ = packed;
  for (const auto& module : modules(false)) {
    if (auto* linear = module->as<Linear>()) linear->set_packed(packed);
  }
}

}  // namespace trafo::model
