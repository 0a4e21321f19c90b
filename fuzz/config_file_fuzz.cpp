// The TOML config reader on arbitrary bytes: train::read_config_text into a TrainConfig, then
// train::validate on it. Also checks the promise of docs/design.md "Config files" that `--dump-config` output
// (train::to_toml) reads back unchanged, and that keys the command line gives are checked
// but left as they are.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "trafo/train/config_file.h"

using namespace trafo;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  train::TrainConfig config;
  if (!fuzz::expect_trafo_errors("read_config_text", [&] { train::read_config_text(text, "fuzz.toml", config); })) {
    return 0;
  }
  fuzz::expect_trafo_errors("train::validate", [&] { train::validate(config); });

  // As if the command line gave these keys: the file's values are checked, not taken.
  const train::TrainConfig defaults;
  train::TrainConfig kept;
  fuzz::check(fuzz::expect_trafo_errors("read_config_text with kept keys",
                                        [&] { train::read_config_text(text, "fuzz.toml", kept, {"lr", "seed", "run-dir"}); }),
              "a file read once is refused when some of its keys are kept");
  fuzz::check(kept.lr == defaults.lr && kept.seed == defaults.seed && kept.run_dir == defaults.run_dir,
              "a kept key took the file's value");

  // What --dump-config prints must read back to the same config.
  const std::string dumped = train::to_toml(config);
  train::TrainConfig again;
  if (!fuzz::expect_trafo_errors("read_config_text on --dump-config output",
                                 [&] { train::read_config_text(dumped, "dumped.toml", again); })) {
    fuzz::finding("--dump-config output does not read back:\n" + dumped);
  }
  const std::string twice = train::to_toml(again);
  fuzz::check(twice == dumped, "--dump-config output reads back changed:\n" + dumped + "---- read back as:\n" + twice);
  return 0;
}
