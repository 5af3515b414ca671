// Window tests for what a new user meets first: the graph follows a kernel picked in the timeline, the stage list
// follows every way of changing the stage, a new trace starts clean, the find bar and relayouts leave the
// selection alone, the layout can be reset, export covers the whole graph. Offscreen; main() is in viewer_test.cpp.
#include <QAbstractItemView>
#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QStandardPaths>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QGraphicsView>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QToolBar>
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "profiler/compare/trace_compare.h"
#include "profiler/trace/chrome_json_import.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_search.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/main_window.h"
#include "viewer/stage_list_model.h"
#include "viewer/timeline_model.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"
#include "tests/common/source_paths.h"

namespace fusionscope::viewer {
namespace {

const std::string kMnist = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";

// Two TensorFlow-style lanes whose names differ only at the end (TF's step-stats timeline).
const char kTfLanes[] = R"({"traceEvents":[
{"ph":"M","name":"process_name","pid":3,"args":{"name":"/job:localhost/replica:0/task:0/device:GPU:0 Compute"}},
{"ph":"M","name":"process_name","pid":4,"args":{"name":"/job:localhost/replica:0/task:0/device:GPU:0 Tensors"}},
{"ph":"X","cat":"kernel","name":"MatMul","pid":3,"tid":0,"ts":0,"dur":5},
{"ph":"X","cat":"kernel","name":"Relu","pid":3,"tid":0,"ts":6,"dur":2},
{"ph":"X","cat":"op","name":"tensor","pid":4,"tid":0,"ts":0,"dur":8}]})";

std::shared_ptr<const TimelineModel> traceModel(const std::string& text) {
  StatusOr<profiler::Trace> trace = profiler::importChromeTraceText(text, "test.json");
  EXPECT_TRUE(trace.ok()) << (trace.ok() ? "" : trace.message());
  if (!trace.ok()) return nullptr;
  return std::make_shared<TimelineModel>(std::move(*trace));
}

QString writeTrace(const QTemporaryDir& dir, const QString& name, const char* text) {
  const QString path = dir.filePath(name);
  QFile file(path);
  EXPECT_TRUE(file.open(QIODevice::WriteOnly));
  file.write(text);
  return path;
}

using testing::openAndWait;
using testing::waitIdle;
using WindowUsabilityTest = testing::MainWindowTest;

// The selected node or fusion box, in scene coordinates.
QRectF selectionRect(const MainWindow& window) {
  const GraphScene* scene = window.graphScene();
  if (scene->selectedNode() >= 0) return scene->nodeRect(scene->selectedNode());
  return scene->clusterRect(scene->selectedCluster());
}

QRectF visibleRect(const GraphView& view) {
  return view.mapToScene(view.viewport()->rect()).boundingRect();
}

// A kernel picked in the timeline brings its fusion into view, zoomed in far enough to read, both when the graph
// must switch to the last stage first and when it already shows it (zoomed far out).
TEST_F(WindowUsabilityTest, KernelSelectionCentresTheGraphOnItsFusion) {
  ASSERT_TRUE(openAndWait(*window, kMnist));
  std::vector<std::string> fusions = testing::lastStageFusions(*window);
  ASSERT_GE(fusions.size(), 2u);
  GraphView* view = window->graphView();
  view->zoomBy(0.1);
  // PTX-style names ("fusion_2") name the fusion too.
  QString kernel = QString::fromStdString(fusions.front()).replace(QLatin1Char('.'), QLatin1Char('_'));
  ASSERT_TRUE(window->selectKernel(kernel));
  ASSERT_TRUE(waitIdle(*window));
  ASSERT_EQ(window->currentStage(), window->stageCount() - 1);
  ASSERT_EQ(window->selectedName().toStdString(), fusions.front());
  QRectF target = selectionRect(*window);
  ASSERT_FALSE(target.isEmpty());
  EXPECT_TRUE(visibleRect(*view).contains(target.center()));
  EXPECT_GE(view->zoom(), 0.3);

  // Already on the last stage, zoomed out and scrolled away: the second fusion is centred.
  view->fitAll();
  view->zoomBy(0.05);
  view->centerOn(-5000, -5000);
  ASSERT_TRUE(window->selectKernel(QString::fromStdString(fusions.back())));
  ASSERT_TRUE(waitIdle(*window));
  target = selectionRect(*window);
  ASSERT_FALSE(target.isEmpty());
  EXPECT_TRUE(visibleRect(*view).contains(target.center()));
  EXPECT_GE(view->zoom(), 0.3);
}

// The stage table highlights the current stage whatever changed it: the table tells its view through the selection
// model's signals, so those must fire (a blocked selection model leaves row 0 painted as selected).
TEST_F(WindowUsabilityTest, StageListHighlightFollowsKeysPlayAndSlider) {
  ASSERT_TRUE(openAndWait(*window, kMnist));
  auto* table = window->findChild<QTableView*>(QStringLiteral("stageTable"));
  auto* slider = window->findChild<QSlider*>(QStringLiteral("stageSlider"));
  ASSERT_NE(table, nullptr);
  ASSERT_NE(slider, nullptr);
  ASSERT_GE(window->stageCount(), 3);
  QSignalSpy selectionChanged(table->selectionModel(), &QItemSelectionModel::selectionChanged);
  auto highlighted = [&](int row) {
    const QModelIndexList rows = table->selectionModel()->selectedRows();
    return rows.size() == 1 && rows.front().row() == row && table->currentIndex().row() == row;
  };
  EXPECT_TRUE(highlighted(0));

  window->nextStage();
  ASSERT_TRUE(waitIdle(*window));
  EXPECT_TRUE(highlighted(1));
  EXPECT_GE(selectionChanged.count(), 1);

  window->activateWindow();
  window->graphView()->setFocus();
  QTest::keyClick(window->graphView(), Qt::Key_J);
  ASSERT_TRUE(waitIdle(*window));
  EXPECT_EQ(window->currentStage(), 2);
  EXPECT_TRUE(highlighted(2));
  EXPECT_GE(selectionChanged.count(), 2);

  slider->setValue(0);
  ASSERT_TRUE(waitIdle(*window));
  EXPECT_EQ(window->currentStage(), 0);
  EXPECT_TRUE(highlighted(0));
  EXPECT_GE(selectionChanged.count(), 3);

  // Play walks to the last stage; the highlight walks with it.
  QTest::keyClick(window->graphView(), Qt::Key_Space);
  const int last = window->stageCount() - 1;
  ASSERT_TRUE(testing::waitFor([&] { return window->currentStage() == last; }));
  ASSERT_TRUE(waitIdle(*window));
  EXPECT_TRUE(highlighted(last));
  EXPECT_GE(selectionChanged.count(), 3 + last);

  // Clicking a row still changes the stage.
  table->selectRow(1);
  ASSERT_TRUE(waitIdle(*window));
  EXPECT_EQ(window->currentStage(), 1);
}

// Lane headers fit their names (up to a limit), show the full thread and process name as a tooltip, and keep a
// width the user dragged them to for the next trace.
TEST(TimelineHeaderTest, HeadersFitTheirNamesShowThemInFullAndCanBeResized) {
  auto model = traceModel(kTfLanes);
  ASSERT_TRUE(model);
  ASSERT_EQ(model->lanes().size(), 2u);
  TimelineView view;
  view.resize(1400, 300);
  view.setGroups({{model, model->startNs(), QString(), {}}});
  EXPECT_GT(view.plotLeft(), TimelineView::kHeaderWidth);
  EXPECT_LE(view.plotLeft(), TimelineView::kMaxHeaderWidth);
  const int firstLane = TimelineView::kRulerHeight + 5;
  const int secondLane = TimelineView::kRulerHeight + TimelineView::kRowHeight + 4 + 5;
  EXPECT_TRUE(view.headerToolTip(QPoint(10, firstLane)).contains("/task:0/device:GPU:0 Compute"))
      << view.headerToolTip(QPoint(10, firstLane)).toStdString();
  EXPECT_TRUE(view.headerToolTip(QPoint(10, secondLane)).contains("device:GPU:0 Tensors"));
  EXPECT_TRUE(view.headerToolTip(QPoint(view.plotLeft() + 20, firstLane)).isEmpty());  // the plot has its own
  // A narrow widget keeps most of its width for the plot.
  view.resize(500, 300);
  EXPECT_LE(view.plotLeft(), 200);
  view.resize(1400, 300);
  // Dragging the headers' edge sets the width, and the next trace keeps it.
  const QPoint edge(view.plotLeft() - 2, firstLane);
  QTest::mousePress(&view, Qt::LeftButton, Qt::NoModifier, edge);
  QTest::mouseMove(&view, QPoint(140, firstLane));
  QTest::mouseRelease(&view, Qt::LeftButton, Qt::NoModifier, QPoint(140, firstLane));
  EXPECT_EQ(view.plotLeft(), 140);
  EXPECT_LT(view.selection().group, 0) << "grabbing the edge selects nothing";
  view.setGroups({{model, model->startNs(), QString(), {}}});
  EXPECT_EQ(view.plotLeft(), 140);
}

// A trace opened with no module gives the timeline most of the window, not a third under an empty graph.
TEST_F(WindowUsabilityTest, TraceWithoutAModuleGetsMostOfTheWindow) {
  QTemporaryDir dir;
  ASSERT_TRUE(testing::openTraceAndWait(*window, writeTrace(dir, "tf.json", kTfLanes)));
  QCoreApplication::processEvents();
  auto* dock = window->findChild<QDockWidget*>(QStringLiteral("timelineDock"));
  ASSERT_NE(dock, nullptr);
  EXPECT_TRUE(dock->isVisible());
  EXPECT_GT(dock->height(), window->height() / 2) << dock->height() << " of " << window->height();
  // A module opened then gets the graph its room back.
  ASSERT_TRUE(openAndWait(*window, kMnist));
  QTest::qWait(50);
  EXPECT_LE(dock->height(), window->height() / 2) << dock->height() << " of " << window->height();
}

// Loading a trace drops the previous one's search, details and range summary.
TEST_F(WindowUsabilityTest, NewTraceStartsWithoutTheOldSearchDetailsAndRange) {
  QTemporaryDir dir;
  ASSERT_TRUE(testing::openTraceAndWait(*window, writeTrace(dir, "first.json", kTfLanes)));
  TimelinePanel* panel = window->timeline();
  EXPECT_EQ(panel->search(QStringLiteral("MatMul")), 1);
  panel->view()->selectRange(0, 4000);
  EXPECT_TRUE(panel->details()->toPlainText().contains("Range")) << panel->details()->toPlainText().toStdString();
  auto* searchEdit = panel->findChild<QLineEdit*>();
  ASSERT_NE(searchEdit, nullptr);
  EXPECT_EQ(searchEdit->text(), "MatMul");

  ASSERT_TRUE(testing::openTraceAndWait(*window, writeTrace(dir, "second.json", kTfLanes)));
  EXPECT_TRUE(searchEdit->text().isEmpty());
  EXPECT_EQ(panel->matchCount(), 0);
  EXPECT_FALSE(panel->view()->hasRange());
  EXPECT_FALSE(panel->details()->toPlainText().contains("Range"));
  EXPECT_FALSE(panel->details()->toPlainText().contains("MatMul"));
  EXPECT_LT(panel->view()->selection().group, 0);
}

// Operand links and the highlighted module line take the palette's colours (readable on the dark palette's
// near-black), and follow a palette switch.
TEST_F(WindowUsabilityTest, DarkPaletteColoursInspectorLinksAndTheModuleLine) {
  ASSERT_TRUE(openAndWait(*window, kMnist));
  auto* details = window->inspector()->findChild<QTextBrowser*>(QStringLiteral("inspectorDetails"));
  auto* module = window->inspector()->findChild<QPlainTextEdit*>(QStringLiteral("inspectorModule"));
  ASSERT_NE(details, nullptr);
  ASSERT_NE(module, nullptr);
  auto linkColours = [&] {
    std::set<QRgb> colours;
    for (QTextBlock block = details->document()->begin(); block.isValid(); block = block.next()) {
      for (auto it = block.begin(); !it.atEnd(); ++it) {
        const QTextCharFormat format = it.fragment().charFormat();
        if (format.isAnchor()) colours.insert(format.foreground().color().rgb());
      }
    }
    return colours;
  };
  for (bool dark : {true, false}) {
    window->setDarkPalette(dark);
    ASSERT_TRUE(window->selectInstruction("mnist_softmax_train_step", "logits"));
    QCoreApplication::processEvents();
    const QPalette palette = QApplication::palette();
    EXPECT_EQ(linkColours(), std::set<QRgb>{palette.color(QPalette::Link).rgb()}) << "dark " << dark;
    ASSERT_EQ(module->extraSelections().size(), 1);
    const QTextCharFormat line = module->extraSelections().front().format;
    EXPECT_EQ(line.background().color(), palette.color(QPalette::Highlight)) << "dark " << dark;
    EXPECT_EQ(line.foreground().color(), palette.color(QPalette::HighlightedText)) << "dark " << dark;
  }
  // Switching with an instruction shown recolours it in place.
  window->setDarkPalette(true);
  QCoreApplication::processEvents();
  EXPECT_EQ(linkColours(), std::set<QRgb>{QApplication::palette().color(QPalette::Link).rgb()});
  window->setDarkPalette(false);
}

// Re-laying the graph out (here: collapsing fusions) keeps the user's selection even with a search open, and Esc
// in the find bar closes it.
TEST_F(WindowUsabilityTest, RelayoutKeepsTheSelectionAndEscClosesTheFindBar) {
  ASSERT_TRUE(openAndWait(*window, kMnist));
  auto* bar = window->findChild<QToolBar*>(QStringLiteral("searchBar"));
  ASSERT_NE(bar, nullptr);
  auto* edit = bar->findChild<QLineEdit*>();
  ASSERT_NE(edit, nullptr);
  bar->show();
  edit->setText(QStringLiteral("softmax"));  // searches as typed: selects the first match
  ASSERT_GT(window->graphSearch()->matches().size(), 1u);
  ASSERT_TRUE(window->selectInstruction("mnist_softmax_train_step", "logits"));
  window->setCollapseFusions(true);
  ASSERT_TRUE(waitIdle(*window));
  EXPECT_EQ(window->selectedName(), "logits");
  EXPECT_GT(window->graphSearch()->matches().size(), 1u) << "the matches are still outlined";
  window->setCollapseFusions(false);
  ASSERT_TRUE(waitIdle(*window));
  EXPECT_EQ(window->selectedName(), "logits");
  // F3 goes on from the match list, not from a selection the relayout made.
  window->graphSearch()->next();
  EXPECT_TRUE(window->selectedName().contains("softmax")) << window->selectedName().toStdString();

  window->activateWindow();
  edit->setFocus();
  QTest::keyClick(edit, Qt::Key_Escape);
  EXPECT_FALSE(bar->isVisible());
  EXPECT_TRUE(window->graphSearch()->matches().empty());
  EXPECT_TRUE(window->selectedName().contains("softmax"));
}

// Docks squeezed to nothing come back at their first sizes with View → Reset Layout.
TEST_F(WindowUsabilityTest, ResetLayoutRestoresTheDockSizes) {
  auto* stages = window->findChild<QDockWidget*>(QStringLiteral("stagesDock"));
  auto* inspector = window->findChild<QDockWidget*>(QStringLiteral("inspectorDock"));
  ASSERT_NE(stages, nullptr);
  ASSERT_NE(inspector, nullptr);
  QCoreApplication::processEvents();
  window->resizeDocks({stages, inspector}, {20, 20}, Qt::Horizontal);
  inspector->setFloating(true);
  QCoreApplication::processEvents();
  ASSERT_LT(stages->width(), 200);  // as narrow as its content allows
  window->resetLayout();
  QTest::qWait(100);
  EXPECT_FALSE(inspector->isFloating());
  EXPECT_GT(stages->width(), 250);
  EXPECT_GT(inspector->width(), 300);
  EXPECT_EQ(window->dockWidgetArea(inspector), Qt::RightDockWidgetArea);
}

// A narrow window (1280×720, or a large scale factor: a screen half as wide in logical pixels) keeps the graph most of
// its width: the docks take at most a fifth and a quarter of it, the minimap at most a fifth of the graph pane.
TEST_F(WindowUsabilityTest, NarrowWindowLeavesTheGraphMostOfItsWidth) {
  ASSERT_TRUE(openAndWait(*window, kMnist));
  window->resize(900, 560);
  window->sizeSideDocks();
  QTest::qWait(50);
  QCoreApplication::processEvents();
  GraphView* view = window->graphView();
  EXPECT_GE(view->width(), window->width() / 2) << view->width() << " of " << window->width();
  QGraphicsView* minimap = nullptr;
  for (QGraphicsView* child : view->findChildren<QGraphicsView*>()) minimap = child;
  ASSERT_NE(minimap, nullptr);
  EXPECT_LE(minimap->width(), std::max(64, view->width() / 5));
  EXPECT_LE(minimap->height(), std::max(64, view->height() / 4));
  // Wide again: the first sizes.
  window->resize(1400, 900);
  window->sizeSideDocks();
  QTest::qWait(50);
  QCoreApplication::processEvents();
  EXPECT_EQ(minimap->width(), 150);
}

// The window never opens larger than its screen: not by default, not from a geometry saved on a bigger screen.
TEST(WindowGeometryTest, WindowOpensWithinTheScreen) {
  QStandardPaths::setTestModeEnabled(true);
  QSettings().clear();
  auto fitsScreen = [](const MainWindow& window) {
    const QRect available = window.screen()->availableGeometry();
    return window.width() <= available.width() && window.height() <= available.height();
  };
  {
    MainWindow window;
    EXPECT_TRUE(fitsScreen(window)) << window.width() << "x" << window.height();
  }
  {
    MainWindow window;
    window.setErrorDialogsEnabled(false);
    window.show();
    window.setMinimumSize(0, 0);
    window.resize(4000, 3000);
    window.close();  // saves the geometry
  }
  MainWindow window;
  EXPECT_TRUE(fitsScreen(window)) << window.width() << "x" << window.height();
  QSettings().clear();
}

// Export draws the whole graph, not the part the viewport shows, at the asked scale (PNG) or in scene units (SVG).
TEST_F(WindowUsabilityTest, ExportCoversTheWholeGraphAtTheChosenScale) {
  ASSERT_TRUE(openAndWait(*window, kMnist));
  GraphView* view = window->graphView();
  view->actualSize();
  view->zoomBy(4);  // the viewport shows a few nodes
  const QRectF scene = window->graphScene()->sceneRect();
  ASSERT_FALSE(visibleRect(*view).contains(scene));
  QTemporaryDir dir;
  QString error;
  for (double scale : {1.0, 2.0}) {
    const QString png = dir.filePath(QStringLiteral("graph_%1.png").arg(scale));
    ASSERT_TRUE(window->exportView(png, &error, scale)) << error.toStdString();
    const QImage image(png);
    EXPECT_NEAR(image.width(), scene.width() * scale, 1.5) << scale;
    EXPECT_NEAR(image.height(), scene.height() * scale, 1.5) << scale;
  }
  const QString svg = dir.filePath(QStringLiteral("graph.svg"));
  ASSERT_TRUE(window->exportView(svg, &error)) << error.toStdString();
  QFile file(svg);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const QByteArray text = file.readAll();
  // Every instruction's label is in it, not only the visible ones.
  for (const char* name : {"logits", "softmax_exp", "train_step_result"}) EXPECT_TRUE(text.contains(name)) << name;
  // A huge scale is lowered to an image that can be allocated.
  EXPECT_LT(view->exportScale(1000), 1000);
}

// The Play button says Play or Pause in words, not with a glyph fonts may lack.
TEST_F(WindowUsabilityTest, PlayButtonSaysPlayOrPause) {
  auto* play = window->findChild<QPushButton*>(QStringLiteral("playButton"));
  ASSERT_NE(play, nullptr);
  EXPECT_EQ(play->text(), "Play");
  ASSERT_TRUE(openAndWait(*window, kMnist));
  play->click();
  EXPECT_EQ(play->text(), "Pause");
  play->click();
  EXPECT_EQ(play->text(), "Play");
}

// Help: F1 is bound to the keyboard help, which lists the window's shortcuts as the menus define them.
TEST_F(WindowUsabilityTest, HelpMenuBindsF1ToTheKeyboardHelp) {
  bool f1 = false;
  for (QAction* menu : window->menuBar()->actions()) {
    if (menu->menu() == nullptr) continue;
    for (QAction* action : menu->menu()->actions()) f1 |= action->shortcuts().contains(QKeySequence(Qt::Key_F1));
  }
  EXPECT_TRUE(f1);
  const QString help = window->keyboardHelpHtml();
  EXPECT_TRUE(help.contains(QKeySequence(QKeySequence::Find).toString(QKeySequence::NativeText))) << help.toStdString();
  EXPECT_TRUE(help.contains("Next Stage")) << help.toStdString();
  EXPECT_TRUE(help.contains("Timeline")) << help.toStdString();
}

// The stage list counts instructions outside fusion bodies, so the fusion pass reads as a reduction.
TEST_F(WindowUsabilityTest, StageListCountsFusionAsAReduction) {
  ASSERT_TRUE(openAndWait(*window, kMnist));
  const auto document = window->document();
  auto fusion = std::find_if(document->stages.begin(), document->stages.end(),
                             [](const StageEntry& stage) { return stage.pass == "fusion"; });
  ASSERT_NE(fusion, document->stages.end());
  const StageEntry& before = *(fusion - 1);
  EXPECT_LT(fusion->unfusedInstructionCount, before.unfusedInstructionCount);
  EXPECT_LT(fusion->unfusedDelta, 0);
  EXPECT_GT(fusion->changes.instructionDelta, 0) << "the module-wide count grows by the fusions' bodies";
  EXPECT_GE(fusion->unfusedInstructionCount, fusion->module->entry()->instructionCount());  // + reducers
  const int row = static_cast<int>(fusion - document->stages.begin());
  StageListModel* model = window->stageModel();
  EXPECT_EQ(model->index(row, StageListModel::kInstructions).data().toLongLong(), fusion->unfusedInstructionCount);
  EXPECT_TRUE(model->index(row, StageListModel::kChanged).data().toString().contains(QStringLiteral("-")))
      << model->index(row, StageListModel::kChanged).data().toString().toStdString();
}

// Comparison table: rows are as tall as their text, and clicking a fused kernel's row selects its launch.
TEST(ComparisonTableTest, RowsFitTheirTextAndAKernelRowSelectsItsLaunch) {
  auto before = traceModel(R"([
{"ph":"X","cat":"kernel","name":"add","pid":0,"tid":1,"ts":0,"dur":2},
{"ph":"X","cat":"kernel","name":"mul","pid":0,"tid":1,"ts":3,"dur":2},
{"ph":"X","cat":"kernel","name":"exp","pid":0,"tid":1,"ts":6,"dur":2}])");
  auto after = traceModel(R"([
{"ph":"X","cat":"kernel","name":"dot","pid":0,"tid":1,"ts":90,"dur":3},
{"ph":"X","cat":"kernel","name":"fusion.1","pid":0,"tid":1,"ts":100,"dur":3}])");
  ASSERT_TRUE(before && after);
  profiler::FusionMembership membership;
  membership.members["fusion.1"] = {"add", "mul", "exp"};
  TimelinePanel panel;
  panel.resize(1200, 500);
  panel.show();
  panel.setComparison(before, QStringLiteral("off.json"), after, QStringLiteral("on.json"), &membership);
  QTableWidget* table = panel.comparisonTable();
  QSignalSpy kernel(&panel, &TimelinePanel::kernelSelected);
  int mappingRow = -1;
  for (int row = 0; row < table->rowCount(); ++row) {
    if (table->item(row, 0) != nullptr && table->item(row, 0)->text().startsWith("fusion.1")) mappingRow = row;
    if (table->item(row, 0) != nullptr) {
      EXPECT_GE(table->rowHeight(row), table->fontMetrics().height()) << "row " << row << " is cut";
    }
  }
  ASSERT_GE(mappingRow, 0);
  EXPECT_FALSE(panel.selectComparisonRow(0)) << "a metric row selects nothing";
  const QRect cell = table->visualItemRect(table->item(mappingRow, 0));
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
  EXPECT_EQ(panel.view()->selection().group, 1);
  EXPECT_EQ(panel.view()->selection().event, 1);
  ASSERT_EQ(kernel.count(), 1);
  EXPECT_EQ(kernel.front().front().toString(), "fusion.1");
}

}  // namespace
}  // namespace fusionscope::viewer
