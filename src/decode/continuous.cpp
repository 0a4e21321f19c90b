#include "trafo/decode/continuous.h"

#include <algorithm>
#include <numeric>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "repetition_guard.h"
#include "step_decoder.h"
#include "trafo/decode/output_text.h"
#include "trafo/decode/search.h"
#include "trafo/util/autocast.h"

namespace trafo::decode {

using data::Tokenizer;

// One decoder row: the sentence it decodes, or none once that one finished.
struct ContinuousDecoder::Row {
  int64_t ticket = -1;  // -1: finished, the row waits for a new sentence or to be dropped
  int64_t pieces = 0;   // source pieces with eos
  int64_t limit = 0;    // the most pieces it may produce (max_output_length)
  int64_t steps = 0;    // steps taken since it joined
  Hypothesis hypothesis;
};

struct ContinuousDecoder::State {
  State(model::Transformer model_, const Tokenizer& tokenizer_)
      : model(std::move(model_)), packed(*model), tokenizer(tokenizer_), cache(model->make_cache()) {}
  model::Transformer model;
  model::PackedInference packed;  // the weights packed once, for every step of every batch
  const Tokenizer& tokenizer;
  BestTokens selector;
  model::DecoderCache cache;
  torch::Tensor src_mask;  // [N,1,1,S]
  torch::Tensor tokens;    // [N] the piece each row took last (bos for a row that just joined)
  std::vector<Row> rows;   // per decoder row
  std::vector<Finished> ready;  // finished when added (empty lines)
  int64_t next_ticket = 0;
  int64_t open = 0;          // rows with a sentence
  int64_t open_pieces = 0;   // their source pieces
};

bool ContinuousDecoder::supports(const DecodeOptions& options) {
  // A language check decodes some sentences again, by beam search: Translator does that.
  const bool checked = options.language_check && options.retry_off_target > 0;
  return options.beam == 1 && options.n_best == 1 && !options.sampling() && options.use_cache && !checked &&
         !detail::guards_repetition(options);
}

ContinuousDecoder::ContinuousDecoder(model::Transformer model, const Tokenizer& tokenizer, const DecodeOptions& options)
    : state_(std::make_unique<State>(std::move(model), tokenizer)), options_(options) {
  validate(options_);
  if (!supports(options_)) throw std::logic_error("ContinuousDecoder decodes greedily with the cache only");
}

ContinuousDecoder::~ContinuousDecoder() = default;

int64_t ContinuousDecoder::sentences() const { return state_->open + static_cast<int64_t>(state_->ready.size()); }

int64_t ContinuousDecoder::source_pieces() const { return state_->open_pieces; }

std::vector<int64_t> ContinuousDecoder::add(const std::vector<std::string>& sources) {
  std::vector<std::vector<int>> ids;
  ids.reserve(sources.size());
  for (const auto& source : sources) ids.push_back(source_ids(state_->tokenizer, source, options_.source_tag));
  return add_ids(ids);
}

std::vector<int64_t> ContinuousDecoder::add_ids(const std::vector<std::vector<int>>& sources) {
  c10::InferenceMode inference;
  auto& s = *state_;
  const auto device = s.model->parameters().front().device();
  const util::AutocastGuard autocast(options_.bf16, device.type());
  const int64_t max_positions = s.model->config().max_positions;
  const int64_t longest = max_positions - 1;  // source pieces; eos takes the last position
  std::vector<int64_t> tickets;
  std::vector<std::vector<int>> ids;  // the non-empty sentences, to be cut as Translator cuts them
  std::vector<int64_t> joining;       // their tickets
  for (const auto& source : sources) {
    tickets.push_back(s.next_ticket++);
    if (source.empty()) {
      Hypothesis empty;
      empty.text = one_line(s.tokenizer.decode({}));
      s.ready.push_back({tickets.back(), std::move(empty)});
      continue;
    }
    ids.push_back(source);
    joining.push_back(tickets.back());
  }
  if (ids.empty()) return tickets;

  std::vector<Row> joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto length = static_cast<int64_t>(ids[i].size());
    if (length > longest) {
      spdlog::warn("a source sentence of {} pieces is cut to the model's limit of {}", length, longest);
      length = longest;
      ids[i].resize(static_cast<size_t>(longest));
    }
    Row row;
    row.ticket = joining[i];
    row.pieces = length + 1;
    row.limit = max_output_length(length, options_, max_positions);
    joined.push_back(std::move(row));
  }
  // Encoded in runs of at most kRunPositions source pieces (one sentence at least), shortest first, so
  // that the rows of a run, padded to its longest in the cross-attention cache, pad little.
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() < ids[b].size(); });
  for (size_t first = 0; first < order.size();) {
    size_t end = first + 1;
    int64_t positions = joined[order[first]].pieces;
    while (end < order.size() && positions + joined[order[end]].pieces <= kRunPositions) {
      positions += joined[order[end++]].pieces;
    }
    join(ids, std::vector<size_t>(order.begin() + static_cast<std::ptrdiff_t>(first),
                                  order.begin() + static_cast<std::ptrdiff_t>(end)),
         joined);
    first = end;
  }
  return tickets;
}

void ContinuousDecoder::join(const std::vector<std::vector<int>>& ids, const std::vector<size_t>& run,
                             std::vector<Row>& joined) {
  auto& s = *state_;
  const auto device = s.model->parameters().front().device();
  const auto count = static_cast<int64_t>(run.size());
  int64_t width = 0;  // pieces + eos
  for (const size_t i : run) width = std::max(width, joined[i].pieces);
  auto src = torch::full({count, width}, s.model->config().pad_id, torch::kLong);  // [B2,S2]
  auto* data = src.data_ptr<int64_t>();
  for (int64_t r = 0; r < count; ++r) {
    const auto& pieces = ids[run[static_cast<size_t>(r)]];
    std::copy(pieces.begin(), pieces.end(), data + r * width);
    data[r * width + static_cast<int64_t>(pieces.size())] = Tokenizer::kEos;
  }
  src = src.to(device);

  // Finished rows take the new sentences first; the others are added after the last row.
  std::vector<int64_t> reuse;
  for (size_t r = 0; r < s.rows.size() && static_cast<int64_t>(reuse.size()) < count; ++r) {
    if (s.rows[r].ticket < 0) reuse.push_back(static_cast<int64_t>(r));
  }
  s.model->join(s.cache, src, reuse);
  auto mask = s.model->source_mask(src);  // [B2,1,1,S2]
  auto bos = torch::full({count}, Tokenizer::kBos, torch::TensorOptions().dtype(torch::kLong).device(device));
  if (!s.src_mask.defined()) {
    s.src_mask = mask;
    s.tokens = bos;
  } else {
    const int64_t mask_width = std::max(s.src_mask.size(3), width);
    const auto widened = [&](const torch::Tensor& m) {
      return m.size(3) == mask_width ? m : torch::constant_pad_nd(m, {0, mask_width - m.size(3)}, 0);
    };
    s.src_mask = widened(s.src_mask);
    mask = widened(mask);
    const auto reused = static_cast<int64_t>(reuse.size());
    if (reused > 0) {
      const auto index = detail::device_tensor(reuse, device);
      s.src_mask.index_copy_(0, index, mask.narrow(0, 0, reused));
      s.tokens.index_copy_(0, index, bos.narrow(0, 0, reused));
    }
    if (count > reused) {
      s.src_mask = torch::cat({s.src_mask, mask.narrow(0, reused, count - reused)}, 0);
      s.tokens = torch::cat({s.tokens, bos.narrow(0, reused, count - reused)}, 0);
    }
  }
  for (size_t r = 0; r < run.size(); ++r) {
    auto& row = joined[run[r]];
    s.open += 1;
    s.open_pieces += row.pieces;
    if (r < reuse.size()) {
      s.rows[static_cast<size_t>(reuse[r])] = std::move(row);
    } else {
      s.rows.push_back(std::move(row));
    }
  }
}

std::vector<ContinuousDecoder::Finished> ContinuousDecoder::step() {
  auto& s = *state_;
  std::vector<Finished> finished = std::move(s.ready);
  s.ready.clear();
  if (s.open == 0) return finished;
  c10::InferenceMode inference;
  const util::AutocastGuard autocast(options_.bf16, s.tokens.device().type());

  const auto hidden = s.model->decode(s.tokens.unsqueeze(1), torch::Tensor(), s.src_mask, &s.cache);  // [N,1,d]
  auto log_probs = torch::log_softmax(s.model->output_logits(hidden).squeeze(1).to(torch::kFloat), -1);  // [N,V]
  std::vector<int64_t> at_limit(s.rows.size());  // 1: the row may only end now
  for (size_t r = 0; r < s.rows.size(); ++r) at_limit[r] = s.rows[r].ticket >= 0 && s.rows[r].steps >= s.rows[r].limit;
  const bool any_at_limit = std::find(at_limit.begin(), at_limit.end(), 1) != at_limit.end();
  detail::restrict_choices(log_probs,
                           any_at_limit ? detail::device_tensor(at_limit, log_probs.device()).to(torch::kBool)
                                        : torch::Tensor());
  const auto [chosen, ids] = s.selector.select(log_probs, 1);  // [N,1], [N,1]
  s.tokens = ids.squeeze(1);
  const auto host = detail::to_host({s.tokens, chosen.squeeze(1)});  // [2,N]
  const auto values = host.accessor<double, 2>();
  for (size_t r = 0; r < s.rows.size(); ++r) {
    auto& row = s.rows[r];
    if (row.ticket < 0) continue;
    const auto token = static_cast<int>(values[0][static_cast<int64_t>(r)]);
    row.hypothesis.score += values[1][static_cast<int64_t>(r)];
    row.steps += 1;
    if (token != Tokenizer::kEos) {
      row.hypothesis.tokens.push_back(token);
      continue;
    }
    row.hypothesis.text = one_line(s.tokenizer.decode(row.hypothesis.tokens));
    finished.push_back({row.ticket, std::move(row.hypothesis)});
    s.open -= 1;
    s.open_pieces -= row.pieces;
    row = Row{};
  }
  compact();
  return finished;
}

void ContinuousDecoder::compact() {
  auto& s = *state_;
  if (s.open == 0) {  // the batch is empty: start afresh, its memory goes
    s.cache = s.model->make_cache();
    s.src_mask = torch::Tensor();
    s.tokens = torch::Tensor();
    s.rows.clear();
    return;
  }
  // A finished row's positions go on counting: it leaves before they could pass the model's limit.
  const auto& starts = s.cache.self_attention.front().starts;  // set by every join
  const auto rows = static_cast<int64_t>(s.rows.size());
  int64_t finished_position = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (s.rows[static_cast<size_t>(r)].ticket >= 0) continue;
    finished_position = std::max(finished_position, s.cache.length - starts.at(static_cast<size_t>(r)));
  }
  if (2 * s.open <= rows || finished_position + 2 >= s.model->config().max_positions) {
    std::vector<int64_t> keep;
    std::vector<Row> kept;
    for (int64_t r = 0; r < rows; ++r) {
      if (s.rows[static_cast<size_t>(r)].ticket < 0) continue;
      keep.push_back(r);
      kept.push_back(std::move(s.rows[static_cast<size_t>(r)]));
    }
    const auto index = detail::device_tensor(keep, s.tokens.device());
    s.cache.select(index);
    s.src_mask = s.src_mask.index_select(0, index);
    s.tokens = s.tokens.index_select(0, index);
    s.rows = std::move(kept);
  }
  // The positions before every row's start are read by none: they go once they are half the cache.
  const auto& now = s.cache.self_attention.front().starts;
  if (!now.empty() && 2 * *std::min_element(now.begin(), now.end()) >= s.cache.length) s.cache.drop_unread();
}

}  // namespace trafo::decode
