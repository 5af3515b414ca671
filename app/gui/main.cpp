// fusionscope: the Qt viewer. Everything is in fs_viewer; this only parses the command line.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QSaveFile>
#include <QTimer>

#include "core/ir/hlo_computation.h"
#include "viewer/main_window.h"
#include "viewer/stage_walk.h"
#include "viewer/timeline_panel.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("FusionScope"));
  QApplication::setApplicationName(QStringLiteral("fusionscope"));
  QApplication::setApplicationVersion(QStringLiteral(FS_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Watch a tensor compiler fuse an HLO graph, stage by stage."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(
      QStringLiteral("path"),
      QStringLiteral("An HLO module, a dump directory (stages.json), a .dot file, or a Chrome trace (.json)."));
  QCommandLineOption pipeline({QStringLiteral("p"), QStringLiteral("pipeline")},
                              QStringLiteral("Pipeline preset for HLO modules: gpu, cpu or none."),
                              QStringLiteral("preset"));
  QCommandLineOption stage(QStringLiteral("stage"), QStringLiteral("Stage to show first (index in the list)."),
                           QStringLiteral("n"));
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("Save a PNG of the window once the stage is drawn, then quit."),
                                QStringLiteral("file.png"));
  QCommandLineOption select(QStringLiteral("select"),
                            QStringLiteral("Instruction (or fusion) of the entry computation to select and inspect."),
                            QStringLiteral("name"));
  QCommandLineOption trace(QStringLiteral("trace"),
                           QStringLiteral("A Chrome trace (.json/.json.gz) to show below the graph; give it twice "
                                          "(before, then after) for a comparison."),
                           QStringLiteral("file"));
  QCommandLineOption kernel(QStringLiteral("select-kernel"),
                            QStringLiteral("Kernel (trace event name) to select in the timeline once loaded."),
                            QStringLiteral("name"));
  QCommandLineOption module(QStringLiteral("module"),
                            QStringLiteral("The module of an XLA dump directory to show (name or number)."),
                            QStringLiteral("name"));
  QCommandLineOption timeOverlay(QStringLiteral("time-overlay"),
                                 QStringLiteral("Colour the graph by the kernel time of the trace (View menu)."));
  parser.addOption(timeOverlay);
  QCommandLineOption walkStages(QStringLiteral("walk-stages"),
                                QStringLiteral("Step through every stage as Next would, time each step (layout, scene, "
                                               "paint, total), print a summary and quit."));
  parser.addOption(walkStages);
  QCommandLineOption timings(QStringLiteral("timings"),
                             QStringLiteral("With --walk-stages: write the per-step timings as JSON to this file."),
                             QStringLiteral("out.json"));
  parser.addOption(timings);
  QCommandLineOption walkSteps(QStringLiteral("walk-steps"),
                               QStringLiteral("With --walk-stages: stop after this many steps (a --screenshot is then "
                                              "of the stage reached)."),
                               QStringLiteral("n"));
  parser.addOption(walkSteps);
  QCommandLineOption flat(QStringLiteral("flat"),
                          QStringLiteral("Draw every instruction: no scope groups (View -> Group by Scope off)."));
  parser.addOption(flat);
  QCommandLineOption sideBySide(QStringLiteral("side-by-side"),
                                QStringLiteral("Show the previous stage in a second pane (View menu)."));
  parser.addOption(sideBySide);
  QCommandLineOption sideModule(QStringLiteral("side-module"),
                                QStringLiteral("Show this HLO module (e.g. XLA's after_optimizations) side by side."),
                                QStringLiteral("file"));
  parser.addOption(sideModule);
  parser.addOption(module);
  parser.addOption(select);
  parser.addOption(trace);
  parser.addOption(kernel);
  parser.addOption(pipeline);
  parser.addOption(stage);
  parser.addOption(screenshot);
  parser.process(app);

  fusionscope::viewer::MainWindow window;
  if (parser.isSet(timeOverlay)) window.setTimeOverlay(true);
  if (parser.isSet(sideBySide)) window.setSideBySide(true);
  if (parser.isSet(sideModule) && !window.showModuleSideBySide(parser.value(sideModule))) return 2;
  if (parser.isSet(pipeline)) {
    fusionscope::core::PipelineSpec spec = window.pipelineSpec();
    spec.preset = parser.value(pipeline).toStdString();
    window.setPipelineSpec(spec, /*remember=*/false);
  }
  const QString screenshotPath = parser.value(screenshot);
  const bool walk = parser.isSet(walkStages);
  const QString timingsPath = parser.value(timings);
  if (!timingsPath.isEmpty() && !walk) {
    fprintf(stderr, "--timings needs --walk-stages\n");
    return 2;
  }
  if (walk && parser.positionalArguments().isEmpty()) {
    fprintf(stderr, "--walk-stages needs a module, dump directory or stages.json to walk\n");
    return 2;
  }
  if (!timingsPath.isEmpty() && !QFileInfo(QFileInfo(timingsPath).absolutePath()).isDir()) {
    fprintf(stderr, "%s: the directory does not exist\n", qPrintable(timingsPath));
    return 2;
  }
  int exitCode = 0;
  if (!screenshotPath.isEmpty() || walk) {
    window.setErrorDialogsEnabled(false);
    QObject::connect(&window, &fusionscope::viewer::MainWindow::loadFailed, &app, [&](const QString& message) {
      fprintf(stderr, "%s\n", qPrintable(message));
      exitCode = 1;
      QApplication::quit();
    });
  }
  int firstStage = parser.value(stage).toInt();
  const bool flatGraph = parser.isSet(flat);
  QObject::connect(&window, &fusionscope::viewer::MainWindow::documentLoaded, &window, [&] {
    if (flatGraph) window.setGroupScopes(false);
    window.setCurrentStage(std::min(firstStage, window.stageCount() - 1));
  });
  // --walk-stages: once the first stage is drawn, Next to the end; then the timings and quit.
  fusionscope::viewer::StageWalk walker(&window);
  bool walkStarted = false;
  if (walk) {
    auto startWalk = [&] {
      if (walkStarted) return;
      walkStarted = true;
      walker.start();
    };
    QObject::connect(&window, &fusionscope::viewer::MainWindow::stageShown, &window, [startWalk](int) { startWalk(); });
    QObject::connect(&window, &fusionscope::viewer::MainWindow::layoutFailed, &window,
                     [startWalk](const QString&) { startWalk(); });
    walker.setMaxSteps(parser.value(walkSteps).toInt());
    QObject::connect(&walker, &fusionscope::viewer::StageWalk::finished, &app, [&] {
      printf("%s\n", qPrintable(walker.summary()));
      if (!screenshotPath.isEmpty() && !window.grab().save(screenshotPath)) {
        fprintf(stderr, "cannot write %s\n", qPrintable(screenshotPath));
        exitCode = 1;
      }
      if (!timingsPath.isEmpty()) {
        QSaveFile out(timingsPath);
        if (!out.open(QIODevice::WriteOnly) || out.write(walker.toJson(parser.positionalArguments().first())) < 0 ||
            !out.commit()) {
          fprintf(stderr, "cannot write %s: %s\n", qPrintable(timingsPath), qPrintable(out.errorString()));
          exitCode = 1;
        }
      }
      QApplication::quit();
    });
  }
  bool saved = false;
  bool selected = false;
  const QString selectName = parser.value(select);
  QStringList traces = parser.values(trace);
  QStringList positional = parser.positionalArguments();
  // A positional .json (other than stages.json) is a trace, not a module.
  for (auto it = positional.begin(); it != positional.end();) {
    const bool isTrace = (it->endsWith(QStringLiteral(".json")) || it->endsWith(QStringLiteral(".json.gz"))) &&
                         !it->endsWith(QStringLiteral("stages.json"));
    if (isTrace) {
      traces << *it;
      it = positional.erase(it);
    } else {
      ++it;
    }
  }
  bool stageReady = positional.isEmpty();
  bool traceReady = traces.isEmpty();
  const QString kernelName = parser.value(kernel);
  bool kernelSelected = false;
  auto maybeScreenshot = [&] {
    if (!stageReady || !traceReady) return;
    // Select the kernel once both the graph and the trace are there, so the link reaches the graph.
    if (!kernelName.isEmpty() && !kernelSelected) {
      kernelSelected = true;
      if (window.timeline()->search(kernelName) == 0) fprintf(stderr, "no event named %s\n", qPrintable(kernelName));
      if (!positional.isEmpty() && window.isBusy()) {
        // The link switched to the last stage: wait for it to be drawn.
        stageReady = false;
        return;
      }
    }
    if (screenshotPath.isEmpty() || saved || walk) return;  // a walk takes its picture at its end
    saved = true;
    // Let the window paint once more before grabbing it.
    QTimer::singleShot(300, &window, [&] {
      if (!window.grab().save(screenshotPath)) {
        fprintf(stderr, "cannot write %s\n", qPrintable(screenshotPath));
        exitCode = 1;
      }
      QApplication::quit();
    });
  };
  QObject::connect(&window, &fusionscope::viewer::MainWindow::stageShown, &window, [&](int shown) {
    if (!selectName.isEmpty() && !selected) {
      selected = true;
      const fusionscope::viewer::StageEntry* entry = window.currentEntry();
      if (entry != nullptr && entry->module && entry->module->entry() != nullptr) {
        window.selectInstruction(QString::fromStdString(entry->module->entry()->name()), selectName);
      }
    }
    if (shown == std::min(firstStage, window.stageCount() - 1) || kernelSelected) stageReady = true;
    maybeScreenshot();
  });
  // A stage that cannot be laid out still ends a --screenshot run: the message on stderr, the window as the user
  // would see it (saying why) in the picture, exit code 1.
  QObject::connect(&window, &fusionscope::viewer::MainWindow::layoutFailed, &window, [&](const QString& message) {
    if (screenshotPath.isEmpty()) return;
    fprintf(stderr, "%s\n", qPrintable(message));
    exitCode = 1;
    stageReady = true;
    maybeScreenshot();
  });
  QObject::connect(&window, &fusionscope::viewer::MainWindow::traceLoaded, &window, [&] {
    traceReady = true;
    maybeScreenshot();
  });
  window.show();
  if (!positional.isEmpty()) window.openPath(positional.first(), parser.value(module));
  if (traces.size() >= 2) {
    window.openTraceComparison(traces[0], traces[1]);
  } else if (traces.size() == 1) {
    window.openTrace(traces[0]);
  }
  int result = app.exec();
  return exitCode != 0 ? exitCode : result;
}
