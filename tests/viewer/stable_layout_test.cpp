#include "viewer/stable_layout.h"

#include <QGraphicsView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/text/hlo_parser.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/document.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "core/dot/scope_groups.h"
#include "viewer/stage_walk.h"
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

// One stage step from HLO text `from` to `to`: the graph shown before (`from` laid out), `to` laid out afresh by
// `dot`, and `to` laid out stable around the graph before. Empty (with the failure reported) when one fails.
struct StepLayouts {
  std::optional<GraphModel> base, fresh, stable;
};
StepLayouts layOutStep(const char* from, const char* to) {
  StepLayouts out;
  auto before = parse(from);
  auto after = parse(to);
  if (!before || !after) return out;
  GraphOptions options;
  options.stableLayout = true;
  StatusOr<GraphModel> base = layoutModule(*before, options);
  StatusOr<GraphModel> fresh = layoutModule(*after, options);
  if (!base.ok() || !fresh.ok()) {
    ADD_FAILURE() << (base.ok() ? fresh.message() : base.message());
    return out;
  }
  StatusOr<GraphModel> stable = layoutModuleStable(*after, options, *base);
  if (!stable.ok()) {
    ADD_FAILURE() << stable.message();
    return out;
  }
  out.base = std::move(*base);
  out.fresh = std::move(*fresh);
  out.stable = std::move(*stable);
  return out;
}

TEST(StableLayoutTest, KeptNodesStayWhereTheyWereAndTheNewOneFitsBetween) {
  const auto [base, fresh, stable] = layOutStep(kBefore, kAfter);
  ASSERT_TRUE(base && fresh && stable);

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
  const auto [base, fresh, stable] = layOutStep(kBefore, kReplaced);
  ASSERT_TRUE(base && fresh && stable);
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

// kBefore with neg.1 drawn differently (another opcode: another label, another size), nothing else changed.
constexpr const char* kRelabelled = R"(HloModule m
ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  add.1 = f32[8] add(p0, p1)
  mul.1 = f32[8] multiply(add.1, p1)
  sub.1 = f32[8] subtract(mul.1, p0)
  neg.1 = f32[8] round-nearest-even(sub.1)
  exp.1 = f32[8] exponential(neg.1)
  ROOT t = (f32[8], f32[8]) tuple(exp.1, add.1)
})";

TEST(StableLayoutTest, AStageThatChangedNothingDrawnKeepsEveryNodeAndEdge) {
  auto before = parse(kBefore);
  ASSERT_TRUE(before);
  GraphOptions options;
  options.stableLayout = true;
  StatusOr<GraphModel> base = layoutModule(*before, options);
  ASSERT_TRUE(base.ok()) << base.message();
  StatusOr<GraphModel> same = layoutModuleStable(*before, options, *base);
  ASSERT_TRUE(same.ok()) << same.message();
  EXPECT_EQ(same->pinnedNodes, static_cast<int>(base->nodes.size()));
  ASSERT_EQ(same->nodes.size(), base->nodes.size());
  for (size_t i = 0; i < same->nodes.size(); ++i) {
    EXPECT_DOUBLE_EQ(same->nodes[i].x, base->nodes[i].x);
    EXPECT_DOUBLE_EQ(same->nodes[i].y, base->nodes[i].y);
    EXPECT_DOUBLE_EQ(same->nodes[i].width, base->nodes[i].width);
  }
  ASSERT_EQ(same->edges.size(), base->edges.size());
  for (const GraphEdge& edge : same->edges) {
    // The same edge of the base (by its ends) with the same drawing.
    bool found = false;
    for (const GraphEdge& old : base->edges) {
      if (old.from != edge.from || old.to != edge.to) continue;
      found = true;
      ASSERT_EQ(old.spline.size(), edge.spline.size());
      for (size_t p = 0; p < edge.spline.size(); ++p) {
        EXPECT_DOUBLE_EQ(old.spline[p].x, edge.spline[p].x);
        EXPECT_DOUBLE_EQ(old.spline[p].y, edge.spline[p].y);
      }
    }
    EXPECT_TRUE(found);
  }
}

TEST(StableLayoutTest, ARelabelledNodeIsResizedAroundItsCentre) {
  const auto [base, fresh, stable] = layOutStep(kBefore, kRelabelled);
  ASSERT_TRUE(base && fresh && stable);
  const GraphNode& was = base->nodes[static_cast<size_t>(base->findNode("neg.1"))];
  const GraphNode& now = stable->nodes[static_cast<size_t>(stable->findNode("neg.1"))];
  const GraphNode& sized = fresh->nodes[static_cast<size_t>(fresh->findNode("neg.1"))];
  EXPECT_GT(std::abs(was.width - sized.width), 1.0) << "the test needs a label of another width";
  EXPECT_NEAR(now.width, sized.width, 0.01) << "Graphviz's size for the new label";
  EXPECT_NEAR(now.height, sized.height, 0.01);
  EXPECT_NEAR(centre(now).x, centre(was).x, 0.01);
  EXPECT_NEAR(centre(now).y, centre(was).y, 0.01);
  // Its edges are drawn again, to its new border.
  for (const GraphEdge& edge : stable->edges) {
    if (stable->nodes[static_cast<size_t>(edge.to)].name != "neg.1") continue;
    ASSERT_TRUE(edge.hasArrow);
    EXPECT_NEAR(edge.arrowTip.y, now.y, 2.0) << "the arrow ends on neg.1's top border";
  }
}

// A chain of `length` negates; with `extra`, one more instruction reads the middle of it.
std::string chainModule(int length, bool extra) {
  std::string text = "HloModule chain\nENTRY main {\n  p0 = f32[8] parameter(0)\n  a0 = f32[8] add(p0, p0)\n";
  for (int i = 1; i < length; ++i)
    text += "  a" + std::to_string(i) + " = f32[8] negate(a" + std::to_string(i - 1) + ")\n";
  const std::string last = "a" + std::to_string(length - 1);
  if (extra) {
    text += "  x = f32[8] exponential(a" + std::to_string(length / 2) + ")\n";
    text += "  ROOT t = (f32[8], f32[8]) tuple(" + last + ", x)\n}\n";
  } else {
    text += "  ROOT t = (f32[8]) tuple(" + last + ")\n}\n";
  }
  return text;
}

// Above kRoutedEdgesMaxNodes a step lays out only what it added (with its neighbours) and draws the new edges
// straight: the kept nodes and their edges do not move, the new node sits beside what it reads.
TEST(StableLayoutTest, ABigGraphPlacesWhatAStepAddedNextToItsNeighbours) {
  if (testing::kSanitized) GTEST_SKIP() << "a 450-node dot layout under AddressSanitizer takes minutes";
  const int length = kRoutedEdgesMaxNodes + 50;
  auto before = core::parseHloModule(chainModule(length, false));
  auto after = core::parseHloModule(chainModule(length, true));
  ASSERT_TRUE(before.ok() && after.ok());
  GraphOptions options;
  options.stableLayout = true;
  StatusOr<GraphModel> base = layoutModule(**before, options);
  ASSERT_TRUE(base.ok()) << base.message();
  StatusOr<GraphModel> stable = layoutModuleStable(**after, options, *base);
  ASSERT_TRUE(stable.ok()) << stable.message();
  ASSERT_GT(stable->pinnedNodes, kRoutedEdgesMaxNodes);
  auto [most, shared] = largestMove(*base, *stable);
  EXPECT_LT(most, 1.0);
  const int x = stable->findNode("x");
  ASSERT_GE(x, 0);
  const GraphNode& added = stable->nodes[static_cast<size_t>(x)];
  for (size_t i = 0; i < stable->nodes.size(); ++i) {
    if (static_cast<int>(i) == x) continue;
    EXPECT_FALSE(overlap(added, stable->nodes[i])) << stable->nodes[i].name;
  }
  const GraphNode& operand = stable->nodes[static_cast<size_t>(stable->findNode("a" + std::to_string(length / 2)))];
  EXPECT_LT(std::hypot(centre(added).x - centre(operand).x, centre(added).y - centre(operand).y), 400);
  int straight = 0;
  for (const GraphEdge& edge : stable->edges) {
    ASSERT_GE(edge.spline.size(), 4u) << stable->nodes[static_cast<size_t>(edge.from)].name;
    if (edge.from != x && edge.to != x) continue;
    ++straight;
    // One straight piece: the inner control points on the line between its ends.
    const GraphPoint a = edge.spline.front(), b = edge.spline.back(), m = edge.spline[1];
    EXPECT_NEAR((b.x - a.x) * (m.y - a.y) - (b.y - a.y) * (m.x - a.x), 0, 1e-6);
    EXPECT_TRUE(edge.hasArrow);
  }
  EXPECT_GE(straight, 1);  // a -> x, and x -> t unless that long edge is cut into a stub
}

// Steps through every stage of a big module's grouped view (what the window shows first) with the stable layout,
// as the window does: each stage pinned to the one before. Prints each step's time and what moved; with
// FS_STABLE_LAYOUT_TIMINGS set, also what a fresh dot layout of the stage takes and moves (docs/VIEWER.md's table),
// which doubles the test's time.
// `afreshAtMost`: stages that may be laid out afresh (too much replaced); the others must keep their nodes.
void stepThroughStages(const std::string& path, bool grouped, int afreshAtMost = 1 << 20) {
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
    auto tree = std::make_shared<const core::ScopeTree>(core::buildScopeTree(*stages.front().module->entry()));
    options.groupScopes = true;
    options.expandedGroups = tree->autoExpanded(kFirstViewNodes);
    options.scopeReference = tree;  // as the window does: a program's stretches are the first stage's
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
    } else {
      --afreshAtMost;
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
  EXPECT_GE(afreshAtMost, 0) << "more stages laid out afresh than expected";
}

TEST(StableLayoutTest, StagesOfTheLlmGrouped) {
  stepThroughStages(kLlm, true, 0);
}

TEST(StableLayoutTest, StagesOfMobilenetGrouped) {
  // The stretches are the first stage's at every stage (core::ScopeTree reference): at most two stages replace
  // enough to be laid out afresh. In the cpu preset those are tuple-simplify (the grouped view goes from 48 to 100
  // nodes there, while the ~2,000 duplicates the batch-norm expansion made are not merged yet) and the cse after the
  // simplification loop (XLA CPU's order), which merges them (back to 48).
  stepThroughStages(kMobilenet, true, 2);
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

// --walk-stages: every stage after the first, each timed, as JSON.
TEST_F(StableLayoutWindowTest, WalkStagesTimesEveryStep) {
  ASSERT_TRUE(testing::openAndWait(*window, kMnist));
  StageWalk walk(window.get());
  QSignalSpy finished(&walk, &StageWalk::finished);
  walk.start();
  ASSERT_TRUE(testing::waitFor([&] { return finished.count() > 0; }));
  ASSERT_EQ(walk.steps().size(), static_cast<size_t>(window->stageCount() - 1));
  EXPECT_EQ(window->currentStage(), window->stageCount() - 1);
  for (size_t i = 0; i < walk.steps().size(); ++i) {
    const StepTiming& step = walk.steps()[i];
    EXPECT_EQ(step.position, static_cast<int>(i) + 1);
    EXPECT_TRUE(step.error.isEmpty()) << step.error.toStdString();
    EXPECT_GT(step.nodes, 0);
    EXPECT_GE(step.totalMs, step.layoutMs + step.sceneMs) << "stage " << step.position;
    EXPECT_GT(step.paintMs, 0);
  }
  const QJsonObject json = QJsonDocument::fromJson(walk.toJson(QStringLiteral("mnist"))).object();
  EXPECT_EQ(json[QStringLiteral("steps")].toArray().size(), window->stageCount() - 1);
  const QJsonObject first = json[QStringLiteral("steps")].toArray().first().toObject();
  for (const char* key : {"stage", "layout_ms", "scene_ms", "paint_ms", "total_ms"})
    EXPECT_TRUE(first.contains(QLatin1String(key))) << key;
  const QJsonObject summary = json[QStringLiteral("summary")].toObject();
  EXPECT_GE(summary[QStringLiteral("p95_ms")].toDouble(), summary[QStringLiteral("p50_ms")].toDouble());
  EXPECT_TRUE(json[QStringLiteral("stable_layout")].toBool());

  // Walking again from the last stage takes no step; stepping back to the start and walking again hits the cache.
  StageWalk again(window.get());
  QSignalSpy done(&again, &StageWalk::finished);
  window->setCurrentStage(0);
  ASSERT_TRUE(testing::waitIdle(*window));
  again.setMaxSteps(2);
  again.start();
  ASSERT_TRUE(testing::waitFor([&] { return done.count() > 0; }));
  ASSERT_EQ(again.steps().size(), 2u);
}

}  // namespace
}  // namespace fusionscope::viewer
