#include "step_decoder.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <torch/torch.h>

#include "trafo/data/tokenizer.h"

namespace trafo::decode::detail {

using data::Tokenizer;

namespace {

// Sentences per encoder call: about this many source positions, padding included.
constexpr int64_t kEncoderChunkTokens = 512;

// model->encode(src), a few sentences of similar length at a time. In a batch the short sentences
// are padded to the longest, and the encoder's work in the toy benchmark was 2.5x the real
// positions. Memory past a sentence's end is masked in cross-attention: it is left at zero.
torch::Tensor encode_by_length(model::Transformer& model, const torch::Tensor& src) {
  const int64_t rows = src.size(0), width = src.size(1);
  const auto lengths = src.ne(model->config().pad_id).sum(1).cpu();  // [B]: one host sync per batch
  const auto* length = lengths.data_ptr<int64_t>();
  std::vector<int64_t> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return length[a] > length[b]; });
  if (rows < 2 || length[order.front()] * rows <= kEncoderChunkTokens) return model->encode(src);

  torch::Tensor memory;  // [B,S,d]
  for (size_t first = 0; first < order.size();) {
    const int64_t chunk_width = std::max<int64_t>(length[order[first]], 1);
    size_t end = first + 1;
    while (end < order.size() && chunk_width * static_cast<int64_t>(end - first + 1) <= kEncoderChunkTokens) ++end;
    const std::vector<int64_t> chunk_rows(order.begin() + static_cast<std::ptrdiff_t>(first),
                                          order.begin() + static_cast<std::ptrdiff_t>(end));
    const auto index = device_tensor(chunk_rows, src.device());
    const auto encoded = model->encode(src.index_select(0, index).narrow(1, 0, chunk_width));  // [rows,w,d]
    if (!memory.defined()) memory = torch::zeros({rows, width, encoded.size(2)}, encoded.options());
    memory.narrow(1, 0, chunk_width).index_copy_(0, index, encoded);
    first = end;
  }
  return memory;
}

}  // namespace

StepDecoder::Member::Member(model::Transformer model_, const torch::Tensor& src, const torch::Tensor& rows_of)
    : model(model_), packed(*model), cache(model->make_cache()) {
  memory = encode_by_length(model, src).index_select(0, rows_of);  // [N,S,d]
}

StepDecoder::StepDecoder(model::Transformer& model, const torch::Tensor& src, const std::vector<int64_t>& max_lengths,
                         bool use_cache, int64_t repeat)
    : StepDecoder(std::vector<model::Transformer>{model}, src, max_lengths, use_cache, repeat) {}

StepDecoder::StepDecoder(const std::vector<model::Transformer>& models, const torch::Tensor& src,
                         const std::vector<int64_t>& max_lengths, bool use_cache, int64_t repeat,
                         const std::vector<std::vector<int>>& prefixes)
    : device_(src.device()), use_cache_(use_cache) {
  const auto rows_of = torch::arange(src.size(0), torch::TensorOptions().dtype(torch::kLong).device(device_))
                           .repeat_interleave(repeat);  // [B*repeat]: the sentence of each decoder row
  for (const auto& model : models) members_.push_back(std::make_unique<Member>(model, src, rows_of));
  const auto& first = members_.front()->model;
  src_mask_ = first->source_mask(src).index_select(0, rows_of);                     // [N,1,1,S]
  for (const int64_t limit : max_lengths) limits_.insert(limits_.end(), repeat, limit);
  device_limits_ = device_tensor(limits_, device_);
  size_t longest = 0;
  for (const auto& prefix : prefixes) longest = std::max(longest, prefix.size());
  if (longest > 0) {
    auto forced = torch::full({static_cast<int64_t>(prefixes.size()), static_cast<int64_t>(longest)}, -1, torch::kLong);
    for (size_t b = 0; b < prefixes.size(); ++b) {
      for (size_t t = 0; t < prefixes[b].size(); ++t) forced[b][t] = prefixes[b][t];
    }
    forced_ = forced.repeat_interleave(repeat, 0).to(device_);  // [N,P], copied once
  }
}

StepDecoder::~StepDecoder() = default;

torch::Tensor StepDecoder::member_log_probs(Member& member, const torch::Tensor& tokens, int64_t step) {
  torch::Tensor hidden;  // [N,1,d]
  if (use_cache_) {
    hidden = member.model->decode(tokens.unsqueeze(1), member.memory, src_mask_, &member.cache);
    member.memory = torch::Tensor();  // in the cross-attention caches now
  } else {
    member.prefix = member.prefix.defined() ? torch::cat({member.prefix, tokens.unsqueeze(1)}, 1) : tokens.unsqueeze(1);
    hidden = member.model->decode(member.prefix, member.memory, src_mask_).narrow(1, step, 1);
  }
  return torch::log_softmax(member.model->output_logits(hidden).squeeze(1).to(torch::kFloat), -1);  // [N,V]
}

torch::Tensor StepDecoder::next_log_probs(const torch::Tensor& tokens, int64_t step) {
  auto log_probs = member_log_probs(*members_.front(), tokens, step);
  if (members_.size() > 1) {
    for (size_t m = 1; m < members_.size(); ++m) log_probs += member_log_probs(*members_[m], tokens, step);
    log_probs /= static_cast<double>(members_.size());
  }
  // Rows at their limit, chosen on the device from limits copied there once: a row index copied to
  // the GPU at each step would make the host wait for it (rows that stay in the batch after they end
  // are at their limit at every step from then on).
  const bool any_at_limit =
      std::any_of(limits_.begin(), limits_.end(), [step](int64_t limit) { return limit <= step; });
  restrict_choices(log_probs, any_at_limit ? device_limits_.le(step) : torch::Tensor());
  if (forced_.defined() && step < forced_.size(1)) {
    // A row within its prefix keeps the log-probability of its prefix's piece alone.
    const auto piece = forced_.select(1, step).unsqueeze(1);                            // [N,1], -1: free
    const auto kept = log_probs.gather(1, piece.clamp_min(0));                          // [N,1]
    const auto only = torch::full_like(log_probs, -std::numeric_limits<double>::infinity()).scatter_(1, piece.clamp_min(0), kept);
    log_probs = torch::where(piece.ge(0), only, log_probs);
  }
  return log_probs;
}

void StepDecoder::select(const std::vector<int64_t>& rows) {
  const auto index = device_tensor(rows, device_);
  std::vector<int64_t> limits;
  for (const int64_t row : rows) limits.push_back(limits_[static_cast<size_t>(row)]);
  limits_ = std::move(limits);
  device_limits_ = device_limits_.index_select(0, index);
  if (forced_.defined()) forced_ = forced_.index_select(0, index);
  src_mask_ = src_mask_.index_select(0, index);
  for (auto& member : members_) {
    if (member->memory.defined()) member->memory = member->memory.index_select(0, index);
    if (member->prefix.defined()) member->prefix = member->prefix.index_select(0, index);
    member->cache.select(index);
  }
}

void restrict_choices(torch::Tensor& log_probs, const torch::Tensor& at_limit) {
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  log_probs.select(1, Tokenizer::kPad).fill_(minus_infinity);
  log_probs.select(1, Tokenizer::kBos).fill_(minus_infinity);
  if (!at_limit.defined()) return;
  const auto eos = log_probs.select(1, Tokenizer::kEos).clone();  // [N]
  log_probs.masked_fill_(at_limit.unsqueeze(1), minus_infinity);
  log_probs.select(1, Tokenizer::kEos).copy_(eos);
}

torch::Tensor to_host(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> doubles;
  for (const auto& tensor : tensors) doubles.push_back(tensor.to(torch::kDouble));
  return torch::stack(doubles, 0).cpu();  // [tensors, ...]
}

torch::Tensor device_tensor(const std::vector<int64_t>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kLong).to(device);
}

}  // namespace trafo::decode::detail
