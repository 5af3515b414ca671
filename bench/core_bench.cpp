// fs_core_bench: throughput of the HLO text parser, the printer and the DOT writer on a generated module
// (bench/hlo_generator.h) and on the largest corpus module. Every benchmark reports items_per_second =
// HLO instructions per second; parse also reports bytes_per_second of HLO text consumed, print and DOT
// the bytes they produce. See docs/PERFORMANCE.md for the numbers and how to run (bench/run-benchmarks).
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/hlo_generator.h"
#include "core/base/file_util.h"
#include "core/dot/dot_writer.h"
#include "core/eval/evaluator.h"
#include "core/ir/hlo_equal.h"
#include "core/ir/hlo_verifier.h"
#include "core/text/hlo_parser.h"
#include "core/text/hlo_printer.h"
#include "tests/common/source_paths.h"

namespace {

using namespace fusionscope;

constexpr const char* kCorpusModule = "model_mobilenet_v2_torchxla_train.hlo";

struct Input {
  std::string label;
  std::string text;
  std::unique_ptr<core::HloModule> module;  // parsed once, for print and DOT
  int64_t instructions = 0;
  std::string error;  // non-empty: the benchmark is skipped with this message
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "fs_core_bench: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

// Parses and verifies `input.text`; also checks that printing and re-parsing gives an equal module.
std::string prepare(Input& input) {
  StatusOr<std::unique_ptr<core::HloModule>> parsed = core::parseHloModule(input.text, input.label);
  if (!parsed.ok()) return parsed.message();
  if (Status verified = core::verifyModule(**parsed); !verified.ok()) return verified.message();
  StatusOr<std::unique_ptr<core::HloModule>> reparsed = core::parseHloModule(core::printModule(**parsed), "<printed>");
  if (!reparsed.ok()) return "printed module does not parse: " + reparsed.message();
  std::string difference;
  if (!core::modulesEqual(**parsed, **reparsed, &difference)) return "print/parse round trip differs: " + difference;
  input.module = std::move(*parsed);
  input.instructions = input.module->instructionCount();
  return {};
}

// The generated module of about `n` instructions. A generator or parser bug aborts the whole run: the
// numbers would be meaningless. Only one size is kept alive at a time: a 100k-instruction module holds
// ~130 MiB of small heap blocks, and leaving it allocated measurably slows the allocation-heavy parser in
// the benchmarks that follow (heap fragmentation), so benchmarks are registered input by input.
const Input& generated(int64_t n) {
  static std::unique_ptr<Input> current;
  if (!current || current->label != "generated_" + std::to_string(n) + ".hlo") {
    current.reset();
    auto input = std::make_unique<Input>();
    input->label = "generated_" + std::to_string(n) + ".hlo";
    bench::GeneratedHlo gen = bench::generateHloModule(n);
    input->text = std::move(gen.text);
    if (std::string error = prepare(*input); !error.empty()) die("generated module: " + error);
    if (input->instructions != gen.instructionCount) {
      die("generated module: generator wrote " + std::to_string(gen.instructionCount) + " instructions, parser found " +
          std::to_string(input->instructions));
    }
    current = std::move(input);
  }
  return *current;
}

// The largest corpus module; a missing file skips its benchmarks (the corpus lives outside the repo).
const Input& corpus() {
  static Input input = [] {
    Input in;
    in.label = kCorpusModule;
    const char* dir = std::getenv("FS_BENCH_CORPUS_DIR");
    std::string path = dir ? std::string(dir) + "/" + kCorpusModule
                           : std::string(FS_SOURCE_DIR) + "/../shared/corpus/hlo/" + kCorpusModule;
    StatusOr<std::string> text = readFile(path);
    if (!text.ok()) {
      in.error = "corpus module missing: " + text.message();
      return in;
    }
    in.text = std::move(*text);
    if (std::string error = prepare(in); !error.empty()) in.error = path + ": " + error;
    return in;
  }();
  return input;
}

bool skip(benchmark::State& state, const Input& input) {
  if (input.error.empty()) return false;
  state.SkipWithError(input.error.c_str());
  return true;
}

void setCommonCounters(benchmark::State& state, const Input& input) {
  state.SetItemsProcessed(state.iterations() * input.instructions);
  state.counters["instructions"] = static_cast<double>(input.instructions);
}

// Live heap held by one parsed module (glibc mallinfo2), measured once per input outside the timing.
double heapBytesOfParsedModule(const Input& input) {
  malloc_trim(0);
  size_t before = mallinfo2().uordblks;
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModule(input.text, input.label);
  size_t after = mallinfo2().uordblks;
  return after > before ? static_cast<double>(after - before) : 0.0;
}

void parseBench(benchmark::State& state, const Input& input) {
  if (skip(state, input)) return;
  double heap = heapBytesOfParsedModule(input);
  for (auto _ : state) {
    StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModule(input.text, input.label);
    if (!module.ok()) {
      state.SkipWithError(module.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(module);
    // Freeing the module is not parsing; keep it out of the figure.
    state.PauseTiming();
    module = Status::error("");
    state.ResumeTiming();
  }
  setCommonCounters(state, input);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(input.text.size()));
  state.counters["heap_B_per_instr"] = heap / static_cast<double>(input.instructions);
  state.counters["text_B_per_instr"] = static_cast<double>(input.text.size()) / static_cast<double>(input.instructions);
}

void printBench(benchmark::State& state, const Input& input) {
  if (skip(state, input)) return;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = core::printModule(*input.module);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  setCommonCounters(state, input);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void parsePrintBench(benchmark::State& state, const Input& input) {
  if (skip(state, input)) return;
  for (auto _ : state) {
    StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModule(input.text, input.label);
    if (!module.ok()) {
      state.SkipWithError(module.message().c_str());
      return;
    }
    std::string text = core::printModule(**module);
    benchmark::DoNotOptimize(text);
    state.PauseTiming();
    module = Status::error("");
    text = std::string();
    state.ResumeTiming();
  }
  setCommonCounters(state, input);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(input.text.size()));
}

void writeDotBench(benchmark::State& state, const Input& input) {
  if (skip(state, input)) return;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string dot = core::writeDot(*input.module);
    bytes = dot.size();
    benchmark::DoNotOptimize(dot);
  }
  setCommonCounters(state, input);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void verifyBench(benchmark::State& state, const Input& input) {
  if (skip(state, input)) return;
  for (auto _ : state) {
    Status status = core::verifyModule(*input.module);
    benchmark::DoNotOptimize(status);
  }
  setCommonCounters(state, input);
}

// The evaluator on 1M elements of add, multiply and exp (the reference every stage is checked against): items are
// elements. Was a timed unit test; a per-element allocation or a quadratic loop shows here.
void BM_EvaluateElementwise1M(benchmark::State& state) {
  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModule(R"(
    ENTRY e {
      x = f32[1024,1024] parameter(0)
      a = f32[1024,1024] add(x, x)
      m = f32[1024,1024] multiply(a, x)
      ROOT e = f32[1024,1024] exponential(m)
    })");
  if (!module.ok()) {
    state.SkipWithError(module.message().c_str());
    return;
  }
  std::vector<core::Value> arguments = core::randomArguments(**module, 1);
  for (auto _ : state) {
    StatusOr<core::EvalResult> result = core::evaluateModule(**module, arguments);
    if (!result.ok()) {
      state.SkipWithError(result.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(result->result);
  }
  state.SetItemsProcessed(state.iterations() * (int64_t{1} << 20));
}
BENCHMARK(BM_EvaluateElementwise1M)->Unit(benchmark::kMillisecond);

using BenchFn = void (*)(benchmark::State&, const Input&);

// Input by input (all benchmarks on the corpus module, then 10k, then 100k), so each input is prepared
// once and the large one is the last thing allocated. Rates (items_per_second, bytes_per_second) are per
// CPU second of the benchmark thread, Google Benchmark's default; the wall time is reported beside them.
void registerAll() {
  const std::pair<const char*, BenchFn> benches[] = {
      {"BM_Parse", parseBench},       {"BM_Print", printBench},   {"BM_ParsePrint", parsePrintBench},
      {"BM_WriteDot", writeDotBench}, {"BM_Verify", verifyBench},
  };
  for (const auto& [name, fn] : benches) {
    benchmark::RegisterBenchmark((std::string(name) + "/mobilenet_v2_train").c_str(), [fn = fn](
                                                                                          benchmark::State& state) {
      fn(state, corpus());
    })->Unit(benchmark::kMillisecond);
  }
  for (int64_t n : {10000, 100000}) {
    for (const auto& [name, fn] : benches) {
      benchmark::RegisterBenchmark((std::string(name) + "/" + std::to_string(n)).c_str(), [fn = fn,
                                                                                           n](benchmark::State& state) {
        fn(state, generated(n));
      })->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
