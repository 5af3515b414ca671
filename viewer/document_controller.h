#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "viewer/document.h"

class QTimer;
template <typename T>
class QFutureWatcher;

namespace fusionscope::viewer {

// Progress of a background load, written by the worker and polled by the controller (the worker never touches
// widgets and holds nothing of the controller, so destroying the window while it runs is safe).
struct LoadProgress {
  std::mutex mutex;
  std::string what;
  int done = 0;
  int total = 0;
  std::atomic<bool> cancel{false};
};

struct LoadOutcome {
  std::shared_ptr<const Document> document;
  QString error;
};

// Opens a path (HLO module, dump directory, XLA dump directory, .dot file) on a worker thread: parse, verify,
// run the pipeline spec. Owns the load's QFutureWatcher, its LoadProgress and the timer that polls it, the open
// Document, the pipeline spec and the path it came from. One load at a time: opening while loading cancels the
// earlier load, whose late result is dropped. Everything it reports comes by signal on the GUI thread.
class DocumentController : public QObject {
  Q_OBJECT

 public:
  explicit DocumentController(QObject* parent = nullptr);
  ~DocumentController() override;

  // Starts loading (loaded or failed follows). `xlaModule` picks the module of an XLA dump directory (name or
  // number); empty: the default pick.
  void open(const QString& path, const QString& xlaModule = {});
  // Opens the last path again with the same XLA module; nothing when nothing was opened.
  void reload();
  // Stops the load: the worker stops at its next check, its result is dropped, cancelled() follows at once.
  void cancel();
  bool isLoading() const;
  QString loadingPath() const { return m_loadingPath; }

  std::shared_ptr<const Document> document() const { return m_document; }
  QString lastPath() const { return m_lastPath; }
  void setPipelineSpec(const core::PipelineSpec& spec) { m_spec = spec; }
  const core::PipelineSpec& pipelineSpec() const { return m_spec; }

  // The modules of the open XLA dump directory as a chooser lists them ("NNNN NAME"), with the index of the one
  // shown in `current`; empty when there is nothing to choose.
  QStringList xlaModuleChoices(int* current) const;
  // Reopens the open XLA dump directory with the module of a xlaModuleChoices() item.
  void openXlaModule(const QString& choice);

 signals:
  void started(const QString& path);
  void progress(const QString& what, int done, int total);   // total 0: unknown
  void loaded(const QString& path);                          // document() is the new document
  void failed(const QString& path, const QString& message);  // document() is unchanged
  void cancelled(const QString& path);

 private:
  void onFinished();
  void poll();

  std::shared_ptr<const Document> m_document;
  core::PipelineSpec m_spec;
  QString m_loadingPath;
  QString m_lastPath;
  QFutureWatcher<LoadOutcome>* m_watcher;
  std::shared_ptr<LoadProgress> m_progress;
  QTimer* m_pollTimer;
};

}  // namespace fusionscope::viewer
