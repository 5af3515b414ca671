#pragma once

#include <QObject>
#include <QString>
#include <map>
#include <memory>
#include <string>

#include "viewer/document.h"
#include "viewer/graph_model.h"

template <typename T>
class QFutureWatcher;

namespace fusionscope::viewer {

struct LayoutOutcome {
  std::shared_ptr<const GraphModel> graph;
  QString error;
  double milliseconds = 0;
  double cpuMilliseconds = 0;  // the worker thread's CPU time
};

// The layout service: lays a stage's graph out (layoutModule, or layoutDotText for DOT-only stages) on a worker
// thread and caches the results by stage and options. Owns the QFutureWatcher of the one layout the user waits
// for, the background layouts of previous stages (for ghosts), the cache and the stale-result handling: only the
// newest request is shown; a result for a stage or options the user has already left is cached, not shown, and
// the newest request starts when it comes. Reports by signal on the GUI thread, with the layout's wall and CPU
// time.
class LayoutController : public QObject {
  Q_OBJECT

 public:
  explicit LayoutController(QObject* parent = nullptr);

  // A new document: the cache is emptied and requests of the old one are forgotten (a layout of it that
  // finishes late is never shown).
  void setDocument(std::shared_ptr<const Document> document);
  // Asks for stage `position` laid out with `options`: graphReady at once when cached, else started() and
  // later graphReady or failed, unless a newer request replaces this one first. With options.stableLayout, `base`
  // (the graph shown before, of another stage) is the layout the new one keeps its shared nodes from
  // (layoutModuleStable); the first stable layout of a stage is cached and reused, whatever it was pinned to.
  void request(int position, const GraphOptions& options, std::shared_ptr<const GraphModel> base = nullptr);
  // Lays stage `position` out in the background when it is not cached (backgroundReady follows), pinned to `base`
  // as request does; returns whether it started one.
  bool prefetch(int position, const GraphOptions& options, std::shared_ptr<const GraphModel> base = nullptr);
  // Lays out `module`, a module that is not one of the document's stages (XLA's after_optimizations opened beside
  // them), in the background; moduleReady follows. Not cached: the caller keeps the graph.
  void layoutModuleBeside(std::shared_ptr<const core::HloModule> module, const GraphOptions& options);
  // The cached layout of stage `position` with `options`; null when it was not laid out.
  std::shared_ptr<const GraphModel> cached(int position, const GraphOptions& options) const;
  // The cache key of stage `position` with `options` (the graph shown is identified by it).
  std::string key(int position, const GraphOptions& options) const;
  // A layout is running or wanted, in the foreground or the background.
  bool isBusy() const;

  // Wall and CPU time of the last layout the user waited for (0 when it came from the cache).
  double lastMilliseconds() const { return m_lastMs; }
  double lastCpuMilliseconds() const { return m_lastCpuMs; }

 signals:
  void started(int position);
  // A foreground layout ended, shown or not; graphReady, failed or a newer started() may follow.
  void finished();
  void graphReady(int position, std::shared_ptr<const GraphModel> graph, const std::string& key);
  void failed(int position, const QString& message);
  void backgroundReady();
  // The layout layoutModuleBeside asked for: the graph, or null and the message.
  void moduleReady(std::shared_ptr<const core::HloModule> module, std::shared_ptr<const GraphModel> graph,
                   const QString& error);

 private:
  void start(int position, const GraphOptions& options, const std::string& key, std::shared_ptr<const GraphModel> base);
  void onFinished();

  std::shared_ptr<const Document> m_document;
  int m_generation = 0;
  std::map<std::string, std::shared_ptr<const GraphModel>> m_cache;
  QFutureWatcher<LayoutOutcome>* m_watcher;
  std::string m_runningKey;
  // The newest request, while it waits for a layout.
  std::string m_pendingKey;
  int m_pendingPosition = -1;
  GraphOptions m_pendingOptions;
  std::shared_ptr<const GraphModel> m_pendingBase;
  int m_backgroundLayouts = 0;
  double m_lastMs = 0;
  double m_lastCpuMs = 0;
};

}  // namespace fusionscope::viewer
