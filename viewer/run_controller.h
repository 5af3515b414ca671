#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

class QProcess;
class QTemporaryDir;

namespace fusionscope::viewer {

struct Document;

// Runs the open HLO module with fusion off and on in child processes and hands back the two traces: on the CPU
// through `fusionscope-cli run --trace`, on the GPU through `fusionscope-cli compile --target=nvptx` and
// `fusionscope-gpurun BUNDLE --trace`. The LLVM JIT and the CUDA driver stay out of the GUI process
// (docs/ARCHITECTURE.md). Owns the QProcess of the step running, the list of steps and the temporary directory
// the bundles and traces go to (kept until the next run, so the traces can still be read). One run at a time;
// everything it reports comes by signal.
// Iterations of each CPU run: the comparison shows the median and range of their per-iteration ratios.
inline constexpr int kRunIterations = 5;

class RunController : public QObject {
  Q_OBJECT

 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  // Starts the CPU run of `document` (stepStarted ... then finished or failed). Returns false, with
  // refused(title, message) emitted first, when it cannot start (a run is in progress, no HLO module is open,
  // the CLI is not found, no temporary directory).
  bool runFusionComparison(const Document* document);
  // The same on the GPU; also refused when fusionscope-gpurun is not found.
  bool runGpuFusionComparison(const Document* document);
  bool isRunning() const { return m_process != nullptr; }
  // Kills the running step; nothing is reported or opened.
  void cancel();

  // fusionscope-cli: $FUSIONSCOPE_CLI, next to this program (or in ../cli for a build tree), PATH.
  static QString cliPath();
  // fusionscope-gpurun: $FUSIONSCOPE_GPURUN, next to this program or the CLI, profiler/gpu/ of the build tree,
  // PATH. Empty when not found.
  static QString gpuRunnerPath();

 signals:
  void refused(const QString& title, const QString& message);
  // Step `step` of `count` starts; `progress` says which ("GPU run, fusion off").
  void stepStarted(int step, int count, const QString& progress);
  void finished(const QString& fusionOffTrace, const QString& fusionOnTrace);
  void failed(const QString& message);

 private:
  // The processes of a run, one after the other (CPU: run off, run on; GPU: compile + gpurun, off then on).
  struct Step {
    QString program;
    QStringList arguments;
    QString description;  // for messages: "fusionscope-gpurun (fusion off)"
    QString progress;     // for the progress bar: "GPU run, fusion off"
  };

  bool prepare(const Document* document, const QString& what);
  void startSteps();
  void runNextStep();
  void failStep(const QString& message);

  QProcess* m_process = nullptr;
  std::vector<Step> m_steps;
  int m_step = 0;
  QStringList m_traces;  // off, on
  QString m_module;
  QString m_preset;
  std::unique_ptr<QTemporaryDir> m_dir;
};

}  // namespace fusionscope::viewer
