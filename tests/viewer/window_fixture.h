#pragma once

// The MainWindow the viewer's window tests start from, and the waits they share: offscreen, settings in Qt's
// test location and cleared, error dialogs off (failures come as loadFailed signals), 1400x900 and shown.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QString>
#include <QTest>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "viewer/main_window.h"

namespace fusionscope::viewer::testing {

// Waits follow progress, never the clock (docs/RELIABILITY.md, "Waits"): a wait ends when its condition holds and
// fails only when the work it waits on has stopped moving: this process (the window's workers and Graphviz run in
// it) and its children (fusionscope-cli started by a test or by the window) used less than kStallCpuMs of CPU
// time in the last kStallWindowMs of wall time. A machine busy with other processes slows the work and the wait
// alike; a deadlock or a lost signal still fails, in minutes, with the condition false. A layout that became slow
// is for bench/ to find, not for a test to time.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kSanitized = true;  // some tests do less under ASan (Graphviz runs 5-20x slower there)
#else
constexpr bool kSanitized = false;
#endif
constexpr qint64 kStallWindowMs = 120000;
constexpr double kStallCpuMs = 50;

// CPU time used so far by this process and by its children that are still running, in milliseconds.
inline double cpuMillisecondsWithChildren() {
  auto ticksOf = [](const std::string& statPath, long* parent) -> double {
    // One line. getline, not an istreambuf_iterator: a process that exits between the open and the read makes the
    // read fail (ESRCH), which getline turns into a failed stream and the iterator into an exception.
    std::ifstream in(statPath);
    std::string stat;
    std::getline(in, stat);
    size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) return 0;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    long ppid = 0;
    fields >> state >> ppid;
    std::string skip;
    for (int i = 0; i < 9; ++i) fields >> skip;  // pgrp .. cmajflt: fields 5-13
    double utime = 0, stime = 0;
    fields >> utime >> stime;
    if (parent) *parent = ppid;
    return utime + stime;
  };
  const double msPerTick = 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  timespec self{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &self);
  double total = static_cast<double>(self.tv_sec) * 1e3 + static_cast<double>(self.tv_nsec) / 1e6;
  const long me = static_cast<long>(::getpid());
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc", error), end; !error && it != end; it.increment(error)) {
    const std::filesystem::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    long parent = 0;
    double ticks = ticksOf(entry.path().string() + "/stat", &parent);
    if (parent == me) total += ticks * msPerTick;
  }
  return total;
}

template <typename Predicate>
bool waitFor(Predicate predicate) {
  QElapsedTimer sinceProgress;
  sinceProgress.start();
  double cpuAtMark = cpuMillisecondsWithChildren();
  for (;;) {
    if (predicate()) return true;
    QTest::qWait(10);
    if (sinceProgress.elapsed() < kStallWindowMs / 8) continue;
    double cpu = cpuMillisecondsWithChildren();
    if (cpu - cpuAtMark >= kStallCpuMs) {  // moving: start a new window
      cpuAtMark = cpu;
      sinceProgress.restart();
    } else if (sinceProgress.elapsed() >= kStallWindowMs) {
      return predicate();
    }
  }
}

// Waits for a process the test started to finish (progress as for waitFor).
inline bool waitForProcess(QProcess& process) {
  return waitFor([&] { return process.state() == QProcess::NotRunning; });
}

// Waits until the window has nothing running, then one more event turn.
inline bool waitIdle(MainWindow& window) {
  bool idle = waitFor([&] { return !window.isBusy(); });
  QCoreApplication::processEvents();
  return idle;
}

// Opens an HLO module; true once it loaded (not failed) and the window is idle.
inline bool openAndWait(MainWindow& window, const std::string& path) {
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  QSignalSpy failed(&window, &MainWindow::loadFailed);
  window.openPath(QString::fromStdString(path));
  bool done = waitFor([&] { return loaded.count() + failed.count() > 0; });
  return done && loaded.count() == 1 && waitIdle(window);
}

// Runs `open` (opening a trace or a trace comparison); true once one trace load finished and did not fail.
inline bool waitForTrace(MainWindow& window, const std::function<void()>& open) {
  QSignalSpy loaded(&window, &MainWindow::traceLoaded);
  QSignalSpy failed(&window, &MainWindow::loadFailed);
  open();
  return waitFor([&] { return loaded.count() + failed.count() > 0; }) && loaded.count() == 1;
}

// Opens a trace file; true once it loaded (not failed).
inline bool openTraceAndWait(MainWindow& window, const QString& path) {
  return waitForTrace(window, [&] { window.openTrace(path); });
}

// Names of the fusions in the entry of the open document's last stage, in instruction order.
inline std::vector<std::string> lastStageFusions(const MainWindow& window) {
  std::vector<std::string> fusions;
  const auto document = window.document();
  if (!document || document->stages.empty() || !document->stages.back().module) return fusions;
  for (const auto& inst : document->stages.back().module->entry()->instructions()) {
    if (inst->opcode() == core::HloOpcode::kFusion) fusions.push_back(inst->name());
  }
  return fusions;
}

class MainWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
    window = std::make_unique<MainWindow>();
    window->setErrorDialogsEnabled(false);
    window->resize(1400, 900);
    window->show();
  }
  std::unique_ptr<MainWindow> window;
};

}  // namespace fusionscope::viewer::testing
