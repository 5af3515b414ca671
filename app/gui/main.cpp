// fusionscope: the Qt viewer. Everything is in fs_viewer; this only parses the command line.
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include "core/ir/hlo_computation.h"
#include "viewer/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("FusionScope"));
  QApplication::setApplicationName(QStringLiteral("fusionscope"));
  QApplication::setApplicationVersion(QStringLiteral(FS_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Watch a tensor compiler fuse an HLO graph, stage by stage."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("path"),
                               QStringLiteral("An HLO module, a dump directory (stages.json) or a .dot file."));
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
  parser.addOption(select);
  parser.addOption(pipeline);
  parser.addOption(stage);
  parser.addOption(screenshot);
  parser.process(app);

  fusionscope::viewer::MainWindow window;
  if (parser.isSet(pipeline)) {
    fusionscope::core::PipelineSpec spec = window.pipelineSpec();
    spec.preset = parser.value(pipeline).toStdString();
    window.setPipelineSpec(spec);
  }
  const QString screenshotPath = parser.value(screenshot);
  int exitCode = 0;
  if (!screenshotPath.isEmpty()) {
    window.setErrorDialogsEnabled(false);
    QObject::connect(&window, &fusionscope::viewer::MainWindow::loadFailed, &app, [&](const QString& message) {
      fprintf(stderr, "%s\n", qPrintable(message));
      exitCode = 1;
      QApplication::quit();
    });
  }
  int firstStage = parser.value(stage).toInt();
  QObject::connect(&window, &fusionscope::viewer::MainWindow::documentLoaded, &window,
                   [&] { window.setCurrentStage(firstStage); });
  bool saved = false;
  bool selected = false;
  const QString selectName = parser.value(select);
  QObject::connect(&window, &fusionscope::viewer::MainWindow::stageShown, &window, [&](int shown) {
    if (!selectName.isEmpty() && !selected) {
      selected = true;
      const fusionscope::viewer::StageEntry* entry = window.currentEntry();
      if (entry != nullptr && entry->module && entry->module->entry() != nullptr) {
        window.selectInstruction(QString::fromStdString(entry->module->entry()->name()), selectName);
      }
    }
    if (screenshotPath.isEmpty() || saved || shown != std::min(firstStage, window.stageCount() - 1)) return;
    saved = true;
    // Let the window paint once more before grabbing it.
    QTimer::singleShot(300, &window, [&] {
      if (!window.grab().save(screenshotPath)) {
        fprintf(stderr, "cannot write %s\n", qPrintable(screenshotPath));
        exitCode = 1;
      }
      QApplication::quit();
    });
  });
  window.show();
  const QStringList positional = parser.positionalArguments();
  if (!positional.isEmpty()) window.openPath(positional.first());
  int result = app.exec();
  return exitCode != 0 ? exitCode : result;
}
