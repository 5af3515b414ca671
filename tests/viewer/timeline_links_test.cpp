// Timeline tests, part 2 (issue 7): kernels linked to instructions by their "hlo_op" arg (kernel names that are
// not instruction names), "Run on GPU" without a GPU driver, async steps drawn on their spans, and flows drawn as
// curves. Offscreen; main() is in viewer_test.cpp.
#include <QAction>
#include <QApplication>
#include <QImage>
#include <QLibrary>
#include <QPainter>
#include <QPainterPath>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "profiler/compare/trace_compare.h"
#include "profiler/trace/chrome_json_import.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/main_window.h"
#include "viewer/timeline_model.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"
#include "viewer/trace_controller.h"
#include "tests/common/source_paths.h"

namespace fusionscope::viewer {
namespace {

const std::string kMnist = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";

std::shared_ptr<const TimelineModel> traceModel(const std::string& text) {
  StatusOr<profiler::Trace> trace = profiler::importChromeTraceText(text, "test.json");
  EXPECT_TRUE(trace.ok()) << (trace.ok() ? "" : trace.message());
  if (!trace.ok()) return nullptr;
  return std::make_shared<TimelineModel>(std::move(*trace));
}

class LinkWindowTest : public testing::MainWindowTest {
 protected:
  bool openMnist() { return testing::openAndWait(*window, kMnist); }
  bool openTrace(const QString& path) { return testing::openTraceAndWait(*window, path); }
};

// Profilers name every run's file alike (issue 42: both sides of a JAX comparison read "perfetto_trace.json.gz"):
// the labels say which run each is.
TEST(TraceLabelsTest, RunsWithTheSameFileNameAreToldApart) {
  const QString profile = QStringLiteral("plugins/profile/2026_11_29/perfetto_trace.json.gz");
  auto [before, after] = TraceController::labels(QStringLiteral("/w/prof_unfused/") + profile,
                                                 QStringLiteral("/w/prof_fused/") + profile);
  EXPECT_EQ(before, QStringLiteral("prof_unfused: perfetto_trace.json.gz"));
  EXPECT_EQ(after, QStringLiteral("prof_fused: perfetto_trace.json.gz"));
  EXPECT_EQ(TraceController::labels(QStringLiteral("/w/prof_fused/") + profile, QString()).first,
            QStringLiteral("prof_fused: perfetto_trace.json.gz"));
  auto [a, b] = TraceController::labels(QStringLiteral("/t/unfused.json"), QStringLiteral("/t/fused.json"));
  EXPECT_EQ(a, QStringLiteral("unfused.json"));
  EXPECT_EQ(b, QStringLiteral("fused.json"));
  EXPECT_EQ(TraceController::labels(QStringLiteral("/t/run.ctf.json"), QString()).first, QStringLiteral("run.ctf.json"));
}

TEST(TimelineLinkTest, InstructionComesFromTheHloOpArgElseTheName) {
  // As fusionscope-gpurun annotates kernels (profiler/gpu/annotate.cpp): the PTX entry name, hlo_op in args.
  auto model = traceModel(R"([
{"ph":"X","cat":"kernel","name":"kernel_entry_0","pid":0,"tid":1,"ts":0,"dur":2,
 "args":{"correlation":7,"hlo_op":"fusion.3","kind":"kLoop","bytes_read":16,"bytes_written":8}},
{"ph":"X","cat":"kernel","name":"kernel_entry_0","pid":0,"tid":1,"ts":5,"dur":2,"args":{"hlo_op":"fusion.3"}},
{"ph":"X","cat":"kernel","name":"fusion_3","pid":0,"tid":1,"ts":10,"dur":2,"args":{"hlo_op":"add.1"}},
{"ph":"X","cat":"kernel","name":"fusion.3","pid":0,"tid":1,"ts":15,"dur":2},
{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":20,"dur":2,"args":{"instruction":"dot.2"}},
{"ph":"X","cat":"kernel","name":"bad_args","pid":0,"tid":1,"ts":25,"dur":2,"args":{"hlo_op":7}},
{"ph":"X","cat":"kernel","name":"spaced","pid":0,"tid":1,"ts":30,"dur":2,"args":{ "hlo_op" :  "mul.4" }},
{"ph":"X","cat":"kernel","name":"escaped","pid":0,"tid":1,"ts":35,"dur":2,"args":{"hlo_op":"a\"b","n":"\\"}},
{"ph":"X","cat":"kernel","name":"nested","pid":0,"tid":1,"ts":40,"dur":2,
 "args":{"x":{"hlo_op":"inner"},"hlo_op":"outer.1"}},
{"ph":"X","cat":"kernel","name":"as_value","pid":0,"tid":1,"ts":45,"dur":2,"args":{"k":"hlo_op","m":1}}])");
  ASSERT_TRUE(model);
  EXPECT_EQ(model->instructionOf(0), "fusion.3");
  EXPECT_EQ(model->instructionOf(2), "add.1");  // the arg wins over a name that looks like an instruction
  EXPECT_EQ(model->instructionOf(3), "fusion.3");
  EXPECT_EQ(model->instructionOf(4), "dot.2");
  EXPECT_EQ(model->instructionOf(5), "bad_args");  // a non-string hlo_op is ignored
  EXPECT_EQ(model->instructionOf(6), "mul.4");
  EXPECT_EQ(model->instructionOf(7), "a\"b");      // escapes go through the JSON parser
  EXPECT_EQ(model->instructionOf(8), "outer.1");   // only the top-level key counts
  EXPECT_EQ(model->instructionOf(9), "as_value");  // "hlo_op" as a value is not the key
  EXPECT_EQ(model->eventsOfInstruction("fusion.3"), (std::vector<uint32_t>{0, 1, 3}));
  EXPECT_EQ(model->eventsOfInstruction("add_1"), (std::vector<uint32_t>{2}));
  EXPECT_EQ(model->eventsOfInstruction("kernel_entry_0"), std::vector<uint32_t>{});
  // The name lookup is unchanged: it is what search and the comparison use.
  EXPECT_EQ(model->eventsNamed("kernel_entry_0").size(), 2u);
}

// A GPU trace whose kernel names differ from the instruction names: selecting a kernel selects the fusion its
// hlo_op names, and selecting the fusion highlights exactly those kernels.
TEST_F(LinkWindowTest, KernelWithOtherNameLinksThroughHloOp) {
  ASSERT_TRUE(openMnist());
  const auto document = window->document();
  const StageEntry& last = document->stages.back();
  ASSERT_TRUE(last.module);
  const std::vector<std::string> fusions = testing::lastStageFusions(*window);
  ASSERT_GE(fusions.size(), 2u);
  // Two launches of each fusion under an opaque PTX name; the one named like fusions[0] ran fusions[1].
  std::string text = "[";
  int64_t ts = 0;
  for (int round = 0; round < 2; ++round)
    for (size_t f = 0; f < fusions.size(); ++f) {
      const std::string name =
          round == 1 && f == 1 ? profiler::normalizeKernelName(fusions[0]) : "__nv_kernel_" + std::to_string(f * 7 + 3);
      text += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + name +
              "\",\"pid\":0,\"tid\":1,\"ts\":" + std::to_string(ts) +
              ",\"dur\":4,\"args\":{\"correlation\":" + std::to_string(ts) + ",\"hlo_op\":\"" + fusions[f] + "\"}},";
      ts += 10;
    }
  text += "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":2,\"ts\":0,\"dur\":3}]";
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("gpu_kernels.json"));
  std::ofstream(path.toStdString()) << text;
  ASSERT_TRUE(openTrace(path)) << window->lastError().toStdString();

  TimelinePanel* panel = window->timeline();
  const auto model = panel->view()->groups()[0].model;
  const std::vector<uint32_t> launches = model->eventsOfInstruction(fusions[1]);
  ASSERT_EQ(launches.size(), 2u);
  for (uint32_t e : launches) EXPECT_NE(model->trace().events[e].name, fusions[1]);
  // Select the launch that carries fusions[0]'s name but ran fusions[1].
  const uint32_t misleading = launches[1];
  ASSERT_EQ(model->trace().events[misleading].name, profiler::normalizeKernelName(fusions[0]));
  panel->view()->selectEvent(0, misleading, true);
  ASSERT_TRUE(testing::waitFor([&] { return !window->isBusy(); }));
  EXPECT_EQ(window->currentStage(), static_cast<int>(document->stages.size()) - 1);
  EXPECT_EQ(window->selectedName().toStdString(), fusions[1]);
  const QString inspector = window->inspector()->detailsText();
  EXPECT_TRUE(inspector.contains(QStringLiteral("2 launches, 8 µs in total, 4 µs mean"))) << inspector.toStdString();

  // Reverse: selecting fusions[0] in the graph highlights its two launches, neither named after it.
  ASSERT_TRUE(window->selectInstruction(QString::fromStdString(last.module->entry()->name()),
                                        QString::fromStdString(fusions[0])));
  const auto& highlighted = panel->view()->groups()[0].highlighted;
  ASSERT_EQ(highlighted.size(), 2u);
  for (uint32_t e : highlighted) {
    EXPECT_EQ(model->instructionOf(e), fusions[0]);
    EXPECT_TRUE(model->trace().events[e].name.starts_with("__nv_kernel_"));
  }
}

// The time overlay: with a trace whose kernels ran the last stage's fusions, each fusion is filled by its summed
// kernel time (the longest in the darkest colour), nodes no kernel ran are grey, and a legend says what the
// colours mean; off, nothing is coloured and the legend goes.
TEST_F(LinkWindowTest, TimeOverlayColoursFusionsByKernelTime) {
  ASSERT_TRUE(openMnist());
  const std::vector<std::string> fusions = testing::lastStageFusions(*window);
  ASSERT_GE(fusions.size(), 3u);
  // fusions[f] runs twice for (f + 1) * 10 µs.
  std::string text = "[";
  int64_t ts = 0;
  for (int round = 0; round < 2; ++round)
    for (size_t f = 0; f < fusions.size(); ++f) {
      const int64_t dur = static_cast<int64_t>(f + 1) * 10;
      text += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k" + std::to_string(f) +
              "\",\"pid\":0,\"tid\":1,\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
              ",\"args\":{\"hlo_op\":\"" + fusions[f] + "\"}},";
      ts += dur + 5;
    }
  text.back() = ']';
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("kernels.json"));
  std::ofstream(path.toStdString()) << text;
  ASSERT_TRUE(openTrace(path)) << window->lastError().toStdString();
  window->setCurrentStage(window->stageCount() - 1);
  ASSERT_TRUE(testing::waitIdle(*window));
  window->setCollapseFusions(true);
  ASSERT_TRUE(testing::waitIdle(*window));

  GraphScene* scene = window->graphScene();
  EXPECT_FALSE(scene->kernelTimesShown());
  window->setTimeOverlay(true);
  EXPECT_TRUE(window->timeOverlay());
  ASSERT_TRUE(scene->kernelTimesShown());
  const GraphModel& graph = *scene->graph();
  for (size_t f = 0; f < fusions.size(); ++f) {
    int node = graph.findNode(fusions[f]);
    ASSERT_GE(node, 0) << fusions[f];
    EXPECT_DOUBLE_EQ(scene->kernelTimeOfNode(node), 2.0 * static_cast<double>(f + 1) * 10'000) << fusions[f];
  }
  EXPECT_DOUBLE_EQ(scene->maxKernelTime(), 2.0 * static_cast<double>(fusions.size()) * 10'000);
  int grey = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) grey += scene->kernelTimeOfNode(static_cast<int>(i)) < 0 ? 1 : 0;
  EXPECT_GT(grey, 0);  // parameters and the like ran no kernel
  EXPECT_TRUE(window->graphView()->kernelTimeLegendVisible());
  EXPECT_TRUE(window->graphView()->kernelTimeLegendText().contains(QStringLiteral("Kernel time")));
  // The colours: the longest fusion in the scale's darkest colour, a shorter one lighter.
  const int longest = graph.findNode(fusions.back());
  QImage image(window->graphView()->viewport()->size(), QImage::Format_ARGB32);
  window->graphView()->centerOnRect(scene->nodeRect(longest));
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    window->graphView()->render(&painter);
  }
  // Most of the node's box (not its label's strokes) is the scale's darkest colour.
  const QRect box = window->graphView()->mapFromScene(scene->nodeRect(longest)).boundingRect() & image.rect();
  const QRgb darkest = GraphScene::kernelTimeColor(1.0).rgb();
  int filled = 0;
  int pixels = 0;
  for (int y = box.top(); y <= box.bottom(); ++y) {
    for (int x = box.left(); x <= box.right(); ++x) {
      ++pixels;
      filled += (image.pixel(x, y) & 0xffffff) == (darkest & 0xffffff) ? 1 : 0;
    }
  }
  EXPECT_GT(filled, pixels / 3) << fusions.back() << ": " << filled << " of " << pixels << " pixels in "
                                << GraphScene::kernelTimeColor(1.0).name().toStdString();

  // Exports carry the legend in a band below the graph: its colour scale in the PNG, its words in the SVG.
  const QRectF sceneRect = scene->sceneRect();
  QString error;
  const QString png = dir.filePath(QStringLiteral("overlay.png"));
  ASSERT_TRUE(window->exportView(png, &error, 1.0)) << error.toStdString();
  const QImage exported(png);
  ASSERT_GT(exported.height(), sceneRect.height() + 20);
  int scalePixels = 0;
  for (int y = static_cast<int>(sceneRect.height()) + 1; y < exported.height(); ++y)
    for (int x = 0; x < exported.width(); ++x) scalePixels += (exported.pixel(x, y) & 0xffffff) == (darkest & 0xffffff);
  EXPECT_GT(scalePixels, 10) << "the legend's colour scale below the graph";
  const QString svg = dir.filePath(QStringLiteral("overlay.svg"));
  ASSERT_TRUE(window->exportView(svg, &error)) << error.toStdString();
  QFile svgFile(svg);
  ASSERT_TRUE(svgFile.open(QIODevice::ReadOnly));
  EXPECT_TRUE(svgFile.readAll().contains("Kernel time"));

  window->setTimeOverlay(false);
  EXPECT_FALSE(scene->kernelTimesShown());
  EXPECT_FALSE(window->graphView()->kernelTimeLegendVisible());
  // Without the overlay, the export is the graph alone.
  ASSERT_TRUE(window->exportView(png, &error, 1.0)) << error.toStdString();
  EXPECT_NEAR(QImage(png).height(), sceneRect.height(), 1.5);
}

// "Run on GPU": disabled with a reason when the runner is not found; with the runner and no GPU driver (this
// machine) the runner's "no CUDA driver found" is shown and the window keeps its module, stage and trace.
TEST_F(LinkWindowTest, RunOnGpuReportsTheRunnerAndKeepsTheState) {
  QAction* action = window->runOnGpuAction();
  ASSERT_NE(action, nullptr);
  const QByteArray savedRunner = qgetenv("FUSIONSCOPE_GPURUN");
  const QString runner = savedRunner.isEmpty() ? QString::fromUtf8(FS_GPURUN_PATH) : QString::fromLocal8Bit(savedRunner);
  qputenv("FUSIONSCOPE_GPURUN", "/nonexistent/fusionscope-gpurun");
  window->updateGpuRunAction();
  EXPECT_FALSE(action->isEnabled());
  EXPECT_TRUE(action->toolTip().contains(QStringLiteral("fusionscope-gpurun was not found")))
      << action->toolTip().toStdString();
  EXPECT_FALSE(window->runGpuFusionComparison());  // nothing open
  EXPECT_TRUE(window->lastError().contains(QStringLiteral("Open an HLO module"))) << window->lastError().toStdString();

  const bool haveTools = !runner.isEmpty() && QFileInfo(runner).isExecutable() && std::filesystem::exists(FS_CLI_PATH);
  if (!haveTools) {
    savedRunner.isEmpty() ? qunsetenv("FUSIONSCOPE_GPURUN") : qputenv("FUSIONSCOPE_GPURUN", savedRunner);
    GTEST_SKIP() << "fusionscope-gpurun or fusionscope-cli not built (runner: '" << runner.toStdString() << "')";
  }
  if (savedRunner.isEmpty()) {
    // Without $FUSIONSCOPE_GPURUN the build tree is searched: tests/viewer/ (like app/gui/) is two levels below
    // profiler/gpu/.
    qunsetenv("FUSIONSCOPE_GPURUN");
    EXPECT_EQ(QFileInfo(window->gpuRunnerPath()).canonicalFilePath(), QFileInfo(runner).canonicalFilePath());
  }
  qputenv("FUSIONSCOPE_CLI", FS_CLI_PATH);
  qputenv("FUSIONSCOPE_GPURUN", runner.toLocal8Bit());
  window->updateGpuRunAction();
  EXPECT_TRUE(action->isEnabled());
  EXPECT_EQ(window->gpuRunnerPath(), runner);

  ASSERT_TRUE(openMnist());
  QTemporaryDir dir;
  const QString tracePath = dir.filePath(QStringLiteral("shown.json"));
  std::ofstream(tracePath.toStdString())
      << R"([{"ph":"X","cat":"kernel","name":"shown","pid":0,"tid":1,"ts":0,"dur":4}])";
  ASSERT_TRUE(openTrace(tracePath));
  window->setCurrentStage(1);
  ASSERT_TRUE(testing::waitFor([&] { return !window->isBusy(); }));
  const auto document = window->document();
  const auto shownTrace = window->timeline()->view()->groups()[0].model;

  QSignalSpy traces(window.get(), &MainWindow::traceLoaded);
  QSignalSpy failed(window.get(), &MainWindow::loadFailed);
  ASSERT_TRUE(window->runGpuFusionComparison()) << window->lastError().toStdString();
  EXPECT_TRUE(window->isRunning());
  EXPECT_FALSE(window->runGpuFusionComparison());  // one run at a time
  ASSERT_TRUE(testing::waitFor([&] { return traces.count() + failed.count() > 0; }));
  EXPECT_FALSE(window->isRunning());
  if (failed.count() > 0) {
    const QString error = window->lastError();
    // Both compiles ran before it (the bundle of "fusion off" was compiled, so the runner got to start).
    EXPECT_TRUE(error.contains(QStringLiteral("fusionscope-gpurun (fusion off) exited with code")))
        << error.toStdString();
    QLibrary driver(QStringLiteral("cuda"));
    if (!driver.load()) {
      EXPECT_TRUE(error.contains(QStringLiteral("exited with code 3"))) << error.toStdString();
      EXPECT_TRUE(error.contains(QStringLiteral("no CUDA driver found"))) << error.toStdString();
    }
    // Nothing changed.
    EXPECT_EQ(window->document(), document);
    EXPECT_EQ(window->currentStage(), 1);
    ASSERT_EQ(window->timeline()->view()->groups().size(), 1u);
    EXPECT_EQ(window->timeline()->view()->groups()[0].model, shownTrace);
    EXPECT_FALSE(window->timeline()->isComparison());
  } else {
    // A machine with a GPU: the two GPU traces open as a comparison, fewer kernels with fusion on.
    ASSERT_TRUE(window->timeline()->isComparison());
    const profiler::TraceComparison* comparison = window->timeline()->comparison();
    EXPECT_GT(comparison->before.kernelCount, comparison->after.kernelCount);
    EXPECT_GT(comparison->after.kernelCount, 0);
  }
  savedRunner.isEmpty() ? qunsetenv("FUSIONSCOPE_GPURUN") : qputenv("FUSIONSCOPE_GPURUN", savedRunner);
  qunsetenv("FUSIONSCOPE_CLI");
}

// Async steps: T (S/F spans) and n (b/e spans) attach to the innermost open span with their key and are drawn as
// ticks on it; steps of a span that never finishes, or with no open span, stay counted as undrawn.
TEST(TimelineLinkTest, AsyncStepsAreMarkersOnTheirSpan) {
  auto model = traceModel(R"([
{"ph":"S","cat":"io","name":"load","id":"1","pid":0,"tid":1,"ts":0},
{"ph":"T","cat":"io","name":"load","id":"1","pid":0,"tid":1,"ts":10,"args":{"step":"read"}},
{"ph":"T","cat":"io","name":"load","id":"1","pid":0,"tid":1,"ts":20,"args":{"step":"decode"}},
{"ph":"F","cat":"io","name":"load","id":"1","pid":0,"tid":1,"ts":40},
{"ph":"b","cat":"net","name":"req","id":"9","pid":0,"tid":1,"ts":5},
{"ph":"n","cat":"net","name":"retry","id":"9","pid":0,"tid":1,"ts":25},
{"ph":"e","cat":"net","name":"req","id":"9","pid":0,"tid":1,"ts":35},
{"ph":"T","cat":"io","name":"load","id":"2","pid":0,"tid":1,"ts":30},
{"ph":"S","cat":"io","name":"open","id":"3","pid":0,"tid":1,"ts":1},
{"ph":"T","cat":"io","name":"open","id":"3","pid":0,"tid":1,"ts":2},
{"ph":"X","cat":"cpu","name":"work","pid":0,"tid":1,"ts":0,"dur":40}])");
  ASSERT_TRUE(model);
  ASSERT_EQ(model->asyncSlices().size(), 2u);
  EXPECT_EQ(model->asyncStepCount(), 3);
  int64_t stepsSeen = 0;
  for (const AsyncSlice& slice : model->asyncSlices()) {
    const auto& begin = model->trace().events[slice.begin];
    const uint32_t expected = begin.name == "load" ? 2u : 1u;
    EXPECT_EQ(slice.stepCount, expected) << begin.name;
    for (uint32_t k = slice.firstStep; k < slice.firstStep + slice.stepCount; ++k) {
      const auto& step = model->trace().events[model->asyncSteps()[k]];
      EXPECT_EQ(step.id, begin.id);
      EXPECT_GE(step.tsNs, slice.startNs);
      EXPECT_LE(step.tsNs, slice.endNs);
      ++stepsSeen;
    }
  }
  EXPECT_EQ(stepsSeen, 3);
  // The unmatched T (id 2), and the unfinished span "open" with its step: 3 undrawn.
  EXPECT_EQ(model->undrawnCount(), 3);
  EXPECT_EQ(model->sliceCount() + 2 * static_cast<int64_t>(model->asyncSlices().size()) + model->asyncStepCount() +
                model->undrawnCount(),
            static_cast<int64_t>(model->trace().events.size()));

  TimelinePanel panel;
  panel.resize(1200, 400);
  panel.setTrace(model, QStringLiteral("async.json"));
  panel.show();
  TimelineView* view = panel.view();
  view->fitAll();
  view->grab();
  EXPECT_EQ(view->lastStepMarkersDrawn(), 3);
  // The "decode" step (20 µs) can be hovered/clicked: find the row of the span "load", then hit the tick.
  const AsyncSlice* load = nullptr;
  for (const AsyncSlice& slice : model->asyncSlices())
    if (model->trace().events[slice.begin].name == "load") load = &slice;
  ASSERT_NE(load, nullptr);
  auto xAt = [&](int64_t ns) {
    return static_cast<int>(
        std::lround(view->plotLeft() + (static_cast<double>(ns) - view->visibleStartNs()) / view->nsPerPixel()));
  };
  int spanY = -1;
  for (int y = TimelineView::kRulerHeight; y < view->height() && spanY < 0; ++y)
    if (view->hitAt(QPoint(xAt(35000), y)).event == static_cast<int64_t>(load->begin)) spanY = y;
  ASSERT_GE(spanY, 0);
  const TimelineView::Hit stepHit = view->hitAt(QPoint(xAt(20000), spanY));
  ASSERT_GE(stepHit.event, 0);
  EXPECT_EQ(model->trace().events[static_cast<size_t>(stepHit.event)].phase, 'T');
  EXPECT_TRUE(model->trace().events[static_cast<size_t>(stepHit.event)].args.find("decode") != std::string_view::npos);
  // Zoomed to the first 8 µs only the span parts there are visible, and none of the steps.
  view->setVisibleRange(0, 8000);
  view->grab();
  EXPECT_EQ(view->lastStepMarkersDrawn(), 0);
  // Selecting the span lists its steps in the details panel.
  view->fitAll();
  view->selectEvent(0, model->asyncSlices()[0].begin, false);
  const QString details = panel.details()->toPlainText();
  const bool isLoad = model->trace().events[model->asyncSlices()[0].begin].name == "load";
  EXPECT_TRUE(details.contains(isLoad ? QStringLiteral("2 steps") : QStringLiteral("1 steps")))
      << details.toStdString();
  EXPECT_TRUE(details.contains(isLoad ? QStringLiteral("decode") : QStringLiteral("retry"))) << details.toStdString();
}

// Flows are cubic curves from the end of the source slice to the start of the target.
TEST(TimelineLinkTest, FlowsAreCurvesFromSourceEndToTargetStart) {
  auto model = traceModel(R"([
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":0,"tid":1,"ts":0,"dur":5},
{"ph":"s","cat":"ac2g","name":"ac2g","id":7,"pid":0,"tid":1,"ts":1},
{"ph":"X","cat":"kernel","name":"fusion_1","pid":0,"tid":2,"ts":20,"dur":10},
{"ph":"f","cat":"ac2g","name":"ac2g","id":7,"pid":0,"tid":2,"ts":20,"bp":"e"}])");
  ASSERT_TRUE(model);
  ASSERT_EQ(model->flows().size(), 1u);
  const FlowArrow flow = model->flows()[0];
  TimelinePanel panel;
  panel.resize(1200, 400);
  panel.setTrace(model, QStringLiteral("flow.json"));
  panel.show();
  TimelineView* view = panel.view();
  view->fitAll();
  view->grab();
  EXPECT_EQ(view->lastFlowsDrawn(), 1);
  const QPainterPath curve = view->flowCurve(0, flow.from, flow.to);
  ASSERT_EQ(curve.elementCount(), 4);  // move-to, then one cubic (its two control points and end point)
  EXPECT_EQ(curve.elementAt(1).type, QPainterPath::CurveToElement);
  const QRectF source = view->eventRect(0, flow.from);
  const QRectF target = view->eventRect(0, flow.to);
  EXPECT_EQ(model->trace().events[flow.from].name, "cudaLaunchKernel");
  EXPECT_NEAR(curve.elementAt(0).x, source.right(), 0.01);
  EXPECT_NEAR(curve.elementAt(0).y, source.center().y(), 0.01);
  EXPECT_NEAR(curve.elementAt(3).x, target.left(), 0.01);
  EXPECT_NEAR(curve.elementAt(3).y, target.center().y(), 0.01);
  // It leaves and arrives horizontally, and bends: the midpoint lies between the two rows.
  EXPECT_NEAR(curve.elementAt(1).y, source.center().y(), 0.01);
  EXPECT_NEAR(curve.elementAt(2).y, target.center().y(), 0.01);
  const QPointF mid = curve.pointAtPercent(0.5);
  EXPECT_GT(mid.y(), std::min(source.center().y(), target.center().y()));
  EXPECT_LT(mid.y(), std::max(source.center().y(), target.center().y()));
}

}  // namespace
}  // namespace fusionscope::viewer
