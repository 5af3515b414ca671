// MainWindow: what is selected (a node or a fusion box clicked, an instruction named, the inspector and the other
// panes that follow it) and copying its name (main_window.h). The window's loading, stages and layout wiring are in
// main_window.cpp; search is in main_window_graph.cpp.
#include <QApplication>
#include <QClipboard>
#include <QStatusBar>
#include <algorithm>

#include "core/ir/hlo_computation.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/inspector.h"
#include "viewer/layout_controller.h"
#include "viewer/main_window.h"
#include "core/dot/scope_groups.h"
#include "viewer/side_pane.h"
#include "viewer/time_attribution_panel.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"

namespace fusionscope::viewer {

void MainWindow::onNodeClicked(int node) {
  const GraphModel* graph = m_scene->graph();
  const StageEntry* stage = currentEntry();
  if (graph == nullptr || stage == nullptr || node < 0 || static_cast<size_t>(node) >= graph->nodes.size()) return;
  const GraphNode& n = graph->nodes[static_cast<size_t>(node)];
  if (n.kind == GraphNode::Kind::kStub) {
    // A stub stands for a far-away operand: jump to it.
    int target = graph->findNode(n.name, n.computation);
    if (target >= 0) {
      onNodeClicked(target);
      m_view->centerOnRect(m_scene->nodeRect(target));
      return;
    }
    // A copy of a source drawn only next to its users: inspect the source itself.
  }
  m_selection.setName(n.name, n.computation);
  m_selection.node = node;
  m_scene->setSelectedNode(node);
  if (n.instruction != nullptr) {
    m_inspector->showInstruction(*stage, *n.instruction);
  } else if (n.kind == GraphNode::Kind::kGroup && stage->module && stage->module->entry() != nullptr) {
    std::vector<const core::HloInstruction*> members;
    for (const auto& [name, group] : graph->heldBy) {
      if (group != node) continue;
      if (const core::HloInstruction* inst = stage->module->entry()->findInstruction(name)) members.push_back(inst);
    }
    m_inspector->showGroup(*stage, n.name, members);
  } else {
    m_inspector->showDotNode(n.lines);
  }
  statusBar()->showMessage(QString::fromStdString(n.name), 3000);
  linkToTimeline(n.name, n.instruction);
  m_timeAttribution->selectOperation(n.name);
  m_side->mirrorSelection();
  // In neighbourhood mode a new selection is a new focus: lay its neighbourhood out.
  if (m_neighbourhood && m_layouts->key(m_current, optionsFor(m_current)) != m_shownKey) requestLayout();
}

void MainWindow::onClusterClicked(int cluster) {
  const GraphModel* graph = m_scene->graph();
  const StageEntry* stage = currentEntry();
  if (graph == nullptr || stage == nullptr) return;
  const GraphCluster& box = graph->clusters[static_cast<size_t>(cluster)];
  m_selection.setName(box.group.empty() ? box.fusionName : box.group, box.computation);
  m_scene->setSelectedCluster(cluster);
  if (box.fusion != nullptr) {
    m_inspector->showInstruction(*stage, *box.fusion);
  } else {
    m_inspector->showDotNode(box.lines);
  }
  linkToTimeline(box.fusionName, box.fusion);
  m_side->mirrorSelection();
}

void MainWindow::revealSelection() {
  if (m_selection.node >= 0) {
    m_view->centerOnRect(m_scene->nodeRect(m_selection.node));
  } else if (m_scene->selectedCluster() >= 0) {
    m_view->centerOnRect(m_scene->clusterRect(m_scene->selectedCluster()));
  }
}

void MainWindow::selectNode(int node) {
  onNodeClicked(node);
  if (node >= 0) m_view->centerOnRect(m_scene->nodeRect(node));
}

void MainWindow::selectCluster(int cluster) {
  onClusterClicked(cluster);
  m_view->centerOnRect(m_scene->clusterRect(cluster));
}

bool MainWindow::selectInstruction(const QString& computation, const QString& name) {
  const GraphModel* graph = m_scene->graph();
  if (graph == nullptr) return false;
  int node = graph->findNode(name.toStdString(), computation.toStdString());
  if (node >= 0) {
    selectNode(node);
    return true;
  }
  int cluster = graph->findCluster(name.toStdString());
  if (cluster >= 0) {
    selectCluster(cluster);
    return true;
  }
  // Inside a collapsed scope group: select the group (expand it to see the instruction).
  if (int group = graph->findHoldingGroup(name.toStdString()); group >= 0) {
    selectNode(group);
    statusBar()->showMessage(
        QStringLiteral("%1 is inside the collapsed group %2 (double-click or E expands it)")
            .arg(name, QString::fromStdString(graph->nodes[static_cast<size_t>(group)].lines.front())),
        5000);
    return true;
  }
  // Not drawn (inside a collapsed fusion, an inlined constant or outside the neighbourhood): still inspect it.
  const StageEntry* stage = currentEntry();
  if (stage != nullptr && stage->module) {
    const core::HloComputation* comp = stage->module->findComputation(computation.toStdString());
    const core::HloInstruction* inst = comp != nullptr ? comp->findInstruction(name.toStdString()) : nullptr;
    if (inst != nullptr) {
      m_inspector->showInstruction(*stage, *inst);
      statusBar()->showMessage(QStringLiteral("%1 is not drawn in this view").arg(name), 5000);
      return true;
    }
  }
  return false;
}

QString MainWindow::selectedName() const {
  return QString::fromStdString(m_selection.name);
}

void MainWindow::copyNodeName() {
  if (m_selection.name.empty()) return;
  QApplication::clipboard()->setText(QString::fromStdString(m_selection.name));
  statusBar()->showMessage(QStringLiteral("Copied %1").arg(QString::fromStdString(m_selection.name)), 3000);
}

}  // namespace fusionscope::viewer
