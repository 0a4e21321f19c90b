#include "trafo/run_config/config_keys.h"

#include <cctype>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "trafo/errors.h"
#include "trafo/util/numbers.h"

namespace trafo::run_config {
namespace {

// The member a row reads and writes: a function, so that nested members (model.d_model) work.
#define TRAFO_MEMBER(member) [](TrainConfig& c) -> Field { return &c.member; }

const std::vector<ConfigKey> kKeys = {
    {"data-dir", "Data", "folder holding train.SRC, train.TGT, dev.SRC, dev.TGT", TRAFO_MEMBER(data.data_dir), false,
     false},
    {"src-lang", "Data", "source language suffix", TRAFO_MEMBER(data.src_lang)},
    {"tgt-lang", "Data", "target language suffix", TRAFO_MEMBER(data.tgt_lang)},
    {"train-src", "Data", "training source file (instead of --data-dir)", TRAFO_MEMBER(data.train_src), false, false},
    {"train-tgt", "Data", "training target file", TRAFO_MEMBER(data.train_tgt), false, false},
    {"dev-src", "Data", "dev source file", TRAFO_MEMBER(data.dev_src), false, false},
    {"dev-tgt", "Data", "dev target file", TRAFO_MEMBER(data.dev_tgt), false, false},
    {"test-src", "Data",
     "test source file, checked for pairs also in training (default DATA_DIR/test.SRC where it exists)",
     TRAFO_MEMBER(data.test_src), false, false},
    {"test-tgt", "Data", "test target file", TRAFO_MEMBER(data.test_tgt), false, false},
    {"cache-dir", "Data",
     "folder of token caches and vocabularies, kept between runs (default $TRAFO_CACHE_DIR, else "
     "$XDG_CACHE_HOME/trafo or ~/.cache/trafo)",
     TRAFO_MEMBER(data.cache_dir), false, false},
    {"max-length", "Data", "skip pairs longer than this many pieces (0: no limit)", TRAFO_MEMBER(data.max_length)},
    {"max-length-ratio", "Data", "skip pairs whose length ratio exceeds this (0: off)",
     TRAFO_MEMBER(data.max_length_ratio)},
    {"all-caps-every", "Data",
     "case augmentation: the pair of every Nth line is trained on a second time in capitals, both sides, so "
     "that the model translates text in capitals rather than copying it (plain words only: placeholders, "
     "options and identifiers stay as written; 0: off)",
     TRAFO_MEMBER(data.all_caps_every)},
    {"title-case-every", "Data",
     "case augmentation: the pair of every Nth line is trained on a second time with its source as an English "
     "title (Owner of the File) and its target's first word capitalised, for the capitalised labels of user "
     "interfaces (0: off)",
     TRAFO_MEMBER(data.title_case_every)},
    {"sampling-temperature", "Data",
     "with several corpora: temperature sampling, each corpus drawn in proportion to its weight x its pairs^(1/T) "
     "(1: by size; 5: the usual multilingual recipe, small corpora drawn more often than their size; 0: by weight "
     "alone)",
     TRAFO_MEMBER(data.sampling_temperature)},
    {"subword-alpha", "Data",
     "subword regularisation: train on sampled segmentations, SentencePiece's alpha (unigram: smoothing, smaller "
     "gives more and shorter pieces, e.g. 0.3; bpe: BPE-dropout's merge-drop rate, e.g. 0.1; 0: off)",
     TRAFO_MEMBER(data.subword_alpha)},
    {"subword-samples", "Data",
     "with --subword-alpha: sampled segmentations of each pair, tokenized once into token caches, one per epoch "
     "in turn",
     TRAFO_MEMBER(data.subword_samples)},
    {"guided-alignment", "Data",
     "guided alignment: a file of word alignments of the training pairs, one line per line pair in Pharaoh "
     "format (0-0 1-2 ..., as eflomal and fast_align write them); a cross-attention head learns them, and align "
     "and translations' alignments read it (with --corpus: each corpus's fifth field)",
     TRAFO_MEMBER(data.guided_alignment), false, false},
    {"guided-alignment-layer", "Data",
     "with word alignments: the decoder layer (1-based) whose cross-attention's first head learns them (0: the last)",
     TRAFO_MEMBER(data.guided_alignment_layer)},

    {"vocab-size", "Vocabulary", "joint SentencePiece vocabulary size", TRAFO_MEMBER(vocab.vocab_size)},
    {"vocab-type", "Vocabulary", "unigram or bpe", TRAFO_MEMBER(vocab.model_type)},
    {"vocab-normalization", "Vocabulary",
     "SentencePiece normalisation rule (default nmt_nfkc: NFKC plus whitespace clean-up)",
     TRAFO_MEMBER(vocab.normalization)},
    {"vocab-character-coverage", "Vocabulary", "share of characters given own pieces",
     TRAFO_MEMBER(vocab.character_coverage)},
    {"vocab-from", "Vocabulary",
     "a new run takes this checkpoint's tokenizer (a teacher's, for a student that reads its translations as they "
     "are) instead of learning one: vocab-size and the other vocab- options then do nothing",
     TRAFO_MEMBER(vocab_from), false, false},
    {"vocab-sample", "Vocabulary",
     "sentences the vocabulary is learned from, drawn from the corpora in proportion to their weights (0: all)",
     TRAFO_MEMBER(vocab.max_sentences)},

    {"init-from", "Model",
     "fine-tune: a new run starts from this checkpoint's weights (its moving average where it kept one), tokenizer "
     "and model options, with a fresh optimizer at step 0; a run folder that holds a run resumes it",
     TRAFO_MEMBER(init_from), false, false},
    {"d-model", "Model", "model width", TRAFO_MEMBER(model.d_model)},
    {"heads", "Model", "attention heads (must divide d-model)", TRAFO_MEMBER(model.heads)},
    {"encoder-layers", "Model", "encoder layers", TRAFO_MEMBER(model.encoder_layers)},
    {"decoder-layers", "Model", "decoder layers", TRAFO_MEMBER(model.decoder_layers)},
    {"d-ff", "Model", "feed-forward inner width", TRAFO_MEMBER(model.d_ff)},
    {"dropout", "Model",
     "dropout rate of embeddings and sublayer outputs, and of attention weights and feed-forward activations unless "
     "set below",
     TRAFO_MEMBER(model.dropout)},
    {"attention-dropout", "Model", "dropout rate of attention weights; -1: --dropout's",
     TRAFO_MEMBER(model.attention_dropout)},
    {"activation-dropout", "Model", "dropout rate of the feed-forward inner activations; -1: --dropout's",
     TRAFO_MEMBER(model.activation_dropout)},
    {"encoder-layerdrop", "Model", "share of encoder layers skipped at each training step (LayerDrop; 0: off)",
     TRAFO_MEMBER(model.encoder_layerdrop)},
    {"decoder-layerdrop", "Model", "share of decoder layers skipped at each training step (LayerDrop; 0: off)",
     TRAFO_MEMBER(model.decoder_layerdrop)},
    {"activation", "Model",
     "feed-forward activation: relu, gelu or swish (SiLU, x * sigmoid(x), as OPUS-MT's MarianMT models)",
     TRAFO_MEMBER(model.activation)},
    {"norm", "Model", "pre or post (LayerNorm position)", TRAFO_MEMBER(model.norm)},
    {"tie-embeddings", "Model", "share source, target and output embeddings", TRAFO_MEMBER(model.tie_embeddings)},
    {"output-bias", "Model",
     "with tied embeddings: a trained bias on the output logits (MarianMT's final_logits_bias; trafo import keeps "
     "OPUS-MT's)",
     TRAFO_MEMBER(model.output_bias)},
    {"max-positions", "Model", "longest sequence in pieces", TRAFO_MEMBER(model.max_positions)},
    {"positions", "Model",
     "position encoding: sinusoidal (sines and cosines interleaved) or sinusoidal-halves (sines in the first half, "
     "cosines in the second, as MarianMT)",
     TRAFO_MEMBER(model.positions)},

    {"optimizer", "Optimisation", "adam or adamw", TRAFO_MEMBER(optim.optimizer)},
    {"lr", "Optimisation", "peak learning rate", TRAFO_MEMBER(optim.lr)},
    {"warmup-steps", "Optimisation", "linear warmup steps, then inverse square root decay",
     TRAFO_MEMBER(optim.warmup_steps)},
    {"adam-beta1", "Optimisation", "Adam beta1", TRAFO_MEMBER(optim.adam_beta1)},
    {"adam-beta2", "Optimisation", "Adam beta2", TRAFO_MEMBER(optim.adam_beta2)},
    {"adam-eps", "Optimisation", "Adam epsilon", TRAFO_MEMBER(optim.adam_eps)},
    {"weight-decay", "Optimisation", "weight decay", TRAFO_MEMBER(optim.weight_decay)},
    {"clip-norm", "Optimisation", "gradient norm clip (0: off)", TRAFO_MEMBER(optim.clip_norm)},
    {"label-smoothing", "Optimisation", "label smoothing", TRAFO_MEMBER(optim.label_smoothing)},
    {"src-word-dropout", "Optimisation", "share of source pieces replaced by <unk> at each training step (0: off)",
     TRAFO_MEMBER(optim.src_word_dropout)},
    {"tgt-word-dropout", "Optimisation",
     "share of the decoder's input pieces replaced by <unk> at each training step; the pieces it learns to predict "
     "stay (0: off)",
     TRAFO_MEMBER(optim.tgt_word_dropout)},
    {"batch-tokens", "Optimisation",
     "token budget per batch, padding included; with several ranks, of the global batch they share; auto (0): "
     "the largest that fits the GPU's memory (on CUDA, where no budget is given), 4096 on a CPU",
     TRAFO_MEMBER(optim.batch_tokens)},
    {"accumulate", "Optimisation", "batches per update", TRAFO_MEMBER(optim.accumulate)},
    {"ema", "Optimisation",
     "exponential moving average of the weights, used for validation and saved in checkpoints (e.g. 0.9999; "
     "0 = off); its decay warms up as min(EMA, (1 + step) / (10 + step))",
     TRAFO_MEMBER(optim.ema)},
    {"guided-alignment-weight", "Optimisation",
     "with word alignments: the weight of the guided-alignment loss (cross-entropy of one head's attention "
     "against the links), added to the translation loss per target token (0: no guidance)",
     TRAFO_MEMBER(optim.guided_alignment_weight)},

    {"max-steps", "Stopping", "stop after this many updates (0: no limit)", TRAFO_MEMBER(stop.max_steps)},
    {"max-epochs", "Stopping", "stop after this many epochs (0: no limit)", TRAFO_MEMBER(stop.max_epochs)},
    {"max-time", "Stopping", "wall-clock budget, e.g. 90s, 20m, 1h30m", TRAFO_MEMBER(stop.max_time), false, false},
    {"early-stopping", "Stopping",
     "stop after this many validations without the mean of the last three improving (0: off)",
     TRAFO_MEMBER(stop.early_stopping)},
    {"early-stopping-metric", "Stopping", "bleu, chrf or loss", TRAFO_MEMBER(stop.early_stopping_metric)},

    {"preset", "Run",
     "defaults for the options left out, fit to the corpus and the budget: auto (chosen from the training pairs "
     "and the epochs the budget buys on this machine; train.log says which and why), standard (the built-in defaults), "
     "small-short or small-long; student-tiny or student-base (a distilled student's model, never auto's); "
     "a resume keeps the run's unless given",
     TRAFO_MEMBER(run.preset)},
    {"valid-every", "Run", "steps between validations", TRAFO_MEMBER(run.valid_every)},
    {"valid-max-sentences", "Run", "dev sentences decoded per validation (0: all)",
     TRAFO_MEMBER(run.valid_max_sentences)},
    {"valid-samples", "Run", "sample translations logged per validation", TRAFO_MEMBER(run.valid_samples)},
    {"valid-tag", "Run", "a corpus tag put before every dev source, as eval --tag (\"\": none)",
     TRAFO_MEMBER(run.valid_tag), false, false},
    {"checkpoint-every", "Run", "steps between numbered checkpoints (0: at validations)",
     TRAFO_MEMBER(run.checkpoint_every)},
    {"keep-checkpoints", "Run", "numbered checkpoints kept", TRAFO_MEMBER(run.keep_checkpoints)},
    {"log-every", "Run", "steps between progress lines", TRAFO_MEMBER(run.log_every)},
    {"tensorboard", "Run",
     "also write TensorBoard event files (the train/* and valid/* scalars of metrics.jsonl) under RUN_DIR/tensorboard",
     TRAFO_MEMBER(run.tensorboard), true, false},
    {"run-dir", "Run", "run folder (resumed when it holds checkpoint-last.pt)", TRAFO_MEMBER(run.run_dir)},
    {"no-resume", "Run", "start over even if the run folder holds a run", TRAFO_MEMBER(run.no_resume), true, false},
    {"overwrite", "Run", "with --no-resume: replace the run folder's run", TRAFO_MEMBER(run.overwrite), true, false},

    {"device", "Machine", "cpu, cuda or auto", TRAFO_MEMBER(machine.device)},
    {"threads", "Machine", "intra-op threads (0: the cores other processes leave free, followed during the run)",
     TRAFO_MEMBER(machine.threads)},
    {"precision", "Machine",
     "fp32, bf16 (autocast, fp32 master weights) or auto: bf16 where the device runs it natively and faster (CUDA >= "
     "8.0; a CPU with amx_bf16 or avx512_bf16 whose bf16 matmuls time >= 1.2x fp32 at start), else fp32; validation "
     "decodes as trafo eval picks: fp32 on a CPU, on CUDA bf16 where the model's decoding steps time >= 1.1x fp32",
     TRAFO_MEMBER(machine.precision)},
    {"cuda-graphs", "Machine",
     "auto, on or off: on CUDA, each batch is padded to its shape bucket and the training step of a bucket is "
     "captured as a CUDA graph and replayed (one process, --accumulate 1, no LayerDrop); auto: where the model's "
     "steps, timed at start, run faster so; ignored on the CPU",
     TRAFO_MEMBER(machine.cuda_graphs)},
    {"seed", "Machine", "random seed", TRAFO_MEMBER(machine.seed)},

    {"nproc", "Data parallel",
     "data-parallel processes to start on this machine (Gloo on CPU, NCCL on CUDA); --threads is split among "
     "them. Under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) leave it at 1",
     TRAFO_MEMBER(parallel.nproc)},
    {"dist-timeout", "Data parallel", "seconds a rank waits for the others before the run fails",
     TRAFO_MEMBER(parallel.dist_timeout)},
};

#undef TRAFO_MEMBER

void parse_bool(const std::string& text, bool& out) {
  std::string lower;
  for (const char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") {
    out = true;
  } else if (lower == "false" || lower == "0" || lower == "no" || lower == "off") {
    out = false;
  } else {
    throw InputError("'" + text + "' is not true or false");
  }
}

}  // namespace

const std::vector<ConfigKey>& config_keys() { return kKeys; }

const ConfigKey* find_config_key(const std::string& name) {
  for (const auto& key : kKeys) {
    if (name == key.name) return &key;
  }
  return nullptr;
}

std::string format_value(const ConfigKey& key, const TrainConfig& config) {
  // The field accessor takes a mutable config; here it is only read.
  const Field field = key.field(const_cast<TrainConfig&>(config));
  return std::visit(
      [](auto* value) -> std::string {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return (value->find('"') == std::string::npos ? "\"" + *value + "\"" : "'" + *value + "'");
        } else if constexpr (std::is_same_v<T, bool>) {
          return *value ? "true" : "false";
        } else {
          return fmt::format("{}", *value);  // floats: the shortest text that reads back exactly
        }
      },
      field);
}

// The one number key that also takes the word auto, held as 0 (train/batch_fit.h: kAutoBatchTokens).
static bool takes_auto(const ConfigKey& key) { return key.name == std::string_view("batch-tokens"); }

void parse_value(const ConfigKey& key, const std::string& text, TrainConfig& config) {
  if (takes_auto(key) && text == "auto") {
    config.optim.batch_tokens = 0;
    return;
  }
  std::visit(
      [&text](auto* value) {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          *value = text;
        } else if constexpr (std::is_same_v<T, bool>) {
          parse_bool(text, *value);
        } else if constexpr (std::is_same_v<T, double>) {
          util::parse_finite(text, *value);
        } else {
          util::parse_decimal(text, *value);
        }
      },
      key.field(config));
}

const char* type_name(const ConfigKey& key) {
  if (takes_auto(key)) return "INT|auto";  // not INT: the command line's integer check would refuse auto
  static constexpr const char* kNames[] = {"TEXT", "BOOL", "INT", "INT", "UINT", "FLOAT"};  // Field's order
  TrainConfig scratch;
  return kNames[key.field(scratch).index()];
}

}  // namespace trafo::run_config
