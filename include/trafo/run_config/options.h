// Every knob of `trafo train`, with its default, in groups that follow the headings of the key table
// (config_keys.cpp). The CLI binds each member to a long option of the same name (underscores as
// dashes, without the group); config files use those names as keys.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trafo/data/tokenizer.h"
#include "trafo/model/config.h"

namespace trafo::run_config {

// One training corpus of several: `[[corpus]]` in TOML,
// --corpus SRC,TGT[,WEIGHT[,TAG[,ALIGNMENT[,SRC_LANG,TGT_LANG]]]] on the command line.
struct CorpusSpec {
  std::string src, tgt;
  double weight = 1.0;  // its share of the pairs served is weight / the sum of the weights
  std::string tag;      // put before each of its source sentences as a reserved piece ("": none)
  std::string alignment;  // its word alignments for guided alignment, one line per pair ("": none)
  std::string src_lang, tgt_lang;  // its languages ("": the run's --src-lang, --tgt-lang)
  bool operator==(const CorpusSpec& other) const {
    return src == other.src && tgt == other.tgt && weight == other.weight && tag == other.tag &&
           alignment == other.alignment && src_lang == other.src_lang && tgt_lang == other.tgt_lang;
  }
};

// Data: DIR/{train,dev}.{src,tgt}, or explicit paths (which win).
struct DataOptions {
  std::string data_dir;
  std::string src_lang = "en";
  std::string tgt_lang = "de";
  std::string train_src, train_tgt, dev_src, dev_tgt;
  std::vector<CorpusSpec> corpora;    // training corpora with weights and tags; when given, the training data
  std::string test_src, test_tgt;     // a test set, checked for pairs also in training (DIR/test.* by default)
  std::string cache_dir;              // token caches and vocabularies ("": $TRAFO_CACHE_DIR or ~/.cache/trafo)
  int64_t max_length = 250;           // skip training pairs longer than this many pieces
  double max_length_ratio = 0.0;      // skip pairs whose piece-length ratio exceeds this (0: off)
  int64_t all_caps_every = 0;         // case variants (data/case_variants.h): every Nth pair also in capitals
  int64_t title_case_every = 0;       // and every Nth also as an English title (0: off)
  double sampling_temperature = 0.0;  // corpora drawn by weight × pairs^(1/T) (0: by weight alone)
  double subword_alpha = 0.0;         // subword regularisation, SentencePiece's alpha (0: off; Tokenizer::sample)
  int64_t subword_samples = 4;        // sampled segmentations per pair, built once, one per epoch in turn
  std::string guided_alignment;       // word alignments of the training pairs (Pharaoh, one line a pair; "": none)
  int64_t guided_alignment_layer = 0; // decoder layer (1-based) whose cross-attention head learns them; 0: the last
};

// A corpus's languages as they take effect: its own, else the run's --src-lang, --tgt-lang.
inline const std::string& source_language(const CorpusSpec& corpus, const DataOptions& data) {
  return corpus.src_lang.empty() ? data.src_lang : corpus.src_lang;
}
inline const std::string& target_language(const CorpusSpec& corpus, const DataOptions& data) {
  return corpus.tgt_lang.empty() ? data.tgt_lang : corpus.tgt_lang;
}

// Optimisation: the optimizer, its learning-rate schedule, the loss and the batches of an update.
struct OptimOptions {
  std::string optimizer = "adam";     // adam | adamw
  double lr = 1e-3;                   // peak learning rate, reached after warmup
  int64_t warmup_steps = 500;         // linear warmup, then lr × sqrt(warmup / step)
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.98;
  double adam_eps = 1e-9;
  double weight_decay = 0.0;          // decoupled (adamw) or L2 (adam)
  double clip_norm = 1.0;             // gradient norm clip (0: off)
  double label_smoothing = 0.1;
  double src_word_dropout = 0.0;      // share of source pieces replaced by unk at each step (0: off)
  double tgt_word_dropout = 0.0;      // the same for the decoder's input pieces (the labels stay)
  int64_t batch_tokens = 4096;        // per step, all ranks together: B × max(padded src, padded tgt); 0: auto
  int64_t accumulate = 1;             // batches per update
  double ema = 0.0;                   // decay of a moving average of the weights for validation and
                                      // checkpoints, e.g. 0.9999 (0: off; train/ema.h)
  double guided_alignment_weight = 0.1;  // weight of the guided-alignment loss (with alignments given; 0: off)
};

// When to stop (0: no limit); whichever comes first.
struct StopOptions {
  int64_t max_steps = 20000;
  int64_t max_epochs = 0;
  std::string max_time;               // wall-clock budget: 90s, 20m, 1h30m
  int64_t early_stopping = 8;         // validations without improvement (0: off)
  std::string early_stopping_metric = "bleu";  // bleu | chrf | loss
};

// The run: its preset, validation, checkpoints, logs and folder.
struct RunOptions {
  std::string preset = "auto";        // defaults that fit the corpus and budget (run_config/presets.h)
  int64_t valid_every = 250;          // steps between validations (0: only at the end)
  int64_t valid_max_sentences = 500;  // dev sentences decoded for BLEU/chrF (0: all)
  int64_t valid_samples = 3;          // sample translations logged per validation
  std::string valid_tag;              // a corpus tag put before every dev source ("": none)
  int64_t checkpoint_every = 0;       // steps between numbered checkpoints (0: with validation)
  int64_t keep_checkpoints = 3;       // numbered checkpoints kept
  int64_t log_every = 50;             // steps between progress lines
  bool tensorboard = false;           // also write TensorBoard event files under RUN_DIR/tensorboard
  std::string run_dir = "runs/default";
  bool no_resume = false;             // start over even if RUN_DIR holds checkpoint-last.pt
  bool overwrite = false;             // allow --no-resume to replace an existing run
};

// Machine: where and how the steps run.
struct MachineOptions {
  std::string device = "auto";        // cpu | cuda | auto
  int threads = 0;                    // intra-op threads (0: the cores others leave free, followed)
  std::string precision = "auto";     // fp32 | bf16 (autocast, fp32 master weights) | auto (runtime/precision.h)
  std::string cuda_graphs = "auto";   // auto | on | off: CUDA graphs of the training step (train/step_graphs.h)
  uint64_t seed = 1;
};

// Data parallelism (torchrun's environment variables, or --nproc on one machine).
struct ParallelOptions {
  int nproc = 1;                      // local processes to start, splitting --threads among them
  double dist_timeout = 300.0;        // seconds a collective may wait for the other ranks
};

// One automatic choice a run makes: the option (its long name), the value chosen, and why. A run's
// choices are one line each in train.log and one record each in its `start` event.
struct Choice {
  std::string what;
  std::string value;
  std::string why;
};

// Every option of `trafo train`, in the groups of the key table (config_keys.cpp).
struct TrainConfig {
  DataOptions data;
  data::TokenizerOptions vocab;       // joint SentencePiece model trained on train src+tgt
  std::string vocab_from;             // a new run's tokenizer: this checkpoint's (a teacher's), not one learned
  model::ModelConfig model;
  std::string init_from;              // a new run starts from this checkpoint's weights, tokenizer and model
  OptimOptions optim;
  StopOptions stop;
  RunOptions run;
  MachineOptions machine;
  ParallelOptions parallel;

  // The keys given on the command line or in a --config file ("corpus" for --corpus or [[corpus]]
  // tables), whatever their values: where options meet a checkpoint (--init-from, a resume), a key
  // given is held to, one left out takes the checkpoint's or the run's value. Unset (a config made
  // in code) counts every key as given. Never written to TOML.
  std::optional<std::set<std::string>> given;
};

// Whether training learns word alignments (--guided-alignment, or a corpus's alignment file, with a
// weight above 0), and the decoder layer (0-based) whose head learns them:
// model::ModelConfig::alignment_layer (-1: none).
bool guided(const TrainConfig& config);
int64_t guided_layer(const TrainConfig& config);

// The target languages of the training corpora (each corpus's tgt_lang, or the run's --tgt-lang),
// each once, in corpus order; the run's alone without corpora.
std::vector<std::string> target_languages(const TrainConfig& config);

// A model of two or more target languages: each corpus without a tag gets its target's >>xx<< tag,
// and the dev set (in the run's --tgt-lang) that of the run's target as --valid-tag unless one is
// given. InputError for a corpus tagged otherwise (a source takes one tag) or a --tgt-lang that no
// corpus translates into. Nothing changes with one target language.
void tag_targets(TrainConfig& config);

// Whether `key` (a config key's name, or "corpus") was given: see TrainConfig::given.
bool was_given(const TrainConfig& config, const std::string& key);

// Throws trafo::InputError naming the first invalid value.
void validate(const TrainConfig& config);

// "90", "90s", "20m", "1h30m", "2h", "1.5h" → seconds; "" → 0 (no limit). Units h, m, s come in
// that order, each at most once; a number without a unit is seconds only alone. InputError on
// anything else, and on a duration over kMaxTimeSeconds.
inline constexpr double kMaxTimeSeconds = 1e6 * 3600;  // 1,000,000 hours: over a century
double parse_duration(const std::string& text);

}  // namespace trafo::run_config
