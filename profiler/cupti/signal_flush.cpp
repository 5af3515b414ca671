#include "profiler/cupti/signal_flush.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <thread>

namespace fusionscope::profiler::cupti {
namespace {

int g_pipe[2] = {-1, -1};
std::atomic<bool> g_installed{false};

// Async-signal-safe: only write(2). The watcher thread does the real work.
void onSignal(int signal) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t ignored = ::write(g_pipe[1], &byte, 1);
  errno = saved;
}

void watch(std::function<void(int)> flush) {
  unsigned char byte = 0;
  while (true) {
    ssize_t n = ::read(g_pipe[0], &byte, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    return;  // the pipe broke: nothing more can arrive
  }
  int signal = byte;
  flush(signal);
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
  ::kill(::getpid(), signal);  // the default action now ends the process as the signal would have
}

}  // namespace

int installSignalFlush(std::function<void(int)> flush) {
  if (g_installed.exchange(true)) return 0;
  if (::pipe2(g_pipe, O_CLOEXEC) != 0) return 0;
  int handled = 0;
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0) continue;
    bool isDefault = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    if (!isDefault) continue;  // the program handles or ignores it itself
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (::sigaction(signal, &action, nullptr) == 0) ++handled;
  }
  if (handled > 0) std::thread(watch, std::move(flush)).detach();
  return handled;
}

}  // namespace fusionscope::profiler::cupti
