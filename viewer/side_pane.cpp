#include "viewer/side_pane.h"

#include <QAction>
#include <QFileInfo>
#include <QLabel>
#include <QScrollBar>
#include <QSplitter>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_verifier.h"
#include "core/text/hlo_parser.h"
#include "viewer/document.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/layout_controller.h"

namespace fusionscope::viewer {

SidePane::SidePane(QWidget* parent, GraphScene* mainScene, GraphView* mainView, LayoutController* layouts,
                   QAction* toggle, std::function<Context()> context)
    : QObject(parent),
      m_mainScene(mainScene),
      m_mainView(mainView),
      m_layouts(layouts),
      m_toggle(toggle),
      m_context(std::move(context)) {
  m_split = new QSplitter(Qt::Horizontal, parent);
  m_scene = new GraphScene(this);
  m_view = new GraphView(m_scene, m_split);
  m_view->setObjectName(QStringLiteral("sideView"));
  m_split->addWidget(m_view);
  m_split->addWidget(m_mainView);
  m_view->hide();
  m_label = new QLabel(m_view);
  m_label->setAutoFillBackground(true);
  m_label->setMargin(3);
  m_label->move(6, 6);

  m_actSync = new QAction(QStringLiteral("S&ync Side-by-Side Viewports"), this);
  m_actSync->setCheckable(true);
  m_actSync->setChecked(true);
  m_actSync->setToolTip(QStringLiteral("With the previous stage beside: both panes show the same place at the same zoom"));
  connect(m_actSync, &QAction::toggled, this, [this](bool on) {
    if (on && viewportsSynced()) followView(m_mainView, m_view);
  });
  connect(m_mainView, &GraphView::viewportMoved, this, [this] { followView(m_mainView, m_view); });
  connect(m_view, &GraphView::viewportMoved, this, [this] { followView(m_view, m_mainView); });

  connect(m_layouts, &LayoutController::backgroundReady, this, &SidePane::update);
  connect(m_layouts, &LayoutController::moduleReady, this, &SidePane::onModuleReady);
  connect(m_scene, &GraphScene::nodeClicked, this, [this](int node) {
    const GraphModel* side = m_scene->graph();
    if (side == nullptr) return;
    const GraphNode& n = side->nodes[static_cast<size_t>(node)];
    m_scene->setSelectedNode(node);
    emit selectRequested(n.computation == side->entry ? QString() : QString::fromStdString(n.computation),
                         QString::fromStdString(n.name), n.kind == GraphNode::Kind::kGroup);
  });
  connect(m_scene, &GraphScene::clusterClicked, this, [this](int cluster) {
    const GraphModel* side = m_scene->graph();
    if (side == nullptr) return;
    m_scene->setSelectedCluster(cluster);
    const GraphCluster& box = side->clusters[static_cast<size_t>(cluster)];
    emit selectRequested(box.computation == side->entry ? QString() : QString::fromStdString(box.computation),
                         QString::fromStdString(box.fusionName), false);
  });
}

bool SidePane::isOn() const {
  return m_toggle->isChecked();
}

void SidePane::setOn(bool on) {
  m_toggle->setChecked(on);
  if (!on) {
    m_scene->setGraph(nullptr);
    m_module.reset();
    m_moduleGraph.reset();
  }
  update();
}

bool SidePane::showModule(const QString& path, QString* error) {
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModuleFile(path.toStdString());
  if (module.ok()) {
    if (Status verified = core::verifyModule(**module); !verified.ok()) module = verified;
  }
  if (!module.ok()) {
    if (error != nullptr) *error = QString::fromStdString(module.message());
    return false;
  }
  m_module = std::shared_ptr<const core::HloModule>(std::move(*module));
  m_moduleName = QFileInfo(path).fileName();
  m_moduleGraph.reset();
  // Drawn as a stage of the same size would be: big modules with fusions collapsed; not grouped (its scopes are
  // not the document's).
  GraphOptions options;
  options.collapseFusions = m_module->entry() != nullptr && m_module->entry()->instructionCount() > kCollapseFusionsAbove;
  m_layouts->layoutModuleBeside(m_module, options);
  m_toggle->setChecked(true);
  update();
  return true;
}

void SidePane::onModuleReady(std::shared_ptr<const core::HloModule> module, std::shared_ptr<const GraphModel> graph,
                             const QString& error) {
  if (module != m_module) return;  // another module was opened since
  if (!graph) {
    emit failed(QStringLiteral("Cannot lay out the module"), error);
    m_module.reset();
  }
  m_moduleGraph = std::move(graph);
  update();
}

void SidePane::showPreviousStage() {
  m_module.reset();
  m_moduleGraph.reset();
  update();
}

void SidePane::showPane() {
  if (!m_view->isHidden()) return;
  m_view->show();
  const int half = m_split->width() / 2;
  m_split->setSizes({half, m_split->width() - half});
}

void SidePane::setTheme(const GraphScene& from) {
  m_scene->setTheme(from.theme());
}

void SidePane::update() {
  if (m_module) {
    if (!m_toggle->isChecked() || !m_moduleGraph) {
      if (!m_toggle->isChecked()) m_view->hide();
      return;  // moduleReady brings us back
    }
    showPane();
    if (m_moduleGraph != m_scene->sharedGraph()) {
      m_position = -1;
      m_scene->setTheme(m_mainScene->theme());
      m_scene->setGraph(m_moduleGraph);
      m_label->setText(QStringLiteral("%1 (opened beside the stages)").arg(m_moduleName));
      m_label->adjustSize();
      m_view->fitAll();
    }
    mirrorSelection();
    return;
  }
  const Context context = m_context();
  const int position = context.current - 1;
  if (!m_toggle->isChecked() || position < 0 || !context.document) {
    m_view->hide();
    return;
  }
  const GraphOptions options = context.options(position);
  std::shared_ptr<const GraphModel> graph = m_layouts->cached(position, options);
  if (!graph) {
    // Laid out in the background (around the graph shown, with a stable layout); backgroundReady brings us back.
    m_layouts->prefetch(position, options, m_mainScene->sharedGraph());
    return;
  }
  showPane();
  if (graph != m_scene->sharedGraph() || m_position != position) {
    m_position = position;
    m_scene->setTheme(m_mainScene->theme());
    m_scene->setGraph(graph);
    const StageEntry& stage = context.document->stages[static_cast<size_t>(position)];
    m_label->setText(QStringLiteral("Stage %1: %2 (the stage before)")
                         .arg(stage.index)
                         .arg(QString::fromStdString(stage.label.empty() ? stage.pass : stage.label)));
    m_label->adjustSize();
    if (viewportsSynced()) {
      followView(m_mainView, m_view);
    } else {
      m_view->fitAll();
    }
  }
  mirrorSelection();
}

bool SidePane::viewportsSynced() const {
  return m_actSync->isChecked() && !m_module && m_view->isVisible() && m_scene->graph() != nullptr;
}

void SidePane::followView(GraphView* from, GraphView* to) {
  if (m_following || !viewportsSynced()) return;
  m_following = true;
  // The same zoom and the same scene point at the centre of the viewport.
  const QPointF centre = from->mapToScene(from->viewport()->rect().center());
  to->setTransform(from->transform());
  to->centerOn(centre);
  m_following = false;
}

void SidePane::mirrorSelection() {
  const GraphModel* side = m_scene->graph();
  if (side == nullptr || !m_view->isVisible()) return;
  const Context context = m_context();
  // By name: an entry instruction is looked for in the side graph's entry, whatever that computation is called.
  Selection wanted = context.selection;
  const GraphModel* shown = m_mainScene->graph();
  if (shown != nullptr && wanted.computation == shown->entry) wanted.computation.clear();
  const Selection::Place place = wanted.placeIn(*side, true);
  const int node = place.node;
  const int cluster = place.cluster;
  if (cluster >= 0) {
    m_scene->setSelectedCluster(cluster);
  } else {
    m_scene->setSelectedNode(node);
  }
  const QRectF rect = node >= 0 ? m_scene->nodeRect(node) : cluster >= 0 ? m_scene->clusterRect(cluster) : QRectF();
  if (rect.isNull()) return;
  // Synced viewports show the same place: centre the side pane only when its node is elsewhere (it moved between
  // the stages), without moving the main view.
  if (viewportsSynced()) {
    const QRectF visible = m_view->mapToScene(m_view->viewport()->rect()).boundingRect();
    if (visible.intersects(rect)) return;
    m_following = true;
    m_view->centerOnRect(rect);
    m_following = false;
    return;
  }
  m_view->centerOnRect(rect);
}

}  // namespace fusionscope::viewer
