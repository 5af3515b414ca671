// fs_pipeline_bench: the pass pipeline's cost. (1) The whole gpu pipeline plus the DOT text of every stage on
// the largest corpus module (mobilenet_v2 training step, ~3.9k instructions): target <= 2 s on the 2-core
// machine. (2) Each pass alone on generated modules of 10k and 100k instructions: near-linear, the 100k run
// <= 12x the 10k one. items_per_second = instructions per second. (3) BM_PassScaling: that ratio measured
// with the two sizes interleaved. Results: docs/PERFORMANCE.md; bench/pass-scaling runs (3) several times.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/hlo_generator.h"
#include "core/base/file_util.h"
#include "core/dot/dot_writer.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/text/hlo_parser.h"
#include "tests/common/source_paths.h"

namespace {

using namespace fusionscope;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "fs_pipeline_bench: %s\n", message.c_str());
  std::abort();
}

std::unique_ptr<core::HloModule> parseOrDie(const std::string& text, const std::string& name) {
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModule(text, name);
  if (!module.ok()) die(module.message());
  return std::move(*module);
}

const core::HloModule* corpusModule() {
  static std::unique_ptr<core::HloModule> module = [] {
    const char* dir = std::getenv("FS_BENCH_CORPUS_DIR");
    std::string path =
        (dir ? std::string(dir) : std::string(FS_SOURCE_DIR) + "/../shared/corpus/hlo") + "/model_mobilenet_v2_torchxla_train.hlo";
    StatusOr<std::string> text = readFile(path);
    if (!text.ok()) return std::unique_ptr<core::HloModule>();
    return parseOrDie(*text, path);
  }();
  return module.get();
}

const core::HloModule* generatedModule(int64_t instructions) {
  static std::map<int64_t, std::unique_ptr<core::HloModule>> modules;
  std::unique_ptr<core::HloModule>& module = modules[instructions];
  if (!module) module = parseOrDie(bench::generateHloModule(instructions).text, "generated");
  return module.get();
}

void BM_GpuPipelineWithDotStages(benchmark::State& state) {
  const core::HloModule* source = corpusModule();
  if (!source) {
    state.SkipWithError("corpus module model_mobilenet_v2_torchxla_train.hlo not found");
    return;
  }
  int64_t stages = 0;
  int64_t dotBytes = 0;
  for (auto _ : state) {
    std::unique_ptr<core::HloModule> module = core::cloneModule(*source);
    core::PipelineSpec spec;
    spec.preset = state.range(0) == 0 ? "gpu" : "cpu";
    std::unique_ptr<core::PassPipeline> pipeline = std::move(core::buildPipeline(spec)).value();
    core::PassContext context(core::fusionConfigFor(core::backendFor(spec)));
    StatusOr<core::PipelineRun> run = core::runPipeline(*pipeline, *module, context);
    if (!run.ok()) die(run.message());
    for (const core::Stage& stage : run->stages) dotBytes += static_cast<int64_t>(core::writeDot(*stage.module).size());
    stages = static_cast<int64_t>(run->stages.size());
  }
  state.counters["stages"] = static_cast<double>(stages);
  state.SetItemsProcessed(state.iterations() * source->instructionCount());
  state.SetBytesProcessed(dotBytes);
  state.SetLabel(state.range(0) == 0 ? "gpu" : "cpu");
}
BENCHMARK(BM_GpuPipelineWithDotStages)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Evicts the last-level cache (32 MiB on the reference machine) by writing a larger buffer. A 10k-instruction
// module (~14 MB) otherwise stays cached from its own cloning while a 100k one (~140 MB) cannot, which
// measures the cache size rather than the pass: both sizes run cold, like a pass after other work.
void evictCaches() {
  static std::vector<char> buffer(96u << 20);
  static char round = 0;
  ++round;
  for (size_t i = 0; i < buffer.size(); i += 64) buffer[i] = round;
  benchmark::DoNotOptimize(buffer.data());
}

// One pass on a fresh copy of the generated module (the copy and the cache eviction are not timed).
void BM_Pass(benchmark::State& state, const std::string& pass) {
  const core::HloModule* source = generatedModule(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<core::HloModule> module = core::cloneModule(*source);
    evictCaches();
    std::unique_ptr<core::HloPass> instance = std::move(core::createPass(pass)).value();
    core::PassContext context(core::fusionConfigFor(core::Backend::kGpu));
    state.ResumeTiming();
    StatusOr<bool> changed = instance->run(*module, context);
    if (!changed.ok()) die(pass + ": " + changed.message());
    state.PauseTiming();
    module.reset();  // freeing is not the pass's cost
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * source->instructionCount());
}

// Milliseconds of one run of `pass` on a fresh, cache-cold copy of `source` (copying and evicting untimed).
double timePassOnce(const core::HloModule& source, const std::string& pass) {
  std::unique_ptr<core::HloModule> module = core::cloneModule(source);
  evictCaches();
  std::unique_ptr<core::HloPass> instance = std::move(core::createPass(pass)).value();
  core::PassContext context(core::fusionConfigFor(core::Backend::kGpu));
  const auto start = std::chrono::steady_clock::now();
  StatusOr<bool> changed = instance->run(*module, context);
  const auto end = std::chrono::steady_clock::now();
  if (!changed.ok()) die(pass + ": " + changed.message());
  return std::chrono::duration<double, std::milli>(end - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The 100k / 10k ratio of one pass, with the sizes interleaved: every iteration runs the pass on five copies
// of the 10k module, then on one of the 100k module. Run as two separate benchmarks, the 10k runs (a few
// hundred microseconds for the small passes, their module small enough for the L3 cache) and the 100k runs see
// the machine at different moments, and on a shared machine the 10k time alone drifts by 20-40 % within
// seconds. Counters: median ms at each size and their ratio; the iteration time is the 100k run.
void BM_PassScaling(benchmark::State& state, const std::string& pass) {
  const core::HloModule* small = generatedModule(10000);
  const core::HloModule* large = generatedModule(100000);
  std::vector<double> smallMs;
  std::vector<double> largeMs;
  for (auto _ : state) {
    for (int i = 0; i < 5; ++i) smallMs.push_back(timePassOnce(*small, pass));
    largeMs.push_back(timePassOnce(*large, pass));
    state.SetIterationTime(largeMs.back() / 1e3);
  }
  const double smallMedian = median(smallMs);
  const double largeMedian = median(largeMs);
  state.counters["ms_10k"] = smallMedian;
  state.counters["ms_100k"] = largeMedian;
  state.counters["ratio"] = largeMedian / smallMedian;
}

const bool kRegistered = [] {
  if (const char* sizes = std::getenv("FS_BENCH_PASS_SIZES")) {
    // Scaling curves: FS_BENCH_PASS_SIZES=10000,20000,50000,100000 runs every pass at each size.
    for (const core::PassInfo& info : core::registeredPasses()) {
      std::string list = sizes;
      for (size_t pos = 0; pos < list.size();) {
        size_t comma = list.find(',', pos);
        int64_t n = std::atoll(list.substr(pos, comma - pos).c_str());
        benchmark::RegisterBenchmark(("BM_Pass/" + info.name).c_str(), BM_Pass, info.name)
            ->Arg(n)
            ->Iterations(n > 30000 ? 6 : 30)
            ->Unit(benchmark::kMillisecond);
        pos = comma == std::string::npos ? list.size() : comma + 1;
      }
    }
    return true;
  }
  for (const core::PassInfo& info : core::registeredPasses()) {
    // Fixed iteration counts: every iteration pays an untimed clone and cache eviction.
    benchmark::RegisterBenchmark(("BM_Pass/" + info.name).c_str(), BM_Pass, info.name)
        ->Arg(10000)
        ->Iterations(40)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_Pass/" + info.name).c_str(), BM_Pass, info.name)
        ->Arg(100000)
        ->Iterations(6)
        ->Unit(benchmark::kMillisecond);
  }
  for (const core::PassInfo& info : core::registeredPasses()) {
    benchmark::RegisterBenchmark(("BM_PassScaling/" + info.name).c_str(), BM_PassScaling, info.name)
        ->Iterations(8)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
