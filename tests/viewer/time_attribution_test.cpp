// "Where the time goes" (issue 41): a real JAX dump and its profile (tests/data/xla/mnist_step: XLA's dump of the
// fused MNIST step and the perfetto trace JAX wrote for it), the table by the program's own source lines, its links to
// the graph and the timeline both ways, and the graph coloured by source-line time. Offscreen; main() is in
// viewer_test.cpp.
#include <QTableView>
#include <filesystem>
#include <numeric>

#include <gtest/gtest.h>

#include "tests/common/source_paths.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/main_window.h"
#include "viewer/time_attribution_panel.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"

namespace fusionscope::viewer {
namespace {

namespace fs = std::filesystem;

const fs::path kMnistStep = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "mnist_step";

class TimeAttributionWindowTest : public testing::MainWindowTest {};

TEST_F(TimeAttributionWindowTest, JaxProfileBySourceLineLinksGraphAndTimeline) {
  ASSERT_TRUE(testing::openAndWait(*window, (kMnistStep / "fused").string())) << window->lastError().toStdString();
  window->setCurrentStage(window->stageCount() - 1);  // after optimizations: the module the trace ran
  ASSERT_TRUE(testing::waitIdle(*window));
  ASSERT_TRUE(
      testing::openTraceAndWait(*window, QString::fromStdString((kMnistStep / "perfetto-fused.json.gz").string())))
      << window->lastError().toStdString();

  TimeAttributionPanel* panel = window->timeAttributionPanel();
  const profiler::TimeAttribution& a = panel->attribution();
  ASSERT_GT(a.matchedKernels, 0) << "the trace's kernels ran the last stage's fusions";
  const double rows = std::accumulate(a.rows.begin(), a.rows.end(), 0.0,
                                      [](double sum, const profiler::AttributionRow& r) { return sum + r.ns; });
  EXPECT_NEAR(rows, static_cast<double>(a.matchedNs), 0.01 * static_cast<double>(a.matchedNs));
  ASSERT_FALSE(a.rows.empty());
  EXPECT_NE(a.rows.front().key.find("jax_programs.py:"), std::string::npos) << a.rows.front().key;
  EXPECT_EQ(panel->table()->model()->rowCount(), static_cast<int>(a.rows.size()));

  // Table → graph and timeline: the top row's operations (or the fusions that ran them) and its kernel launches.
  panel->table()->selectRow(0);
  const int top = panel->attributionRow(0);
  ASSERT_GE(top, 0);
  const GraphModel& graph = *window->graphScene()->graph();
  int matched = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) matched += window->graphScene()->isMatch(static_cast<int>(i));
  EXPECT_GT(matched, 0);
  size_t highlighted = 0;
  for (const TimelineView::Group& group : window->timeline()->view()->groups()) highlighted += group.highlighted.size();
  EXPECT_GE(highlighted, static_cast<size_t>(a.rows[static_cast<size_t>(top)].kernels));

  // Graph → table: selecting a fusion of another row selects that row.
  const profiler::AttributionRow& other = a.rows.back();
  ASSERT_FALSE(other.kernelsRun.empty());
  ASSERT_TRUE(window->selectInstruction(QString(), QString::fromStdString(other.kernelsRun.front())));
  const int current = panel->attributionRow(panel->table()->currentIndex().row());
  ASSERT_GE(current, 0);
  const profiler::AttributionRow& selected = a.rows[static_cast<size_t>(current)];
  EXPECT_TRUE(std::count(selected.kernelsRun.begin(), selected.kernelsRun.end(), other.kernelsRun.front()) > 0);

  // Other keys regroup the same time.
  panel->setKey(profiler::AttributionKey::kScope);
  EXPECT_EQ(panel->attribution().key, profiler::AttributionKey::kScope);
  EXPECT_EQ(panel->attribution().matchedNs, a.matchedNs);

  // Colour by source line: every coloured node carries its line's time; the legend says so.
  window->setSourceLineOverlay(true);
  ASSERT_TRUE(window->graphScene()->kernelTimesShown());
  EXPECT_TRUE(window->graphView()->kernelTimeLegendText().contains(QStringLiteral("Source-line time")));
  int coloured = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    coloured += window->graphScene()->kernelTimeOfNode(static_cast<int>(i)) > 0;
  EXPECT_GT(coloured, 0);
  window->setSourceLineOverlay(false);
  EXPECT_FALSE(window->graphScene()->kernelTimesShown());
}

}  // namespace
}  // namespace fusionscope::viewer
