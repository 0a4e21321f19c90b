#include "decode_flags.h"

#include <algorithm>

#include <CLI/CLI.hpp>

#include "trafo/errors.h"

namespace trafo::cli {
void add_decode_flags(CLI::App& command, inference::SearchOptions& options, bool with_n_best) {
  command.add_option("--beam,-b", options.beam, "beam size; 1 is greedy search")->capture_default_str();
  command
      .add_option("--length-penalty", options.length_penalty,
                  "beam search ranks log p(y) / ((5 + |y|) / 6)^A (GNMT, Wu et al. 2016), |y| = output pieces + "
                  "eos; 0 ranks by raw log p(y); greedy search ignores it")
      ->capture_default_str();
  if (with_n_best) {
    command
        .add_option("--n-best,-n", options.n_best,
                    "hypotheses per sentence (at most --beam); above 1 each sentence gives N lines "
                    "'INDEX ||| TEXT ||| SCORE' (0-based sentence index, best first, SCORE the length-penalised "
                    "log-probability) instead of one line of text")
        ->capture_default_str();
  }
  command
      .add_option("--max-length-a", options.max_length_a,
                  "output at most A x source length + B pieces (also capped by the model's max positions)")
      ->capture_default_str();
  command.add_option("--max-length-b", options.max_length_b, "see --max-length-a")->capture_default_str();
  command
      .add_option("--no-repeat-ngram", options.no_repeat_ngram,
                  "no N consecutive output pieces twice in one translation (0: off; 3 or 4 stops a looping model)")
      ->capture_default_str();
  command
      .add_option("--repetition-penalty", options.repetition_penalty,
                  "multiply the log-probability of each piece a translation already holds by P before choosing "
                  "the next (1: off; 1.1-1.3 is usual)")
      ->capture_default_str();
  command
      .add_option("--batch-tokens", options.batch_tokens,
                  "source pieces (padding included) per decoding batch; sentences are sorted by length")
      ->capture_default_str();
}

void add_language_check_flag(CLI::App& command, inference::SearchOptions& options) {
  command
      .add_option("--retry-off-target", options.retry_off_target,
                  "on a model of several target languages: a translation that the model's language identifier "
                  "labels as another language than asked (the source copied, or another target) is decoded again "
                  "by beam search of N hypotheses, and the best of them in the language asked replaces it; where "
                  "none is, it stays (0: off)")
      ->capture_default_str();
}

void add_sampling_flags(CLI::App& command, inference::SearchOptions& options) {
  CLI::Option* topk =
      command
          .add_option("--sampling-topk", options.sampling_topk,
                      "sample each piece instead of taking the most probable: from the K most probable (0: all "
                      "pieces); greedy search only (--beam 1). A sentence's sample depends on --seed and its line "
                      "alone, not on the batch or the threads")
          ->check(CLI::NonNegativeNumber);
  // The other sampling options do nothing without --sampling-topk: given alone, they are refused.
  command
      .add_option("--sampling-topp", options.sampling_topp,
                  "with --sampling-topk: then from the fewest most probable pieces whose probabilities reach P "
                  "(nucleus sampling; 1: off)")
      ->capture_default_str()
      ->needs(topk);
  command
      .add_option("--sampling-temperature", options.sampling_temperature,
                  "with --sampling-topk: probabilities from log p / T (below 1 sharper, above 1 flatter)")
      ->capture_default_str()
      ->needs(topk);
  command.add_option("--seed", options.seed, "with --sampling-topk: the seed of the draws")
      ->capture_default_str()
      ->needs(topk);
}

void add_runtime_flags(CLI::App& command, inference::RuntimeOptions& options, bool with_precision, bool ensemble) {
  if (ensemble) {
    command
        .add_option_function<std::vector<std::string>>(
            "--checkpoint,-c",
            [&options](const std::vector<std::string>& paths) {
              options.checkpoint = paths.front();
              options.ensemble.assign(paths.begin() + 1, paths.end());
            },
            "model checkpoint written by trafo train; given more than once, an ensemble that averages the models' "
            "log-probabilities at each step (the checkpoints must share a tokenizer)")
        ->required()
        ->type_name("FILE");
  } else {
    command.add_option("--checkpoint,-c", options.checkpoint, "model checkpoint written by trafo train")->required();
  }
  command.add_option("--device", options.device, "cpu, cuda, or auto (cuda when available)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  // Range-checked by util::resolve_threads, as for every command.
  command.add_option("--threads", options.threads, "CPU threads for LibTorch; 0: the cores other processes leave free")->capture_default_str();
  if (!with_precision) return;
  command
      .add_option("--precision", options.precision,
                  "fp32, bf16 (autocast; checkpoints stay fp32) or auto: fp32 on a CPU (a sentence's text never "
                  "depends on its batch); on CUDA, bf16 where decoding steps of this model, timed at start, run at "
                  "least 1.1x as fast")
      ->check(CLI::IsMember({"fp32", "bf16", "auto"}))
      ->capture_default_str();
  command.add_option("--tag", options.tag,
                     "a corpus tag the model was trained with (e.g. <bt> or >>fr<<), put before every source sentence");
  command.add_option("--tgt-lang", options.tgt_lang,
                     "the language to translate into: on a model of several (>>xx<< tags, as multilingual OPUS-MT "
                     "models have), its tag is put before every source, and without it each line must begin with its "
                     "own >>xx<< code; on a model of one, it must be that one");
}

}  // namespace trafo::cli
