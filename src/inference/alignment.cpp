#include "trafo/inference/alignment.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>

#include "trafo/decode/output_text.h"
#include "trafo/inference/attention_weights.h"

namespace trafo::inference {
namespace {

constexpr int64_t kPairsPerPass = 64;

// The printed word each piece falls in: the words of the printed prefix that ends with it, less one
// (decode::one_line of the decoded prefix, as translations are printed); -1 for a piece before the
// first word, which prints nothing. A prefix cut inside a UTF-8 sequence may count one word more than
// the whole line, so indices are capped at the whole line's last word.
std::vector<int> word_of_pieces(const data::Tokenizer& tokenizer, const std::vector<int>& ids, size_t skip) {
  std::vector<int> prefix(ids.begin() + static_cast<std::ptrdiff_t>(std::min(skip, ids.size())), ids.end());
  const int last = decode::count_words(decode::one_line(tokenizer.decode(prefix))) - 1;
  std::vector<int> words(prefix.size());
  for (size_t i = prefix.size(); i-- > 0;) {
    words[i] = std::min(last, decode::count_words(decode::one_line(tokenizer.decode(prefix))) - 1);
    prefix.pop_back();
  }
  return words;
}

// Whether a piece is ASCII punctuation only.
bool punctuation(const std::string& piece) {
  return !piece.empty() &&
         std::all_of(piece.begin(), piece.end(), [](char c) { return std::ispunct(static_cast<unsigned char>(c)) != 0; });
}

}  // namespace

AlignmentHead default_alignment_head(const model::ModelConfig& config) {
  if (config.alignment_layer >= 0) return {config.alignment_layer, 0, /*null_word=*/true};
  return {-1, -1};
}

std::vector<Links> align_words(model::Transformer& model, const data::Tokenizer& tokenizer,
                               const std::vector<std::vector<int>>& sources,
                               const std::vector<std::vector<int>>& targets, AlignmentHead head, int tag) {
  std::vector<Links> links(sources.size());
  const int64_t pad = model->config().pad_id;
  // [B,h,T,S] -> [B,T,S]: the head asked for, or the heads averaged
  const auto of_heads = [&](const torch::Tensor& weights) {
    return head.head >= 0 ? weights.select(1, head.head) : weights.mean(1);
  };
  for (size_t first = 0; first < sources.size(); first += kPairsPerPass) {
    const size_t last = std::min(sources.size(), first + kPairsPerPass);
    int64_t source_width = 1, target_width = 1;
    for (size_t i = first; i < last; ++i) {
      source_width = std::max<int64_t>(source_width, static_cast<int64_t>(sources[i].size()) + 1);
      target_width = std::max<int64_t>(target_width, static_cast<int64_t>(targets[i].size()) + 1);
    }
    const auto rows = static_cast<int64_t>(last - first);
    auto src = torch::full({rows, source_width}, pad, torch::kLong);     // [B,S] ids + eos
    auto tgt_in = torch::full({rows, target_width}, pad, torch::kLong);  // [B,T] bos + ids
    for (int64_t r = 0; r < rows; ++r) {
      const auto& source = sources[first + static_cast<size_t>(r)];
      const auto& target = targets[first + static_cast<size_t>(r)];
      for (size_t j = 0; j < source.size(); ++j) src[r][static_cast<int64_t>(j)] = source[j];
      src[r][static_cast<int64_t>(source.size())] = data::Tokenizer::kEos;
      tgt_in[r][0] = data::Tokenizer::kBos;
      for (size_t j = 0; j < target.size(); ++j) tgt_in[r][static_cast<int64_t>(j) + 1] = target[j];
    }
    const auto all = attention_weights(model, src, tgt_in);
    torch::Tensor weights;  // [B,T,S]
    for (int64_t l = 0; l < model->config().decoder_layers; ++l) {
      if (head.layer >= 0 && l != head.layer) continue;
      // every decoder layer's when no layer is asked (the sum ranks the source pieces as the mean does)
      const auto each = of_heads(all[static_cast<size_t>(model->config().encoder_layers + 2 * l + 1)]);
      weights = weights.defined() ? weights + each : each;
    }

    for (int64_t r = 0; r < rows; ++r) {
      const auto& source = sources[first + static_cast<size_t>(r)];
      const auto& target = targets[first + static_cast<size_t>(r)];
      const size_t skip = tag >= 0 && !source.empty() && source.front() == tag ? 1 : 0;
      if (source.size() <= skip || target.empty()) continue;
      const auto source_words = word_of_pieces(tokenizer, source, skip);
      const auto target_words = word_of_pieces(tokenizer, target, 0);
      // Row t predicts target piece t; the source's real pieces (no tag) compete, and its eos where
      // that is the null word.
      const auto n_pieces = static_cast<int64_t>(source.size() - skip) + (head.null_word ? 1 : 0);
      const auto n_rows = static_cast<int64_t>(target.size());
      const auto matrix = weights[r]
                              .narrow(0, 0, n_rows)
                              .narrow(1, static_cast<int64_t>(skip), n_pieces)
                              .to(torch::kCPU, torch::kFloat)
                              .contiguous();
      std::vector<char> linking(target.size());
      for (size_t t = 0; t < target.size(); ++t) {
        // not before the first word, not the punctuation that closes a word ("sind." from "jumped."
        // attends to the source's "."; its word is linked by its other pieces)
        linking[t] = target_words[t] >= 0 &&
                     !(t > 0 && target_words[t - 1] == target_words[t] && punctuation(tokenizer.target_piece(target[t])));
      }
      links[first + static_cast<size_t>(r)] =
          links_of_weights(matrix.data_ptr<float>(), n_pieces, source_words, target_words, linking);
    }
  }
  return links;
}

Links links_of_weights(const float* weights, int64_t columns, const std::vector<int>& source_words,
                       const std::vector<int>& target_words, const std::vector<char>& linking) {
  // A source word no row links (a question's verb, whose translation attends to the "Do" before it
  // most) takes the row that gives it the most weight, where that weight is at least kFill: a word
  // the translation leaves out draws little from any row. On the toy test pairs this took a guided
  // head's AER from 0.018 to 0.014 and the tags it placed from 94.4% to 95.5%.
  constexpr float kFill = 0.1f;
  Links pairs;
  const auto at = [&](size_t t, size_t j) { return weights[static_cast<int64_t>(t) * columns + static_cast<int64_t>(j)]; };
  std::vector<char> linked;
  for (const int word : source_words) linked.resize(std::max<size_t>(linked.size(), static_cast<size_t>(word + 1)), 0);
  for (size_t t = 0; t < target_words.size(); ++t) {
    const float* row = weights + static_cast<int64_t>(t) * columns;
    const auto piece = static_cast<size_t>(std::max_element(row, row + columns) - row);
    if (piece >= source_words.size() || source_words[piece] < 0 || !linking[t]) continue;  // the null word, or nothing printed
    pairs.emplace_back(source_words[piece], target_words[t]);
    linked[static_cast<size_t>(source_words[piece])] = 1;
  }
  std::vector<std::pair<float, int>> best(linked.size(), {0.0f, -1});  // weight, target word
  for (size_t j = 0; j < source_words.size(); ++j) {
    const int word = source_words[j];
    if (word < 0 || linked[static_cast<size_t>(word)]) continue;
    auto& chosen = best[static_cast<size_t>(word)];
    for (size_t t = 0; t < target_words.size(); ++t) {
      if (linking[t] && at(t, j) >= kFill && (chosen.second < 0 || at(t, j) > chosen.first)) chosen = {at(t, j), target_words[t]};
    }
  }
  for (size_t word = 0; word < best.size(); ++word) {
    if (best[word].second >= 0) pairs.emplace_back(static_cast<int>(word), best[word].second);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

Links within(const Links& links, int source_words, int target_words) {
  Links kept;
  for (const auto& link : links) {
    if (link.first < source_words && link.second < target_words) kept.push_back(link);
  }
  return kept;
}

std::string pharaoh(const Links& links) {
  std::string text;
  for (const auto& [source, target] : links) {
    if (!text.empty()) text += ' ';
    text += std::to_string(source) + "-" + std::to_string(target);
  }
  return text;
}

std::vector<Links> align_best(model::Transformer& model, const data::Tokenizer& tokenizer, int tag,
                              const std::vector<std::string>& sources, const std::vector<std::vector<int>>& source_ids,
                              const std::vector<const decode::Hypothesis*>& best) {
  const auto longest = static_cast<size_t>(model->config().max_positions - 1);  // as the translator cuts sources
  std::vector<std::vector<int>> read, target_ids;
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto& ids = source_ids[i];
    read.emplace_back(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), longest)));
    target_ids.push_back(best[i]->tokens);
  }
  auto links = align_words(model, tokenizer, read, target_ids, default_alignment_head(model->config()), tag);
  for (size_t i = 0; i < links.size(); ++i) {
    links[i] = within(links[i], decode::count_words(sources[i]), decode::count_words(best[i]->text));
  }
  return links;
}

std::vector<Links> align_pairs(model::Transformer& model, const data::Tokenizer& tokenizer, int tag,
                               const std::vector<std::string>& sources, const std::vector<std::string>& targets) {
  // + eos (source) or bos (target) must fit the model's positions
  const auto longest = static_cast<size_t>(model->config().max_positions - 1);
  std::vector<std::vector<int>> source_ids, target_ids;
  std::vector<size_t> fitting;
  for (size_t i = 0; i < sources.size(); ++i) {
    auto source = decode::source_ids(tokenizer, sources[i], tag);
    auto target = tokenizer.encode_target(targets[i]);
    if (source.size() > longest || target.size() > longest) continue;
    fitting.push_back(i);
    source_ids.push_back(std::move(source));
    target_ids.push_back(std::move(target));
  }
  const auto links = align_words(model, tokenizer, source_ids, target_ids, default_alignment_head(model->config()), tag);
  std::vector<Links> pairs(sources.size());
  for (size_t k = 0; k < fitting.size(); ++k) {
    const size_t i = fitting[k];
    pairs[i] = within(links[k], decode::count_words(sources[i]), decode::count_words(targets[i]));
  }
  return pairs;
}

}  // namespace trafo::inference
