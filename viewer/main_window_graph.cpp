// MainWindow: graph options (collapse, scope groups, neighbourhood, diff, ghosts), the side-by-side pane and its
// mirrored selection, the view across stage steps, search, and Compare Fusions (main_window.h). The window's
// loading, stages and layout wiring are in main_window.cpp.
#include <QFileInfo>
#include <QStringList>
#include <functional>
#include <QLabel>
#include <QLineF>
#include <QRegularExpression>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QToolBar>
#include <algorithm>
#include <set>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_verifier.h"
#include "core/pipeline/fusion_comparison.h"
#include "core/text/hlo_parser.h"
#include "viewer/fusion_comparison_dialog.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/layout_controller.h"
#include "viewer/main_window.h"
#include "viewer/scope_groups.h"

namespace fusionscope::viewer {

void MainWindow::followStageChange(const std::vector<StageAnchor>& anchors) {
  const GraphModel& model = *m_scene->graph();
  for (const StageAnchor& candidate : anchors) {
    int anchor = model.findNode(candidate.name, candidate.computation);
    if (anchor < 0) anchor = model.findGroup(candidate.name);
    if (anchor < 0) continue;
    m_view->centerOn(m_scene->nodeRect(anchor).center() + candidate.offset);
    break;
  }
  // What this stage changed (new instructions, new fusions): when none of it is in view, go to it.
  QRectF changed;
  QRectF visible = m_view->mapToScene(m_view->viewport()->rect()).boundingRect();
  bool inView = false;
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    int node = static_cast<int>(i);
    if (!m_scene->isAdded(node) && !m_scene->isFusedNode(node)) continue;
    QRectF rect = m_scene->nodeRect(node);
    inView = inView || visible.intersects(rect);
    changed = changed.isNull() ? rect : changed.united(rect);
  }
  for (size_t c = 0; c < model.clusters.size(); ++c) {
    if (!m_scene->isFusedCluster(static_cast<int>(c))) continue;
    QRectF rect = m_scene->clusterRect(static_cast<int>(c));
    inView = inView || visible.intersects(rect);
    changed = changed.isNull() ? rect : changed.united(rect);
  }
  if (!changed.isNull() && !inView) m_view->centerOn(changed.center());
}

void MainWindow::setSideBySide(bool on) {
  m_actSideBySide->setChecked(on);
  if (!on) {
    m_sideScene->setGraph(nullptr);
    m_sideModule.reset();
    m_sideModuleGraph.reset();
  }
  updateSidePane();
}

bool MainWindow::showModuleSideBySide(const QString& path) {
  const QString title = QStringLiteral("Cannot show the module side by side");
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModuleFile(path.toStdString());
  if (module.ok()) {
    if (Status verified = core::verifyModule(**module); !verified.ok()) module = verified;
  }
  if (!module.ok()) {
    showError(title, QString::fromStdString(module.message()));
    return false;
  }
  m_sideModule = std::shared_ptr<const core::HloModule>(std::move(*module));
  m_sideModuleName = QFileInfo(path).fileName();
  m_sideModuleGraph.reset();
  // Drawn as a stage of the same size would be: big modules with fusions collapsed; not grouped (its scopes are
  // not the document's).
  GraphOptions options;
  options.collapseFusions =
      m_sideModule->entry() != nullptr && m_sideModule->entry()->instructionCount() > kCollapseFusionsAbove;
  m_layouts->layoutModuleBeside(m_sideModule, options);
  m_actSideBySide->setChecked(true);
  updateSidePane();
  return true;
}

void MainWindow::onSideModuleReady(std::shared_ptr<const core::HloModule> module,
                                   std::shared_ptr<const GraphModel> graph, const QString& error) {
  if (module != m_sideModule) return;  // another module was opened since
  if (!graph) {
    showError(QStringLiteral("Cannot lay out the module"), error);
    m_sideModule.reset();
  }
  m_sideModuleGraph = std::move(graph);
  updateSidePane();
}

void MainWindow::showPreviousStageBeside() {
  m_sideModule.reset();
  m_sideModuleGraph.reset();
  updateSidePane();
}

bool MainWindow::sideBySide() const {
  return m_actSideBySide->isChecked();
}

void MainWindow::updateSidePane() {
  if (m_sideModule) {
    if (!m_actSideBySide->isChecked() || !m_sideModuleGraph) {
      if (!m_actSideBySide->isChecked()) m_sideView->hide();
      return;  // moduleReady brings us back
    }
    if (m_sideView->isHidden()) {
      m_sideView->show();
      const int half = m_graphSplit->width() / 2;
      m_graphSplit->setSizes({half, m_graphSplit->width() - half});
    }
    if (m_sideModuleGraph != m_sideScene->sharedGraph()) {
      m_sidePosition = -1;
      m_sideScene->setTheme(m_scene->theme());
      m_sideScene->setGraph(m_sideModuleGraph);
      m_sideLabel->setText(QStringLiteral("%1 (opened beside the stages)").arg(m_sideModuleName));
      m_sideLabel->adjustSize();
      m_sideView->fitAll();
    }
    mirrorSelection();
    return;
  }
  const int position = m_current - 1;
  if (!m_actSideBySide->isChecked() || position < 0 || !document()) {
    m_sideView->hide();
    return;
  }
  const GraphOptions options = optionsFor(position);
  std::shared_ptr<const GraphModel> graph = m_layouts->cached(position, options);
  if (!graph) {
    // Laid out in the background (around the graph shown, with a stable layout); backgroundReady brings us back.
    m_layouts->prefetch(position, options, m_scene->sharedGraph());
    return;
  }
  if (m_sideView->isHidden()) {
    m_sideView->show();
    const int half = m_graphSplit->width() / 2;
    m_graphSplit->setSizes({half, m_graphSplit->width() - half});
  }
  if (graph != m_sideScene->sharedGraph() || m_sidePosition != position) {
    m_sidePosition = position;
    m_sideScene->setTheme(m_scene->theme());
    m_sideScene->setGraph(graph);
    const StageEntry& stage = document()->stages[static_cast<size_t>(position)];
    m_sideLabel->setText(QStringLiteral("Stage %1: %2 (the stage before)")
                             .arg(stage.index)
                             .arg(QString::fromStdString(stage.label.empty() ? stage.pass : stage.label)));
    m_sideLabel->adjustSize();
    m_sideView->fitAll();
  }
  mirrorSelection();
}

void MainWindow::mirrorSelection() {
  const GraphModel* side = m_sideScene->graph();
  if (side == nullptr || !m_sideView->isVisible()) return;
  int node = -1, cluster = -1;
  if (!m_selectedName.empty()) {
    // By name: an entry instruction is looked for in the side graph's entry, whatever that computation is called.
    const GraphModel* shown = m_scene->graph();
    const bool inEntry = shown != nullptr && (m_selectedComputation.empty() || m_selectedComputation == shown->entry);
    node = side->findNode(m_selectedName, inEntry ? std::string() : m_selectedComputation);
    if (node < 0) node = side->findGroup(m_selectedName);
    if (node < 0) node = side->findHoldingGroup(m_selectedName);
    if (node < 0) cluster = side->findCluster(m_selectedName);
    if (node < 0 && cluster < 0) cluster = side->findGroupCluster(m_selectedName);
  }
  if (cluster >= 0) {
    m_sideScene->setSelectedCluster(cluster);
  } else {
    m_sideScene->setSelectedNode(node);
  }
  if (node >= 0) m_sideView->centerOnRect(m_sideScene->nodeRect(node));
  if (cluster >= 0) m_sideView->centerOnRect(m_sideScene->clusterRect(cluster));
}

bool MainWindow::timeOverlay() const {
  return m_actTimeOverlay->isChecked();
}

void MainWindow::setCollapseFusions(bool collapse) {
  m_options.collapseFusions = collapse;
  m_options.expanded.clear();
  m_options.collapsed.clear();
  m_actCollapse->setChecked(collapse);
  requestLayout();
}

void MainWindow::setGroupScopesOption(bool group, const Document* document) {
  m_options.groupScopes = false;
  m_options.expandedGroups.clear();
  m_actGroups->setChecked(false);
  if (!group || document == nullptr || document->stages.empty()) return;
  // The first view opens the groups of the first stage with a module to a readable depth; later stages use the
  // same paths (op_name scopes survive the passes; stretches are those of this first stage, the reference).
  for (const StageEntry& stage : document->stages) {
    if (!stage.module || stage.module->entry() == nullptr) continue;
    m_scopeTree = std::make_shared<ScopeTree>(buildScopeTree(*stage.module->entry()));
    break;
  }
  m_options.scopeReference = m_scopeTree;
  if (!m_scopeTree || m_scopeTree->groups.empty()) return;
  m_options.groupScopes = true;
  m_options.expandedGroups = m_scopeTree->autoExpanded(kFirstViewNodes);
  m_actGroups->setChecked(true);
}

void MainWindow::setGroupScopes(bool group) {
  if (!m_scopeTree) {
    setGroupScopesOption(group, document().get());
  } else {
    m_options.groupScopes = group;
    m_options.expandedGroups = group ? m_scopeTree->autoExpanded(kFirstViewNodes) : std::set<std::string>();
  }
  m_actGroups->setChecked(m_options.groupScopes);
  m_scene->setGraph(nullptr);  // fit the new graph
  requestLayout();
}

void MainWindow::toggleGroup(const QString& path) {
  std::string group = path.toStdString();
  if (!m_options.expandedGroups.erase(group)) {
    m_options.expandedGroups.insert(group);
  } else {
    // Collapsing a group collapses what is inside it too, so that opening it again starts from its top level.
    std::string prefix = group + "/";
    for (auto it = m_options.expandedGroups.lower_bound(prefix);
         it != m_options.expandedGroups.end() && it->compare(0, prefix.size(), prefix) == 0;)
      it = m_options.expandedGroups.erase(it);
  }
  m_selectedName = group;
  m_selectedComputation.clear();
  m_revealSelection = true;
  requestLayout();
}

void MainWindow::toggleFusion(const QString& name) {
  std::string fusion = name.toStdString();
  std::set<std::string>& exceptions = m_options.collapseFusions ? m_options.expanded : m_options.collapsed;
  if (!exceptions.erase(fusion)) exceptions.insert(fusion);
  m_selectedName = fusion;
  m_selectedComputation.clear();
  requestLayout();
}

void MainWindow::setStableLayout(bool on) {
  m_actStableLayout->setChecked(on);
  if (m_options.stableLayout == on) return;
  m_options.stableLayout = on;
  requestLayout();
}

void MainWindow::setNeighbourhood(bool enabled, int hops) {
  m_neighbourhood = enabled;
  m_options.hops = hops;
  m_actNeighbourhood->setChecked(enabled);
  if (m_hopsSpin->value() != hops) {
    QSignalBlocker block(m_hopsSpin);
    m_hopsSpin->setValue(hops);
  }
  if (enabled && m_selectedName.empty()) {
    statusBar()->showMessage(QStringLiteral("Neighbourhood mode: select a node to focus on"), 5000);
  }
  m_scene->setGraph(nullptr);  // force a fit on the new, differently sized graph
  requestLayout();
}

void MainWindow::setDiffEnabled(bool enabled) {
  m_diff = enabled;
  m_actDiff->setChecked(enabled);
  applyDiff();
}

void MainWindow::setGhosting(bool enabled) {
  m_ghost = enabled;
  m_actGhost->setChecked(enabled);
  // The ghosts stand where the removed instructions were in the previous stage's layout: lay that stage out in
  // the background when it is not cached yet (applyDiff follows), then draw them.
  if (enabled && m_current > 0 && m_layouts->prefetch(m_current - 1, optionsFor(m_current - 1), m_scene->sharedGraph()))
    return;
  applyDiff();
}

int MainWindow::search(const QString& pattern, bool regex) {
  const int count = findMatches(pattern, regex);
  if (count > 0) findNext();
  return count;
}

void MainWindow::closeSearch() {
  m_searchBar->hide();
  m_matches.clear();
  m_clusterMatches.clear();
  m_matchCursor = -1;
  m_scene->setMatches({});
  m_view->setFocus();
}

int MainWindow::findMatches(const QString& pattern, bool regex) {
  m_matches.clear();
  m_clusterMatches.clear();
  m_matchCursor = -1;
  const GraphModel* graph = m_scene->graph();
  if (graph == nullptr || pattern.isEmpty()) {
    m_scene->setMatches({});
    m_searchStatus->setText(QString());
    return 0;
  }
  QRegularExpression expression(regex ? pattern : QRegularExpression::escape(pattern),
                                QRegularExpression::CaseInsensitiveOption);
  if (!expression.isValid()) {
    m_scene->setMatches({});
    m_searchStatus->setText(QStringLiteral(" bad regex: %1").arg(expression.errorString()));
    return 0;
  }
  auto matches = [&](const core::HloInstruction& inst) {
    return expression.match(QString::fromStdString(inst.name())).hasMatch() ||
           expression.match(QString::fromStdString(std::string(inst.opcodeString()))).hasMatch();
  };
  // Instructions inside a collapsed fusion match through the fusion's node (any depth of nesting).
  std::function<bool(const core::HloComputation&)> holdsMatch = [&](const core::HloComputation& computation) {
    for (const auto& inst : computation.instructions()) {
      if (inst->opcode() == core::HloOpcode::kParameter) continue;
      if (matches(*inst)) return true;
      if (inst->isFusion() && inst->fusedComputation() != nullptr && holdsMatch(*inst->fusedComputation())) return true;
    }
    return false;
  };
  int insideFusions = 0;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const GraphNode& node = graph->nodes[i];
    if (node.kind == GraphNode::Kind::kStub && node.opcode.empty()) continue;  // "from NAME" stubs
    if (expression.match(QString::fromStdString(node.name)).hasMatch() ||
        (!node.opcode.empty() && expression.match(QString::fromStdString(node.opcode)).hasMatch())) {
      m_matches.push_back(static_cast<int>(i));
    } else if (node.kind == GraphNode::Kind::kCollapsedFusion && node.instruction != nullptr &&
               node.instruction->fusedComputation() != nullptr && holdsMatch(*node.instruction->fusedComputation())) {
      m_matches.push_back(static_cast<int>(i));
      ++insideFusions;
    }
  }
  // Expanded fusions and groups match by their name (their members are nodes, matched above).
  for (size_t c = 0; c < graph->clusters.size(); ++c) {
    const GraphCluster& cluster = graph->clusters[c];
    const std::string& name = cluster.group.empty() ? cluster.fusionName : cluster.group;
    if (expression.match(QString::fromStdString(name)).hasMatch()) m_clusterMatches.push_back(static_cast<int>(c));
  }
  // Instructions hidden in collapsed scope groups match through the group that draws them.
  int hidden = 0;
  const StageEntry* stage = currentEntry();
  if (m_options.groupScopes && stage != nullptr && stage->module && stage->module->entry() != nullptr) {
    const ScopeTree tree = buildScopeTree(*stage->module->entry(), m_scopeTree.get());
    std::set<int> groupNodes;
    for (const auto& inst : stage->module->entry()->instructions()) {
      if (inst == nullptr || graph->findNode(inst->name()) >= 0) continue;
      if (!expression.match(QString::fromStdString(inst->name())).hasMatch() &&
          !expression.match(QString::fromStdString(std::string(inst->opcodeString()))).hasMatch()) {
        continue;
      }
      const int group = tree.representative(inst.get(), m_options.expandedGroups);
      const int node = group >= 0 ? graph->findGroup(tree.groups[static_cast<size_t>(group)].path) : -1;
      if (node < 0) continue;
      ++hidden;
      if (std::find(m_matches.begin(), m_matches.end(), node) == m_matches.end()) groupNodes.insert(node);
    }
    m_matches.insert(m_matches.end(), groupNodes.begin(), groupNodes.end());
  }
  m_scene->setMatches(m_matches);
  const int total = static_cast<int>(m_matches.size() + m_clusterMatches.size());
  QStringList where;
  if (insideFusions > 0) where << QStringLiteral("%1 collapsed fusions holding one").arg(insideFusions);
  if (!m_clusterMatches.empty()) where << QStringLiteral("%1 fusion or group boxes").arg(m_clusterMatches.size());
  if (hidden > 0) where << QStringLiteral("%1 inside collapsed groups").arg(hidden);
  m_searchStatus->setText(where.isEmpty() ? QStringLiteral(" %1 matches").arg(total)
                                          : QStringLiteral(" %1 matches (%2)").arg(total).arg(where.join(QStringLiteral(", "))));
  return total;
}

void MainWindow::showMatch() {
  const int nodes = static_cast<int>(m_matches.size());
  const int total = nodes + static_cast<int>(m_clusterMatches.size());
  if (m_matchCursor < nodes) {
    selectNode(m_matches[static_cast<size_t>(m_matchCursor)]);
  } else {
    const int cluster = m_clusterMatches[static_cast<size_t>(m_matchCursor - nodes)];
    onClusterClicked(cluster);
    m_view->centerOnRect(m_scene->clusterRect(cluster));
  }
  m_searchStatus->setText(QStringLiteral(" %1 of %2").arg(m_matchCursor + 1).arg(total));
}

void MainWindow::findNext() {
  const int total = static_cast<int>(m_matches.size() + m_clusterMatches.size());
  if (total == 0) return;
  m_matchCursor = (m_matchCursor + 1) % total;
  showMatch();
}

void MainWindow::findPrevious() {
  const int total = static_cast<int>(m_matches.size() + m_clusterMatches.size());
  if (total == 0) return;
  m_matchCursor = m_matchCursor <= 0 ? total - 1 : m_matchCursor - 1;
  showMatch();
}

bool MainWindow::compareFusionsWith(const QString& path) {
  const StageEntry* entry = currentEntry();
  const QString title = QStringLiteral("Cannot compare fusions");
  if (entry == nullptr || !entry->module) {
    showError(title, QStringLiteral("The stage shown has no module to compare (a graph read from a .dot file)."));
    return false;
  }
  StatusOr<std::unique_ptr<core::HloModule>> other = core::parseHloModuleFile(path.toStdString());
  if (other.ok()) {
    if (Status verified = core::verifyModule(**other); !verified.ok()) other = verified;
  }
  if (!other.ok()) {
    showError(title, QString::fromStdString(other.message()));
    return false;
  }
  const core::PipelineRun run = pipelineRunOf(document()->stages, m_current);
  core::FusionComparison comparison = core::compareFusions(*entry->module, **other, &run);
  const QString aLabel = QStringLiteral("stage %1 (%2) of %3")
                             .arg(entry->index)
                             .arg(QString::fromStdString(entry->label))
                             .arg(QFileInfo(QString::fromStdString(document()->path)).fileName());
  delete m_fusionComparison;
  m_fusionComparison = new FusionComparisonDialog(std::move(comparison), aLabel, QFileInfo(path).fileName(), this);
  connect(m_fusionComparison, &FusionComparisonDialog::instructionActivated, this,
          [this](const QString& name) { selectInstruction(QString(), name); });
  m_fusionComparison->show();
  return true;
}

}  // namespace fusionscope::viewer
