#include "model_options.h"

#include <CLI/CLI.hpp>

#include "trafo/model/config.h"

namespace trafo::cli {

void add_model_options(CLI::App& cmd, model::ModelConfig& m) {
  cmd.add_option("--d-model", m.d_model, "model width")->capture_default_str()->group("Model");
  cmd.add_option("--heads", m.heads, "attention heads (must divide d-model)")->capture_default_str()->group("Model");
  cmd.add_option("--encoder-layers", m.encoder_layers, "encoder layers")->capture_default_str()->group("Model");
  cmd.add_option("--decoder-layers", m.decoder_layers, "decoder layers")->capture_default_str()->group("Model");
  cmd.add_option("--d-ff", m.d_ff, "feed-forward inner width")->capture_default_str()->group("Model");
  cmd.add_option("--dropout", m.dropout, "dropout rate")->capture_default_str()->group("Model");
  cmd.add_option("--activation", m.activation, "relu or gelu")->capture_default_str()->group("Model");
  cmd.add_option("--norm", m.norm, "pre or post (LayerNorm position)")->capture_default_str()->group("Model");
  cmd.add_option("--tie-embeddings", m.tie_embeddings, "share source, target and output embeddings")
      ->capture_default_str()->group("Model");
  cmd.add_option("--max-positions", m.max_positions, "longest sequence in pieces")->capture_default_str()->group("Model");
}

}  // namespace trafo::cli
