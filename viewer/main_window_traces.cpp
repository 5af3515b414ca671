// MainWindow, part 2: traces and runs — wiring the TraceController and the RunController to the timeline dock,
// the progress bar and the status bar, and the kernel <-> graph link. Part 1 (main_window.cpp) has loading,
// stages, layout, selection and export; main_window_widgets.cpp builds the menus, toolbars and docks.
#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <algorithm>
#include <set>

#include "core/ir/hlo_computation.h"
#include "profiler/compare/trace_compare.h"
#include "profiler/compare/trace_stats.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_search.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/main_window.h"
#include "viewer/run_controller.h"
#include "viewer/time_attribution_panel.h"
#include "viewer/time_overlay.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"
#include "viewer/trace_controller.h"

namespace fusionscope::viewer {

// ---- Traces ----

void MainWindow::openTraceDialog(bool comparison) {
  const QString filter = QStringLiteral("Chrome traces (*.json *.json.gz *.gz);;All files (*)");
  if (!comparison) {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open Trace"), dialogDirectory(), filter);
    if (path.isEmpty()) return;
    rememberDialogDirectory(path);
    openTrace(path);
    return;
  }
  const QString before =
      QFileDialog::getOpenFileName(this, QStringLiteral("Trace BEFORE (e.g. fusion off)"), dialogDirectory(), filter);
  if (before.isEmpty()) return;
  rememberDialogDirectory(before);
  const QString after = QFileDialog::getOpenFileName(this, QStringLiteral("Trace AFTER (e.g. fusion on)"),
                                                     QFileInfo(before).absolutePath(), filter);
  if (!after.isEmpty()) openTraceComparison(before, after);
}

void MainWindow::openTrace(const QString& path) {
  startTraceLoad(path, QString());
}

void MainWindow::openTraceComparison(const QString& before, const QString& after) {
  startTraceLoad(before, after);
}

bool MainWindow::isLoadingTrace() const {
  return m_traces->isLoading();
}

void MainWindow::startTraceLoad(const QString& first, const QString& second) {
  // Import and model building run on a worker; the window stays responsive and keeps its current trace.
  if (!m_traces->load(first, second))
    showError(QStringLiteral("Busy"), QStringLiteral("A trace is still loading; try again when it is shown."));
}

void MainWindow::connectTraces() {
  connect(m_traces, &TraceController::started, this, [this](const QString& first) {
    statusBar()->showMessage(QStringLiteral("Loading %1…").arg(QFileInfo(first).fileName()));
  });
  connect(m_traces, &TraceController::failed, this, [this](const QString& error) {
    showError(QStringLiteral("Cannot open trace"), error);
    emit loadFailed(error);
  });
  connect(m_traces, &TraceController::loaded, this,
          [this](std::shared_ptr<const TimelineModel> first, const QString& firstName,
                 std::shared_ptr<const TimelineModel> second, const QString& secondName) {
            if (second) {
              const profiler::FusionMembership membership = fusionMembership();
              m_timeline->setComparison(first, firstName, second, secondName,
                                        membership.members.empty() ? nullptr : &membership);
            } else {
              m_timeline->setTrace(first, firstName);
            }
            m_timelineDock->show();
            if (m_timeAttributionDock->isHidden()) {
              m_timeAttributionDock->show();
              resizeDocks({m_timeAttributionDock}, {width() / 3}, Qt::Horizontal);
            }
            fitTimelineDock(document() != nullptr);
            applyTimeOverlay();
            statusBar()->showMessage(
                QStringLiteral("Trace %1: %2 events").arg(firstName).arg(first->trace().events.size()), 5000);
            emit traceLoaded();
          });
}

void MainWindow::setTimeOverlay(bool on) {
  m_actTimeOverlay->setChecked(on);
  applyTimeOverlay();
}

void MainWindow::setSourceLineOverlay(bool on) {
  m_actSourceLineOverlay->setChecked(on);
  applyTimeOverlay();
}

void MainWindow::updateTimeAttribution() {
  const auto& groups = m_timeline->view()->groups();
  const StageEntry* stage = currentEntry();
  // The trace the stage's kernels ran in: the only one, or the "after" trace of a comparison.
  m_timeAttribution->setData(groups.empty() ? nullptr : groups.back().model,
                             stage != nullptr ? stage->module : nullptr);
}

void MainWindow::highlightTimeRow(const std::vector<std::string>& operations, const std::vector<std::string>& kernels,
                                  const QString& key) {
  const GraphModel* graph = m_scene->graph();
  std::vector<int> nodes;
  if (graph != nullptr) {
    // The row's operations where they are drawn (inside expanded fusions), else the fusions that ran them.
    std::set<std::string> wanted(operations.begin(), operations.end());
    std::set<std::string> fusions(kernels.begin(), kernels.end());
    for (size_t i = 0; i < graph->nodes.size(); ++i) {
      const GraphNode& node = graph->nodes[i];
      if (node.kind == GraphNode::Kind::kStub) continue;
      if (wanted.count(node.name) != 0 || fusions.count(node.name) != 0) nodes.push_back(static_cast<int>(i));
    }
    for (const auto& [name, group] : graph->heldBy) {
      if (wanted.count(name) != 0 || fusions.count(name) != 0) nodes.push_back(group);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  }
  m_search->highlight(nodes);
  if (!nodes.empty()) m_view->centerOnRect(m_scene->nodeRect(nodes.front()));
  const int launches = m_timeline->highlightKernels(kernels);
  statusBar()->showMessage(QStringLiteral("%1: %2 operations, %3 nodes in this graph, %4 kernel launches highlighted")
                               .arg(key)
                               .arg(operations.size())
                               .arg(nodes.size())
                               .arg(launches),
                           8000);
}

void MainWindow::applyTimeOverlay() {
  updateTimeAttribution();
  const GraphModel* graph = m_scene->graph();
  const auto& groups = m_timeline->view()->groups();
  const bool bySource = m_actSourceLineOverlay->isChecked();
  if ((!m_actTimeOverlay->isChecked() && !bySource) || graph == nullptr || groups.empty()) {
    m_scene->setKernelTimes({}, {}, 0);
    m_view->setKernelTimeLegend(0, 0, 0);
    return;
  }
  // The trace the graph's kernels ran in: the only one, or the "after" trace of a comparison.
  KernelTimes times = bySource ? sourceLineTimes(*graph, m_timeAttribution->sourceLineTimes())
                               : kernelTimes(*graph, *groups.back().model);
  if (times.linked == 0) {
    m_scene->setKernelTimes({}, {}, 0);
    m_view->setKernelTimeLegend(0, 0, 0);
    statusBar()->showMessage(QStringLiteral("No kernel of the trace ran an instruction of this stage"), 5000);
    return;
  }
  double minNs = times.maxNs;
  for (const std::vector<double>* list : {&times.nodeNs, &times.clusterNs}) {
    for (double ns : *list) {
      if (ns > 0) minNs = std::min(minNs, ns);
    }
  }
  m_scene->setKernelTimes(std::move(times.nodeNs), std::move(times.clusterNs), times.maxNs);
  m_view->setKernelTimeLegend(minNs, times.maxNs, times.linked,
                              bySource ? QStringLiteral("Source-line time") : QStringLiteral("Kernel time"));
}

profiler::FusionMembership MainWindow::fusionMembership() const {
  // The open module's fusions say which unfused kernels each fused one replaced (later stages win).
  profiler::FusionMembership membership;
  if (const auto open = document()) {
    for (const StageEntry& stage : open->stages)
      for (const core::FusionSummary& fusion : stage.fusions) membership.members[fusion.name] = fusion.members;
  }
  return membership;
}

// ---- Runs ----

void MainWindow::connectRuns() {
  connect(m_runs, &RunController::refused, this, &MainWindow::showError);
  connect(m_runs, &RunController::stepStarted, this, [this](int step, int count, const QString& progress) {
    m_progressBar->setRange(0, count);
    m_progressBar->setValue(step);
    m_progressBar->setFormat(progress);
    m_progressBar->show();
    m_cancelButton->show();
    statusBar()->showMessage(
        QStringLiteral("%1: %2…").arg(QFileInfo(QString::fromStdString(document()->path)).fileName(), progress));
  });
  connect(m_runs, &RunController::finished, this, [this](const QString& fusionOff, const QString& fusionOn) {
    hideProgress();
    openTraceComparison(fusionOff, fusionOn);
  });
  connect(m_runs, &RunController::failed, this, [this](const QString& message) {
    // The window keeps what it shows.
    hideProgress();
    showError(QStringLiteral("Run failed"), message);
    emit loadFailed(message);
  });
}

QString MainWindow::cliPath() const {
  return RunController::cliPath();
}

QString MainWindow::gpuRunnerPath() const {
  return RunController::gpuRunnerPath();
}

void MainWindow::updateGpuRunAction() {
  if (m_actRunGpu == nullptr) return;
  const QString runner = gpuRunnerPath();
  m_actRunGpu->setEnabled(!runner.isEmpty());
  m_actRunGpu->setToolTip(
      runner.isEmpty()
          ? QStringLiteral("fusionscope-gpurun was not found next to fusionscope or fusionscope-cli, in the build "
                           "tree or on PATH (it is built with the CUDA toolkit; or set FUSIONSCOPE_GPURUN)")
          : QStringLiteral("Compile the module for nvptx with fusion off and on and run both bundles with %1")
                .arg(runner));
}

bool MainWindow::isRunning() const {
  return m_runs->isRunning();
}

bool MainWindow::runFusionComparison() {
  return m_runs->runFusionComparison(document().get());
}

bool MainWindow::runGpuFusionComparison() {
  return m_runs->runGpuFusionComparison(document().get());
}

void MainWindow::linkToTimeline(const std::string& name, const core::HloInstruction* instruction) {
  if (m_timeline->view()->groups().empty()) return;
  if (instruction != nullptr) showKernelTiming(name, *instruction);
  // A selection the timeline itself asked for keeps the timeline's own highlights (e.g. replaced kernels).
  if (name == m_linkedFromTimeline) {
    m_linkedFromTimeline.clear();
    return;
  }
  m_linkedFromTimeline.clear();
  const int launches = m_timeline->highlightKernel(name);
  if (launches > 0)
    statusBar()->showMessage(QStringLiteral("%1: %2 kernel launches highlighted in the timeline")
                                 .arg(QString::fromStdString(name))
                                 .arg(launches),
                             5000);
}

void MainWindow::showKernelTiming(const std::string& name, const core::HloInstruction& instruction) {
  // Bytes the kernel must move at least: its operands read once, its result written once.
  int64_t read = 0;
  for (const core::HloInstruction* operand : instruction.operands()) read += operand->shape().byteSize();
  const int64_t written = instruction.shape().byteSize();
  QString html = QStringLiteral("<h4>Kernel launches in the timeline</h4>");
  bool any = false;
  for (const TimelineView::Group& group : m_timeline->view()->groups()) {
    const std::vector<uint32_t> launches = group.model->eventsOfInstruction(name);
    if (launches.empty()) continue;
    any = true;
    int64_t total = 0;
    for (uint32_t e : launches) total += std::max<int64_t>(0, group.model->trace().events[e].durNs);
    const double mean = static_cast<double>(total) / static_cast<double>(launches.size());
    html += QStringLiteral(
                "<p>%1%2 launches, %3 in total, %4 mean; reads %5, writes %6: <b>%7 GB/s</b> "
                "achieved</p>")
                .arg(group.label.isEmpty() ? QString() : group.label.toHtmlEscaped() + QStringLiteral(": "))
                .arg(launches.size())
                .arg(formatDuration(static_cast<double>(total)), formatDuration(mean))
                .arg(QString::fromStdString(profiler::formatBytes(read)),
                     QString::fromStdString(profiler::formatBytes(written)))
                .arg(mean > 0 ? static_cast<double>(read + written) / mean : 0.0, 0, 'f', 2);
  }
  if (!any)
    html += QStringLiteral("<p>No kernel of %1 in the trace.</p>").arg(QString::fromStdString(name).toHtmlEscaped());
  m_inspector->appendSection(html);
}

bool MainWindow::selectKernel(const QString& kernel) {
  const auto open = document();
  if (!open || open->stages.empty()) return false;
  const int last = static_cast<int>(open->stages.size()) - 1;
  const StageEntry& stage = open->stages[static_cast<size_t>(last)];
  if (!stage.module || stage.module->entry() == nullptr) return false;
  const std::string wanted = profiler::normalizeKernelName(kernel.toStdString());
  const core::HloComputation* entry = stage.module->entry();
  const core::HloInstruction* match = nullptr;
  for (const auto& inst : entry->instructions()) {
    if (inst != nullptr && profiler::normalizeKernelName(inst->name()) == wanted) {
      match = inst.get();
      break;
    }
  }
  if (match == nullptr) return false;
  m_linkedFromTimeline = match->name();
  if (m_current == last) {
    selectInstruction(QString::fromStdString(entry->name()), QString::fromStdString(match->name()));
  } else {
    // showGraph re-selects it once the last stage is laid out, and brings it into view.
    m_selection.setName(match->name(), entry->name());
    m_revealSelection = true;
    setCurrentStage(last);
  }
  return true;
}

}  // namespace fusionscope::viewer
