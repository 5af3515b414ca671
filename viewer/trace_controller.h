#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <utility>

#include "viewer/timeline_model.h"

template <typename T>
class QFutureWatcher;

namespace fusionscope::viewer {

struct TraceOutcome {
  std::shared_ptr<const TimelineModel> first;
  std::shared_ptr<const TimelineModel> second;  // set for a comparison ("after")
  QString error;
};

// Loads one trace, or the two of a before/after comparison, into TimelineModels on a worker thread (import and
// model building; loadTimeline). Owns the load's QFutureWatcher and the paths asked for. One load at a time: a
// load asked for while one runs is refused, and the window keeps its current trace until the new one is ready.
class TraceController : public QObject {
  Q_OBJECT

 public:
  explicit TraceController(QObject* parent = nullptr);

  // Starts loading `first` (and `second` for a comparison): started, then loaded or failed. Returns false,
  // starting nothing, while a trace is still loading.
  bool load(const QString& first, const QString& second = {});
  bool isLoading() const;

  // The labels the timeline shows for the traces at `first` and `second` (empty for a single trace). Profilers
  // give every run the same file name (JAX's perfetto_trace.json.gz under LOGDIR/plugins/profile/RUN/), so a label
  // is the file name prefixed with what tells the runs apart: for two traces the first directory where their
  // paths differ, for one a profiler's log directory.
  static std::pair<QString, QString> labels(const QString& first, const QString& second);

 signals:
  void started(const QString& first);
  // `second` is null for a single trace; the names are labels().
  void loaded(std::shared_ptr<const TimelineModel> first, const QString& firstName,
              std::shared_ptr<const TimelineModel> second, const QString& secondName);
  void failed(const QString& message);

 private:
  void onFinished();

  QFutureWatcher<TraceOutcome>* m_watcher;
  QString m_paths[2];
};

}  // namespace fusionscope::viewer
