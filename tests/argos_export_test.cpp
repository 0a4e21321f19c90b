// `trafo export --format argos`, checked with the real Argos Translate (PyPI argostranslate in .venv,
// which scripts/setup.sh installs): a toy model trained here, packaged, installed by argostranslate
// from the file, translates each line as `trafo translate` does (tests/argos_check.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "run_support.h"
#include "test_support.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

TEST(ArgosExport, ArgostranslateInstallsThePackageAndTranslatesAsTrafo) {
  TRAFO_REQUIRE_PYTHON_MODULE("argostranslate");
  const auto dir = make_temp_dir("argos");
  ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(dir / "toy") + " --train 2000 --dev 40 --test 10").exit_code, 0);
  const auto trained = run_trafo("train --data-dir " + quoted(dir / "toy") + " --src-lang en --tgt-lang de --run-dir " +
                                 quoted(dir / "run") +
                                 " --d-model 32 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 64 --vocab-size 400"
                                 " --max-steps 200 --valid-every 200 --threads 1 --early-stopping 0 --lr 3e-3 --warmup-steps 30");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto checkpoint = dir / "run" / "checkpoint-last.pt";
  const auto package = dir / "en_de.argosmodel";
  const auto exported = run_trafo("export --format argos --checkpoint " + quoted(checkpoint) + " --out " + quoted(package));
  ASSERT_EQ(exported.exit_code, 0) << exported.errors;

  // Argos decodes up to 256 pieces, as the same limits here do.
  const auto expected = dir / "expected.de";
  const auto translated = run_trafo("translate --checkpoint " + quoted(checkpoint) + " --input " +
                                    quoted(dir / "toy" / "dev.en") + " --output " + quoted(expected) +
                                    " --threads 1 --precision fp32 --max-length-a 0 --max-length-b 256");
  ASSERT_EQ(translated.exit_code, 0) << translated.errors;
  const auto checked = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR + "/tests/argos_check.py' " +
                                   quoted(package) + " " + quoted(dir / "toy" / "dev.en") + " " + quoted(expected) +
                                   " " + quoted(dir / "argos-home"));
  EXPECT_EQ(checked.exit_code, 0) << checked.output << checked.errors;
  EXPECT_NE(checked.output.find("ok"), std::string::npos) << checked.output;

  // A package is one file: an existing one is kept without --force, a folder is refused.
  write_text(dir / "taken.argosmodel", "mine");
  const auto refused = run_trafo("export --format argos --checkpoint " + quoted(checkpoint) + " --out " +
                                 quoted(dir / "taken.argosmodel"));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.errors.find("--force"), std::string::npos) << refused.errors;
  EXPECT_EQ(read_text(dir / "taken.argosmodel"), "mine");
  const auto folder = run_trafo("export --format argos --checkpoint " + quoted(checkpoint) + " --out " + quoted(dir / "toy"));
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.errors.find("is a folder"), std::string::npos) << folder.errors;
  const auto forced = run_trafo("export --format argos --checkpoint " + quoted(checkpoint) + " --out " +
                                quoted(dir / "taken.argosmodel") + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.errors;
  EXPECT_EQ(fs::file_size(dir / "taken.argosmodel"), fs::file_size(package));  // the same bytes
}

}  // namespace
}  // namespace trafo::testing
