// Scope groups: the op_name scope hierarchy (and the structural fallback for flat op_names) that big modules open
// grouped by, the grouped graph built from it, and the window's first view and expand/collapse of groups.
#include "core/dot/scope_groups.h"

#include <QAction>
#include <QLineF>
#include <QTest>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/pipeline/pass_registry.h"
#include "core/text/hlo_parser.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/document.h"
#include "viewer/graph_model.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_search.h"
#include "viewer/side_pane.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/main_window.h"
#include "tests/common/source_paths.h"

namespace fusionscope::viewer {
namespace {

const std::string kLlm = std::string(FS_SOURCE_DIR) + "/tests/data/xla/modules/llm_train.before.txt";
const std::string kMnist = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";
const std::string kMobilenet = std::string(FS_SOURCE_DIR) + "/../shared/corpus/hlo/model_mobilenet_v2_torchxla_train.hlo";

int countKind(const GraphModel& graph, GraphNode::Kind kind) {
  int n = 0;
  for (const GraphNode& node : graph.nodes) n += node.kind == kind ? 1 : 0;
  return n;
}

TEST(ScopeTreeTest, JaxOpNamesGiveTheModelsLayers) {
  auto module = core::parseHloModuleFile(kLlm);
  ASSERT_TRUE(module.ok()) << module.message();
  const core::HloComputation& entry = *(*module)->entry();
  core::ScopeTree tree = core::buildScopeTree(entry);
  EXPECT_EQ(tree.source, core::ScopeTree::Source::kOpName);
  // jax.named_scope names in interop/llm_train.py, forward (jvp) and backward (transpose(jvp)).
  int block = tree.find("jit(step)/jvp(block_2)");
  ASSERT_GE(block, 0);
  EXPECT_EQ(tree.groups[static_cast<size_t>(block)].label, "jvp(block_2)");
  EXPECT_GE(tree.find("jit(step)/transpose(jvp(block_2))"), 0);
  int attn = tree.find("jit(step)/jvp(block_2)/attn");
  ASSERT_GE(attn, 0);
  EXPECT_EQ(tree.groups[static_cast<size_t>(attn)].parent, block);
  // A group counts what is inside it, nested groups included; the attention's main category is a contraction
  // or elementwise work, and dot is among its categories.
  const core::ScopeGroup& attention = tree.groups[static_cast<size_t>(attn)];
  EXPECT_GT(attention.instructionCount, attention.directCount);
  bool contraction = false;
  for (const auto& [category, count] : attention.categories) contraction |= category == core::OpCategory::kContraction;
  EXPECT_TRUE(contraction);
  // Every instruction but the root is in a group (parameters and constants join their users' groups).
  int64_t instructions = static_cast<int64_t>(entry.instructions().size());
  EXPECT_GT(instructions, 3000);
  EXPECT_EQ(tree.ungrouped, 1);
  EXPECT_EQ(static_cast<int64_t>(tree.groupOf.size()), instructions - 1);
  // The first view: as deep as stays readable.
  std::set<std::string> open = tree.autoExpanded(80);
  EXPECT_TRUE(open.count("jit(step)"));  // the one top-level scope is opened
  EXPECT_LE(tree.visibleCount(open), 80);
  EXPECT_GE(tree.visibleCount(open), 10);
  EXPECT_EQ(tree.visibleCount({}), static_cast<int>(tree.roots.size()) + tree.ungrouped);
}

TEST(ScopeTreeTest, FlatOpNamesFallBackToStretchesOfTheProgram) {
  if (!std::filesystem::exists(kMobilenet)) GTEST_SKIP() << "corpus not found";
  auto module = core::parseHloModuleFile(kMobilenet);
  ASSERT_TRUE(module.ok()) << module.message();
  const core::HloComputation& entry = *(*module)->entry();
  core::ScopeTree tree = core::buildScopeTree(entry);
  EXPECT_EQ(tree.source, core::ScopeTree::Source::kStructure);
  EXPECT_GE(tree.roots.size(), 30u);
  EXPECT_LE(tree.roots.size(), 60u);
  // Stretches are consecutive, cover the module once and are labelled by what they mostly run.
  int covered = 0;
  for (int root : tree.roots) {
    const core::ScopeGroup& g = tree.groups[static_cast<size_t>(root)];
    EXPECT_EQ(g.detail, g.path);
    EXPECT_FALSE(g.label.empty());
    EXPECT_FALSE(g.children.empty());
    covered += g.instructionCount;
  }
  EXPECT_EQ(covered + tree.ungrouped, static_cast<int>(entry.instructions().size()));
  EXPECT_LE(tree.visibleCount(tree.autoExpanded(80)), 80);
}

// A program grouped by structure keeps the first stage's stretches at every later stage (the reference), so a
// stretch is the same group from stage to stage: what the stable layout needs to keep it in place.
TEST(ScopeTreeTest, StretchesOfTheFirstStageHoldAtLaterStages) {
  if (!std::filesystem::exists(kMobilenet)) GTEST_SKIP() << "corpus not found";
  core::PipelineSpec spec;
  spec.preset = "gpu";
  auto document = loadPath(kMobilenet, spec);
  ASSERT_TRUE(document.ok()) << document.message();
  const auto& stages = (*document)->stages;
  const core::ScopeTree reference = core::buildScopeTree(*stages.front().module->entry());
  ASSERT_EQ(reference.source, core::ScopeTree::Source::kStructure);
  std::set<std::string> paths;
  for (const core::ScopeGroup& g : reference.groups) paths.insert(g.path);
  int differentCuts = 0;
  for (size_t position = 1; position < stages.size(); ++position) {
    const core::HloComputation& entry = *stages[position].module->entry();
    const core::ScopeTree own = core::buildScopeTree(entry);
    const core::ScopeTree kept = core::buildScopeTree(entry, &reference);
    ASSERT_EQ(kept.source, core::ScopeTree::Source::kStructure);
    int shared = 0, held = 0;
    for (const core::ScopeGroup& g : own.groups) shared += paths.count(g.path) != 0 ? 1 : 0;
    if (shared < static_cast<int>(own.groups.size())) ++differentCuts;
    for (const core::ScopeGroup& g : kept.groups) {
      EXPECT_EQ(paths.count(g.path), 1u) << "stage " << position << ": " << g.path << " is not a first-stage stretch";
      EXPECT_GT(g.instructionCount, 0) << g.path << " is empty";
      EXPECT_FALSE(g.label.empty());
      if (g.parent < 0) held += g.instructionCount;
    }
    EXPECT_EQ(held + kept.ungrouped, static_cast<int>(entry.instructions().size())) << "stage " << position;
    // An instruction the first stage had is in the stretch that held it there.
    for (const auto& inst : entry.instructions()) {
      auto was = reference.groupOfName.find(inst->name());
      auto now = kept.groupOf.find(inst.get());
      if (was == reference.groupOfName.end() || now == kept.groupOf.end()) continue;
      EXPECT_EQ(kept.groups[static_cast<size_t>(now->second)].path,
                reference.groups[static_cast<size_t>(was->second)].path)
          << inst->name();
    }
  }
  // Without the reference each stage cuts its own stretches, and they differ: what the reference is for.
  EXPECT_GT(differentCuts, 0);
}

TEST(GroupedGraphTest, CollapsedGroupsAreNodesWithMergedEdges) {
  auto module = core::parseHloModuleFile(kLlm);
  ASSERT_TRUE(module.ok()) << module.message();
  core::ScopeTree tree = core::buildScopeTree(*(*module)->entry());
  GraphOptions options;
  options.collapseFusions = true;
  options.groupScopes = true;
  options.expandedGroups = tree.autoExpanded(80);
  StatusOr<GraphModel> graph = layoutModule(**module, options);
  ASSERT_TRUE(graph.ok()) << graph.message();
  // Every visible group and instruction is a node, except small constants drawn in their users' labels.
  EXPECT_LE(static_cast<int>(graph->nodes.size()), tree.visibleCount(options.expandedGroups));
  EXPECT_GE(static_cast<int>(graph->nodes.size()), tree.visibleCount(options.expandedGroups) - 3);
  EXPECT_GT(countKind(*graph, GraphNode::Kind::kGroup), 10);
  // The expanded top scope is a box around the rest.
  int top = graph->findGroupCluster("jit(step)");
  ASSERT_GE(top, 0);
  EXPECT_GT(graph->clusters[static_cast<size_t>(top)].width, 100);
  // One edge per pair of nodes when a group is involved, counting the operand edges it merges.
  std::set<std::pair<int, int>> pairs;
  int merged = 0;
  for (const GraphEdge& edge : graph->edges) {
    bool group = graph->nodes[static_cast<size_t>(edge.from)].kind == GraphNode::Kind::kGroup ||
                 graph->nodes[static_cast<size_t>(edge.to)].kind == GraphNode::Kind::kGroup;
    if (!group) continue;
    EXPECT_TRUE(pairs.emplace(edge.from, edge.to).second) << "two edges between the same groups";
    merged += edge.count > 1 ? 1 : 0;
    EXPECT_EQ(edge.spline.size() % 3, 1u);
  }
  EXPECT_GT(merged, 5);
  // A group node says what it is: label, instruction count, categories.
  int block = graph->findGroup("jit(step)/jvp(block_0)");
  ASSERT_GE(block, 0);
  const GraphNode& node = graph->nodes[static_cast<size_t>(block)];
  ASSERT_GE(node.lines.size(), 3u);
  EXPECT_EQ(node.lines[0], "jvp(block_0)");
  EXPECT_NE(node.lines[1].find("instructions"), std::string::npos);
  // Instructions hidden in a group lead to it.
  const core::HloInstruction* hidden = nullptr;
  for (const auto& [inst, group] : tree.groupOf) {
    // Not a small constant: those are drawn inside their users' labels, never as nodes of their own.
    if (inst->opcode() == core::HloOpcode::kConstant) continue;
    if (tree.representative(inst, options.expandedGroups) == tree.find("jit(step)/jvp(block_0)")) hidden = inst;
  }
  ASSERT_NE(hidden, nullptr);
  EXPECT_EQ(graph->findNode(hidden->name()), -1);
  EXPECT_EQ(graph->findHoldingGroup(hidden->name()), block);
}

// Measures how far the grouped view's nodes move between consecutive stages of the LLM (each laid out afresh by
// dot): printed for docs/VIEWER.md; asserts only that every stage's grouped graph lays out with the same groups.
TEST(GroupedGraphTest, GroupsAcrossStagesOfTheLlm) {
  core::PipelineSpec spec;
  spec.preset = "cpu";
  auto document = loadPath(kLlm, spec);
  ASSERT_TRUE(document.ok()) << document.message();
  const auto& stages = (*document)->stages;
  core::ScopeTree tree = core::buildScopeTree(*stages.front().module->entry());
  GraphOptions options;
  options.collapseFusions = true;
  options.groupScopes = true;
  options.expandedGroups = tree.autoExpanded(kFirstViewNodes);
  std::map<std::string, GraphPoint> before;
  for (size_t position = 0; position < stages.size(); ++position) {
    StatusOr<GraphModel> graph = layoutModule(*stages[position].module, options);
    ASSERT_TRUE(graph.ok()) << graph.message();
    std::map<std::string, GraphPoint> centres;
    for (const GraphNode& node : graph->nodes) {
      if (node.kind == GraphNode::Kind::kGroup)
        centres[node.name] = {node.x + node.width / 2, node.y + node.height / 2};
    }
    if (!before.empty()) {
      EXPECT_EQ(centres.size(), before.size()) << "stage " << position;
      double moved = 0, most = 0;
      int shared = 0;
      for (const auto& [name, p] : centres) {
        auto it = before.find(name);
        if (it == before.end()) continue;
        double d = std::hypot(p.x - it->second.x, p.y - it->second.y);
        moved += d;
        most = std::max(most, d);
        ++shared;
      }
      std::printf("llm stage %zu: %d groups, mean move %.0f pt, largest %.0f pt (graph %.0f x %.0f pt)\n", position,
                  shared, shared > 0 ? moved / shared : 0.0, most, graph->width, graph->height);
    }
    before = std::move(centres);
  }
}

using ScopeWindowTest = testing::MainWindowTest;

TEST_F(ScopeWindowTest, BigModulesOpenGroupedAndGroupsExpandAndCollapse) {
  ASSERT_TRUE(testing::openAndWait(*window, kMnist));
  EXPECT_FALSE(window->groupScopes());  // small: drawn whole

  ASSERT_TRUE(testing::openAndWait(*window, kLlm)) << window->lastError().toStdString();
  EXPECT_TRUE(window->groupScopes());
  const GraphModel* graph = window->graphScene()->graph();
  ASSERT_NE(graph, nullptr);
  const int firstNodes = window->graphScene()->nodeItemCount();
  EXPECT_LE(firstNodes, kFirstViewNodes);
  EXPECT_GT(countKind(*graph, GraphNode::Kind::kGroup), 10);

  // Expanding a group (what double-click and E do) draws its contents in a box; collapsing it goes back.
  const std::string path = "jit(step)/transpose(jvp(block_1))";
  int node = graph->findGroup(path);
  ASSERT_GE(node, 0);
  window->toggleGroup(QString::fromStdString(path));
  ASSERT_TRUE(testing::waitIdle(*window));
  graph = window->graphScene()->graph();
  EXPECT_EQ(graph->findGroup(path), -1);
  int box = graph->findGroupCluster(path);
  ASSERT_GE(box, 0);
  EXPECT_EQ(window->selectedName().toStdString(), path);  // the expanded group stays selected
  EXPECT_GT(window->graphScene()->nodeItemCount(), firstNodes);
  window->toggleGroup(QString::fromStdString(path));
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_EQ(window->graphScene()->nodeItemCount(), firstNodes);

  // Selecting an instruction hidden in a collapsed group selects the group.
  graph = window->graphScene()->graph();
  std::string hidden;
  for (const auto& [name, group] : graph->heldBy) {
    if (group == graph->findGroup(path)) hidden = name;
  }
  ASSERT_FALSE(hidden.empty());
  ASSERT_TRUE(window->selectInstruction(QString(), QString::fromStdString(hidden)));
  EXPECT_EQ(window->selectedName().toStdString(), path);
  // The inspector describes the group (its scope, members, opcodes), not "only a DOT graph".
  const QString details = window->inspector()->detailsText();
  EXPECT_TRUE(details.contains(QStringLiteral("Scope group"))) << details.toStdString();
  EXPECT_TRUE(details.contains(QStringLiteral("instructions of the entry computation"))) << details.toStdString();
  EXPECT_FALSE(details.contains(QStringLiteral("only a DOT graph"))) << details.toStdString();

  // A stage that fuses marks the groups it fused in (their fusions are hidden in them).
  int fusionStage = -1;
  for (int position = 0; position < window->stageCount(); ++position) {
    if (!window->document()->stages[static_cast<size_t>(position)].changes.fused.empty()) fusionStage = position;
  }
  ASSERT_GE(fusionStage, 0);
  // An expanded group stays expanded across a stage step, the fusion pass's included.
  window->toggleGroup(QString::fromStdString(path));
  ASSERT_TRUE(testing::waitIdle(*window));
  window->setCurrentStage(fusionStage);
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_GE(window->graphScene()->graph()->findGroupCluster(path), 0) << "the expansion was lost at the step";
  window->toggleGroup(QString::fromStdString(path));
  ASSERT_TRUE(testing::waitIdle(*window));
  graph = window->graphScene()->graph();
  EXPECT_GE(graph->findGroup(path), 0);
  int fusedGroups = 0;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (graph->nodes[i].kind == GraphNode::Kind::kGroup && window->graphScene()->isFusedNode(static_cast<int>(i)))
      ++fusedGroups;
  }
  EXPECT_GT(fusedGroups, 5);

  // Grouping off draws instructions again (fusions collapsed: the module is big; 734 nodes at the fusion stage).
  window->setGroupScopes(false);
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_EQ(countKind(*window->graphScene()->graph(), GraphNode::Kind::kGroup), 0);
  EXPECT_GT(window->graphScene()->nodeItemCount(), 4 * kFirstViewNodes);
}

// A stage step keeps the node at the view's centre where it was in the view, and the view shows what changed.
// Search also finds instructions inside collapsed groups: the groups that hold them are the matches.
TEST_F(ScopeWindowTest, SearchFindsInstructionsInsideCollapsedGroups) {
  ASSERT_TRUE(testing::openAndWait(*window, kLlm)) << window->lastError().toStdString();
  ASSERT_TRUE(window->groupScopes());
  const GraphModel& graph = *window->graphScene()->graph();
  // An instruction of the first stage that the grouped graph does not draw.
  std::string hidden;
  for (const auto& inst : window->currentEntry()->module->entry()->instructions()) {
    if (inst->opcode() == core::HloOpcode::kDot && graph.findNode(inst->name()) < 0) {
      hidden = inst->name();
      break;
    }
  }
  ASSERT_FALSE(hidden.empty());
  const int count = window->graphSearch()->search(QString::fromStdString("^" + hidden + "$"), true);
  ASSERT_EQ(count, 1);
  const int match = window->graphSearch()->matches().front();
  EXPECT_EQ(graph.nodes[static_cast<size_t>(match)].kind, GraphNode::Kind::kGroup);
  EXPECT_EQ(window->graphScene()->selectedNode(), match);
  // At the fusion stage most instructions are inside fusions the collapsed groups hide: still found, each row saying
  // which fusion and which group hold it.
  int fusionStage = -1;
  for (int position = 0; position < window->stageCount(); ++position)
    if (!window->document()->stages[static_cast<size_t>(position)].changes.fused.empty()) fusionStage = position;
  ASSERT_GE(fusionStage, 0);
  window->setCurrentStage(fusionStage);
  ASSERT_TRUE(testing::waitIdle(*window));
  ASSERT_GT(window->graphSearch()->search(QStringLiteral("^exponential$"), true), 0);
  int nested = 0;
  for (const SearchResult& result : window->graphSearch()->results()) {
    EXPECT_EQ(result.opcode, "exponential");
    nested += result.where.find("in collapsed fusion") != std::string::npos &&
              result.where.find("in collapsed group") != std::string::npos;
  }
  EXPECT_GT(nested, 0);
  window->setCurrentStage(0);
  ASSERT_TRUE(testing::waitIdle(*window));

  // Turning grouping off, the instruction itself is found.
  window->setGroupScopes(false);
  ASSERT_TRUE(testing::waitIdle(*window));
  ASSERT_EQ(window->graphSearch()->search(QString::fromStdString("^" + hidden + "$"), true), 1);
  EXPECT_EQ(window->graphScene()->graph()->nodes[static_cast<size_t>(window->graphSearch()->matches().front())].name, hidden);
}

TEST_F(ScopeWindowTest, StageStepKeepsTheCentreNodeInPlace) {
  ASSERT_TRUE(testing::openAndWait(*window, kMnist));
  auto document = window->document();
  GraphView* view = window->graphView();
  bool stepped = false;
  for (int position = 0; position + 1 < window->stageCount() && !stepped; ++position) {
    window->setCurrentStage(position);
    ASSERT_TRUE(testing::waitIdle(*window));
    // An operand of a fusion the next stage makes: drawn in both stages, next to the change.
    const core::HloModule& before = *document->stages[static_cast<size_t>(position)].module;
    const core::HloModule& after = *document->stages[static_cast<size_t>(position + 1)].module;
    std::string operand;
    for (const auto& inst : after.entry()->instructions()) {
      if (!inst->isFusion() || before.entry()->findInstruction(inst->name()) != nullptr) continue;
      for (const core::HloInstruction* o : inst->operands()) {
        if (window->graphScene()->graph()->findNode(o->name()) >= 0 && o->opcode() == core::HloOpcode::kParameter) {
          operand = o->name();
        }
      }
    }
    if (operand.empty()) continue;
    view->actualSize();
    view->zoomBy(3);  // zoomed in: the graph is bigger than the view, so centring is not clamped
    int node = window->graphScene()->graph()->findNode(operand);
    view->centerOn(window->graphScene()->nodeRect(node).center());
    QPoint at = view->mapFromScene(window->graphScene()->nodeRect(node).center());
    window->nextStage();
    ASSERT_TRUE(testing::waitIdle(*window));
    node = window->graphScene()->graph()->findNode(operand);
    ASSERT_GE(node, 0);
    const GraphModel& graph = *window->graphScene()->graph();
    // Where the view would be if it stayed on the operand: when nothing this stage changed is in that viewport,
    // the window rightly moves to the change instead; try the next candidate.
    const QSizeF viewSize = view->mapToScene(view->viewport()->rect()).boundingRect().size();
    QRectF anchored(QPointF(), viewSize);
    anchored.moveCenter(window->graphScene()->nodeRect(node).center());
    bool changeNearOperand = false;
    for (size_t c = 0; c < graph.clusters.size(); ++c) {
      if (window->graphScene()->isFusedCluster(static_cast<int>(c)))
        changeNearOperand |= anchored.intersects(window->graphScene()->clusterRect(static_cast<int>(c)));
    }
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (window->graphScene()->isFusedNode(static_cast<int>(i)) || window->graphScene()->isAdded(static_cast<int>(i)))
        changeNearOperand |= anchored.intersects(window->graphScene()->nodeRect(static_cast<int>(i)));
    }
    if (!changeNearOperand) continue;
    QPoint now = view->mapFromScene(window->graphScene()->nodeRect(node).center());
    EXPECT_LE((now - at).manhattanLength(), 12) << operand << " moved in the view at stage " << position + 1;
    // The new fusion is in view.
    QRectF visible = view->mapToScene(view->viewport()->rect()).boundingRect();
    bool changeInView = false;
    for (size_t c = 0; c < graph.clusters.size(); ++c) {
      if (window->graphScene()->isFusedCluster(static_cast<int>(c)))
        changeInView |= visible.intersects(window->graphScene()->clusterRect(static_cast<int>(c)));
    }
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      if (window->graphScene()->isFusedNode(static_cast<int>(i)))
        changeInView |= visible.intersects(window->graphScene()->nodeRect(static_cast<int>(i)));
    }
    EXPECT_TRUE(changeInView);
    stepped = true;
  }
  EXPECT_TRUE(stepped) << "no stage of MNIST makes a fusion of a parameter";
}

// Side by side: the previous stage in a second pane, the selection mirrored by instruction name both ways.
TEST_F(ScopeWindowTest, SideBySideShowsThePreviousStageAndMirrorsTheSelection) {
  ASSERT_TRUE(testing::openAndWait(*window, kMnist));
  const int last = window->stageCount() - 1;
  window->setCurrentStage(last);
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_FALSE(window->sidePane()->view()->isVisible());
  window->setSideBySide(true);
  ASSERT_TRUE(testing::waitFor([&] { return window->sidePane()->scene()->graph() != nullptr; }));
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_TRUE(window->sidePane()->view()->isVisible());
  const auto document = window->document();
  const core::HloModule& previous = *document->stages[static_cast<size_t>(last - 1)].module;
  const GraphModel& side = *window->sidePane()->scene()->graph();
  const GraphModel& graph = *window->graphScene()->graph();
  // The side pane draws the previous stage: an instruction it has that this stage does not.
  bool previousOnly = false;
  for (const GraphNode& node : side.nodes) {
    if (node.instruction != nullptr) {
      EXPECT_EQ(node.instruction->parent()->parent(), &previous) << node.name;
    }
  }
  for (const auto& inst : previous.entry()->instructions()) {
    previousOnly |= side.findNode(inst->name()) >= 0 && graph.findNode(inst->name()) < 0;
  }
  EXPECT_TRUE(previousOnly);
  // Main -> side: a parameter is in both.
  std::string shared;
  for (const GraphNode& node : graph.nodes) {
    if (node.opcode == "parameter" && side.findNode(node.name) >= 0) shared = node.name;
  }
  ASSERT_FALSE(shared.empty());
  window->selectNode(graph.findNode(shared));
  EXPECT_EQ(window->sidePane()->scene()->selectedNode(), side.findNode(shared));
  // Side -> main: clicking another shared node in the side pane selects it in the main one.
  std::string other;
  for (const GraphNode& node : side.nodes) {
    if (node.kind == GraphNode::Kind::kInstruction && node.name != shared && graph.findNode(node.name) >= 0)
      other = node.name;
  }
  ASSERT_FALSE(other.empty());
  emit window->sidePane()->scene()->nodeClicked(side.findNode(other));
  EXPECT_EQ(window->selectedName().toStdString(), other);
  EXPECT_EQ(window->graphScene()->selectedNode(), graph.findNode(other));

  // The viewports move together: the same zoom and the same scene point at the centre, both ways.
  GraphView* mainView = window->graphView();
  GraphView* sideView = window->sidePane()->view();
  auto centre = [](GraphView* view) { return view->mapToScene(view->viewport()->rect().center()); };
  ASSERT_TRUE(window->sidePane()->viewportsSynced());
  mainView->zoomBy(1.7);
  mainView->centerOn(window->graphScene()->nodeRect(graph.findNode(shared)).center());
  EXPECT_DOUBLE_EQ(sideView->zoom(), mainView->zoom());
  EXPECT_LE(QLineF(centre(sideView), centre(mainView)).length(), 2.0 / mainView->zoom());
  sideView->centerOn(window->sidePane()->scene()->nodeRect(side.findNode(other)).center());
  EXPECT_LE(QLineF(centre(sideView), centre(mainView)).length(), 2.0 / mainView->zoom());
  // Off: the side pane stays where it is.
  window->sidePane()->syncAction()->setChecked(false);
  const QPointF sideBefore = centre(sideView);
  mainView->zoomBy(0.5);
  EXPECT_NE(sideView->zoom(), mainView->zoom());
  EXPECT_LE(QLineF(centre(sideView), sideBefore).length(), 1.0);
  window->sidePane()->syncAction()->setChecked(true);
  EXPECT_DOUBLE_EQ(sideView->zoom(), mainView->zoom());

  window->setSideBySide(false);
  EXPECT_FALSE(window->sidePane()->view()->isVisible());
}

// Side by side with XLA's own result: our cpu pipeline on XLA's MNIST step (before_optimizations) beside XLA's
// after_optimizations of it, the selection mirrored by instruction name although the entry computations differ.
TEST_F(ScopeWindowTest, SideBySideShowsAnXlaModuleAndMirrorsTheSelection) {
  const std::string dir = std::string(FS_SOURCE_DIR) + "/tests/data/xla/mnist_step/fused/";
  window->setPipelineSpec([] {
    core::PipelineSpec spec;
    spec.preset = "cpu";
    return spec;
  }());
  ASSERT_TRUE(testing::openAndWait(*window, dir + "module_0018.jit_step.before_optimizations.txt"));
  window->setCurrentStage(window->stageCount() - 1);
  ASSERT_TRUE(testing::waitIdle(*window));

  // A file that does not parse is reported and changes nothing.
  EXPECT_FALSE(window->showModuleSideBySide(QString::fromStdString(dir + "missing_after_optimizations.txt")));
  EXPECT_FALSE(window->lastError().isEmpty());
  EXPECT_FALSE(window->sidePane()->module());
  EXPECT_FALSE(window->sidePane()->view()->isVisible());

  const QString xla = QString::fromStdString(dir + "module_0018.jit_step.cpu_after_optimizations.txt");
  ASSERT_TRUE(window->showModuleSideBySide(xla));
  ASSERT_TRUE(testing::waitFor([&] { return window->sidePane()->scene()->graph() != nullptr; }));
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_TRUE(window->sidePane()->view()->isVisible());
  const GraphModel& side = *window->sidePane()->scene()->graph();
  const GraphModel& graph = *window->graphScene()->graph();
  for (const GraphNode& node : side.nodes) {
    if (node.instruction != nullptr) {
      EXPECT_EQ(node.instruction->parent()->parent(), window->sidePane()->module().get());
    }
  }
  // Main -> side and side -> main by name, for an instruction both modules draw (XLA keeps parameter names).
  std::string shared, other;
  for (const GraphNode& node : graph.nodes) {
    if (node.kind != GraphNode::Kind::kInstruction || side.findNode(node.name) < 0) continue;
    (shared.empty() ? shared : other) = node.name;
  }
  ASSERT_FALSE(shared.empty());
  ASSERT_FALSE(other.empty());
  window->selectNode(graph.findNode(shared));
  EXPECT_EQ(window->sidePane()->scene()->selectedNode(), side.findNode(shared));
  emit window->sidePane()->scene()->nodeClicked(side.findNode(other));
  EXPECT_EQ(window->selectedName().toStdString(), other);
  EXPECT_EQ(window->graphScene()->selectedNode(), graph.findNode(other));
  // Stepping stages keeps XLA's module beside them; the previous stage comes back on demand.
  window->previousStage();
  ASSERT_TRUE(testing::waitIdle(*window));
  EXPECT_EQ(window->sidePane()->scene()->graph(), &side);
  window->sidePane()->showPreviousStage();
  ASSERT_TRUE(testing::waitFor([&] { return window->sidePane()->scene()->graph() != &side; }));
  EXPECT_FALSE(window->sidePane()->module());
}

}  // namespace
}  // namespace fusionscope::viewer
