#pragma once

#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <string>

#include "viewer/graph_model.h"
#include "viewer/selection.h"

class QAction;
class QLabel;
class QSplitter;
class QWidget;

namespace fusionscope::core {
class HloModule;
}

namespace fusionscope::viewer {

class GraphScene;
class GraphView;
class LayoutController;
struct Document;

// Side by side (View → Side by Side with Previous Stage; Stage → Show XLA Module Side by Side…): a second graph pane
// left of the stage shown, holding the previous stage (laid out in the background around the graph shown) or a
// module from a file. The selection is mirrored into it by instruction name; with the previous stage beside, the two
// viewports move together (View → Sync Side-by-Side Viewports: same zoom, same scene point at the centre: the
// stable layout keeps shared nodes at the same place). Clicks in the side pane ask the window to select by signal.
class SidePane : public QObject {
  Q_OBJECT

 public:
  // What the pane needs of the window each time it updates.
  struct Context {
    std::shared_ptr<const Document> document;
    int current = -1;                                  // the stage shown
    std::function<GraphOptions(int position)> options;  // the graph options a stage is drawn with
    Selection selection;                               // the window's, mirrored
  };

  // `toggle`: the window's checkable "Side by Side" action. The splitter holds the side view and `mainView`.
  SidePane(QWidget* parent, GraphScene* mainScene, GraphView* mainView, LayoutController* layouts, QAction* toggle,
           std::function<Context()> context);

  QSplitter* splitter() const { return m_split; }
  GraphScene* scene() const { return m_scene; }
  GraphView* view() const { return m_view; }
  QAction* syncAction() const { return m_actSync; }
  bool isOn() const;
  void setOn(bool on);
  // Parses and verifies `path` and lays it out beside the stages; false (with `error`) when it does not parse or verify.
  bool showModule(const QString& path, QString* error);
  void showPreviousStage();
  std::shared_ptr<const core::HloModule> module() const { return m_module; }
  // The stage or the options changed, or a background layout finished: shows what belongs beside the stage.
  void update();
  // Selects (and, unless the viewports are synced, centres on) the window's selection in the side pane.
  void mirrorSelection();
  void setTheme(const GraphScene& from);
  // Whether the viewports follow each other now (sync on, the previous stage shown beside).
  bool viewportsSynced() const;

 signals:
  // A click in the side pane: select this instruction (or scope group) in the stage shown.
  void selectRequested(const QString& computation, const QString& name, bool group);
  void failed(const QString& title, const QString& message);

 private:
  void onModuleReady(std::shared_ptr<const core::HloModule> module, std::shared_ptr<const GraphModel> graph,
                     const QString& error);
  void showPane();
  void followView(GraphView* from, GraphView* to);

  GraphScene* m_mainScene;
  GraphView* m_mainView;
  LayoutController* m_layouts;
  QAction* m_toggle;
  QAction* m_actSync;
  std::function<Context()> m_context;
  QSplitter* m_split;
  GraphScene* m_scene;
  GraphView* m_view;
  QLabel* m_label;
  int m_position = -1;  // the stage shown beside; -1 for a module
  // A module opened beside the stages, its file name and, once laid out, its graph.
  std::shared_ptr<const core::HloModule> m_module;
  QString m_moduleName;
  std::shared_ptr<const GraphModel> m_moduleGraph;
  bool m_following = false;  // one view is moving the other
};

}  // namespace fusionscope::viewer
