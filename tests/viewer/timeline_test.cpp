// Timeline tests (issue 7): the model against the importer on every corpus trace, level of detail, navigation,
// selection and details, range summary, search, the comparison table against `compare --json`, and the
// kernel <-> fusion link on the MNIST sample. Offscreen; main() is in viewer_test.cpp.
#include <QAction>
#include <QApplication>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "profiler/compare/trace_compare.h"
#include "profiler/trace/chrome_json_import.h"
#include "profiler/trace/flow_binding.h"
#include "viewer/inspector.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/main_window.h"
#include "viewer/timeline_model.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"
#include "tests/common/source_paths.h"

namespace fusionscope::viewer {
namespace {

const std::string kTraces = std::string(FS_SOURCE_DIR) + "/../shared/corpus/traces";
const std::string kMnistModule = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";

std::vector<std::filesystem::path> corpusTraces() {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(kTraces, ec)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(kTraces))
    if (entry.path().extension() == ".json" || entry.path().string().ends_with(".json.gz"))
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::shared_ptr<const TimelineModel> modelFromText(const std::string& text) {
  StatusOr<profiler::Trace> trace = profiler::importChromeTraceText(text, "test.json");
  EXPECT_TRUE(trace.ok()) << (trace.ok() ? "" : trace.message());
  if (!trace.ok()) return nullptr;
  return std::make_shared<TimelineModel>(std::move(*trace));
}

// A synthetic trace: `n` back-to-back 100 ns kernels on one stream, each with a 40 ns child, plus a counter.
std::string syntheticTrace(int n) {
  std::string text = R"({"traceEvents":[
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"GPU 0"}},
{"ph":"M","name":"thread_name","pid":1,"tid":7,"args":{"name":"stream 7"}})";
  for (int i = 0; i < n; ++i) {
    const double ts = i * 0.1;  // µs
    text += ",\n{\"ph\":\"X\",\"name\":\"k" + std::to_string(i % 5) +
            "\",\"cat\":\"kernel\",\"pid\":1,\"tid\":7,\"ts\":" + std::to_string(ts) +
            ",\"dur\":0.1,\"args\":{\"bytes\":" + std::to_string(i) + "}}";
    text +=
        ",\n{\"ph\":\"X\",\"name\":\"child\",\"cat\":\"x\",\"pid\":1,\"tid\":7,\"ts\":" + std::to_string(ts + 0.01) +
        ",\"dur\":0.04}";
    if (i % 10 == 0)
      text += ",\n{\"ph\":\"C\",\"name\":\"mem\",\"pid\":1,\"tid\":0,\"ts\":" + std::to_string(ts) +
              ",\"args\":{\"used\":" + std::to_string(i) + "}}";
  }
  text += "]}";
  return text;
}

using TimelineWindowTest = testing::MainWindowTest;

// Every corpus trace: the model shows what the importer read, each slice in exactly one lane and row, rows
// non-overlapping and sorted, and the window shows the same lanes.
TEST(TimelineModelTest, CorpusTracesMatchTheImporter) {
  const auto files = corpusTraces();
  if (files.empty()) GTEST_SKIP() << "corpus traces not found at " << kTraces;
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    StatusOr<profiler::Trace> imported = profiler::importChromeTrace(file.string());
    ASSERT_TRUE(imported.ok()) << imported.message();
    const profiler::ImportStats stats = imported->stats;
    std::set<std::pair<profiler::TrackId, profiler::TrackId>> threads;
    int64_t complete = 0, instants = 0, counters = 0, flows = 0;
    for (const profiler::TraceEvent& e : imported->events) {
      if (e.phase == 'X') ++complete;
      if (e.phase == 'i' || e.phase == 'I') ++instants;
      if (e.phase == 'C') ++counters;
      if (e.phase == 's' || e.phase == 't' || e.phase == 'f') ++flows;
      if (e.phase == 'X' || e.phase == 'i' || e.phase == 'I') threads.insert({e.pid, e.tid});
    }
    const size_t eventCount = imported->events.size();
    auto chains = profiler::flowChains(*imported);

    StatusOr<std::shared_ptr<const TimelineModel>> loaded = loadTimeline(file.string());
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    const TimelineModel& model = **loaded;
    ASSERT_EQ(model.trace().events.size(), eventCount);
    // Slices: X as written plus matched B/E pairs, as the importer counted them.
    const auto phase = [&](char p) { return stats.phaseCounts.count(p) ? stats.phaseCounts.at(p) : 0; };
    EXPECT_EQ(model.sliceCount(), phase('X') + stats.matchedBeginEnd);
    EXPECT_EQ(model.sliceCount(), complete);
    EXPECT_EQ(model.instantCount(), instants);
    EXPECT_EQ(model.counterSampleCount(), counters);
    EXPECT_EQ(model.flowEventCount(), flows);
    // Everything is accounted for: drawn as slice, instant, counter, flow, async span or step, or counted undrawn.
    EXPECT_EQ(model.sliceCount() + model.instantCount() + model.counterSampleCount() + model.flowEventCount() +
                  2 * static_cast<int64_t>(model.asyncSlices().size()) + model.asyncStepCount() +
                  model.undrawnCount(),
              static_cast<int64_t>(eventCount));
    EXPECT_EQ(model.sliceLaneCount(), threads.size());

    int64_t inRows = 0;
    for (int l = 0; l < static_cast<int>(model.lanes().size()); ++l) {
      const TimelineLane& lane = model.lanes()[l];
      for (int r = 0; r < static_cast<int>(lane.rows.size()); ++r) {
        const auto& row = lane.rows[r];
        for (size_t k = 0; k < row.items.size(); ++k) {
          if (k > 0) {
            EXPECT_LE(row.ends[k - 1], row.starts[k]) << "overlap in lane " << lane.title << " row " << r;
          }
          if (lane.kind == LaneKind::kSlices) {
            EXPECT_EQ(model.laneOf(row.items[k]), l);
            EXPECT_EQ(model.depthOf(row.items[k]), r);
            ++inRows;
          }
        }
      }
    }
    EXPECT_EQ(inRows, model.sliceCount());
    // Every chain step pair bound to two distinct slices is an arrow.
    size_t arrows = 0;
    for (const auto& chain : chains) {
      int64_t previous = -1;
      for (const auto& step : chain.steps) {
        if (step.slice < 0) continue;
        if (previous >= 0 && previous != step.slice) ++arrows;
        previous = step.slice;
      }
    }
    EXPECT_EQ(model.flows().size(), arrows);
    if (file.filename() == "catapult_flow.json") {
      EXPECT_GT(model.flows().size(), 100u);
    }
    if (file.filename() == "catapult_x_event_trace.json") {
      EXPECT_GT(model.asyncSlices().size(), 0u);  // S/F pairs
      EXPECT_EQ(model.counterSampleCount(), 42);
    }
  }
}

TEST_F(TimelineWindowTest, EveryCorpusTraceOpensWithTheImportersLanes) {
  const auto files = corpusTraces();
  if (files.empty()) GTEST_SKIP() << "corpus traces not found at " << kTraces;
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    ASSERT_TRUE(testing::openTraceAndWait(*window, QString::fromStdString(file.string())))
        << window->lastError().toStdString();
    StatusOr<profiler::Trace> imported = profiler::importChromeTrace(file.string());
    ASSERT_TRUE(imported.ok());
    const TimelineView* view = window->timeline()->view();
    ASSERT_EQ(view->groups().size(), 1u);
    EXPECT_EQ(view->groups()[0].model->trace().events.size(), imported->events.size());
    QImage image(view->size(), QImage::Format_ARGB32_Premultiplied);
    const_cast<TimelineView*>(view)->render(&image);
    EXPECT_GT(view->lastRunsDrawn(), 0);
    EXPECT_LE(view->lastFlowsDrawn(), static_cast<int>(TimelineView::kMaxFlowsDrawn));
    if (file.filename() == "catapult_flow.json") {
      EXPECT_GT(view->lastFlowsDrawn(), 100);  // fitted: all of its flows are drawn
    }
  }
}

// Level of detail: at every resolution the runs of a row account for each event in range exactly once, and
// never exceed about one run per pixel.
TEST(TimelineModelTest, LevelOfDetailCoversEveryEventOnce) {
  auto model = modelFromText(syntheticTrace(20000));
  ASSERT_TRUE(model);
  ASSERT_EQ(model->lanes().size(), 2u);  // stream 7 and the "mem" counter
  const TimelineLane& lane = model->lanes()[0];
  ASSERT_EQ(lane.title, "stream 7 (7)");
  ASSERT_EQ(lane.rows.size(), 2u);
  EXPECT_EQ(lane.rows[0].items.size(), 20000u);
  EXPECT_EQ(lane.rows[1].items.size(), 20000u);
  EXPECT_EQ(model->lanes()[1].kind, LaneKind::kCounter);
  EXPECT_EQ(model->lanes()[1].samples.size(), 2000u);
  const int64_t start = model->startNs(), end = model->endNs();
  for (double nsPerPixel : {0.5, 10.0, 100.0, 1000.0, 1e5}) {
    for (int row = 0; row < 2; ++row) {
      std::vector<SliceRun> runs;
      model->runs(0, row, start, end, nsPerPixel, runs);
      int64_t covered = 0;
      for (const SliceRun& r : runs) covered += r.count;
      EXPECT_EQ(covered, 20000) << "ns/px " << nsPerPixel;
      const double pixels = static_cast<double>(end - start) / nsPerPixel;
      if (nsPerPixel >= 100) {
        EXPECT_LE(static_cast<double>(runs.size()), pixels + 2) << "ns/px " << nsPerPixel;
      }
      if (nsPerPixel < 1) {
        EXPECT_EQ(runs.size(), 20000u);  // zoomed in: every slice its own box
      }
    }
  }
  // A window in the middle: only the slices intersecting it.
  std::vector<SliceRun> runs;
  model->runs(0, 0, start + 1000, start + 2000, 1.0, runs);
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.front().startNs, start + 1000);
  EXPECT_LT(runs.back().startNs, start + 2000);
  EXPECT_EQ(runs.size(), 10u);
}

TEST(TimelineModelTest, NestingSearchSummaryAndKernelNames) {
  auto model = modelFromText(syntheticTrace(100));
  ASSERT_TRUE(model);
  // Children nest under their kernel.
  const auto& events = model->trace().events;
  for (uint32_t i = 0; i < events.size(); ++i) {
    if (events[i].name == "child") {
      EXPECT_EQ(model->depthOf(i), 1);
    }
    if (events[i].cat == "kernel") {
      EXPECT_EQ(model->depthOf(i), 0);
    }
  }
  EXPECT_EQ(model->search("K3").size(), 20u);  // case-insensitive, all events
  EXPECT_EQ(model->search("CHILD").size(), 100u);
  EXPECT_TRUE(model->search("nothing-like-this").empty());
  // 0 .. 1 µs holds kernels 0..9 and their children.
  const RangeSummary s = model->summarize(model->startNs(), model->startNs() + 1000);
  EXPECT_EQ(s.count, 20);
  EXPECT_EQ(s.totalNs, 10 * 100 + 10 * 40);
  ASSERT_FALSE(s.byName.empty());
  EXPECT_EQ(s.byName.front().name, "child");  // 10 × 40 ns, ahead of each kN's 2 × 100 ns
  EXPECT_EQ(s.byName.front().count, 10);
  EXPECT_EQ(s.byName.front().totalNs, 400);
  EXPECT_EQ(s.byName.size(), 6u);
  EXPECT_EQ(model->eventsNamed("k.2").size(), 0u);  // normalised "k_2" is not "k2"
  EXPECT_EQ(model->eventsNamed("k2").size(), 20u);
}

TEST(TimelineModelTest, BadTraceFilesAreErrors) {
  QTemporaryDir dir;
  const std::string bad = dir.filePath(QStringLiteral("bad.json")).toStdString();
  std::ofstream(bad) << "{\"traceEvents\": [ {\"ph\":\"X\", ";
  auto result = loadTimeline(bad);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.message().find("bad.json"), std::string::npos) << result.message();
  auto missing = loadTimeline(dir.filePath(QStringLiteral("missing.json")).toStdString());
  EXPECT_FALSE(missing.ok());
}

// W/S/A/D, wheel and fit keep the visible range consistent: zoom keeps the anchor, pan moves by a fraction, and
// zooming in then out returns to the same window.
TEST(TimelineViewTest, ZoomAndPanKeepTheRangeConsistent) {
  TimelineView view;
  view.resize(1000, 400);
  view.show();
  auto model = modelFromText(syntheticTrace(5000));
  ASSERT_TRUE(model);
  view.setGroups({{model, model->startNs(), QString(), {}}});
  const double totalSpan = static_cast<double>(model->endNs() - model->startNs());
  EXPECT_LE(view.visibleStartNs(), 0.0);
  EXPECT_GE(view.visibleEndNs(), totalSpan);

  view.setVisibleRange(100000, 200000);
  EXPECT_DOUBLE_EQ(view.visibleStartNs(), 100000);
  EXPECT_DOUBLE_EQ(view.visibleEndNs(), 200000);
  view.zoomBy(2, 0.25);  // the point at a quarter of the width stays put
  EXPECT_NEAR(view.visibleStartNs(), 112500, 1e-6);
  EXPECT_NEAR(view.visibleEndNs(), 162500, 1e-6);
  view.zoomBy(0.5, 0.25);
  EXPECT_NEAR(view.visibleStartNs(), 100000, 1e-6);
  EXPECT_NEAR(view.visibleEndNs(), 200000, 1e-6);
  view.panBy(0.5);
  EXPECT_NEAR(view.visibleStartNs(), 150000, 1e-6);
  EXPECT_NEAR(view.visibleEndNs(), 250000, 1e-6);

  const double span = view.visibleEndNs() - view.visibleStartNs();
  QTest::keyClick(&view, Qt::Key_W);
  EXPECT_NEAR(view.visibleEndNs() - view.visibleStartNs(), span / 1.5, 1e-6);
  QTest::keyClick(&view, Qt::Key_S);
  EXPECT_NEAR(view.visibleEndNs() - view.visibleStartNs(), span, 1e-6);
  const double before = view.visibleStartNs();
  QTest::keyClick(&view, Qt::Key_D);
  EXPECT_NEAR(view.visibleStartNs(), before + span * 0.15, 1e-6);
  QTest::keyClick(&view, Qt::Key_A);
  EXPECT_NEAR(view.visibleStartNs(), before, 1e-6);
  EXPECT_NEAR(view.nsPerPixel() * view.plotWidth(), view.visibleEndNs() - view.visibleStartNs(), 1e-6);

  // Drag pans by the dragged pixels.
  const double startBefore = view.visibleStartNs();
  const QPoint from(view.plotLeft() + 400, TimelineView::kRulerHeight + 50);
  QTest::mousePress(&view, Qt::LeftButton, {}, from);
  QMouseEvent move(QEvent::MouseMove, QPointF(from - QPoint(100, 0)), view.mapToGlobal(QPointF(from - QPoint(100, 0))),
                   Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&view, &move);
  QTest::mouseRelease(&view, Qt::LeftButton, {}, from - QPoint(100, 0));
  EXPECT_NEAR(view.visibleStartNs(), startBefore + 100 * view.nsPerPixel(), 1e-3);

  // Zoom never goes past the whole trace (plus margins) or below 20 ns.
  for (int i = 0; i < 60; ++i) view.zoomBy(0.5);
  EXPECT_LE(view.visibleEndNs() - view.visibleStartNs(), totalSpan * 1.5 + 1);
  for (int i = 0; i < 60; ++i) view.zoomBy(2);
  EXPECT_GE(view.visibleEndNs() - view.visibleStartNs(), 20 - 1e-9);

  QTest::keyClick(&view, Qt::Key_F);  // nothing selected: fit everything
  EXPECT_LE(view.visibleStartNs(), 0.0);
  EXPECT_GE(view.visibleEndNs(), totalSpan);

  // Painting a fitted 10k-slice trace draws about one box per pixel per row, not one per slice.
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  view.render(&image);
  EXPECT_GT(view.lastRunsDrawn(), 0);
  EXPECT_LT(view.lastRunsDrawn(), 3 * (view.plotWidth() + 2) + 200);
}

TEST(TimelineViewTest, ClickSelectsAndFillsTheDetailsRangeSelectSummarises) {
  TimelinePanel panel;
  panel.resize(1400, 500);
  panel.show();
  auto model = modelFromText(syntheticTrace(200));
  ASSERT_TRUE(model);
  panel.setTrace(model, QStringLiteral("synthetic.json"));
  TimelineView* view = panel.view();
  view->setVisibleRange(0, 2000);  // kernels 0..19, 100 ns each
  QCoreApplication::processEvents();
  // Kernel 3 ("k3"), event index: every kernel is followed by its child.
  uint32_t kernel3 = 0;
  for (uint32_t i = 0; i < model->trace().events.size(); ++i)
    if (model->trace().events[i].name == "k3") {
      kernel3 = i;
      break;
    }
  const QRectF box = view->eventRect(0, kernel3);
  ASSERT_FALSE(box.isEmpty());
  QSignalSpy selected(view, &TimelineView::eventSelected);
  QTest::mouseClick(view, Qt::LeftButton, {}, box.center().toPoint());
  ASSERT_EQ(selected.count(), 1);
  EXPECT_EQ(view->selection().group, 0);
  EXPECT_EQ(view->selection().event, kernel3);
  const QString details = panel.details()->toPlainText();
  EXPECT_TRUE(details.contains(QStringLiteral("k3"))) << details.toStdString();
  EXPECT_TRUE(details.contains(QStringLiteral("\"bytes\": 3"))) << details.toStdString();  // all args
  EXPECT_TRUE(details.contains(QStringLiteral("stream 7"))) << details.toStdString();
  EXPECT_TRUE(details.contains(QStringLiteral("100 ns"))) << details.toStdString();

  // The child row: the child of kernel 3.
  const QRectF childBox = view->eventRect(0, kernel3 + 1);
  QTest::mouseClick(view, Qt::LeftButton, {}, childBox.center().toPoint());
  EXPECT_EQ(view->selection().event, kernel3 + 1);
  // Empty space clears the selection.
  QTest::mouseClick(view, Qt::LeftButton, {}, QPoint(view->plotLeft() + 5, view->height() - 5));
  EXPECT_EQ(view->selection().event, -1);

  // Shift+drag from 0 to ~500 ns: kernels 0..4 and their children.
  QSignalSpy ranged(view, &TimelineView::rangeSelected);
  const int y = TimelineView::kRulerHeight + 40;
  const int x0 = static_cast<int>(view->plotLeft() + (0 - view->visibleStartNs()) / view->nsPerPixel());
  const int x1 = static_cast<int>(view->plotLeft() + (495 - view->visibleStartNs()) / view->nsPerPixel());
  QTest::mousePress(view, Qt::LeftButton, Qt::ShiftModifier, QPoint(x0, y));
  QMouseEvent move(QEvent::MouseMove, QPointF(x1, y), view->mapToGlobal(QPointF(x1, y)), Qt::NoButton, Qt::LeftButton,
                   Qt::ShiftModifier);
  QApplication::sendEvent(view, &move);
  QTest::mouseRelease(view, Qt::LeftButton, Qt::ShiftModifier, QPoint(x1, y));
  ASSERT_EQ(ranged.count(), 1);
  ASSERT_TRUE(view->hasRange());
  const RangeSummary expected = model->summarize(static_cast<int64_t>(view->rangeFrom()) + model->startNs(),
                                                 static_cast<int64_t>(view->rangeTo()) + model->startNs());
  EXPECT_EQ(expected.count, 10);
  EXPECT_TRUE(panel.details()->toPlainText().contains(QStringLiteral("10 slices")))
      << panel.details()->toPlainText().toStdString();
  // `f` fits the range.
  QTest::keyClick(view, Qt::Key_F);
  EXPECT_LE(view->visibleStartNs(), view->rangeFrom());
  EXPECT_GE(view->visibleEndNs(), view->rangeTo());
  EXPECT_LT(view->visibleEndNs() - view->visibleStartNs(), 700);

  // Search covers events outside the visible window and reveals them.
  view->setVisibleRange(0, 500);
  EXPECT_EQ(panel.search(QStringLiteral("k4")), 40);
  panel.findPrevious();  // the last k4, far right
  const profiler::TraceEvent& last = model->trace().events[static_cast<size_t>(view->selection().event)];
  EXPECT_EQ(last.name, "k4");
  const double lastTs = static_cast<double>(last.tsNs - model->startNs());
  EXPECT_LE(view->visibleStartNs(), lastTs);
  EXPECT_GE(view->visibleEndNs(), lastTs);
}

TEST_F(TimelineWindowTest, BadTraceKeepsTheCurrentOne) {
  const auto files = corpusTraces();
  if (files.empty()) GTEST_SKIP() << "corpus traces not found at " << kTraces;
  ASSERT_TRUE(testing::openTraceAndWait(*window, QString::fromStdString(files.front().string())));
  auto shown = window->timeline()->view()->groups()[0].model;
  QTemporaryDir dir;
  const QString bad = dir.filePath(QStringLiteral("broken.json"));
  std::ofstream(bad.toStdString()) << "[{\"ph\":\"X\",\"ts\":1,";
  QSignalSpy failed(window.get(), &MainWindow::loadFailed);
  window->openTrace(bad);
  ASSERT_TRUE(testing::waitFor([&] { return failed.count() > 0; }));
  EXPECT_TRUE(window->lastError().contains(QStringLiteral("broken.json"))) << window->lastError().toStdString();
  ASSERT_EQ(window->timeline()->view()->groups().size(), 1u);
  EXPECT_EQ(window->timeline()->view()->groups()[0].model, shown);
}

// The comparison table shows the numbers `fusionscope-cli compare --json` prints (the CLI when it was built,
// else the same library call).
TEST_F(TimelineWindowTest, ComparisonTableMatchesCompareJson) {
  const std::string before = kTraces + "/kineto_alexnet_critical_path.json";
  const std::string after = kTraces + "/kineto_mtia_inference_rank0.json";
  if (!std::filesystem::exists(before) || !std::filesystem::exists(after))
    GTEST_SKIP() << "corpus traces not found at " << kTraces;
  ASSERT_TRUE(testing::waitForTrace(
      *window, [&] { window->openTraceComparison(QString::fromStdString(before), QString::fromStdString(after)); }));
  TimelinePanel* panel = window->timeline();
  ASSERT_TRUE(panel->isComparison());
  // With the timeline focused, W/S/A/D/F are the timeline's, not the window's (D toggles the graph diff).
  QApplication::setActiveWindow(window.get());
  panel->view()->setFocus();
  QAction* diff = nullptr;
  for (QAction* action : window->findChildren<QAction*>())
    if (action->shortcut() == QKeySequence(QStringLiteral("D"))) diff = action;
  ASSERT_NE(diff, nullptr);
  const bool diffBefore = diff->isChecked();
  const double start = panel->view()->visibleStartNs();
  QTest::keyClick(panel->view(), Qt::Key_D);
  EXPECT_GT(panel->view()->visibleStartNs(), start);
  EXPECT_EQ(diff->isChecked(), diffBefore);
  ASSERT_EQ(panel->view()->groups().size(), 2u);
  // Aligned at each trace's first kernel.
  for (const auto& g : panel->view()->groups()) EXPECT_EQ(g.offsetNs, g.model->firstKernelNs());

  std::string jsonText;
  if (std::filesystem::exists(FS_CLI_PATH)) {
    QProcess cli;
    cli.start(QString::fromUtf8(FS_CLI_PATH), {QStringLiteral("compare"), QString::fromStdString(before),
                                            QString::fromStdString(after), QStringLiteral("--json")});
    ASSERT_TRUE(testing::waitForProcess(cli));
    ASSERT_EQ(cli.exitCode(), 0) << cli.readAllStandardError().toStdString();
    jsonText = cli.readAllStandardOutput().toStdString();
  } else {
    auto a = profiler::importChromeTrace(before);
    auto b = profiler::importChromeTrace(after);
    ASSERT_TRUE(a.ok() && b.ok());
    jsonText = profiler::comparisonJson(profiler::compareTraces(*a, *b, nullptr));
  }
  const nlohmann::json json = nlohmann::json::parse(jsonText);
  QTableWidget* table = panel->comparisonTable();
  auto rowOf = [&](const QString& metric) {
    for (int r = 0; r < table->rowCount(); ++r)
      if (table->item(r, 0) != nullptr && table->item(r, 0)->text() == metric) return r;
    return -1;
  };
  auto value = [&](const QString& metric, int column) -> int64_t {
    const int r = rowOf(metric);
    EXPECT_GE(r, 0) << metric.toStdString();
    return r < 0 ? -1 : table->item(r, column)->data(Qt::UserRole).toLongLong();
  };
  for (const auto& [side, column] : {std::pair<const char*, int>{"before", 1}, {"after", 2}}) {
    SCOPED_TRACE(side);
    const nlohmann::json& s = json[side];
    EXPECT_EQ(value(QStringLiteral("kernel count"), column), s["kernel_count"].get<int64_t>());
    EXPECT_EQ(value(QStringLiteral("kernel time"), column), s["kernel_time_ns"].get<int64_t>());
    EXPECT_EQ(value(QStringLiteral("device time"), column), s["device_time_ns"].get<int64_t>());
    EXPECT_EQ(value(QStringLiteral("busy"), column), s["busy_ns"].get<int64_t>());
    EXPECT_EQ(value(QStringLiteral("idle gaps"), column), s["gaps"]["total_ns"].get<int64_t>());
    EXPECT_EQ(value(QStringLiteral("gap count"), column), s["gaps"]["count"].get<int64_t>());
    EXPECT_EQ(value(QStringLiteral("bytes moved"), column), s["bytes"].get<int64_t>());
    EXPECT_EQ(value(QStringLiteral("span"), column), s["span_ns"].get<int64_t>());
  }
  EXPECT_GT(json["before"]["kernel_count"].get<int64_t>(), 0);
  EXPECT_EQ(table->rowCount(), 9 + static_cast<int>(json["mappings"].size()));
}

// In a comparison, selecting a fused "after" kernel highlights the "before" kernels it replaced (membership from
// the module), and selecting one of those highlights the fused kernel.
TEST(TimelineViewTest, ComparisonSelectionHighlightsReplacedKernels) {
  auto before = modelFromText(R"([
{"ph":"X","cat":"kernel","name":"add","pid":0,"tid":1,"ts":0,"dur":2},
{"ph":"X","cat":"kernel","name":"mul","pid":0,"tid":1,"ts":3,"dur":2},
{"ph":"X","cat":"kernel","name":"dot","pid":0,"tid":1,"ts":6,"dur":5},
{"ph":"X","cat":"kernel","name":"add","pid":0,"tid":1,"ts":12,"dur":2}])");
  auto after = modelFromText(R"([
{"ph":"X","cat":"kernel","name":"fusion.1","pid":0,"tid":1,"ts":100,"dur":3},
{"ph":"X","cat":"kernel","name":"dot","pid":0,"tid":1,"ts":104,"dur":5}])");
  ASSERT_TRUE(before && after);
  profiler::FusionMembership membership;
  membership.members["fusion.1"] = {"add", "mul"};
  TimelinePanel panel;
  panel.resize(1200, 400);
  panel.setComparison(before, QStringLiteral("off.json"), after, QStringLiteral("on.json"), &membership);
  const auto& groups = panel.view()->groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].offsetNs, 0);
  EXPECT_EQ(groups[1].offsetNs, 100000);   // aligned at the first kernel
  panel.view()->selectEvent(1, 0, false);  // fusion.1
  EXPECT_EQ(groups[0].highlighted, (std::vector<uint32_t>{0, 1, 3}));
  EXPECT_TRUE(panel.details()->toPlainText().contains(QStringLiteral("replaced: add, mul")))
      << panel.details()->toPlainText().toStdString();
  panel.view()->selectEvent(0, 1, false);  // mul
  EXPECT_EQ(groups[1].highlighted, (std::vector<uint32_t>{0}));
  panel.view()->selectEvent(0, 2, false);  // dot maps to itself
  EXPECT_EQ(groups[1].highlighted, (std::vector<uint32_t>{1}));
  // Align at the chosen event: "dot" at 6 µs before, 104 µs after.
  ASSERT_TRUE(panel.alignAtSelection());
  EXPECT_EQ(groups[0].offsetNs, 6000);
  EXPECT_EQ(groups[1].offsetNs, 104000);
  panel.alignAtFirstKernel();
  EXPECT_EQ(groups[0].offsetNs, 0);
  EXPECT_EQ(groups[1].offsetNs, 100000);

  // The user names the runs: the title, the timeline's group labels and the table's columns follow.
  QSignalSpy renamed(&panel, &TimelinePanel::tracesRenamed);
  panel.renameTraces({QStringLiteral("unfused run"), QStringLiteral("fused run")});
  EXPECT_EQ(renamed.count(), 1);
  EXPECT_EQ(panel.traceNames(), (QStringList{QStringLiteral("unfused run"), QStringLiteral("fused run")}));
  EXPECT_EQ(groups[0].label, QStringLiteral("before: unfused run"));
  EXPECT_EQ(groups[1].label, QStringLiteral("after: fused run"));
  EXPECT_EQ(panel.comparisonTable()->horizontalHeaderItem(1)->text(), QStringLiteral("before: unfused run"));
  QString title;
  for (QLabel* label : panel.findChildren<QLabel*>())
    if (label->text().contains(QStringLiteral(" vs "))) title = label->text();
  EXPECT_TRUE(title.contains(QStringLiteral("unfused run")) && title.contains(QStringLiteral("fused run")) &&
              title.contains(QStringLiteral("aligned at")))
      << title.toStdString();
  // A name list of the wrong length changes nothing.
  panel.renameTraces({QStringLiteral("one")});
  EXPECT_EQ(groups[0].label, QStringLiteral("before: unfused run"));
  // A new module's fusion members (the window opened another module): the comparison is rebuilt, names kept.
  profiler::FusionMembership none;
  panel.setFusionMembership(&none);
  ASSERT_TRUE(panel.isComparison());
  EXPECT_EQ(panel.view()->groups()[0].label, QStringLiteral("before: unfused run"));
  panel.view()->selectEvent(1, 0, false);  // fusion.1 now replaces nothing known
  EXPECT_TRUE(panel.view()->groups()[0].highlighted.empty());
}

// Kernel <-> fusion on the MNIST sample: selecting the kernel named after a fusion (PTX spelling "fusion_N")
// selects that fusion at the last stage, and selecting a fusion in the graph highlights its launches.
TEST_F(TimelineWindowTest, KernelSelectsItsFusionAndBack) {
  QSignalSpy loaded(window.get(), &MainWindow::documentLoaded);
  window->openPath(QString::fromStdString(kMnistModule));
  ASSERT_TRUE(testing::waitFor([&] { return loaded.count() > 0 && !window->isBusy(); }));
  window->setCurrentStage(0);
  ASSERT_TRUE(testing::waitFor([&] { return !window->isBusy(); }));
  const auto document = window->document();
  const StageEntry& last = document->stages.back();
  ASSERT_TRUE(last.module);
  const std::vector<std::string> fusions = testing::lastStageFusions(*window);
  ASSERT_GE(fusions.size(), 2u);

  // A trace with one launch per fusion (PTX names), twice, and an unrelated memcpy.
  std::string text = "[";
  int64_t ts = 0;
  for (int round = 0; round < 2; ++round)
    for (const std::string& f : fusions) {
      text += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + profiler::normalizeKernelName(f) +
              "\",\"pid\":0,\"tid\":1,\"ts\":" + std::to_string(ts) + ",\"dur\":5},";
      ts += 10;
    }
  text += "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":2,\"ts\":0,\"dur\":3}]";
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("mnist_kernels.json"));
  std::ofstream(path.toStdString()) << text;
  ASSERT_TRUE(testing::openTraceAndWait(*window, path));

  TimelinePanel* panel = window->timeline();
  const auto model = panel->view()->groups()[0].model;
  const std::string target = fusions[1];
  const std::vector<uint32_t> launches = model->eventsNamed(target);
  ASSERT_EQ(launches.size(), 2u);
  panel->view()->selectEvent(0, launches[0], true);
  ASSERT_TRUE(testing::waitFor([&] { return !window->isBusy(); }));
  EXPECT_EQ(window->currentStage(), static_cast<int>(document->stages.size()) - 1);
  EXPECT_EQ(window->selectedName().toStdString(), target);
  // The inspector shows the kernel's timing next to the fusion's bytes, and the achieved bandwidth.
  const QString inspector = window->inspector()->detailsText();
  EXPECT_TRUE(inspector.contains(QStringLiteral("2 launches, 10 µs in total, 5 µs mean"))) << inspector.toStdString();
  EXPECT_TRUE(inspector.contains(QStringLiteral("GB/s"))) << inspector.toStdString();

  // Reverse: select another fusion in the graph; its two launches light up in the timeline.
  const std::string other = fusions[0];
  ASSERT_TRUE(
      window->selectInstruction(QString::fromStdString(last.module->entry()->name()), QString::fromStdString(other)));
  const auto& highlighted = panel->view()->groups()[0].highlighted;
  ASSERT_EQ(highlighted.size(), 2u);
  for (uint32_t e : highlighted)
    EXPECT_EQ(profiler::normalizeKernelName(model->trace().events[e].name), profiler::normalizeKernelName(other));
  // A kernel that names no instruction selects nothing.
  EXPECT_FALSE(window->selectKernel(QStringLiteral("Memcpy HtoD")));
}

// One click: the open module runs through `fusionscope-cli run --trace` with fusion off and on, and the two traces
// open as a comparison with fewer kernels after fusion.
TEST_F(TimelineWindowTest, RunFusionOffAndOnOpensAComparison) {
  EXPECT_FALSE(window->runFusionComparison());  // nothing open yet
  EXPECT_TRUE(window->lastError().contains(QStringLiteral("Open an HLO module"))) << window->lastError().toStdString();
  if (!std::filesystem::exists(FS_CLI_PATH)) GTEST_SKIP() << "fusionscope-cli not built: " << FS_CLI_PATH;
  qputenv("FUSIONSCOPE_CLI", FS_CLI_PATH);
  core::PipelineSpec spec = window->pipelineSpec();
  spec.preset = "cpu";
  window->setPipelineSpec(spec);
  QSignalSpy loaded(window.get(), &MainWindow::documentLoaded);
  window->openPath(QString::fromStdString(kMnistModule));
  ASSERT_TRUE(testing::waitFor([&] { return loaded.count() > 0 && !window->isBusy(); }));
  QSignalSpy traces(window.get(), &MainWindow::traceLoaded);
  QSignalSpy failed(window.get(), &MainWindow::loadFailed);
  ASSERT_TRUE(window->runFusionComparison()) << window->lastError().toStdString();
  EXPECT_TRUE(window->isRunning());
  ASSERT_TRUE(testing::waitFor([&] { return traces.count() + failed.count() > 0; }));
  ASSERT_EQ(traces.count(), 1) << window->lastError().toStdString();
  TimelinePanel* panel = window->timeline();
  ASSERT_TRUE(panel->isComparison());
  const profiler::TraceComparison* comparison = panel->comparison();
  ASSERT_NE(comparison, nullptr);
  EXPECT_GT(comparison->before.kernelCount, comparison->after.kernelCount);
  EXPECT_GT(comparison->after.kernelCount, 0);
  // The fused kernels map to the unfused ones through the module's fusion members.
  bool mapped = false;
  for (const auto& m : comparison->mappings) mapped = mapped || (m.via == "stages.json" && !m.before.empty());
  EXPECT_TRUE(mapped);
  qunsetenv("FUSIONSCOPE_CLI");
}

}  // namespace
}  // namespace fusionscope::viewer
