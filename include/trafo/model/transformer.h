// The encoder-decoder, built bottom up from the pieces in layers.h and attention.h.
#pragma once

#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>

#include "trafo/model/attention.h"
#include "trafo/model/config.h"
#include "trafo/model/layers.h"
#include "trafo/model/positions.h"

namespace trafo::model {

// The most pieces one sequence of encode_packed() or join() keeps on the fast inference kernels: the
// query-rows attention and the AVX2 packed tile (transformer.cpp asserts both). Longer is correct,
// only slower.
inline constexpr int64_t kFastPackedPieces = 128;

class EncoderLayerImpl : public torch::nn::Module {
 public:
  explicit EncoderLayerImpl(const ModelConfig& config);
  // x [B,S,d], src_mask [B,1,1,S] -> [B,S,d]
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& src_mask);
  MultiHeadAttention self_attention{nullptr};
  FeedForward feed_forward{nullptr};
  Residual attention_residual{nullptr}, feed_forward_residual{nullptr};
};
TORCH_MODULE(EncoderLayer);

// Per decoder layer: the growing self-attention cache and the fixed cross-attention cache.
struct DecoderCache {
  std::vector<AttentionCache> self_attention;
  std::vector<AttentionCache> cross_attention;
  int64_t length = 0;  // target positions already decoded (by the oldest rows, when rows joined late)
  void select(const torch::Tensor& index);  // keep batch rows `index`
  // Continuous batching: forgets the positions before every row's start (AttentionCache::starts).
  void drop_unread();
};

class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const ModelConfig& config);
  // x [B,T,d], memory [B,S,d], self_mask [1,1,T,Tpast+T] or undefined, src_mask [B,1,1,S] -> [B,T,d]
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& self_mask,
                        const torch::Tensor& src_mask, AttentionCache* self_cache = nullptr,
                        AttentionCache* cross_cache = nullptr);
  MultiHeadAttention self_attention{nullptr}, cross_attention{nullptr};
  FeedForward feed_forward{nullptr};
  Residual self_residual{nullptr}, cross_residual{nullptr}, feed_forward_residual{nullptr};
};
TORCH_MODULE(DecoderLayer);

class TransformerImpl : public torch::nn::Module, public PackedWeightOwner {
 public:
  explicit TransformerImpl(const ModelConfig& config);

  // src [B,S] -> memory [B,S,d]
  torch::Tensor encode(const torch::Tensor& src);
  // encode() for a few sentences at inference, without computing their padding: src's sentences run
  // end to end in one sequence, each attending to itself only, and come back as encode() lays them
  // out, zeros past each end. For sentences of unequal length; src padded at the end only.
  torch::Tensor encode_packed(const torch::Tensor& src);
  // tgt_in [B,T] (the new steps only when `cache` is given), memory [B,S,d], src [B,S] -> hidden [B,T,d].
  torch::Tensor decode(const torch::Tensor& tgt_in, const torch::Tensor& memory, const torch::Tensor& src_mask,
                       DecoderCache* cache = nullptr);
  // hidden [B,T,d] -> logits [B,T,V] = hidden · output_weight()ᵀ + output_bias()
  torch::Tensor output_logits(const torch::Tensor& hidden);
  // The output projection [V,d]: the shared embedding when tied. Its bias [V]: undefined when tied
  // without config.output_bias.
  const torch::Tensor& output_weight() const;
  torch::Tensor output_bias() const;
  // src [B,S], tgt_in [B,T] -> logits [B,T,V]. In training, encode and decode skip each layer with
  // the config's layer-drop rate (Fan et al. 2019), drawn afresh at each call; never in eval mode.
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in);

  DecoderCache make_cache() const;
  // Continuous batching: the sentences src [B2,S] (padded at the end) are encoded as encode_packed()
  // does and join `cache` with their cross-attention keys and values, computed for their pieces only
  // (zeros at the pads): sentence i < reuse.size() in the place of row reuse[i] (a finished one), the
  // others as new rows after the last. decode() then takes tokens for every row, and each row's
  // positions count from the step it joined.
  void join(DecoderCache& cache, const torch::Tensor& src, const std::vector<int64_t>& reuse);
  int64_t parameter_count() const;
  torch::Tensor source_mask(const torch::Tensor& src) const { return padding_mask(src, config_.pad_id); }
  const ModelConfig& config() const { return config_; }
  // Attention weights for pictures and tests: selects the plain path in every attention module.
  void set_keep_attention_weights(bool keep);
  void set_fused_attention(bool fused);
  // Guided alignment: decoder layer `layer`'s cross-attention (0-based; -1: none) keeps its first
  // head's weights in training, which take_guided_weights() hands over once per forward: [B,T,S],
  // undefined when no forward kept them (none asked, eval mode, or the layer skipped by LayerDrop).
  void set_guided_layer(int64_t layer);
  torch::Tensor take_guided_weights();
  // Inference on the CPU in fp32 through packed weights inside a PackedInference scope (on by
  // default). Off: every product through at::linear.
  void set_packed_inference(bool packed);
  std::vector<PackedWeight*> packed_weights() override { return {&tied_output_}; }
  std::vector<MultiHeadAttention> attention_modules() const;

  TokenEmbedding source_embedding{nullptr}, target_embedding{nullptr};
  std::shared_ptr<PositionEncodingImpl> positions;  // config.positions' kind (positions.h)
  torch::nn::ModuleList encoder_layers, decoder_layers;
  torch::nn::LayerNorm encoder_norm{nullptr}, decoder_norm{nullptr};  // pre-norm only
  Linear output_projection{nullptr};                                  // untied only
  torch::Tensor tied_output_bias;  // [V], "output_bias": tied with config.output_bias only (zeros at start)
  Dropout embedding_dropout{nullptr};

 private:
  bool skipped(double layerdrop) const;  // whether a layer is left out of this training step
  // The encoder's layers and final norm over embedded x [B,S,d] with mask src_mask.
  torch::Tensor encoder_stack(torch::Tensor x, const torch::Tensor& src_mask);
  // encode_packed()'s work before it lays the rows out: src's pieces encoded end to end, rows
  // [1,P,d], and the places [P] in src.flatten() they come from.
  std::pair<torch::Tensor, torch::Tensor> encode_rows(const torch::Tensor& src);
  void initialize();
  ModelConfig config_;
  bool packed_inference_ = true;
  int64_t guided_layer_ = -1;
  PackedWeight tied_output_;  // the shared embedding packed as the output projection (its bias apart)
};
TORCH_MODULE(Transformer);

// Eval mode for a scope, the mode it found restored after: the trainer hands the model it trains to
// validation and decoding.
class EvalMode {
 public:
  explicit EvalMode(Transformer& model) : model_(model), was_training_(model->is_training()) { model_->eval(); }
  ~EvalMode() {
    if (was_training_) model_->train();
  }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  Transformer& model_;
  bool was_training_;
};

}  // namespace trafo::model
