#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <vector>

namespace fusionscope::viewer {

class MainWindow;

// What one step of a stage walk cost: from the Next press to the new stage's frame painted.
struct StepTiming {
  int position = -1;       // in document()->stages
  int index = -1;          // the stage's own number
  QString name;            // its label (pass)
  double layoutMs = 0;     // Graphviz layout on the worker (0 when the layout was cached)
  double sceneMs = 0;      // building the scene from the laid-out graph
  double paintMs = 0;      // one repaint of the graph view
  double totalMs = 0;      // wall time from the step to the painted frame (includes waiting for the worker)
  bool cached = false;     // the layout came from the cache
  int nodes = 0;           // instruction nodes drawn
  int keptInPlace = -1;    // nodes the stable layout kept where they were (-1: laid out afresh)
  QString error;           // the stage could not be laid out
};

// Steps through every stage of the loaded document as a user pressing Next would (the stage list's filter
// applies), waiting for each stage to be laid out, put in the scene and painted, and times each step. Used by
// `fusionscope PATH --walk-stages [--timings OUT.json]` and by bench/viewer-walk; the figures are those the user
// waits for, on this machine, with the window's options (stable layout on by default).
class StageWalk : public QObject {
  Q_OBJECT

 public:
  explicit StageWalk(MainWindow* window, QObject* parent = nullptr);

  // Starts from the stage shown (which must be drawn); finished() follows the last step.
  void start();
  // Stops after this many steps (0: at the last stage).
  void setMaxSteps(int steps) { m_maxSteps = steps; }
  const std::vector<StepTiming>& steps() const { return m_steps; }

  // The timings as JSON: {"source", "stages", "first_stage", "first_layout_ms" (the whole-graph layout of the
  // stage the walk started from: what a step is compared with), "stable_layout", "grouped", "steps": [{stage, index, name, layout_ms, scene_ms, paint_ms,
  // total_ms, cached, nodes, kept_in_place, error?}], "summary": {steps, p50_ms, p95_ms, max_ms, over_1s,
  // total_s}}.
  QByteArray toJson(const QString& source) const;
  // One line: steps, median, p95 and slowest step.
  QString summary() const;

 signals:
  void finished();

 private:
  void next();
  void onShown(int position);
  void onFailed(const QString& message);
  void record(const QString& error);

  MainWindow* m_window;
  std::vector<StepTiming> m_steps;
  QElapsedTimer m_timer;
  int m_target = -1;
  bool m_waiting = false;
  int m_maxSteps = 0;
  int m_firstStage = -1;
  double m_firstLayoutMs = 0;  // the whole-graph layout of the stage the walk started from
};

// The q-quantile (0..1, nearest rank) of the steps' total times.
double stepQuantile(const std::vector<StepTiming>& steps, double q);

}  // namespace fusionscope::viewer
