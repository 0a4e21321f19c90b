// The model-shape options shared by `trafo train` and `trafo bench` (vocab size excluded:
// train binds it to the tokenizer, bench to the model).
#pragma once

namespace CLI {
class App;
}

namespace trafo::model {
struct ModelConfig;
}

namespace trafo::cli {

void add_model_options(CLI::App& command, model::ModelConfig& config);

}  // namespace trafo::cli
