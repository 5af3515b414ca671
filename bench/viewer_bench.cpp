// Viewer benchmarks (fs_viewer_bench; built with the GUI): for every corpus module the time to its first frame
// (load + verify + gpu pipeline + Graphviz layout + scene + one painted frame), and paint time of mobilenet's
// 3.9k-instruction stage 0 fitted, at 1:1 and while panning; and the timeline: one frame of a generated 1M-event
// Kineto-like trace at five zoom levels, plus building its model. Runs offscreen; results in docs/PERFORMANCE.md.
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/trace_generator.h"
#include "profiler/compare/trace_stats.h"
#include "profiler/trace/chrome_json_import.h"
#include "viewer/document.h"
#include "viewer/graph_model.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/main_window.h"
#include "viewer/timeline_model.h"
#include "viewer/timeline_view.h"
#include "tests/common/source_paths.h"

namespace {

using namespace fusionscope;
using namespace fusionscope::viewer;

const std::string kCorpus = std::string(FS_SOURCE_DIR) + "/../shared/corpus/hlo";

double paintFrame(GraphView& view) {
  QImage image(view.viewport()->size(), QImage::Format_ARGB32_Premultiplied);
  QPainter painter(&image);
  view.render(&painter);
  return image.pixel(0, 0);  // keep the frame observable
}

// The window's path to a first frame: everything but the event loop.
void firstFrame(benchmark::State& state, const std::string& path) {
  for (auto _ : state) {
    auto document = loadPath(path, core::PipelineSpec{});
    if (!document.ok()) {
      state.SkipWithError(document.message().c_str());
      return;
    }
    int64_t largest = 0;
    for (const StageEntry& stage : (*document)->stages) largest = std::max(largest, stage.instructionCount);
    GraphOptions options;
    options.collapseFusions = largest > kCollapseFusionsAbove;
    auto graph = layoutModule(*(*document)->stages.front().module, options);
    if (!graph.ok()) {
      state.SkipWithError(graph.message().c_str());
      return;
    }
    GraphScene scene;
    scene.setGraph(std::make_shared<const GraphModel>(std::move(*graph)));
    GraphView view(&scene);
    view.resize(1100, 800);
    view.fitAll();
    benchmark::DoNotOptimize(paintFrame(view));
    state.counters["nodes"] = scene.nodeItemCount();
  }
}

// Paint of a laid-out mobilenet stage 0: arg 0 fitted, arg 1 at 1:1 on a node, arg 2 panning along the graph.
void BM_PaintMobilenet(benchmark::State& state) {
  std::string path = kCorpus + "/model_mobilenet_v2_torchxla_train.hlo";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("corpus not found");
    return;
  }
  auto document = loadPath(path, core::PipelineSpec{});
  if (!document.ok()) {
    state.SkipWithError(document.message().c_str());
    return;
  }
  GraphOptions options;
  options.collapseFusions = true;
  auto graph = layoutModule(*(*document)->stages.front().module, options);
  if (!graph.ok()) {
    state.SkipWithError(graph.message().c_str());
    return;
  }
  GraphScene scene;
  scene.setGraph(std::make_shared<const GraphModel>(std::move(*graph)));
  GraphView view(&scene);
  view.resize(1100, 800);
  view.fitAll();
  int nodes = static_cast<int>(scene.graph()->nodes.size());
  if (state.range(0) > 0) {
    view.actualSize();
    view.centerOn(scene.nodeRect(nodes / 2).center());
  }
  int step = 0;
  for (auto _ : state) {
    if (state.range(0) == 2) view.centerOn(scene.nodeRect((nodes / 2 + 25 * ++step) % nodes).center());
    benchmark::DoNotOptimize(paintFrame(view));
  }
}
BENCHMARK(BM_PaintMobilenet)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

constexpr int64_t kTimelineEvents = 1000000;

profiler::Trace importGenerated() {
  bench::GeneratedTrace generated = bench::generateKinetoTrace(kTimelineEvents);
  StatusOr<profiler::Trace> trace = profiler::importChromeTraceText(generated.text, "generated_1m.json");
  if (!trace.ok()) {
    std::fprintf(stderr, "%s\n", trace.message().c_str());
    std::exit(1);
  }
  return std::move(*trace);
}

std::shared_ptr<const TimelineModel> timelineModel() {
  static std::shared_ptr<const TimelineModel> model = std::make_shared<TimelineModel>(importGenerated());
  return model;
}

// Building the model (lanes, depths, flows) of the imported 1M-event trace; the import itself is fs_trace_bench's.
void BM_TimelineModelBuild1M(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    profiler::Trace trace = importGenerated();
    state.ResumeTiming();
    TimelineModel model(std::move(trace));
    benchmark::DoNotOptimize(model.lanes().data());
    state.counters["lanes"] = static_cast<double>(model.lanes().size());
    state.counters["slices"] = static_cast<double>(model.sliceCount());
    state.counters["flows"] = static_cast<double>(model.flows().size());
  }
}
BENCHMARK(BM_TimelineModelBuild1M)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// The same with every kernel's args annotated as fusionscope-gpurun does ("hlo_op", "kind", bytes), so the
// kernel -> instruction lookup reads one hlo_op per kernel.
void BM_TimelineModelBuild1MAnnotated(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    profiler::Trace trace = importGenerated();
    int64_t annotated = 0;
    const profiler::KernelClassifier kernels(trace);
    for (size_t i = 0; i < trace.events.size(); ++i) {
      profiler::TraceEvent& event = trace.events[i];
      if (!kernels.isKernel(i)) continue;
      std::string args(event.args.empty() ? std::string_view("{}") : event.args);
      const size_t close = args.find_last_of('}');
      const std::string fields = std::string(args.size() > 2 ? "," : "") + "\"hlo_op\":\"fusion." +
                                 std::to_string(annotated % 97) +
                                 "\",\"kind\":\"kLoop\",\"bytes_read\":4096,\"bytes_written\":1024";
      args.insert(close, fields);
      event.args = trace.copyText(args);
      ++annotated;
    }
    state.ResumeTiming();
    TimelineModel model(std::move(trace));
    benchmark::DoNotOptimize(model.lanes().data());
    state.counters["kernels"] = static_cast<double>(annotated);
    state.counters["linked"] = static_cast<double>(model.eventsOfInstruction("fusion.5").size());
  }
}
BENCHMARK(BM_TimelineModelBuild1MAnnotated)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// One 1600x900 frame of the 1M-event trace; arg = zoom level k: the visible span is the whole trace / 10^(2k),
// i.e. 1×, 1/100, 1/10^4, 1/10^6, 1/10^8, centred on the middle of the trace, panning by 1/4 of the span per
// iteration so the frames differ.
void BM_PaintTimeline1M(benchmark::State& state) {
  auto model = timelineModel();
  TimelineView view;
  view.resize(1600, 900);
  view.setGroups({{model, model->startNs(), QString(), {}}});
  const double total = static_cast<double>(model->endNs() - model->startNs());
  const double span = std::max(100.0, total / std::pow(100.0, static_cast<double>(state.range(0))));
  const double centre = total / 2;
  QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
  int64_t runs = 0;
  int64_t flows = 0;
  int64_t frames = 0;
  double worst = 0;
  int step = 0;
  for (auto _ : state) {
    const double start = centre - span / 2 + span / 4 * (step++ % 8);
    view.setVisibleRange(start, start + span);
    view.render(&image);
    runs += view.lastRunsDrawn();
    flows += view.lastFlowsDrawn();
    ++frames;
    worst = std::max(worst, view.lastPaintMilliseconds());
  }
  state.counters["span_ns"] = span;
  state.counters["boxes_per_frame"] = frames ? static_cast<double>(runs) / static_cast<double>(frames) : 0;
  state.counters["flows_per_frame"] = frames ? static_cast<double>(flows) / static_cast<double>(frames) : 0;
  state.counters["worst_ms"] = worst;
}
BENCHMARK(BM_PaintTimeline1M)->DenseRange(0, 4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  std::vector<std::filesystem::path> files;
  if (std::filesystem::exists(kCorpus)) {
    for (const auto& entry : std::filesystem::directory_iterator(kCorpus)) {
      if (entry.path().extension() == ".hlo") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    benchmark::RegisterBenchmark(("BM_FirstFrame/" + file.stem().string()).c_str(), firstFrame, file.string())
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
