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
#include "core/dot/scope_groups.h"
#include "viewer/side_pane.h"

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
  m_side->setOn(on);
}

bool MainWindow::showModuleSideBySide(const QString& path) {
  QString error;
  if (m_side->showModule(path, &error)) return true;
  showError(QStringLiteral("Cannot show the module side by side"), error);
  return false;
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
    m_scopeTree = std::make_shared<core::ScopeTree>(core::buildScopeTree(*stage.module->entry()));
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
  m_selection.setName(group);
  m_revealSelection = true;
  requestLayout();
}

void MainWindow::toggleFusion(const QString& name) {
  std::string fusion = name.toStdString();
  std::set<std::string>& exceptions = m_options.collapseFusions ? m_options.expanded : m_options.collapsed;
  if (!exceptions.erase(fusion)) exceptions.insert(fusion);
  m_selection.setName(fusion);
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
  if (enabled && m_selection.empty()) {
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
