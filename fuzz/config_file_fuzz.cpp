// The TOML config reader on arbitrary bytes: run_config::read_config_text into a TrainConfig, then
// run_config::validate on it. Also checks the promise of docs/design.md "Config files" that `--dump-config` output
// (run_config::to_toml) reads back unchanged, and that keys the command line gives are checked
// but left as they are.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "trafo/run_config/config_file.h"

using namespace trafo;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  run_config::TrainConfig config;
  if (!fuzz::expect_trafo_errors("read_config_text", [&] { run_config::read_config_text(text, "fuzz.toml", config); })) {
    return 0;
  }
  fuzz::expect_trafo_errors("run_config::validate", [&] { run_config::validate(config); });

  // As if the command line gave these keys: the file's values are checked, not taken.
  const run_config::TrainConfig defaults;
  run_config::TrainConfig kept;
  fuzz::check(fuzz::expect_trafo_errors("read_config_text with kept keys",
                                        [&] { run_config::read_config_text(text, "fuzz.toml", kept, {"lr", "seed", "run-dir"}); }),
              "a file read once is refused when some of its keys are kept");
  fuzz::check(kept.optim.lr == defaults.optim.lr && kept.machine.seed == defaults.machine.seed &&
                  kept.run.run_dir == defaults.run.run_dir,
              "a kept key took the file's value");

  // What --dump-config prints must read back to the same config.
  const std::string dumped = run_config::to_toml(config);
  run_config::TrainConfig again;
  if (!fuzz::expect_trafo_errors("read_config_text on --dump-config output",
                                 [&] { run_config::read_config_text(dumped, "dumped.toml", again); })) {
    fuzz::finding("--dump-config output does not read back:\n" + dumped);
  }
  const std::string twice = run_config::to_toml(again);
  fuzz::check(twice == dumped, "--dump-config output reads back changed:\n" + dumped + "---- read back as:\n" + twice);
  return 0;
}
