#include "viewer/run_controller.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "viewer/document.h"

namespace fusionscope::viewer {

RunController::RunController(QObject* parent) : QObject(parent) {}

RunController::~RunController() = default;

QString RunController::cliPath() {
  QString cli = qEnvironmentVariable("FUSIONSCOPE_CLI");
  if (!cli.isEmpty()) return QFileInfo(cli).isExecutable() ? cli : QString();
  const QString dir = QCoreApplication::applicationDirPath();
  for (const QString& candidate :
       {dir + QStringLiteral("/fusionscope-cli"), dir + QStringLiteral("/../cli/fusionscope-cli")})
    if (QFileInfo(candidate).isExecutable()) return candidate;
  return QStandardPaths::findExecutable(QStringLiteral("fusionscope-cli"));
}

QString RunController::gpuRunnerPath() {
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

bool RunController::prepare(const Document* document, const QString& what) {
  if (m_process != nullptr) {
    emit refused(QStringLiteral("Busy"), QStringLiteral("A run is already in progress."));
    return false;
  }
  if (document == nullptr || document->kind != Document::Kind::kHloModule) {
    emit refused(
        QStringLiteral("Cannot run"),
        QStringLiteral("Open an HLO module first: %1 executes the module that is open, with fusion off and on.")
            .arg(what));
    return false;
  }
  m_dir = std::make_unique<QTemporaryDir>();
  if (!m_dir->isValid()) {
    const QString error = m_dir->errorString();
    m_dir.reset();
    emit refused(QStringLiteral("Cannot run"), QStringLiteral("No temporary directory: %1").arg(error));
    return false;
  }
  m_module = QString::fromStdString(document->path);
  // The CLI's presets are gpu, cpu and none; a custom pass list runs with the CPU preset.
  m_preset = QString::fromStdString(document->pipeline);
  if (m_preset != QStringLiteral("gpu") && m_preset != QStringLiteral("none")) m_preset = QStringLiteral("cpu");
  const QString stem = QFileInfo(m_module).completeBaseName();
  m_traces = {m_dir->filePath(stem + QStringLiteral("_fusion_off.json")),
              m_dir->filePath(stem + QStringLiteral("_fusion_on.json"))};
  m_steps.clear();
  m_step = 0;
  return true;
}

bool RunController::runFusionComparison(const Document* document) {
  if (!prepare(document, QStringLiteral("Run"))) return false;
  const QString cli = cliPath();
  if (cli.isEmpty()) {
    m_dir.reset();
    emit refused(
        QStringLiteral("Cannot run"),
        QStringLiteral("fusionscope-cli was not found (set FUSIONSCOPE_CLI, or install it next to fusionscope)."));
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    const QString fusion = i == 0 ? QStringLiteral("off") : QStringLiteral("on");
    m_steps.push_back(
        {cli,
         {QStringLiteral("run"), m_module, QStringLiteral("--pipeline"), m_preset, QStringLiteral("--fusion"), fusion,
          QStringLiteral("--iterations"), QString::number(kRunIterations), QStringLiteral("--trace"), m_traces[i]},
         QStringLiteral("fusionscope-cli run (fusion %1)").arg(fusion),
         QStringLiteral("run, fusion %1").arg(fusion)});
  }
  startSteps();
  return true;
}

bool RunController::runGpuFusionComparison(const Document* document) {
  if (!prepare(document, QStringLiteral("Run on GPU"))) return false;
  const QString cli = cliPath();
  const QString runner = gpuRunnerPath();
  if (cli.isEmpty() || runner.isEmpty()) {
    m_dir.reset();
    emit refused(QStringLiteral("Cannot run on the GPU"),
                 cli.isEmpty() ? QStringLiteral("fusionscope-cli was not found (set FUSIONSCOPE_CLI, or install it "
                                                "next to fusionscope).")
                               : QStringLiteral("fusionscope-gpurun was not found (it is built with the CUDA toolkit; "
                                                "set FUSIONSCOPE_GPURUN, or install it next to fusionscope)."));
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    const QString fusion = i == 0 ? QStringLiteral("off") : QStringLiteral("on");
    const QString bundle = m_dir->filePath(QStringLiteral("bundle_fusion_") + fusion);
    m_steps.push_back(
        {cli,
         {QStringLiteral("compile"), m_module, QStringLiteral("--target=nvptx"), QStringLiteral("--pipeline"), m_preset,
          QStringLiteral("--fusion"), fusion, QStringLiteral("-o"), bundle},
         QStringLiteral("fusionscope-cli compile --target=nvptx (fusion %1)").arg(fusion),
         QStringLiteral("compile, fusion %1").arg(fusion)});
    m_steps.push_back({runner,
                       {bundle, QStringLiteral("--trace"), m_traces[i]},
                       QStringLiteral("fusionscope-gpurun (fusion %1)").arg(fusion),
                       QStringLiteral("GPU run, fusion %1").arg(fusion)});
  }
  startSteps();
  return true;
}

void RunController::startSteps() {
  m_process = new QProcess(this);
  m_process->setProcessChannelMode(QProcess::MergedChannels);
  connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;  // the others end in finished()
    failStep(QStringLiteral("%1 could not be started: %2")
                 .arg(m_steps[static_cast<size_t>(m_step)].description, m_process->errorString()));
  });
  connect(m_process, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
    const QString output = QString::fromUtf8(m_process->readAll()).trimmed();
    if (status != QProcess::NormalExit || exitCode != 0) {
      const QString how = status != QProcess::NormalExit ? QStringLiteral("crashed")
                                                         : QStringLiteral("exited with code %1").arg(exitCode);
      failStep(
          QStringLiteral("%1 %2:\n%3").arg(m_steps[static_cast<size_t>(m_step)].description, how, output.right(4000)));
      return;
    }
    ++m_step;
    runNextStep();
  });
  runNextStep();
}

void RunController::failStep(const QString& message) {
  // Nothing is opened, the temporary directory goes away.
  m_process->disconnect(this);
  m_process->deleteLater();
  m_process = nullptr;
  m_dir.reset();
  emit failed(message);
}

void RunController::runNextStep() {
  if (m_step >= static_cast<int>(m_steps.size())) {
    m_process->deleteLater();
    m_process = nullptr;
    emit finished(m_traces[0], m_traces[1]);
    return;
  }
  const Step& step = m_steps[static_cast<size_t>(m_step)];
  emit stepStarted(m_step, static_cast<int>(m_steps.size()), step.progress);
  m_process->setProgram(step.program);
  m_process->setArguments(step.arguments);
  m_process->start();
}

void RunController::cancel() {
  if (m_process == nullptr) return;
  m_process->disconnect(this);
  m_process->kill();
  m_process->waitForFinished(3000);
  m_process->deleteLater();
  m_process = nullptr;
}

}  // namespace fusionscope::viewer
