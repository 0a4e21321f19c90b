// `trafo attention`: translate one sentence (or force-decode a given target) and draw the
// attention weights of every layer and head from the plain attention path, or print them as JSON.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "trafo/inference_cli/commands.h"
#include "decode_flags.h"
#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/report/attention_maps.h"
#include "trafo/report/attention_svg.h"
#include "trafo/report/html.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

struct AttentionOptions {
  inference::RuntimeOptions runtime;
  inference::SearchOptions decode;
  std::string source;  // the sentence to translate
  std::string target;  // force-decode this translation instead (empty: translate)
  std::string out;     // FILE.html or FILE.svg; default attention.html unless --json
  bool json = false;   // print the weights as one JSON object on one line
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int run_attention(const AttentionOptions& options) {
  inference::validate(options.decode);
  // The sentences end up in HTML, SVG or JSON, none of which may carry invalid UTF-8.
  data::check_utf8(options.source, "--src");
  data::check_utf8(options.target, "--tgt");
  const std::string out = options.out.empty() && !options.json ? "attention.html" : options.out;
  if (!out.empty() && !ends_with(out, ".html") && !ends_with(out, ".svg")) {
    throw InputError("--out must end in .html or .svg, not " + out);
  }
  util::refuse_overwriting("--out", out, {{"--checkpoint", options.runtime.checkpoint}});
  auto loaded = inference::load_for_translation(options.runtime);  // in fp32: the weights drawn are the model's own
  const std::optional<std::string> target =
      options.target.empty() ? std::nullopt : std::optional<std::string>(options.target);
  const auto maps = report::extract_attention(loaded.model, loaded.tokenizer, options.source, target, options.decode);
  if (!out.empty()) {
    util::write_file_atomically(out, ends_with(out, ".svg") ? report::attention_svg(maps)
                                                             : report::attention_html(maps));
    spdlog::info("wrote {} ({} maps)", out, maps.maps.size());
  }
  if (options.json) {
    std::cout << report::to_json(maps).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    std::cout.flush();
    if (!std::cout) throw RunError("cannot write the weights to standard output");
  }
  return 0;
}

}  // namespace

CommandRunner add_attention_command(CLI::App& app) {
  auto options = std::make_shared<AttentionOptions>();
  CLI::App* command = app.add_subcommand(
      "attention",
      "translate a sentence (or force-decode --tgt) and draw every layer's and head's attention weights: "
      "cross-attention, encoder self-attention, causal decoder self-attention");
  options->runtime.precision = "fp32";
  add_runtime_flags(*command, options->runtime, /*with_precision=*/false);
  command->add_option("--src,-s", options->source, "the source sentence")->required();
  command->add_option("--tgt,-t", options->target, "force-decode this translation instead of translating");
  command->add_option("--out,-o", options->out, "the picture: FILE.html or FILE.svg (default attention.html)");
  command->add_flag("--json", options->json,
                    "print the weights as one JSON object on one line (with --out, draw the picture too)");
  add_decode_flags(*command, options->decode, /*with_n_best=*/false);
  add_number_checks(*command);
  return [options] { return run_attention(*options); };
}

}  // namespace trafo::cli
