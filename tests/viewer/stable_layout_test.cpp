#include "viewer/stable_layout.h"

#include <QGraphicsView>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/document.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/scope_groups.h"
#include "tests/common/source_paths.h"

namespace fusionscope::viewer {
namespace {

const std::string kLlm = std::string(FS_SOURCE_DIR) + "/tests/data/xla/modules/llm_train.before.txt";
const std::string kMnist = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";
const std::string kMobilenet = std::string(FS_SOURCE_DIR) + "/../shared/corpus/hlo/model_mobilenet_v2_torchxla_train.hlo";

// A stage and the one after it: the pass put abs.2 between mul.1 and sub.1; everything else is kept.
constexpr const char* kBefore = R"(HloModule m
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  add.1 = f32[8] add(p0, p1)
  mul.1 = f32[8] multiply(add.1, p1)
  sub.1 = f32[8] subtract(mul.1, p0)
  neg.1 = f32[8] negate(sub.1)
  exp.1 = f32[8] exponential(neg.1)
  ROOT t = (f32[8], f32[8]) tuple(exp.1, add.1)
})";
constexpr const char* kAfter = R"(HloModule m
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  add.1 = f32[8] add(p0, p1)
  mul.1 = f32[8] multiply(add.1, p1)
  abs.2 = f32[8] abs(mul.1)
  sub.1 = f32[8] subtract(abs.2, p0)
  neg.1 = f32[8] negate(sub.1)
  exp.1 = f32[8] exponential(neg.1)
  ROOT t = (f32[8], f32[8]) tuple(exp.1, add.1)
})";
// A pass that renamed most of the graph (as a fusion pass replaces instructions by fusions).
constexpr const char* kReplaced = R"(HloModule m
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  a.7 = f32[8] add(p0, p1)
  b.7 = f32[8] multiply(a.7, p1)
  c.7 = f32[8] subtract(b.7, p0)
  d.7 = f32[8] negate(c.7)
  e.7 = f32[8] exponential(d.7)
  ROOT r.7 = (f32[8], f32[8]) tuple(e.7, a.7)
})";

std::unique_ptr<core::HloModule> parse(const char* text) {
  auto module = core::parseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.message();
  return module.ok() ? std::move(*module) : nullptr;
}

GraphPoint centre(const GraphNode& node) {
  return {node.x + node.width / 2, node.y + node.height / 2};
}

bool overlap(const GraphNode& a, const GraphNode& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

// The largest distance between a node of `after` and the same node (stableIdentity) in `before`, and how many
// nodes the two share.
std::pair<double, int> largestMove(const GraphModel& before, const GraphModel& after) {
  std::map<std::string, GraphPoint> was;
  for (size_t i = 0; i < before.nodes.size(); ++i)
    was[stableIdentity(before, static_cast<int>(i))] = centre(before.nodes[i]);
  double most = 0;
  int shared = 0;
  for (size_t i = 0; i < after.nodes.size(); ++i) {
    auto it = was.find(stableIdentity(after, static_cast<int>(i)));
    if (it == was.end() || it->first.empty()) continue;
    const GraphPoint now = centre(after.nodes[i]);
    most = std::max(most, std::hypot(now.x - it->second.x, now.y - it->second.y));
    ++shared;
  }
  return {most, shared};
}

TEST(StableLayoutTest, KeptNodesStayWhereTheyWereAndTheNewOneFitsBetween) {
  auto before = parse(kBefore);
  auto after = parse(kAfter);
  ASSERT_TRUE(before && after);
  GraphOptions options;
  options.stableLayout = true;
  StatusOr<GraphModel> base = layoutModule(*before, options);
  ASSERT_TRUE(base.ok()) << base.message();
  StatusOr<GraphModel> fresh = layoutModule(*after, options);
  ASSERT_TRUE(fresh.ok()) << fresh.message();
  StatusOr<GraphModel> stable = layoutModuleStable(*after, options, *base);
  ASSERT_TRUE(stable.ok()) << stable.message();

  EXPECT_EQ(stable->pinnedNodes, 8);
  auto [most, shared] = largestMove(*base, *stable);
  EXPECT_EQ(shared, 8);
  EXPECT_LT(most, 1.0) << "kept nodes must not move";
  // `dot` alone moves them (the new node takes a rank): that is what the stable layout is for.
  EXPECT_GT(largestMove(*base, *fresh).first, 1.0);

  const int added = stable->findNode("abs.2");
  ASSERT_GE(added, 0);
  const GraphNode& node = stable->nodes[static_cast<size_t>(added)];
  EXPECT_GT(node.width, 0);
  for (size_t i = 0; i < stable->nodes.size(); ++i) {
    if (static_cast<int>(i) == added) continue;
    EXPECT_FALSE(overlap(node, stable->nodes[i])) << "abs.2 overlaps " << stable->nodes[i].name;
  }
  // Near what it reads and what reads it, not somewhere else.
  const GraphPoint near = centre(stable->nodes[static_cast<size_t>(stable->findNode("mul.1"))]);
  EXPECT_LT(std::hypot(centre(node).x - near.x, centre(node).y - near.y), 300);
  // Every edge drawn, the ones of abs.2 routed by Graphviz, and everything inside the drawing's box.
  ASSERT_EQ(stable->edges.size(), fresh->edges.size());
  for (const GraphEdge& edge : stable->edges) {
    EXPECT_GE(edge.spline.size(), 4u);
    for (const GraphPoint& p : edge.spline) {
      EXPECT_GE(p.x, stable->left - 0.01);
      EXPECT_LE(p.x, stable->left + stable->width + 0.01);
      EXPECT_GE(p.y, stable->top - 0.01);
      EXPECT_LE(p.y, stable->top + stable->height + 0.01);
    }
  }
}

TEST(StableLayoutTest, AStageThatReplacedMostNodesIsLaidOutAfresh) {
  auto before = parse(kBefore);
  auto replaced = parse(kReplaced);
  ASSERT_TRUE(before && replaced);
  GraphOptions options;
  options.stableLayout = true;
  StatusOr<GraphModel> base = layoutModule(*before, options);
  ASSERT_TRUE(base.ok()) << base.message();
  StatusOr<GraphModel> stable = layoutModuleStable(*replaced, options, *base);
  ASSERT_TRUE(stable.ok()) << stable.message();
  StatusOr<GraphModel> fresh = layoutModule(*replaced, options);
  ASSERT_TRUE(fresh.ok()) << fresh.message();
  // 2 of 8 kept (the parameters): below kStableKeepFraction, so `dot`'s own layout.
  EXPECT_EQ(stable->pinnedNodes, -1);
  ASSERT_EQ(stable->nodes.size(), fresh->nodes.size());
  for (size_t i = 0; i < stable->nodes.size(); ++i) {
    EXPECT_DOUBLE_EQ(stable->nodes[i].x, fresh->nodes[i].x);
    EXPECT_DOUBLE_EQ(stable->nodes[i].y, fresh->nodes[i].y);
  }
  EXPECT_EQ(stable->left, 0);
  EXPECT_EQ(stable->top, 0);
}

// Steps through every stage of a big module's grouped view (what the window shows first) with the stable layout,
// as the window does: each stage pinned to the one before. Prints each step's time and what moved; with
// FS_STABLE_LAYOUT_TIMINGS set, also what a fresh dot layout of the stage takes and moves (docs/VIEWER.md's table),
// which doubles the test's time.
void stepThroughStages(const std::string& path, bool grouped) {
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  core::PipelineSpec spec;
  spec.preset = "cpu";
  auto document = loadPath(path, spec);
  ASSERT_TRUE(document.ok()) << document.message();
  const auto& stages = (*document)->stages;
  GraphOptions options;
  options.collapseFusions = true;
  options.stableLayout = true;
  if (grouped) {
    ScopeTree tree = buildScopeTree(*stages.front().module->entry());
    options.groupScopes = true;
    options.expandedGroups = tree.autoExpanded(kFirstViewNodes);
  }
  StatusOr<GraphModel> previous = layoutModule(*stages.front().module, options);
  ASSERT_TRUE(previous.ok()) << previous.message();
  for (size_t position = 1; position < stages.size(); ++position) {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<GraphModel> stable = layoutModuleStable(*stages[position].module, options, *previous);
    const double stableMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(stable.ok()) << stable.message();
    auto [most, shared] = largestMove(*previous, *stable);
    if (stable->pinnedNodes >= 0) {
      EXPECT_LT(most, 1.0) << "stage " << position;
    }
    std::printf("%s stage %zu (%s): %zu nodes, %s, %d shared, largest move %.1f pt; stable %.0f ms",
                std::filesystem::path(path).filename().c_str(), position, stages[position].pass.c_str(),
                stable->nodes.size(), stable->pinnedNodes >= 0 ? "pinned" : "afresh", shared, most, stableMs);
    if (std::getenv("FS_STABLE_LAYOUT_TIMINGS") != nullptr) {
      const auto freshStart = std::chrono::steady_clock::now();
      StatusOr<GraphModel> fresh = layoutModule(*stages[position].module, options);
      const double freshMs =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - freshStart).count();
      ASSERT_TRUE(fresh.ok()) << fresh.message();
      std::printf("; dot alone %.0f ms, moving nodes up to %.0f pt", freshMs, largestMove(*previous, *fresh).first);
    }
    std::printf("\n");
    previous = std::move(stable);
  }
}

TEST(StableLayoutTest, StagesOfTheLlmGrouped) {
  stepThroughStages(kLlm, true);
}

TEST(StableLayoutTest, StagesOfMobilenetGrouped) {
  stepThroughStages(kMobilenet, true);
}

// The ungrouped graph (fusions collapsed): 2,000-2,900 nodes per stage, new edges drawn straight. Graphviz on
// 2-4k nodes per stage takes 7-13 minutes in the dev build (over 25 under AddressSanitizer), the longest test of
// the suite by far, for the same assertion the grouped mobilenet and LLM steps make on the same code; so it runs
// when asked: FS_LONG_TESTS=1 ctest --preset dev -R StagesOfMobilenetUngrouped.
TEST(StableLayoutTest, StagesOfMobilenetUngrouped) {
  if (std::getenv("FS_LONG_TESTS") == nullptr) {
    GTEST_SKIP() << "7-13 min of Graphviz: set FS_LONG_TESTS=1 to run it (the grouped steps check the same code)";
  }
  stepThroughStages(kMobilenet, false);
}

using StableLayoutWindowTest = testing::MainWindowTest;

TEST_F(StableLayoutWindowTest, AStageStepKeepsSharedNodesAndShowsWhatChanged) {
  ASSERT_TRUE(testing::openAndWait(*window, kMnist));
  EXPECT_TRUE(window->stableLayout());  // on by default
  bool pinnedStep = false;
  for (int position = 1; position < window->stageCount(); ++position) {
    std::shared_ptr<const GraphModel> before = window->graphScene()->sharedGraph();
    ASSERT_TRUE(before);
    window->nextStage();
    ASSERT_TRUE(testing::waitIdle(*window));
    ASSERT_EQ(window->currentStage(), position);
    const GraphModel& after = *window->graphScene()->graph();
    if (after.pinnedNodes < 0) continue;  // the fusion pass replaced most nodes: laid out afresh
    pinnedStep = true;
    auto [most, shared] = largestMove(*before, after);
    EXPECT_GT(shared, 0);
    EXPECT_LT(most, 1.0) << "stage " << position;
    // The view shows what the stage changed (or the stage changed nothing that is drawn).
    GraphScene* scene = window->graphScene();
    const QRectF visible = window->graphView()->mapToScene(window->graphView()->viewport()->rect()).boundingRect();
    bool changed = false, inView = false;
    for (size_t i = 0; i < after.nodes.size(); ++i) {
      const int node = static_cast<int>(i);
      if (!scene->isAdded(node) && !scene->isFusedNode(node)) continue;
      changed = true;
      inView = inView || visible.intersects(scene->nodeRect(node));
    }
    EXPECT_TRUE(!changed || inView) << "stage " << position;
  }
  EXPECT_TRUE(pinnedStep);

  // Off: every stage laid out afresh by dot; the choice is kept in the settings.
  window->setStableLayout(false);
  ASSERT_TRUE(testing::waitIdle(*window));
  window->previousStage();
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_EQ(window->graphScene()->graph()->pinnedNodes, -1);
  window->close();
  EXPECT_FALSE(QSettings().value(QStringLiteral("view/stableLayout"), true).toBool());
}

}  // namespace
}  // namespace fusionscope::viewer
