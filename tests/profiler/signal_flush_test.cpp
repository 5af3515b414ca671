// signal_flush.h in a forked child: a default-action SIGTERM/SIGINT runs the flush once and still ends the process
// with that signal; a signal the program handles itself is left alone.
#include "profiler/cupti/signal_flush.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace fusionscope::profiler::cupti {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Runs `body` in a child process and returns its wait status.
template <typename Body>
int inChild(Body body) {
  pid_t child = ::fork();
  if (child == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

class SignalFlushTest : public ::testing::TestWithParam<int> {};

TEST_P(SignalFlushTest, DefaultActionSignalFlushesOnceAndStillEndsTheProcess) {
  int signal = GetParam();
  fs::path marker =
      fs::temp_directory_path() / ("fs_signal_flush_" + std::to_string(::getpid()) + "_" + std::to_string(signal));
  fs::remove(marker);
  int status = inChild([&] {
    ::signal(signal, SIG_DFL);
    int handled = installSignalFlush(
        [&](int received) { std::ofstream(marker, std::ios::app) << "flushed " << received << "\n"; });
    if (handled != 2) ::_exit(10 + handled);
    ::kill(::getpid(), signal);
    ::kill(::getpid(), signal);                     // a second signal before the first is handled must not flush twice
    for (int i = 0; i < 500; ++i) ::usleep(10000);  // the watcher kills us long before this ends
    ::_exit(20);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), signal);
  EXPECT_EQ(readAll(marker), "flushed " + std::to_string(signal) + "\n");
  fs::remove(marker);
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalFlushTest, ::testing::Values(SIGINT, SIGTERM));

TEST(SignalFlushHandledTest, SignalsTheProgramHandlesOrIgnoresAreLeftAlone) {
  int status = inChild([] {
    ::signal(SIGINT, [](int) { ::_exit(42); });  // the program's own handler
    ::signal(SIGTERM, SIG_IGN);
    int handled = installSignalFlush([](int) { ::_exit(43); });
    if (handled != 0) ::_exit(10 + handled);
    ::kill(::getpid(), SIGTERM);  // ignored
    ::kill(::getpid(), SIGINT);   // the program's handler exits 42
    for (int i = 0; i < 500; ++i) ::usleep(10000);
    ::_exit(20);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

}  // namespace
}  // namespace fusionscope::profiler::cupti
