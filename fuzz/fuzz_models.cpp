#include "fuzz_models.h"

#include <fstream>

#include <torch/torch.h>

#include "fuzz_support.h"
#include "trafo/toy/toy_corpus.h"

namespace trafo::fuzz {

const data::Tokenizer& small_tokenizer() {
  static const data::Tokenizer tokenizer = [] {
    data::ToyCorpusOptions corpus;
    corpus.train = 2000;
    corpus.dev = 0;
    corpus.test = 0;
    const auto path = scratch_dir() / "tokenizer-text.txt";
    {
      std::ofstream out(path, std::ios::binary);
      for (const auto& pair : data::generate_toy_corpus(corpus).train) out << pair.source << '\n' << pair.target << '\n';
    }
    data::TokenizerOptions options;
    options.vocab_size = 400;
    return data::Tokenizer::train({path}, options);
  }();
  return tokenizer;
}

model::Transformer tiny_random_model(const model::ModelConfig& config) {
  torch::manual_seed(1);
  model::Transformer model(config);
  model->eval();
  return model;
}

}  // namespace trafo::fuzz
