// The TOML config reader on arbitrary bytes: cli::apply_config_file on the `trafo train`
// subcommand's real options, then train::validate on the config they fill.
// Also checks DESIGN.md's promise that `--dump-config` output reads back unchanged.
//
// add_train_command keeps its TrainConfig inside the runner it returns, so this harness
// compiles src/cli/train_command.cpp into itself and builds the subcommand the way
// add_train_command does: --config, --dump-config, add_options() (the same options, defaults
// and help) and add_number_checks(). Keep TrainCommand below in step with add_train_command.
#include "../src/cli/train_command.cpp"

#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"

using namespace trafo;

namespace {

struct TrainCommand {
  CLI::App app{"trafo"};
  CLI::App* command = nullptr;
  train::TrainConfig config;
  std::string config_path;
  bool dump = false;

  TrainCommand() {
    command = app.add_subcommand("train", "train a model on parallel text");
    command->add_option("--config", config_path, "TOML config file");
    command->add_flag("--dump-config", dump, "print the effective config (TOML) and exit");
    cli::add_options(*command, config);
    cli::add_number_checks(*command);
    app.parse(std::vector<std::string>{"train"});  // as trafo parses its command line first
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::write_scratch("config.toml", std::string_view(reinterpret_cast<const char*>(data), size));
  TrainCommand first;
  if (!fuzz::expect_trafo_errors("apply_config_file", [&] { cli::apply_config_file(*first.command, path); })) {
    return 0;
  }
  fuzz::expect_trafo_errors("train::validate", [&] { train::validate(first.config); });

  // What --dump-config prints must read back to the same config.
  const std::string dumped = cli::dump_config(*first.command);
  const auto dumped_path = fuzz::write_scratch("dumped.toml", dumped);
  TrainCommand second;
  if (!fuzz::expect_trafo_errors("apply_config_file on --dump-config output",
                                 [&] { cli::apply_config_file(*second.command, dumped_path); })) {
    fuzz::finding("--dump-config output does not read back:\n" + dumped);
  }
  const std::string again = cli::dump_config(*second.command);
  fuzz::check(again == dumped, "--dump-config output reads back changed:\n" + dumped + "---- read back as:\n" + again);
  return 0;
}
