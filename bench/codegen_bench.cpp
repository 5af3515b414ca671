// fs_codegen on the CPU: fused vs unfused wall time and bytes moved for softmax, layer norm, the MLP and the MNIST
// training step; a STREAM-style copy (plain C++ over the same threads) as the bandwidth ceiling next to an
// elementwise fusion; JIT compile time per kernel (LLVM O3 + ORC) as counters. BM_DotTransposedRhs: dots whose
// rhs is contracted on its innermost dimension, with and without the cpu preset's `dot-rhs-transpose`.
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_clone.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/runtime/cpu_executable.h"
#include "core/runtime/thread_pool.h"
#include "core/text/hlo_parser.h"
#include "tests/common/source_paths.h"

namespace {

using namespace fusionscope;

const char* kSoftmax = R"(HloModule softmax
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[2048,1024] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[2048] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[2048,1024] broadcast(m), dimensions={0}
  s = f32[2048,1024] subtract(x, mb)
  ex = f32[2048,1024] exponential(s)
  sum = f32[2048] reduce(ex, zero), dimensions={1}, to_apply=add
  sb = f32[2048,1024] broadcast(sum), dimensions={0}
  ROOT d = f32[2048,1024] divide(ex, sb)
})";

// An elementwise chain a fused kernel does in one pass: ((x + y) * 0.5 - y) * x.
const char* kElementwise = R"(HloModule elementwise
ENTRY e {
  x = f32[8388608] parameter(0)
  y = f32[8388608] parameter(1)
  h = f32[] constant(0.5)
  hb = f32[8388608] broadcast(h), dimensions={}
  a = f32[8388608] add(x, y)
  m = f32[8388608] multiply(a, hb)
  s = f32[8388608] subtract(m, y)
  ROOT r = f32[8388608] multiply(s, x)
})";

// m x n x k dots (batch b) whose rhs is [b, n, k], contracted on k, its innermost dimension: q·kᵀ.
struct TransposedRhsDot {
  const char* name;
  int64_t b, m, n, k;
};
constexpr TransposedRhsDot kTransposedRhsDots[] = {
    {"512x512x512", 1, 512, 512, 512},
    {"64x512x256", 1, 64, 512, 256},
    {"attention_4x128x512x64", 4, 128, 512, 64},
};

std::string transposedRhsDotText(const TransposedRhsDot& d) {
  if (d.b == 1) {
    return fmt::format(R"(HloModule dot_{0}
ENTRY e {{
  a = f32[{1},{3}] parameter(0)
  b = f32[{2},{3}] parameter(1)
  ROOT d = f32[{1},{2}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
}})",
                       d.name, d.m, d.n, d.k);
  }
  return fmt::format(R"(HloModule dot_{0}
ENTRY e {{
  a = f32[{4},{1},{3}] parameter(0)
  b = f32[{4},{2},{3}] parameter(1)
  ROOT d = f32[{4},{1},{2}] dot(a, b), lhs_batch_dims={{0}}, rhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_contracting_dims={{2}}
}})",
                     d.name, d.m, d.n, d.k, d.b);
}

// `opcode` of x + shift over `elements` f32: a unary op's time on one range of arguments.
//  - exp (4M elements) of a masked softmax's fill (x - 1e9, every lane past the vector exp's fast range) and of
//    ordinary inputs (x - 1): the two should take about the same time (the masked one was 14x slower).
//  - sin (65,536 in cache) of ordinary arguments (x + 1) and of a long context's rotary-embedding arguments
//    (x + 1e5): the two should take about the same time (libmvec's sinf took a scalar path per lane from about 3e4
//    on, 15x slower).
//  - tanh (65,536 in cache) in f64 against the same in f32: f64 tanh, erf, expm1, log1p and atan2 go through libmvec's
//    vector variants (one scalar libm call per element before, 2.0 ms here, about 20x the f32 time).
std::string unaryModule(const char* opcode, int64_t elements, const char* shift, const char* type = "f32") {
  return fmt::format(R"(HloModule {0}
ENTRY e {{
  x = {3}[{1}] parameter(0)
  c = {3}[] constant({2})
  b = {3}[{1}] broadcast(c), dimensions={{}}
  s = {3}[{1}] add(x, b)
  ROOT r = {3}[{1}] {0}(s)
}})",
                     opcode, elements, shift, type);
}

struct Case {
  std::unique_ptr<core::CpuExecutable> executable;
  int64_t bytesPerRun = 0;
  double compileMsPerKernel = 0;
  std::string error;
};

// `name` is a sample, a module above or a kTransposedRhsDots entry; `disabled` passes are skipped besides the fusion
// passes when !fusion; threads 0 = one per core.
Case& getCase(const std::string& name, bool fusion, const std::vector<std::string>& disabled = {}, int threads = 0) {
  static std::map<std::string, Case> cache;
  const std::string key =
      fmt::format("{}/{}/{}/{}", name, fusion ? "fused" : "unfused", fmt::join(disabled, ","), threads);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Case& c = cache[key];
  const TransposedRhsDot* dot = nullptr;
  for (const TransposedRhsDot& d : kTransposedRhsDots) {
    if (name == d.name) dot = &d;
  }
  StatusOr<std::unique_ptr<core::HloModule>> module =
      dot != nullptr          ? core::parseHloModule(transposedRhsDotText(*dot))
      : name == "softmax"     ? core::parseHloModule(kSoftmax)
      : name == "elementwise" ? core::parseHloModule(kElementwise)
      : name == "exp_masked"  ? core::parseHloModule(unaryModule("exponential", 4194304, "-1e9"))
      : name == "exp_normal"  ? core::parseHloModule(unaryModule("exponential", 4194304, "-1"))
      : name == "sin_normal"  ? core::parseHloModule(unaryModule("sine", 65536, "1"))
      : name == "sin_large"   ? core::parseHloModule(unaryModule("sine", 65536, "1e5"))
      : name == "tanh_f32"    ? core::parseHloModule(unaryModule("tanh", 65536, "0"))
      : name == "tanh_f64"    ? core::parseHloModule(unaryModule("tanh", 65536, "0", "f64"))
      : name == "layer_norm"
          ? core::parseHloModuleFile(std::string(FS_SOURCE_DIR) + "/samples/layer_norm/layer_norm.hlo")
      : name == "mlp"
          ? core::parseHloModuleFile(std::string(FS_SOURCE_DIR) + "/samples/mlp/mlp.hlo")
          : core::parseHloModuleFile(std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo");
  if (!module.ok()) {
    c.error = module.message();
    return c;
  }
  core::PipelineSpec spec;
  spec.preset = "cpu";
  if (!fusion) spec.disabled = {"softmax-fusion", "fusion", "fusion-merger", "multi-output-fusion"};
  spec.disabled.insert(spec.disabled.end(), disabled.begin(), disabled.end());
  StatusOr<std::unique_ptr<core::PassPipeline>> pipeline = core::buildPipeline(spec);
  core::PassContext context(core::fusionConfigFor(core::backendFor(spec)));
  StatusOr<core::PipelineRun> run = core::runPipeline(**pipeline, **module, context);
  if (!run.ok()) {
    c.error = run.message();
    return c;
  }
  core::CpuCompileOptions options;
  if (threads > 0) options.threads = threads;
  StatusOr<std::unique_ptr<core::CpuExecutable>> executable = core::CpuExecutable::compile(**module, options);
  if (!executable.ok()) {
    c.error = executable.message();
    return c;
  }
  c.executable = std::move(*executable);
  std::vector<core::Value> arguments = core::randomArguments(**module, 1);
  for (size_t i = 0; i < arguments.size(); ++i) (void)c.executable->setParameter(static_cast<int64_t>(i), arguments[i]);
  for (const core::PlanKernel& kernel : c.executable->plan().kernels)
    c.bytesPerRun += kernel.bytesRead + kernel.bytesWritten;
  int64_t compileNs = 0;
  for (const core::ExecutionSpan& span : c.executable->compileSpans()) compileNs += span.endNs - span.startNs;
  c.compileMsPerKernel = compileNs / 1e6 / std::max<size_t>(1, c.executable->plan().kernels.size());
  return c;
}

void runCase(benchmark::State& state, Case& c) {
  if (!c.executable) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(c.executable->execute().ok());
  state.SetBytesProcessed(state.iterations() * c.bytesPerRun);
  // Untimed: how much of a run the dot kernels take (fusion leaves them as they are), from 200 more runs with
  // per-kernel spans, back to back like the timed loop.
  constexpr int kSpanRuns = 200;
  std::vector<core::ExecutionSpan> spans;
  spans.reserve(static_cast<size_t>(kSpanRuns) * c.executable->plan().kernels.size());
  for (int run = 0; run < kSpanRuns; ++run) benchmark::DoNotOptimize(c.executable->execute(&spans).ok());
  int64_t dotNs = 0;
  for (const core::ExecutionSpan& span : spans) {
    if (span.kind == "dot") dotNs += span.endNs - span.startNs;
  }
  state.counters["dot_us"] = dotNs / 1e3 / kSpanRuns;
  state.counters["kernels"] = static_cast<double>(c.executable->plan().kernels.size());
  state.counters["MB_moved"] = c.bytesPerRun / 1e6;
  state.counters["jit_ms_per_kernel"] = c.compileMsPerKernel;
  state.counters["threads"] = c.executable->threadCount();
}

void registerCases() {
  for (const char* name : {"softmax", "layer_norm", "mlp", "mnist_step", "elementwise"}) {
    for (bool fusion : {false, true}) {
      benchmark::RegisterBenchmark(
          (std::string("BM_Codegen/") + name + (fusion ? "/fused" : "/unfused")).c_str(),
          [name = std::string(name), fusion](benchmark::State& s) { runCase(s, getCase(name, fusion)); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
  for (const char* name : {"exp_normal", "exp_masked", "sin_normal", "sin_large", "tanh_f32", "tanh_f64"}) {
    const char* family = name[0] == 'e' ? "BM_Exp/" : name[0] == 's' ? "BM_Sin/" : "BM_Tanh/";
    benchmark::RegisterBenchmark((std::string(family) + name).c_str(),
                                 [name = std::string(name)](benchmark::State& s) { runCase(s, getCase(name, true)); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  // inner_products: the row dot reads rhs rows along k (no transpose); transposed: `dot-rhs-transpose`'s kernel
  // first, then the row dot's vector tiles. GFLOPs counts the dot's 2·b·m·n·k per run, the transpose included
  // in the time.
  for (const TransposedRhsDot& dot : kTransposedRhsDots) {
    for (int threads : {1, 2}) {
      for (bool transpose : {false, true}) {
        const std::vector<std::string> disabled =
            transpose ? std::vector<std::string>{} : std::vector<std::string>{"dot-rhs-transpose"};
        const double flops = 2.0 * static_cast<double>(dot.b * dot.m * dot.n * dot.k);
        benchmark::RegisterBenchmark(fmt::format("BM_DotTransposedRhs/{}/threads:{}/{}", dot.name, threads,
                                                 transpose ? "transposed" : "inner_products")
                                         .c_str(),
                                     [name = std::string(dot.name), disabled, threads, flops](benchmark::State& s) {
                                       runCase(s, getCase(name, true, disabled, threads));
                                       s.counters["GFLOPs"] = benchmark::Counter(
                                           flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
                                     })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
}

// STREAM copy: b[i] = a[i] over 32 MB, split across the same thread count the executables use.
void BM_StreamCopy(benchmark::State& state) {
  const size_t n = 8388608;
  std::vector<float> a(n, 1.0f);
  std::vector<float> b(n, 0.0f);
  core::ThreadPool pool(static_cast<int>(std::thread::hardware_concurrency()));
  for (auto _ : state) {
    pool.parallelFor(static_cast<int64_t>(n), [&](int64_t begin, int64_t end) {
      std::memcpy(b.data() + begin, a.data() + begin, static_cast<size_t>(end - begin) * sizeof(float));
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * n * sizeof(float)));
}
BENCHMARK(BM_StreamCopy)->Unit(benchmark::kMicrosecond)->UseRealTime();

// STREAM's copy as the loop STREAM writes (b[i] = a[i] * s with s == 1 at run time, so the compiler can neither
// drop the multiply nor turn the loop into memcpy): vectorised loads and ordinary stores, like our kernels.
void BM_StreamCopyLoop(benchmark::State& state) {
  const size_t n = 8388608;
  std::vector<float> a(n, 1.0f);
  std::vector<float> b(n, 0.0f);
  volatile float one = 1.0f;
  const float scale = one;
  core::ThreadPool pool(static_cast<int>(std::thread::hardware_concurrency()));
  for (auto _ : state) {
    pool.parallelFor(static_cast<int64_t>(n), [&](int64_t begin, int64_t end) {
      const float* __restrict in = a.data();
      float* __restrict out = b.data();
      for (int64_t i = begin; i < end; ++i) out[i] = in[i] * scale;
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * n * sizeof(float)));
}
BENCHMARK(BM_StreamCopyLoop)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  registerCases();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
