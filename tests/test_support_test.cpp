// The test helpers that tests in separate processes share: a kept folder is made once, and the
// maker that loses a race to keep it leaves the winner's folder whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "test_support.h"
#include "trafo/util/files.h"

namespace trafo::testing {
namespace {

namespace fs = std::filesystem;

TEST(TestSupport, AKeptFolderIsMadeOnceAndALateMakerLeavesTheFirstOne) {
  const std::string key = "kept-folder test " + make_temp_dir("kept-key").string();  // new each run
  int makes = 0;
  const auto fill = [&](const fs::path& making, const std::string& text) {
    ++makes;
    fs::create_directories(making / "sub");
    write_text(making / "sub" / "file.txt", text);
    return true;
  };
  // Another process keeps its folder while this one is still making: the rename fails, and this
  // maker's own folder (not empty) goes.
  const auto kept = kept_folder("kept-test", key, [&](const fs::path& making) {
    const auto name = making.filename().string();  // HASH.making-PID
    const auto winner = making.parent_path() / name.substr(0, name.find('.'));
    fill(winner, "first");
    return fill(making, "second");
  });
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(read_text(kept / "sub" / "file.txt"), "first");
  EXPECT_EQ(std::distance(fs::directory_iterator(kept.parent_path()), fs::directory_iterator()), 1);
  // Kept: the next call makes nothing.
  EXPECT_EQ(kept_folder("kept-test", key, [&](const fs::path& making) { return fill(making, "third"); }), kept);
  EXPECT_EQ(makes, 2);
  // A failed make keeps nothing.
  EXPECT_TRUE(kept_folder("kept-test", key + " failed", [](const fs::path&) { return false; }).empty());
  util::remove_tree(kept.parent_path());
}

}  // namespace
}  // namespace trafo::testing
