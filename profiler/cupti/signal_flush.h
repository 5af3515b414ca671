#pragma once

// Flushing a trace when the traced program is interrupted. A CUDA program stopped with Ctrl-C or `kill` never runs
// its atexit handlers, so the collector's records would be lost; installSignalFlush() catches SIGINT and SIGTERM
// where the program left them at their default action, runs `flush` on a watcher thread (a signal handler may not
// take locks or allocate, CUPTI's flush does both), then restores the default action and raises the signal again,
// so the program still ends the way it would have. Signals the program handles itself, or ignores, are left alone:
// such a program exits normally and the atexit flush runs.
#include <functional>

namespace fusionscope::profiler::cupti {

// Installs the handlers once per process; `flush` receives the signal number and runs at most once. Returns the
// number of signals now handled (0, 1 or 2).
int installSignalFlush(std::function<void(int)> flush);

}  // namespace fusionscope::profiler::cupti
