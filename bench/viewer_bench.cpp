// Viewer benchmarks (fs_viewer_bench; built with the GUI): for every corpus module the time to its first frame
// (load + verify + gpu pipeline + Graphviz layout + scene + one painted frame), and paint time of mobilenet's
// 3.9k-instruction stage 0 fitted, at 1:1 and while panning. Runs offscreen; results in docs/VIEWER.md.
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "viewer/document.h"
#include "viewer/graph_model.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "viewer/main_window.h"

namespace {

using namespace fusionscope;
using namespace fusionscope::viewer;

const std::string kCorpus = FS_SOURCE_DIR "/../shared/corpus/hlo";

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
