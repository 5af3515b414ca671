// MainWindow, part 2: traces and runs — opening and comparing Chrome traces below the graph, running the open
// module with fusion off and on (CPU through fusionscope-cli, GPU through fusionscope-gpurun), and the kernel <->
// graph link. Part 1 (main_window.cpp) has the window, loading, stages, layout, selection and export.
#include "viewer/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyleFactory>
#include <QSvgGenerator>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>
#include <ctime>

#include <QtConcurrent/QtConcurrentRun>

#include "core/ir/hlo_computation.h"
#include "profiler/compare/trace_compare.h"
#include "profiler/compare/trace_stats.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/stage_list_model.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"

namespace fusionscope::viewer {

// ---- Traces ----

void MainWindow::openTraceDialog(bool comparison) {
  const QString filter = QStringLiteral("Chrome traces (*.json *.json.gz *.gz);;All files (*)");
  if (!comparison) {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open Trace"), QString(), filter);
    if (!path.isEmpty()) openTrace(path);
    return;
  }
  const QString before =
      QFileDialog::getOpenFileName(this, QStringLiteral("Trace BEFORE (e.g. fusion off)"), QString(), filter);
  if (before.isEmpty()) return;
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
  return m_traceWatcher->isRunning();
}

void MainWindow::startTraceLoad(const QString& first, const QString& second) {
  if (isLoadingTrace()) {
    showError(QStringLiteral("Busy"), QStringLiteral("A trace is still loading; try again when it is shown."));
    return;
  }
  m_tracePaths[0] = first;
  m_tracePaths[1] = second;
  statusBar()->showMessage(QStringLiteral("Loading %1…").arg(QFileInfo(first).fileName()));
  const std::string a = first.toStdString();
  const std::string b = second.toStdString();
  // Import and model building run on a worker; the window stays responsive and keeps its current trace.
  m_traceWatcher->setFuture(QtConcurrent::run([a, b]() {
    TraceOutcome outcome;
    StatusOr<std::shared_ptr<const TimelineModel>> first = loadTimeline(a);
    if (!first.ok()) {
      outcome.error = QString::fromStdString(first.message());
      return outcome;
    }
    outcome.first = *first;
    if (!b.empty()) {
      StatusOr<std::shared_ptr<const TimelineModel>> second = loadTimeline(b);
      if (!second.ok()) {
        outcome.error = QString::fromStdString(second.message());
        outcome.first.reset();
        return outcome;
      }
      outcome.second = *second;
    }
    return outcome;
  }));
}

void MainWindow::onTraceFinished() {
  TraceOutcome outcome = m_traceWatcher->result();
  if (!outcome.error.isEmpty()) {
    showError(QStringLiteral("Cannot open trace"), outcome.error);
    emit loadFailed(outcome.error);
    return;
  }
  const QString firstName = QFileInfo(m_tracePaths[0]).fileName();
  if (outcome.second) {
    m_comparisonTraces = {outcome.first, outcome.second};
    m_comparisonNames = {firstName, QFileInfo(m_tracePaths[1]).fileName()};
    showComparison();
  } else {
    m_comparisonTraces = {};
    m_timeline->setTrace(outcome.first, firstName);
  }
  m_timelineDock->show();
  statusBar()->showMessage(
      QStringLiteral("Trace %1: %2 events").arg(firstName).arg(outcome.first->trace().events.size()), 5000);
  emit traceLoaded();
}

void MainWindow::showComparison() {
  // The open module's fusions say which unfused kernels each fused one replaced (later stages win).
  profiler::FusionMembership membership;
  if (m_document) {
    for (const StageEntry& stage : m_document->stages)
      for (const core::FusionSummary& fusion : stage.fusions) membership.members[fusion.name] = fusion.members;
  }
  m_timeline->setComparison(m_comparisonTraces[0], m_comparisonNames[0], m_comparisonTraces[1], m_comparisonNames[1],
                            membership.members.empty() ? nullptr : &membership);
}

QString MainWindow::cliPath() const {
  QString cli = qEnvironmentVariable("FUSIONSCOPE_CLI");
  if (!cli.isEmpty()) return QFileInfo(cli).isExecutable() ? cli : QString();
  const QString dir = QCoreApplication::applicationDirPath();
  for (const QString& candidate :
       {dir + QStringLiteral("/fusionscope-cli"), dir + QStringLiteral("/../cli/fusionscope-cli")})
    if (QFileInfo(candidate).isExecutable()) return candidate;
  return QStandardPaths::findExecutable(QStringLiteral("fusionscope-cli"));
}

QString MainWindow::gpuRunnerPath() const {
  const QString name = QStringLiteral("fusionscope-gpurun");
  QString runner = qEnvironmentVariable("FUSIONSCOPE_GPURUN");
  if (!runner.isEmpty()) return QFileInfo(runner).isExecutable() ? runner : QString();
  // Installed: next to this program or the CLI. Build tree: app/gui/ and app/cli/ beside profiler/gpu/.
  QStringList dirs = {QCoreApplication::applicationDirPath()};
  const QString cli = cliPath();
  if (!cli.isEmpty()) dirs << QFileInfo(cli).absolutePath();
  for (const QString& dir : dirs)
    for (const QString& candidate :
         {dir + QLatin1Char('/') + name, dir + QStringLiteral("/../../profiler/gpu/") + name})
      if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).absoluteFilePath();
  return QStandardPaths::findExecutable(name);
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
  return m_runProcess != nullptr;
}

bool MainWindow::prepareRun(const QString& what) {
  if (m_runProcess != nullptr) {
    showError(QStringLiteral("Busy"), QStringLiteral("A run is already in progress."));
    return false;
  }
  if (!m_document || m_document->kind != Document::Kind::kHloModule) {
    showError(QStringLiteral("Cannot run"),
              QStringLiteral("Open an HLO module first: %1 executes the module that is open, with fusion off and on.")
                  .arg(what));
    return false;
  }
  m_runDir = std::make_unique<QTemporaryDir>();
  if (!m_runDir->isValid()) {
    showError(QStringLiteral("Cannot run"), QStringLiteral("No temporary directory: %1").arg(m_runDir->errorString()));
    m_runDir.reset();
    return false;
  }
  const QString stem = QFileInfo(QString::fromStdString(m_document->path)).completeBaseName();
  m_runTraces = {m_runDir->filePath(stem + QStringLiteral("_fusion_off.json")),
                 m_runDir->filePath(stem + QStringLiteral("_fusion_on.json"))};
  m_runSteps.clear();
  m_runStep = 0;
  return true;
}

QString MainWindow::runPreset() const {
  // The CLI's presets are gpu, cpu and none; a custom pass list runs with the CPU preset.
  QString preset = QString::fromStdString(m_document->pipeline);
  if (preset != QStringLiteral("gpu") && preset != QStringLiteral("none")) preset = QStringLiteral("cpu");
  return preset;
}

bool MainWindow::runFusionComparison() {
  if (!prepareRun(QStringLiteral("Run"))) return false;
  const QString cli = cliPath();
  if (cli.isEmpty()) {
    m_runDir.reset();
    showError(
        QStringLiteral("Cannot run"),
        QStringLiteral("fusionscope-cli was not found (set FUSIONSCOPE_CLI, or install it next to fusionscope)."));
    return false;
  }
  const QString module = QString::fromStdString(m_document->path);
  for (int i = 0; i < 2; ++i) {
    const QString fusion = i == 0 ? QStringLiteral("off") : QStringLiteral("on");
    m_runSteps.push_back(
        {cli,
         {QStringLiteral("run"), module, QStringLiteral("--pipeline"), runPreset(), QStringLiteral("--fusion"), fusion,
          QStringLiteral("--iterations"), QStringLiteral("3"), QStringLiteral("--trace"), m_runTraces[i]},
         QStringLiteral("fusionscope-cli run (fusion %1)").arg(fusion),
         QStringLiteral("run, fusion %1").arg(fusion)});
  }
  startRunSteps();
  return true;
}

bool MainWindow::runGpuFusionComparison() {
  if (!prepareRun(QStringLiteral("Run on GPU"))) return false;
  const QString cli = cliPath();
  const QString runner = gpuRunnerPath();
  if (cli.isEmpty() || runner.isEmpty()) {
    m_runDir.reset();
    showError(QStringLiteral("Cannot run on the GPU"),
              cli.isEmpty() ? QStringLiteral("fusionscope-cli was not found (set FUSIONSCOPE_CLI, or install it next "
                                             "to fusionscope).")
                            : QStringLiteral("fusionscope-gpurun was not found (it is built with the CUDA toolkit; "
                                             "set FUSIONSCOPE_GPURUN, or install it next to fusionscope)."));
    return false;
  }
  const QString module = QString::fromStdString(m_document->path);
  for (int i = 0; i < 2; ++i) {
    const QString fusion = i == 0 ? QStringLiteral("off") : QStringLiteral("on");
    const QString bundle = m_runDir->filePath(QStringLiteral("bundle_fusion_") + fusion);
    m_runSteps.push_back(
        {cli,
         {QStringLiteral("compile"), module, QStringLiteral("--target=nvptx"), QStringLiteral("--pipeline"),
          runPreset(), QStringLiteral("--fusion"), fusion, QStringLiteral("-o"), bundle},
         QStringLiteral("fusionscope-cli compile --target=nvptx (fusion %1)").arg(fusion),
         QStringLiteral("compile, fusion %1").arg(fusion)});
    m_runSteps.push_back({runner,
                          {bundle, QStringLiteral("--trace"), m_runTraces[i]},
                          QStringLiteral("fusionscope-gpurun (fusion %1)").arg(fusion),
                          QStringLiteral("GPU run, fusion %1").arg(fusion)});
  }
  startRunSteps();
  return true;
}

void MainWindow::startRunSteps() {
  m_runProcess = new QProcess(this);
  m_runProcess->setProcessChannelMode(QProcess::MergedChannels);
  connect(m_runProcess, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;  // the others end in finished()
    failRunStep(QStringLiteral("%1 could not be started: %2")
                    .arg(m_runSteps[static_cast<size_t>(m_runStep)].description, m_runProcess->errorString()));
  });
  connect(m_runProcess, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
    const QString output = QString::fromUtf8(m_runProcess->readAll()).trimmed();
    if (status != QProcess::NormalExit || exitCode != 0) {
      const QString how = status != QProcess::NormalExit ? QStringLiteral("crashed")
                                                         : QStringLiteral("exited with code %1").arg(exitCode);
      failRunStep(QStringLiteral("%1 %2:\n%3")
                      .arg(m_runSteps[static_cast<size_t>(m_runStep)].description, how, output.right(4000)));
      return;
    }
    ++m_runStep;
    runNextFusionStep();
  });
  m_progressBar->setRange(0, static_cast<int>(m_runSteps.size()));
  m_progressBar->setValue(0);
  m_progressBar->show();
  m_cancelButton->show();
  runNextFusionStep();
}

void MainWindow::failRunStep(const QString& message) {
  // The window keeps what it shows: nothing is opened, the temporary directory goes away.
  m_runProcess->disconnect(this);
  m_runProcess->deleteLater();
  m_runProcess = nullptr;
  m_runDir.reset();
  m_progressBar->hide();
  m_cancelButton->hide();
  showError(QStringLiteral("Run failed"), message);
  emit loadFailed(message);
}

void MainWindow::runNextFusionStep() {
  if (m_runStep >= static_cast<int>(m_runSteps.size())) {
    m_runProcess->deleteLater();
    m_runProcess = nullptr;
    m_progressBar->hide();
    m_cancelButton->hide();
    openTraceComparison(m_runTraces[0], m_runTraces[1]);
    return;
  }
  const RunStep& step = m_runSteps[static_cast<size_t>(m_runStep)];
  m_progressBar->setValue(m_runStep);
  m_progressBar->setFormat(step.progress);
  statusBar()->showMessage(
      QStringLiteral("%1: %2…").arg(QFileInfo(QString::fromStdString(m_document->path)).fileName(), step.progress));
  m_runProcess->setProgram(step.program);
  m_runProcess->setArguments(step.arguments);
  m_runProcess->start();
}

bool MainWindow::selectKernel(const QString& kernel) {
  if (!m_document || m_document->stages.empty()) return false;
  const int last = static_cast<int>(m_document->stages.size()) - 1;
  const StageEntry& stage = m_document->stages[static_cast<size_t>(last)];
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
    // showGraph re-selects m_selectedName once the last stage is laid out.
    m_selectedName = match->name();
    m_selectedComputation = entry->name();
    setCurrentStage(last);
  }
  return true;
}

}  // namespace fusionscope::viewer
