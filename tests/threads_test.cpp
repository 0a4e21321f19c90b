// --threads 0 on a shared machine: the cores other processes leave free, measured, and through the
// binary (the load posed with the test hook other_load, TRAFO_TEST_HOOKS); an explicit --threads is kept.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <thread>

#include "data_support.h"
#include "run_support.h"
#include "trafo/test_hooks.h"
#include "trafo/util/device.h"

namespace trafo::testing {
namespace {

TEST(Threads, TheCoresOthersLeaveFreeAndAtLeastOne) {
  EXPECT_EQ(util::threads_for_load(2, 0.0), 2);
  EXPECT_EQ(util::threads_for_load(2, 0.4), 2);   // less than half a core is noise
  EXPECT_EQ(util::threads_for_load(2, 0.7), 1);   // a busy loop squeezed by our own threads
  EXPECT_EQ(util::threads_for_load(2, 5.0), 1);
  EXPECT_EQ(util::threads_for_load(16, 1.0), 15);
  EXPECT_EQ(util::threads_for_load(16, -1.0), 16);
}

TEST(Threads, TheMeterSeesABusyProcess) {
  ASSERT_FALSE(test_hooks().other_load.has_value());  // measured, not posed
  const int busy = spawn_command("sh -c 'while :; do :; done'");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  util::LoadMeter meter;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double others = meter.busy_cores();
  ::kill(busy, SIGKILL);
  wait_for_exit(busy, 10.0);
  EXPECT_GE(others, 0.6);
  EXPECT_LE(others, util::resolve_threads(0) + 0.01);
}

// The start event gives the threads taken; train.log says why. An explicit count is kept.
TEST(Threads, TrainingTakesTheFreeCoresUnlessToldHowMany) {
  const auto data = make_temp_dir("threads-data");
  write_synthetic_corpus(data, "train", 40, 1);
  write_synthetic_corpus(data, "dev", 4, 2);
  const int cores = util::resolve_threads(0);
  for (const std::string threads : {"0", "2"}) {
    const auto run = make_temp_dir("threads-run") / "run";
    const auto result = run_command("TRAFO_TEST_HOOKS=other_load=1 '" + std::string(TRAFO_BINARY) + "' train --data-dir " +
                                    quoted(data) + " --run-dir " + quoted(run) +
                                    " --d-model 16 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 32"
                                    " --vocab-size 300 --max-steps 1 --valid-every 1 --valid-max-sentences 2"
                                    " --threads " + threads);
    ASSERT_EQ(result.exit_code, 0) << result.errors;
    const auto start = read_jsonl(run / "metrics.jsonl").front();
    if (threads == "0") {
      EXPECT_EQ(start["threads"], std::max(1, cores - 1)) << start;
      EXPECT_NE(result.errors.find("other processes keep about 1.0 of"), std::string::npos) << result.errors;
    } else {
      EXPECT_EQ(start["threads"], 2) << start;
      EXPECT_EQ(result.errors.find("other processes"), std::string::npos) << result.errors;
    }
  }
}

}  // namespace
}  // namespace trafo::testing
