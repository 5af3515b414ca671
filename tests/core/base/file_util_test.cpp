// Atomic writes and whole-file reads (fs_base): contents, modes, and what a failure leaves behind.
#include "core/base/file_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/core/testing/corpus.h"

namespace fusionscope {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(FileUtil, WriteThenReadAndReplace) {
  fs::path dir = testing::scratchDirectory("fs_file_util_write");
  std::string path = (dir / "a.txt").string();
  ASSERT_TRUE(writeFileAtomic(path, "first").ok());
  ASSERT_TRUE(writeFileAtomic(path, "second, longer").ok());
  auto text = readFile(path, 64);
  ASSERT_TRUE(text.ok()) << text.message();
  EXPECT_EQ(*text, "second, longer");
  EXPECT_GE(text->capacity(), text->size() + 64);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"a.txt"});  // no temporaries left
  fs::remove_all(dir);
}

// `-o link` wrote a regular file over the link; `-o /dev/null` replaced the device node with a regular file.
TEST(FileUtil, WritingThroughALinkKeepsTheLinkAndADeviceIsWrittenInPlace) {
  fs::path dir = testing::scratchDirectory("fs_file_util_links");
  ASSERT_TRUE(writeFileAtomic((dir / "real.txt").string(), "old").ok());
  fs::create_symlink("real.txt", dir / "link.txt");
  ASSERT_TRUE(writeFileAtomic((dir / "link.txt").string(), "new").ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link.txt")));
  EXPECT_EQ(*readFile((dir / "real.txt").string()), "new");
  // A dangling link: its target is created.
  fs::create_symlink("later.txt", dir / "dangling.txt");
  ASSERT_TRUE(writeFileAtomic((dir / "dangling.txt").string(), "made").ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "dangling.txt")));
  EXPECT_EQ(*readFile((dir / "later.txt").string()), "made");
  // A loop of links is an error, not a hang.
  fs::create_symlink("loop_b", dir / "loop_a");
  fs::create_symlink("loop_a", dir / "loop_b");
  Status looped = writeFileAtomic((dir / "loop_a").string(), "x");
  EXPECT_FALSE(looped.ok());
  EXPECT_NE(looped.message().find("symbolic links"), std::string::npos) << looped.message();
  // /dev/null stays a character device.
  ASSERT_TRUE(writeFileAtomic("/dev/null", "discarded").ok());
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A directory is refused.
  Status directory = writeFileAtomic(dir.string(), "x");
  EXPECT_FALSE(directory.ok());
  EXPECT_NE(directory.message().find("is a directory"), std::string::npos) << directory.message();
  fs::remove_all(dir);
}

TEST(FileUtil, NewFilesGetTheUsersUmask) {
  fs::path dir = testing::scratchDirectory("fs_file_util_mode");
  mode_t old = ::umask(027);
  Status written = writeFileAtomic((dir / "m.txt").string(), "x");
  ::umask(old);
  ASSERT_TRUE(written.ok()) << written.message();
  struct stat st {};
  ASSERT_EQ(::stat((dir / "m.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  fs::remove_all(dir);
}

TEST(FileUtil, FailedMultiFileWriteRestoresOldFilesAndLeavesNoNewOnes) {
  fs::path dir = testing::scratchDirectory("fs_file_util_rollback");
  std::string first = (dir / "one.txt").string();
  ASSERT_TRUE(writeFileAtomic(first, "old").ok());
  // The second target is a non-empty directory, so its rename fails after the first one succeeded.
  fs::create_directories(dir / "two.txt" / "blocker");
  Status status =
      writeFilesAtomic({{first, "new"}, {(dir / "two.txt").string(), "new"}, {(dir / "three.txt").string(), "new"}});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("two.txt: error: cannot write"), std::string::npos) << status.message();
  EXPECT_EQ(*readFile(first), "old");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"one.txt", "two.txt"}));
  fs::remove_all(dir);
}

TEST(FileUtil, UnwritableDirectoryWritesNothing) {
  fs::path dir = testing::scratchDirectory("fs_file_util_unwritable");
  std::string regular = (dir / "file").string();
  ASSERT_TRUE(writeFileAtomic(regular, "x").ok());
  Status status = writeFileAtomic(regular + "/below.txt", "y");  // parent is a regular file
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), regular + "/below.txt: error: cannot write: Not a directory");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"file"});
  fs::remove_all(dir);
}

TEST(FileUtil, ReadErrorsNameThePath) {
  EXPECT_EQ(readFile("/nonexistent/x").message(), "/nonexistent/x: error: cannot read: No such file or directory");
  EXPECT_EQ(readFile("/tmp").message(), "/tmp: error: cannot read: is a directory");
}

// Only regular files are read: /dev/zero would fill memory and a FIFO with no writer would block forever.
TEST(FileUtil, SpecialFilesAreRefusedWithoutReadingOrBlocking) {
  EXPECT_EQ(readFile("/dev/zero").message(), "/dev/zero: error: cannot read: is a character device");
  fs::path dir = testing::scratchDirectory("fs_file_util_fifo");
  const std::string fifo = (dir / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(readFile(fifo).message(), fifo + ": error: cannot read: is a FIFO (named pipe)");  // returns: no writer
  StatusOr<int> opened = openRegularFile(fifo);
  EXPECT_FALSE(opened.ok());
  fs::remove_all(dir);
}

// A backup a killed run left behind (PATH.bak.PID.N) is never taken for this run's: a failure half-way still
// restores the file as it was.
TEST(FileUtil, StaleBackupsDoNotStopARollback) {
  fs::path dir = testing::scratchDirectory("fs_file_util_stale_backup");
  std::string first = (dir / "one.txt").string();
  ASSERT_TRUE(writeFileAtomic(first, "old").ok());
  for (int n = 0; n < 8; ++n) {
    ASSERT_TRUE(writeFileAtomic(first + ".bak." + std::to_string(::getpid()) + "." + std::to_string(n), "stale").ok());
    ASSERT_TRUE(writeFileAtomic(first + ".bak.fs", "stale").ok());
  }
  fs::create_directories(dir / "two.txt" / "blocker");
  Status status = writeFilesAtomic({{first, "new"}, {(dir / "two.txt").string(), "new"}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(*readFile(first), "old");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusionscope
