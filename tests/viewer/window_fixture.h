#pragma once

// The MainWindow the viewer's window tests start from, and the waits they share: offscreen, settings in Qt's
// test location and cleared, error dialogs off (failures come as loadFailed signals), 1400x900 and shown.
#include <QCoreApplication>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QString>
#include <QTest>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "viewer/main_window.h"

namespace fusionscope::viewer::testing {

// How much longer the waits are in a sanitizer build: Graphviz runs 5-20x slower under ASan, and CI runs the
// suite two tests at a time on two cores, so mobilenet's layouts take minutes there (docs/RELIABILITY.md).
#ifdef __SANITIZE_ADDRESS__
constexpr int kSlowdown = 5;
#else
constexpr int kSlowdown = 1;
#endif

// QTest::qWaitFor with the timeout kSlowdown times longer in a sanitizer build: for waits on the window's workers.
template <typename Predicate>
bool waitFor(Predicate predicate, int timeoutMs) {
  return QTest::qWaitFor(predicate, timeoutMs * kSlowdown);
}

// Waits until the window has nothing running, then one more event turn.
inline bool waitIdle(MainWindow& window, int timeoutMs = 60000) {
  bool idle = waitFor([&] { return !window.isBusy(); }, timeoutMs);
  QCoreApplication::processEvents();
  return idle;
}

// Opens an HLO module; true once it loaded (not failed) and the window is idle.
inline bool openAndWait(MainWindow& window, const std::string& path) {
  QSignalSpy loaded(&window, &MainWindow::documentLoaded);
  QSignalSpy failed(&window, &MainWindow::loadFailed);
  window.openPath(QString::fromStdString(path));
  bool done = waitFor([&] { return loaded.count() + failed.count() > 0; }, 120000);
  return done && loaded.count() == 1 && waitIdle(window);
}

// Runs `open` (opening a trace or a trace comparison); true once one trace load finished and did not fail.
inline bool waitForTrace(MainWindow& window, const std::function<void()>& open) {
  QSignalSpy loaded(&window, &MainWindow::traceLoaded);
  QSignalSpy failed(&window, &MainWindow::loadFailed);
  open();
  return waitFor([&] { return loaded.count() + failed.count() > 0; }, 120000) && loaded.count() == 1;
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
