// fs_trace_bench: Chrome trace import/export throughput of fs_profiler on a generated Kineto-like trace
// (bench/trace_generator.h; 1M events, ~200 MB by default, FS_TRACE_BENCH_EVENTS overrides), written once to a
// temporary file. Next to the importer, a raw simdjson on-demand pass that only touches ph and ts of every event
// is the floor the importer is compared with. Results and targets: docs/PERFORMANCE.md.
#include <simdjson.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "bench/trace_generator.h"
#include "core/base/file_util.h"
#include "profiler/trace/chrome_json_export.h"
#include "profiler/trace/chrome_json_import.h"

// simdjson::builtin_implementation() is compiled into libsimdjson and so always names the library's own choice;
// the macro is what this translation unit's inline on-demand code was compiled for.
#define FS_STRINGIFY_IMPL(x) #x
#define FS_STRINGIFY(x) FS_STRINGIFY_IMPL(x)

namespace {

using namespace fusionscope;
namespace od = simdjson::ondemand;

std::string tempPath(const char* stem) {
  const char* dir = std::getenv("TMPDIR");
  std::filesystem::path base = dir && *dir ? dir : "/tmp";
  return (base / (std::string(stem) + "." + std::to_string(::getpid()) + ".json")).string();
}

// The generated trace on disk, made on first use and removed at exit.
struct TraceFile {
  std::string path;
  int64_t events = 0;
  int64_t keptEvents = 0;  // events the importer keeps (every M event here is folded into processes/threads)
  int64_t bytes = 0;

  TraceFile() {
    int64_t wanted = 1'000'000;
    if (const char* env = std::getenv("FS_TRACE_BENCH_EVENTS")) wanted = std::atoll(env);
    bench::GeneratedTrace generated = bench::generateKinetoTrace(wanted);
    path = tempPath("fs_trace_bench");
    if (Status written = writeFileAtomic(path, generated.text); !written.ok()) {
      std::fprintf(stderr, "%s\n", written.message().c_str());
      std::abort();
    }
    events = generated.events;
    keptEvents = generated.events - generated.metadata;
    bytes = static_cast<int64_t>(generated.text.size());
  }
  ~TraceFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
};

const TraceFile& traceFile() {
  static TraceFile file;
  return file;
}

// The imported trace, for the export benchmarks.
const profiler::Trace& importedTrace() {
  static std::unique_ptr<profiler::Trace> trace = [] {
    StatusOr<profiler::Trace> imported = profiler::importChromeTrace(traceFile().path);
    if (!imported.ok()) {
      std::fprintf(stderr, "%s\n", imported.message().c_str());
      std::abort();
    }
    return std::make_unique<profiler::Trace>(std::move(*imported));
  }();
  return *trace;
}

void setCounters(benchmark::State& state, int64_t events, int64_t bytes) {
  state.SetItemsProcessed(state.iterations() * events);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["events"] = static_cast<double>(events);
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

void importLoop(benchmark::State& state, const profiler::ImportOptions& options) {
  const TraceFile& file = traceFile();
  int64_t windows = 0;
  for (auto _ : state) {
    StatusOr<profiler::Trace> trace = profiler::importChromeTrace(file.path, options);
    if (!trace.ok() || static_cast<int64_t>(trace->events.size()) != file.keptEvents) {
      state.SkipWithError(trace.ok() ? "unexpected event count" : trace.message().c_str());
      return;
    }
    windows = trace->stats.windows;
    benchmark::DoNotOptimize(trace->events.data());
  }
  state.counters["windows"] = static_cast<double>(windows);
  setCounters(state, file.events, file.bytes);
}

// File → Trace, as `importChromeTrace` does it for the app (read, parse, B/E matching): for a file this large,
// the streaming import in windows (profiler::ImportOptions defaults).
void BM_ImportTrace(benchmark::State& state) {
  importLoop(state, profiler::ImportOptions{});
}
BENCHMARK(BM_ImportTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same through the whole-document parse (the file read into one buffer that the Trace keeps), which is what
// smaller files, gzip files and the streaming import's fallback use.
void BM_ImportTraceWholeDocument(benchmark::State& state) {
  profiler::ImportOptions options;
  options.streamThreshold = SIZE_MAX;
  importLoop(state, options);
}
BENCHMARK(BM_ImportTraceWholeDocument)->Unit(benchmark::kMillisecond)->UseRealTime();

// The floor: simdjson on-demand over the same file, touching only ph and ts of every event (the 0.17 s
// "raw parse" figure). The file is read outside the timed loop; BM_ReadFile times that part.
void BM_SimdjsonOnDemandPhTs(benchmark::State& state) {
  const TraceFile& file = traceFile();
  simdjson::padded_string json;
  if (simdjson::padded_string::load(file.path).get(json) != simdjson::SUCCESS) {
    state.SkipWithError("cannot load the trace");
    return;
  }
  od::parser parser;
  for (auto _ : state) {
    od::document doc;
    od::array events;
    if (parser.iterate(json).get(doc) != simdjson::SUCCESS || doc["traceEvents"].get_array().get(events)) {
      state.SkipWithError("simdjson failed");
      return;
    }
    int64_t count = 0;
    double tsSum = 0;
    for (auto element : events) {
      od::object event;
      if (element.get_object().get(event)) break;
      std::string_view ph;
      double ts = 0;
      if (event.find_field_unordered("ph").get_string().get(ph) == simdjson::SUCCESS && !ph.empty()) ++count;
      if (event.find_field_unordered("ts").get_double().get(ts) == simdjson::SUCCESS) tsSum += ts;
    }
    if (count != file.events) {
      state.SkipWithError("unexpected event count");
      return;
    }
    benchmark::DoNotOptimize(tsSum);
  }
  // On-demand runs stage 1 (structural index) with the implementation picked at run time by libsimdjson and stage 2
  // (the iteration above) with the one picked at compile time from the compiler flags.
  state.SetLabel("simdjson stage1 " + std::string(simdjson::get_active_implementation()->name()) + ", stage2 " +
                 FS_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION));
  setCounters(state, file.events, file.bytes);
}
BENCHMARK(BM_SimdjsonOnDemandPhTs)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reading the file into memory (page cache warm), the part of BM_ImportTrace the raw baseline leaves out.
void BM_ReadFile(benchmark::State& state) {
  const TraceFile& file = traceFile();
  for (auto _ : state) {
    StatusOr<std::string> bytes = readFile(file.path, simdjson::SIMDJSON_PADDING);
    if (!bytes.ok()) {
      state.SkipWithError(bytes.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(bytes->data());
  }
  setCounters(state, file.events, file.bytes);
}
BENCHMARK(BM_ReadFile)->Unit(benchmark::kMillisecond)->UseRealTime();

// Trace → JSON text in memory.
void BM_ExportTraceJson(benchmark::State& state) {
  const profiler::Trace& trace = importedTrace();
  int64_t bytes = 0;
  for (auto _ : state) {
    std::string json = profiler::chromeTraceJson(trace);
    bytes = static_cast<int64_t>(json.size());
    benchmark::DoNotOptimize(json.data());
  }
  setCounters(state, static_cast<int64_t>(trace.events.size()), bytes);
}
BENCHMARK(BM_ExportTraceJson)->Unit(benchmark::kMillisecond)->UseRealTime();

// Trace → file (atomic write through a temporary file, as the app saves).
void BM_ExportTraceFile(benchmark::State& state) {
  const profiler::Trace& trace = importedTrace();
  std::string path = tempPath("fs_trace_bench_export");
  for (auto _ : state) {
    if (Status written = profiler::exportChromeTrace(trace, path); !written.ok()) {
      state.SkipWithError(written.message().c_str());
      return;
    }
  }
  std::error_code error;
  int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(path, error));
  std::filesystem::remove(path, error);
  setCounters(state, static_cast<int64_t>(trace.events.size()), bytes);
}
BENCHMARK(BM_ExportTraceFile)->Unit(benchmark::kMillisecond)->UseRealTime();

// The comparison the issue asks for: nlohmann/json's DOM over the same file (read + parse + destroy). It takes
// seconds and ~2 GB, so one iteration per repetition.
void BM_NlohmannDomParse(benchmark::State& state) {
  const TraceFile& file = traceFile();
  for (auto _ : state) {
    StatusOr<std::string> bytes = readFile(file.path);
    if (!bytes.ok()) {
      state.SkipWithError(bytes.message().c_str());
      return;
    }
    nlohmann::json doc = nlohmann::json::parse(*bytes, nullptr, false);
    if (doc.is_discarded() || static_cast<int64_t>(doc["traceEvents"].size()) != file.events) {
      state.SkipWithError("nlohmann could not parse the trace");
      return;
    }
    benchmark::DoNotOptimize(doc.size());
  }
  setCounters(state, file.events, file.bytes);
}
BENCHMARK(BM_NlohmannDomParse)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
