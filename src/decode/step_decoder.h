// The decoder side of one batch during search: the encoder memory, and either the KV cache
// or the whole prefix decoded so far, of one model or of each model of an ensemble. Internal to decode/.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trafo/model/transformer.h"

namespace trafo::decode::detail {

class StepDecoder {
 public:
  // src [B,S] (ids + eos, padded); each row is repeated `repeat` times (beam rows), so rows
  // b*repeat .. b*repeat+repeat-1 belong to sentence b. `max_lengths[b]`: sentence b's limit.
  StepDecoder(model::Transformer& model, const torch::Tensor& src, const std::vector<int64_t>& max_lengths,
              bool use_cache, int64_t repeat);
  // An ensemble: the models share a vocabulary; each keeps its own memory and cache.
  // `prefixes[b]` (empty, or one per sentence): pieces sentence b's output must begin with (a target
  // prefix): at step t < its size a row may only take prefixes[b][t], with the model's log-probability.
  StepDecoder(const std::vector<model::Transformer>& models, const torch::Tensor& src,
              const std::vector<int64_t>& max_lengths, bool use_cache, int64_t repeat,
              const std::vector<std::vector<int>>& prefixes = {});
  ~StepDecoder();

  // tokens [N] chosen at the previous step (bos at step 0) -> log-probabilities [N,V] fp32 of
  // the piece at position `step` (an ensemble's: the mean of its models' log-probabilities): pad
  // and bos banned, only eos left where the row's limit is reached.
  torch::Tensor next_log_probs(const torch::Tensor& tokens, int64_t step);

  // Keeps decoder rows `rows` in this order: drops finished rows, reorders beams.
  void select(const std::vector<int64_t>& rows);

  const torch::Device& device() const { return device_; }

 private:
  // One model's side of the batch.
  struct Member {
    Member(model::Transformer model, const torch::Tensor& src, const torch::Tensor& rows_of);
    model::Transformer model;
    model::PackedInference packed;  // weights packed for this batch's steps, made fresh from the current weights
    torch::Tensor memory;           // [N,S,d]; with the cache, undefined once the cross-attention caches hold it
    torch::Tensor prefix;           // [N,T] bos + pieces so far (no cache only)
    model::DecoderCache cache;
  };
  torch::Tensor member_log_probs(Member& member, const torch::Tensor& tokens, int64_t step);

  std::vector<std::unique_ptr<Member>> members_;
  torch::Device device_;
  bool use_cache_;
  torch::Tensor src_mask_;     // [N,1,1,S]
  std::vector<int64_t> limits_;  // [N] each row's length limit, on the host: most steps have none at it
  torch::Tensor device_limits_;  // [N] the same on the device, which masks the rows at their limit
  torch::Tensor forced_;         // [N,P] each row's prefix, -1 past its end; undefined: no prefixes
};

// The rules of every search step on its log-probabilities [N,V] (fp32), in place: pad and bos are
// never chosen, and the rows where `at_limit` holds ([N] bool on log_probs' device; undefined: none)
// may only end (eos).
void restrict_choices(torch::Tensor& log_probs, const torch::Tensor& at_limit);

// Host copies of small device tensors, one transfer: the step's single sync.
torch::Tensor to_host(const std::vector<torch::Tensor>& tensors);

// A long tensor on `device` holding `values`.
torch::Tensor device_tensor(const std::vector<int64_t>& values, const torch::Device& device);

}  // namespace trafo::decode::detail
