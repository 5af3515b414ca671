#include "app/cli/run_commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "app/cli/reference_files.h"
#include "core/base/file_util.h"
#include "core/base/json_output.h"
#include "core/base/memory_limit.h"
#include "core/codegen/element_types.h"
#include "core/eval/evaluator.h"
#include "core/eval/result_check.h"
#include "core/io/npy.h"
#include "core/ir/hlo_clone.h"
#include "core/ir/hlo_verifier.h"
#include "core/pipeline/pass_registry.h"
#include "core/pipeline/stage.h"
#include "core/runtime/cpu_executable.h"
#include "core/runtime/feedback_loop.h"
#include "core/text/hlo_parser.h"
#include "profiler/trace/chrome_json_export.h"
#include "profiler/trace/trace_model.h"

namespace fusionscope::cli {

struct RunCommands {
  CLI::App* run = nullptr;
  std::string input;
  std::string pipeline = "cpu";
  std::string fusion = "on";
  int iterations = 1;
  std::string trace;
  std::vector<std::string> inputs;
  std::string saveOutputs;
  std::string saveReference;
  bool loop = false;
  int steps = 1000;
  std::vector<std::string> feeds;
  int threads = 0;
  int vectorBytes = 0;  // 0: the host's vector registers
  uint64_t seed = 1;
  bool noCheck = false;
  int64_t maxTrips = 100'000'000;                // per execution of one while loop; 0: no limit
  int checkSamples = 3;                          // noisy evaluations behind the result check's bounds
  double maxWork = core::EvalOptions{}.maxWork;  // per evaluation of the result check
  bool json = false;
  std::string dumpIr;
};

namespace {

// SIGINT/SIGTERM during `run`: the iteration (or training step) in flight finishes, the loop stops, and what was
// recorded is still written — the trace, the kernel summary — with a line saying how far it got. A second signal
// ends the program at once, and so does the first one when the iteration in flight has not finished
// kInterruptGraceSeconds later (one kernel of a huge module can run for hours; `timeout` sends one signal).
volatile std::sig_atomic_t g_interruptSignal = 0;
constexpr unsigned kInterruptGraceSeconds = 30;

extern "C" void onInterrupt(int signal) {
  if (g_interruptSignal != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  g_interruptSignal = signal;
  ::alarm(kInterruptGraceSeconds);
}

extern "C" void onInterruptGraceOver(int) {
  constexpr char kMessage[] = "interrupted: the iteration in flight did not finish within 30 s; stopping now\n";
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(128 + g_interruptSignal);
}

void installInterruptHandlers() {
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  struct sigaction grace {};
  grace.sa_handler = onInterruptGraceOver;
  sigemptyset(&grace.sa_mask);
  sigaction(SIGALRM, &grace, nullptr);
}

bool interrupted() {
  return g_interruptSignal != 0;
}

void reportInterrupt(const char* what, int done, int planned) {
  fmt::print(stderr, "interrupted by {} after {} of {} {}; writing what was recorded\n",
             g_interruptSignal == SIGINT ? "SIGINT" : "SIGTERM", done, planned, what);
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Largest |expected - actual| over every element of every output.
double maxError(const core::Value& expected, const core::Value& actual) {
  if (expected.isTuple()) {
    double worst = 0;
    for (int i = 0; i < expected.tupleSize() && i < actual.tupleSize(); ++i) {
      worst = std::max(worst, maxError(expected.tupleElement(i), actual.tupleElement(i)));
    }
    return worst;
  }
  double worst = 0;
  for (int64_t i = 0; i < expected.elementCount(); ++i) {
    const double e = expected.doubleAt(i);
    const double a = actual.doubleAt(i);
    if (std::isnan(e) && std::isnan(a)) continue;
    if (e == a) continue;
    worst = std::max(worst, std::fabs(e - a));
  }
  return worst;
}

struct KernelTotals {
  std::string kind;
  int64_t launches = 0;
  int64_t totalNs = 0;
  int64_t bytes = 0;
};

std::string kernelSummary(const std::vector<core::ExecutionSpan>& spans, int iterations) {
  std::map<std::string, KernelTotals> totals;
  std::vector<std::string> order;
  int64_t all = 0;
  for (const core::ExecutionSpan& span : spans) {
    auto [it, inserted] = totals.try_emplace(span.name);
    if (inserted) order.push_back(span.name);
    it->second.kind = span.kind;
    it->second.launches++;
    it->second.totalNs += span.endNs - span.startNs;
    it->second.bytes += span.bytesRead + span.bytesWritten;
    all += span.endNs - span.startNs;
  }
  std::sort(order.begin(), order.end(),
            [&](const std::string& a, const std::string& b) { return totals[a].totalNs > totals[b].totalNs; });
  std::string out = fmt::format("{} kernels, {} iterations, {:.3f} ms per iteration (kernel time)\n", totals.size(),
                                iterations, all / 1e6 / std::max(iterations, 1));
  out +=
      fmt::format("  {:<32} {:<12} {:>8} {:>12} {:>7} {:>10}\n", "kernel", "kind", "launches", "mean us", "%", "GB/s");
  size_t shown = 0;
  for (const std::string& name : order) {
    if (++shown > 25) {
      out += fmt::format("  ... {} more\n", order.size() - 25);
      break;
    }
    const KernelTotals& t = totals[name];
    out += fmt::format("  {:<32} {:<12} {:>8} {:>12.2f} {:>6.1f}% {:>10.2f}\n", name, t.kind, t.launches,
                       t.totalNs / 1e3 / static_cast<double>(t.launches), all > 0 ? 100.0 * t.totalNs / all : 0.0,
                       t.totalNs > 0 ? static_cast<double>(t.bytes) / t.totalNs : 0.0);
  }
  return out;
}

// One 'X' event per kernel launch on the "kernels" thread, compile phases on their own thread, one "iteration N"
// event (category "iteration") per execution on a third: what the trace comparison reads its per-iteration spread
// from.
Status writeTrace(const std::string& path, const std::string& module, const std::vector<core::ExecutionSpan>& compile,
                  const std::vector<core::ExecutionSpan>& kernels,
                  const std::vector<std::pair<int64_t, int64_t>>& iterations, int threads) {
  profiler::Trace trace;
  trace.name = module;
  trace.displayTimeUnit = "ns";
  int64_t origin = INT64_MAX;
  for (const auto& s : compile) origin = std::min(origin, s.startNs);
  for (const auto& s : kernels) origin = std::min(origin, s.startNs);
  if (origin == INT64_MAX) origin = 0;
  const profiler::TrackId pid = profiler::TrackId::fromNumber(0);
  trace.processes[pid] = {fmt::format("fusionscope CPU ({}, {} threads)", module, threads), 0};
  const profiler::TrackId kernelTid = profiler::TrackId::fromNumber(1);
  trace.threads[{pid, kernelTid}] = {"kernels", 0};
  const profiler::TrackId iterationTid = profiler::TrackId::fromNumber(2);
  if (!iterations.empty()) trace.threads[{pid, iterationTid}] = {"iterations", 1};
  // Kernels compile on several threads at once: a track per compiling thread, so no two spans of a track overlap.
  auto compileTid = [&](int worker) {
    const profiler::TrackId tid = profiler::TrackId::fromNumber(3 + worker);
    if (!trace.threads.count({pid, tid}))
      trace.threads[{pid, tid}] = {fmt::format("compile {}", worker + 1), 2 + worker};
    return tid;
  };
  auto add = [&](const core::ExecutionSpan& span, profiler::TrackId tid, const char* category, bool withArgs) {
    profiler::TraceEvent event;
    event.phase = 'X';
    event.name = trace.copyText(span.name);
    event.cat = category;
    event.pid = pid;
    event.tid = tid;
    event.tsNs = span.startNs - origin;
    event.durNs = span.endNs - span.startNs;
    std::string args = withArgs ? fmt::format(R"({{"kind":"{}","bytes read":{},"bytes written":{},"elements":{}}})",
                                              span.kind, span.bytesRead, span.bytesWritten, span.elements)
                                : fmt::format(R"({{"phase":"{}"}})", span.kind);
    event.args = trace.copyText(args);
    trace.events.push_back(event);
  };
  for (const auto& span : compile) add(span, compileTid(span.worker), "compile", false);
  for (const auto& span : kernels) add(span, kernelTid, "kernel", true);
  for (size_t i = 0; i < iterations.size(); ++i) {
    profiler::TraceEvent event;
    event.phase = 'X';
    event.name = trace.copyText(fmt::format("iteration {}", i + 1));
    event.cat = "iteration";
    event.pid = pid;
    event.tid = iterationTid;
    event.tsNs = iterations[i].first - origin;
    event.durNs = iterations[i].second - iterations[i].first;
    event.args = trace.copyText(fmt::format(R"({{"iteration":{}}})", i + 1));
    trace.events.push_back(event);
  }
  return profiler::exportChromeTrace(trace, path);
}

StatusOr<core::Value> valueFromNpy(const core::NpyArray& array, const core::Shape& shape, const std::string& name) {
  if (array.type != shape.elementType() || array.dims != shape.dimensions()) {
    return Status::error(fmt::format("{}: the .npy holds {}[{}], the parameter is {}", name,
                                     core::primitiveTypeName(array.type), fmt::join(array.dims, ","),
                                     shape.toString(false)));
  }
  return core::bytesToValue(shape, reinterpret_cast<const uint8_t*>(array.bytes.data()),
                            static_cast<int64_t>(array.bytes.size()));
}

Status saveOutputs(const core::CpuExecutable& executable, const std::string& dir) {
  StatusOr<DirectoryLock> lock = lockDirectory(dir);  // creates it; one writer at a time
  if (!lock.ok()) return lock.status();
  std::vector<FileContent> files;  // all or none
  for (const core::PlanOutput& output : executable.plan().outputs) {
    core::NpyArray array;
    array.type = output.shape.elementType();
    array.dims = output.shape.dimensions();
    const uint8_t* data = executable.bufferData(output.buffer);
    array.bytes.assign(reinterpret_cast<const char*>(data), static_cast<size_t>(output.shape.byteSize()));
    std::string file =
        (std::filesystem::path(dir) / fmt::format("output_{}_{}.npy", output.index, output.name)).string();
    StatusOr<std::string> bytes = core::serializeNpy(array, file);
    if (!bytes.ok()) return bytes.status();
    files.push_back({std::move(file), std::move(*bytes)});
  }
  return writeFilesAtomic(files);
}

// `NAME=FILE.npy` (--input, --feed): the parameter called NAME and the array in FILE.
struct NamedArray {
  const core::PlanParameter* parameter = nullptr;
  core::NpyArray array;
  std::string file;
};

StatusOr<NamedArray> readNamedArray(const core::ExecutionPlan& plan, const std::string& spec, const char* option) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) return Status::error(fmt::format("{} {}: expected NAME=FILE.npy", option, spec));
  const std::string name = spec.substr(0, eq);
  auto it = std::find_if(plan.parameters.begin(), plan.parameters.end(),
                         [&](const core::PlanParameter& p) { return p.name == name; });
  if (it == plan.parameters.end()) {
    return Status::error(fmt::format("{} {}: the module has no parameter '{}'", option, spec, name));
  }
  NamedArray named{&*it, {}, spec.substr(eq + 1)};
  StatusOr<core::NpyArray> array = core::readNpy(named.file);
  if (!array.ok()) return array.status();
  named.array = std::move(*array);
  return named;
}

// --loop: the step runs --steps times; outputs aliasing parameters carry over (core::FeedbackLoop), each --feed
// parameter takes the next batch of its dataset's rows, --input parameters start from their file and all others
// from zero. Output 0, when it is a scalar, is reported as the loss.
int runLoop(const RunCommands& args, core::CpuExecutable& executable, std::vector<core::ExecutionSpan>& spans) {
  const core::ExecutionPlan& plan = executable.plan();
  StatusOr<core::FeedbackLoop> loop = core::FeedbackLoop::create(executable);
  if (!loop.ok()) {
    fmt::print(stderr, "--loop: {}\n", loop.message());
    return kExitBadInput;
  }
  for (const std::string& spec : args.inputs) {
    StatusOr<NamedArray> input = readNamedArray(plan, spec, "--input");
    StatusOr<core::Value> value =
        input.ok() ? valueFromNpy(input->array, input->parameter->shape, input->file) : input.status();
    Status set = value.ok() ? executable.setParameter(input->parameter->index, *value) : value.status();
    if (!set.ok()) {
      fmt::print(stderr, "{}\n", set.message());
      return kExitBadInput;
    }
  }
  std::vector<NamedArray> feeds;
  for (const std::string& spec : args.feeds) {
    StatusOr<NamedArray> feed = readNamedArray(plan, spec, "--feed");
    if (!feed.ok()) {
      fmt::print(stderr, "{}\n", feed.message());
      return kExitBadInput;
    }
    // A dataset of rows, each row one batch element: [rows, the parameter's dimensions after the first].
    const core::Shape& shape = feed->parameter->shape;
    const std::vector<int64_t>& dims = feed->array.dims;
    const bool rowsMatch =
        shape.rank() > 0 && !dims.empty() && dims[0] > 0 &&
        std::equal(dims.begin() + 1, dims.end(), shape.dimensions().begin() + 1, shape.dimensions().end());
    if (feed->array.type != shape.elementType() || !rowsMatch) {
      fmt::print(
          stderr, "{}: --feed holds {}[{}]; parameter '{}' is {}, so the dataset must be {}[N{}{}]\n", feed->file,
          core::primitiveTypeName(feed->array.type), fmt::join(dims, ","), feed->parameter->name, shape.toString(false),
          core::primitiveTypeName(shape.elementType()), shape.rank() > 1 ? "," : "",
          fmt::join(shape.dimensions().begin() + std::min<int64_t>(1, shape.rank()), shape.dimensions().end(), ","));
      return kExitBadInput;
    }
    feeds.push_back(std::move(*feed));
  }
  const bool scalarLoss =
      !plan.outputs.empty() && plan.outputs[0].shape.isArray() && plan.outputs[0].shape.elementCount() == 1;
  double firstLoss = NAN;
  double lastLoss = NAN;
  const int64_t start = nowNs();
  int stepsDone = 0;
  for (int step = 0; step < args.steps; ++step) {
    // Checked after a step, so an interrupted run has always done (and recorded) at least one.
    if (step > 0 && interrupted()) {
      reportInterrupt("steps", step, args.steps);
      break;
    }
    stepsDone = step + 1;
    for (const NamedArray& feed : feeds) {
      if (Status s = loop->setBatch(feed.parameter->index, feed.array.bytes.data(), feed.array.dims[0], step);
          !s.ok()) {
        fmt::print(stderr, "{}\n", s.message());
        return kExitFailed;
      }
    }
    if (Status s = loop->step(args.trace.empty() || step >= 20 ? nullptr : &spans); !s.ok()) {
      if (interrupted()) {  // a while loop stopped by the signal: the step did not finish
        reportInterrupt("steps", step, args.steps);
        stepsDone = step;
        break;
      }
      fmt::print(stderr, "{}\n", s.message());
      return kExitFailed;
    }
    if (!scalarLoss) continue;
    StatusOr<core::Value> loss = executable.output(0);
    if (loss.ok()) {
      lastLoss = loss->doubleAt(0);
      if (step == 0) firstLoss = lastLoss;
    }
    if (step % 100 == 0 || step + 1 == args.steps) fmt::print("step {:>5}: loss {:.4f}\n", step + 1, lastLoss);
  }
  const double seconds = (nowNs() - start) / 1e9;
  fmt::print("ran {} steps in {:.3f} s ({:.1f} us/step), {} carried over", stepsDone, seconds,
             seconds * 1e6 / std::max(stepsDone, 1), loop->carried().size());
  if (scalarLoss) fmt::print(": loss {:.4f} -> {:.4f}", firstLoss, lastLoss);
  fmt::print("\n");
  return kExitOk;
}

// Median of `values` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  if (values.size() % 2 == 1) return static_cast<double>(values[mid]);
  const int64_t upper = values[mid];
  const int64_t lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (static_cast<double>(lower) + static_cast<double>(upper)) / 2;
}

// What `run --json` reports about the check against the evaluator: "ok", "failed" or "skipped" with a reason.
struct CheckOutcome {
  std::string check = "skipped";
  std::string reason;
  double maxError = NAN;
  int samples = 0;                         // noisy evaluations behind the bounds
  std::vector<core::OutputCheck> outputs;  // per output array: its error against its bound
};

// The one JSON object of `run --json` (docs/CODEGEN.md lists the fields). `iterationEnds[i]` is the size of
// `spans` after iteration i, so iteration i's kernels are spans[iterationEnds[i-1], iterationEnds[i]).
nlohmann::ordered_json runReport(const RunCommands& args, const core::ExecutionPlan& plan,
                                 const std::vector<core::ExecutionSpan>& spans,
                                 const std::vector<size_t>& iterationEnds, const std::vector<int64_t>& wallNs,
                                 const std::vector<int64_t>& callNs, const CheckOutcome& outcome, int threads,
                                 int vectorBytes) {
  std::vector<int64_t> kernelNs;
  std::map<std::string, std::vector<int64_t>> perKernel;
  size_t begin = 0;
  for (size_t end : iterationEnds) {
    int64_t sum = 0;
    std::map<std::string, int64_t> thisIteration;
    for (size_t i = begin; i < end; ++i) {
      sum += spans[i].endNs - spans[i].startNs;
      thisIteration[spans[i].name] += spans[i].endNs - spans[i].startNs;
    }
    for (const auto& [name, ns] : thisIteration) perKernel[name].push_back(ns);
    kernelNs.push_back(sum);
    begin = end;
  }
  nlohmann::ordered_json j;
  j["module"] = plan.module;
  j["pipeline"] = args.pipeline;
  j["fusion"] = args.fusion;
  j["iterations"] = wallNs.size();
  j["threads"] = threads;
  j["vector_bytes"] = vectorBytes;
  j["seed"] = args.seed;
  j["wall_ns_per_iteration"] = median(wallNs);
  j["call_ns_per_iteration"] = median(callNs);
  j["kernel_ns_per_iteration"] = median(kernelNs);
  j["kernels"] = plan.kernels.size();
  j["kernel_list"] = nlohmann::ordered_json::array();
  for (const core::PlanKernel& kernel : plan.kernels) {
    nlohmann::ordered_json k;
    k["name"] = kernel.name;
    k["kind"] = kernel.kind;
    k["instruction"] = kernel.instructionName;
    // Spans carry the HLO name of what the kernel ran (CpuExecutable::run).
    auto it = perKernel.find(kernel.instructionName.empty() ? kernel.name : kernel.instructionName);
    k["median_ns"] = it == perKernel.end() ? 0.0 : median(it->second);
    j["kernel_list"].push_back(std::move(k));
  }
  j["check"] = outcome.check;
  if (!outcome.reason.empty()) j["check_reason"] = outcome.reason;
  j["max_error"] = std::isnan(outcome.maxError) ? nlohmann::ordered_json() : nlohmann::ordered_json(outcome.maxError);
  // Per output: the largest error, the bound it was checked against (the largest per-element bound) and the
  // largest magnitude, so that a reader sees how tight the check was (docs/CODEGEN.md, "Result check").
  j["outputs"] = nlohmann::ordered_json::array();
  for (const core::OutputCheck& output : outcome.outputs) {
    nlohmann::ordered_json o;
    o["name"] = output.name;
    o["type"] = output.type;
    o["elements"] = output.elements;
    o["max_error"] = output.maxError;
    o["bound"] = output.bound;
    o["max_abs"] = output.maxAbs;
    o["unbounded"] = output.unbounded;
    o["failures"] = output.failures;
    j["outputs"].push_back(std::move(o));
  }
  if (outcome.samples > 0) j["check_samples"] = outcome.samples;
  return j;
}

// A file we will write at the end must have a directory to go to: say so before the work, not after it.
Status checkOutputDirectory(const std::string& file, const char* option) {
  const std::filesystem::path parent = std::filesystem::absolute(file).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(parent, ec)) {
    return Status::error(fmt::format("{} {}: directory {} does not exist", option, file, parent.string()));
  }
  return okStatus();
}

int runRun(const RunCommands& args) {
  // From the start: a Ctrl-C while parsing or compiling still gets one iteration run and its trace written (a
  // second one ends the program at once).
  installInterruptHandlers();
  if (args.json && args.loop) {
    fmt::print(stderr, "--json does not cover --loop (it reports timed, checked iterations, not training steps)\n");
    return kExitBadInput;
  }
  // With --json stdout holds the one JSON object and nothing else: the human-readable lines go to stderr.
  FILE* human = args.json ? stderr : stdout;
  if (!args.feeds.empty() && !args.loop) {
    fmt::print(stderr, "--feed needs --loop (a dataset is fed batch by batch to a training step)\n");
    return kExitBadInput;
  }
  if (!args.trace.empty()) {
    if (Status s = checkOutputDirectory(args.trace, "--trace"); !s.ok()) {
      fmt::print(stderr, "{}\n", s.message());
      return kExitBadInput;
    }
  }
  std::unique_ptr<core::HloModule> module = loadModule(args.input, true, false);
  if (!module) return kExitBadInput;
  if (!args.noCheck) {
    // The check holds the evaluator's values (8 bytes per element) beside the compiled buffers: refuse up front.
    if (Status fits = core::checkEvaluationMemory(*module, memoryLimitBytes() / 2); !fits.ok()) {
      fmt::print(stderr, "{}: {} (--no-check runs it without the evaluator)\n", args.input, fits.message());
      return kExitBadInput;
    }
  }
  std::vector<core::ExecutionSpan> compileSpans;
  const int64_t passStart = nowNs();
  StatusOr<std::unique_ptr<core::HloModule>> prepared =
      core::optimizedCopy(*module, args.pipeline, args.fusion == "on");
  if (!prepared.ok()) {
    fmt::print(stderr, "{}: {}\n", args.input, prepared.message());
    return exitCodeFor(prepared.status(), kExitFailed);
  }
  compileSpans.push_back({"passes (" + args.pipeline + ", fusion " + args.fusion + ")", "passes", passStart, nowNs()});
  core::CpuCompileOptions options;
  options.threads = args.threads;
  options.vectorRegisterBytes = args.vectorBytes;
  options.interrupt = &g_interruptSignal;  // a while loop that never ends stops at Ctrl-C
  options.maxWhileTrips = args.maxTrips;   // ... and by itself after --max-trips
  options.maxWork = args.maxWork;          // ... or --max-work operations in loops
  OutputDirectoryGuard dumpIrDirectory(args.dumpIr);
  if (!args.dumpIr.empty()) {
    if (Status s = makeDirectories(args.dumpIr); !s.ok()) {
      fmt::print(stderr, "--dump-llvm-ir: {}\n", s.message());
      return kExitFailed;
    }
    options.dumpIrDirectory = args.dumpIr;
  }
  StatusOr<std::unique_ptr<core::CpuExecutable>> compiled = core::CpuExecutable::compile(**prepared, options);
  if (!compiled.ok()) {
    fmt::print(stderr, "{}: {}\n", args.input, compiled.message());
    return kExitFailed;
  }
  core::CpuExecutable& executable = **compiled;
  dumpIrDirectory.keep();  // the IR was written: it is what a user debugging a failed run wants to read
  int64_t optimizeNs = 0;
  int64_t jitNs = 0;
  for (const core::ExecutionSpan& span : executable.compileSpans()) {
    compileSpans.push_back(span);
    if (span.kind == "optimize") optimizeNs += span.endNs - span.startNs;
    if (span.kind == "jit") jitNs += span.endNs - span.startNs;
  }
  const core::ExecutionPlan& plan = executable.plan();
  fmt::print(human,
             "{}: {} kernels, {} buffers, peak {:.2f} MB ({:.2f} MB of temporaries without reuse); compiled in "
             "{:.1f} ms on {} threads (LLVM O3 {:.1f} ms, code generation {:.1f} ms, summed over kernels); kernels run "
             "on {} threads, blocked for {}-byte vectors\n",
             plan.module, plan.kernels.size(), plan.buffers.size(), plan.peakBytes / 1e6,
             plan.temporaryBytesWithoutReuse / 1e6, executable.compileWallNs() / 1e6, executable.compileThreads(),
             optimizeNs / 1e6, jitNs / 1e6, executable.threadCount(), executable.vectorRegisterBytes());

  std::vector<core::ExecutionSpan> spans;
  std::vector<size_t> iterationEnds;
  std::vector<std::pair<int64_t, int64_t>> iterationSpans;  // each execution's start and end (nowNs)
  std::vector<int64_t> wallNs;
  std::vector<int64_t> callNs;  // wallNs plus the arguments copied in and the outputs copied out
  CheckOutcome outcome;
  if (args.noCheck) outcome.reason = "--no-check";
  auto printReport = [&] {
    fmt::print("{}\n", jsonOutputText(runReport(args, plan, spans, iterationEnds, wallNs, callNs, outcome,
                                                executable.threadCount(), executable.vectorRegisterBytes()),
                                      2));
  };
  if (args.loop) {
    int code = runLoop(args, executable, spans);
    if (code != kExitOk) return code;
  } else {
    std::vector<core::Value> arguments = core::randomArguments(**prepared, args.seed);
    for (const std::string& spec : args.inputs) {
      StatusOr<NamedArray> input = readNamedArray(plan, spec, "--input");
      StatusOr<core::Value> value =
          input.ok() ? valueFromNpy(input->array, input->parameter->shape, input->file) : input.status();
      if (!value.ok()) {
        fmt::print(stderr, "{}\n", value.message());
        return kExitBadInput;
      }
      arguments[static_cast<size_t>(input->parameter->index)] = std::move(*value);
    }
    // The arguments as a caller holds them (bytes in its own memory), and room for the outputs it gets back.
    std::vector<std::vector<uint8_t>> argumentBytes;
    for (size_t i = 0; i < arguments.size(); ++i) {
      const core::Value& argument = arguments[i];
      // Once through setParameter: it checks the shape against the parameter's.
      if (Status set = executable.setParameter(static_cast<int64_t>(i), argument); !set.ok()) {
        fmt::print(stderr, "{}\n", set.message());
        return kExitBadInput;
      }
      StatusOr<std::vector<uint8_t>> bytes = core::valueToBytes(argument);
      if (!bytes.ok()) {
        fmt::print(stderr, "{}\n", bytes.message());
        return kExitBadInput;
      }
      argumentBytes.push_back(std::move(*bytes));
    }
    std::vector<std::vector<uint8_t>> outputBytes;
    for (const core::PlanOutput& output : plan.outputs) {
      outputBytes.emplace_back(static_cast<size_t>(plan.buffers[static_cast<size_t>(output.buffer)].bytes));
    }
    for (int iteration = 0; iteration < args.iterations; ++iteration) {
      if (iteration > 0 && interrupted()) {
        reportInterrupt("iterations", iteration, args.iterations);
        break;
      }
      // Two figures per iteration. The wall time is one execution of the program (every kernel launch, loop and
      // thread hand-off) with the parameters already in their buffers. The call time adds the hand-over a C++
      // caller pays: its arguments copied in, its outputs copied out (bench/vs-xla sets it beside JAX's
      // `block_until_ready(f(*args))`, whose dispatch it shows too).
      const int64_t callStart = nowNs();
      for (size_t i = 0; i < argumentBytes.size(); ++i) {
        if (Status set = executable.setParameterBytes(static_cast<int64_t>(i), argumentBytes[i].data(),
                                                      static_cast<int64_t>(argumentBytes[i].size()));
            !set.ok()) {
          fmt::print(stderr, "{}\n", set.message());
          return kExitBadInput;
        }
      }
      const int64_t runStart = nowNs();
      Status executed = executable.execute(&spans);
      const int64_t runEnd = nowNs();
      for (size_t o = 0; o < plan.outputs.size() && executed.ok(); ++o) {
        std::memcpy(outputBytes[o].data(), executable.bufferData(plan.outputs[o].buffer), outputBytes[o].size());
      }
      const int64_t callEnd = nowNs();
      StatusOr<core::Value> result = executed.ok() ? executable.result() : StatusOr<core::Value>(executed);
      if (!result.ok() && interrupted()) {
        // A while loop stopped by the signal: this iteration did not finish. Its launches stay in the trace (what
        // an endless loop did is what its user wants to see) but not in --json's per-iteration numbers.
        fmt::print(stderr, "{}\n", result.message());
        if (iteration == 0 && !args.noCheck) outcome.reason = result.message();
        reportInterrupt("iterations", iteration, args.iterations);
        break;
      }
      wallNs.push_back(runEnd - runStart);
      callNs.push_back(callEnd - callStart);
      iterationSpans.emplace_back(runStart, runEnd);
      iterationEnds.push_back(spans.size());
      if (!result.ok()) {
        fmt::print(stderr, "{}\n", result.message());
        return exitCodeFor(result.status(), kExitFailed);
      }
      if (iteration == 0 && (!args.noCheck || !args.saveReference.empty())) {
        Status fits = core::checkEvaluationMemory(*module, memoryLimitBytes() / 2);
        // As verify does: an evaluation whose estimate is over the budget is not started (the check costs about
        // 1 + 2 x --check-samples evaluations, each of which would run up to the budget before stopping).
        const double estimate = static_cast<double>(core::estimateEvaluationWork(*module));
        if (fits.ok() && estimate > args.maxWork) {
          fits = Status::badInput(fmt::format(
              "evaluating it would take about {:.1e} operations, over the budget of {:.1e}; raise it with --max-work",
              estimate, args.maxWork));
        }
        core::EvalOptions evalOptions;
        evalOptions.maxWork = args.maxWork;
        StatusOr<core::EvalResult> expected = fits.ok() ? core::evaluateModule(*module, arguments, evalOptions) : fits;
        if (!expected.ok()) {
          fmt::print(human, "reference: not checked ({})\n", expected.message());
          if (!args.noCheck) outcome.reason = expected.message();
          if (!args.saveReference.empty()) {
            fmt::print(stderr, "--save-reference: the evaluator failed: {}\n", expected.message());
            return kExitFailed;
          }
        }
        // Each output element's bound: how far rounding can move it (core/eval/result_check.h).
        StatusOr<core::ResultBounds> bounds =
            expected.ok() ? core::resultBounds(*module, arguments, expected->result, args.checkSamples, args.maxWork)
                          : StatusOr<core::ResultBounds>(expected.status());
        if (bounds.ok()) {
          outcome.samples = bounds->samples;
          outcome.outputs = core::checkResult(*bounds, expected->result, *result);
        }
        if (expected.ok() && !args.saveReference.empty()) {
          if (!bounds.ok()) {
            fmt::print(stderr, "--save-reference: the bounds could not be computed: {}\n", bounds.message());
            return kExitFailed;
          }
          if (Status s = saveReference(plan, arguments, expected->result, *bounds, args.seed, args.saveReference);
              !s.ok()) {
            fmt::print(stderr, "--save-reference: {}\n", s.message());
            return kExitFailed;
          }
          fmt::print(human, "reference: {}/reference.json\n", args.saveReference);
        }
        if (expected.ok() && !args.noCheck) {
          const std::string difference = bounds.ok() ? core::resultCheckFailure(outcome.outputs) : bounds.message();
          outcome.maxError = maxError(expected->result, *result);
          outcome.check = difference.empty() ? "ok" : "failed";
          if (!difference.empty()) outcome.reason = difference;
          // Elements whose noisy runs overflowed have no finite bound and accept anything: said, not hidden.
          int64_t unbounded = 0;
          int64_t elements = 0;
          for (const core::OutputCheck& output : outcome.outputs) {
            unbounded += output.unbounded;
            elements += output.elements;
          }
          const std::string coverage =
              unbounded == 0 ? ""
                             : fmt::format(" ({} of {} elements not checked: no finite bound)", unbounded, elements);
          fmt::print(human, "check against the evaluator: max error {:.3g}: {}{}\n", outcome.maxError,
                     difference.empty() ? "ok" : "MISMATCH, " + difference, coverage);
          for (const core::OutputCheck& output : outcome.outputs) {
            fmt::print(human,
                       "  {} ({}, {} elements): max error {:.3g}, bound {:.3g} ({:.2g} of max |value| {:.3g}){}{}\n",
                       output.name, output.type, output.elements, output.maxError, output.bound,
                       output.maxAbs > 0 ? output.bound / output.maxAbs : 0.0, output.maxAbs,
                       output.unbounded == 0 ? "" : fmt::format(", {} without a finite bound", output.unbounded),
                       output.passed() ? "" : fmt::format(", {} outside", output.failures));
          }
          if (!difference.empty()) {
            fmt::print(stderr, "{}: the compiled module's results differ from the evaluator's: {}\n", args.input,
                       difference);
            // --json still reports the failed check (and the one iteration run) on stdout.
            if (args.json) printReport();
            return kExitFailed;
          }
        }
      }
    }
  }
  // After the last iteration or training step: the outputs as they are then.
  // Kept only when the whole command succeeds: a trace that cannot be written afterwards removes a directory made
  // here (one that existed keeps what it had, with the new outputs).
  std::optional<OutputDirectoryGuard> outputs;
  if (!args.saveOutputs.empty()) {
    outputs.emplace(args.saveOutputs);
    if (Status s = saveOutputs(executable, args.saveOutputs); !s.ok()) {
      fmt::print(stderr, "{}\n", s.message());
      return kExitFailed;
    }
  }
  if (!spans.empty())
    fmt::print(human, "{}", kernelSummary(spans, args.loop ? std::min(args.steps, 20) : args.iterations));
  if (!args.trace.empty()) {
    if (Status s = writeTrace(args.trace, plan.module, compileSpans, spans, iterationSpans, executable.threadCount());
        !s.ok()) {
      fmt::print(stderr, "{}\n", s.message());
      return kExitFailed;
    }
    fmt::print(human, "trace: {} ({} kernel launches)\n", args.trace, spans.size());
  }
  if (args.json) printReport();
  if (outputs) outputs->keep();
  return interrupted() ? 128 + g_interruptSignal : kExitOk;
}

}  // namespace

std::shared_ptr<RunCommands> addRunCommands(CLI::App& app) {
  auto commands = std::make_shared<RunCommands>();
  RunCommands& c = *commands;
  c.run =
      app.add_subcommand("run", "Run the module on the CPU (LLVM JIT), check it against the evaluator, time kernels");
  c.run->add_option("module", c.input, "HLO text file")->required()->check(CLI::ExistingFile);
  c.run->add_option("--pipeline", c.pipeline, "Pass pipeline before codegen: cpu, gpu or none")
      ->check(CLI::IsMember({"gpu", "cpu", "none"}))
      ->capture_default_str();
  c.run->add_option("--fusion", c.fusion, "on: one kernel per fusion; off: one kernel per instruction")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  c.run->add_option("--iterations", c.iterations, "Runs (the first is checked)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c.run->add_option("--trace", c.trace, "Write a Chrome trace (one event per kernel launch, compile phases)");
  c.run->add_option("--input", c.inputs, "NAME=FILE.npy: a parameter's value (others are seeded random)");
  c.run->add_option("--save-outputs", c.saveOutputs, "Directory for the outputs as .npy");
  c.run->add_option(
      "--save-reference", c.saveReference,
      "Directory for the inputs, the evaluator's outputs (.npy) and reference.json (fusionscope-gpurun checks)");
  c.run->add_flag("--loop", c.loop,
                  "Training loop: outputs aliasing parameters (input_output_alias) carry over from step to step");
  c.run->add_option("--steps", c.steps, "Training steps with --loop")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c.run->add_option("--feed", c.feeds,
                    "NAME=FILE.npy with --loop: a dataset of rows [N, ...]; each step feeds the next batch of them");
  c.run->add_option("--threads", c.threads, "Worker threads per kernel (0: all cores)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  c.run
      ->add_option("--vector-bytes", c.vectorBytes,
                   "Vector registers (bytes) to block dots and convolutions for: 0 the host's, or 16 (SSE), 32 (AVX2), "
                   "64 (AVX-512) to see another CPU's tiling on this one")
      ->check(CLI::IsMember({0, 16, 32, 64}))
      ->capture_default_str();
  c.run->add_option("--seed", c.seed, "Seed of the random inputs")->capture_default_str();
  c.run->add_flag("--no-check", c.noCheck, "Do not compare with the evaluator");
  c.run
      ->add_option("--check-samples", c.checkSamples,
                   "Noisy evaluations behind each element's bound in the check (docs/CODEGEN.md, \"Result check\"): "
                   "each costs about two evaluations")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  c.run
      ->add_option("--max-trips", c.maxTrips,
                   "Most trips the while loops of one iteration may make in all, nested loops included, before run "
                   "stops with an error (a loop that never ends); 0: no limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  c.run
      ->add_option("--max-work", c.maxWork,
                   "Most operations one evaluation of the result check may do before it stops (elements computed; "
                   "about 1e8 a second for elementwise ops, 1.5e9 for dots), and the compiled code of one iteration "
                   "once it is in a while loop (about 1e9-1e10 a second)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c.run->add_flag("--json", c.json,
                  "Print one JSON object on stdout (timings, kernels, check; docs/CODEGEN.md); other text to stderr");
  c.run->add_option("--dump-llvm-ir", c.dumpIr, "Write each kernel's optimised LLVM IR to DIR/KERNEL.ll");

  return commands;
}

std::optional<int> runRunCommands(const RunCommands& commands) {
  if (commands.run->parsed()) return runRun(commands);
  return std::nullopt;
}

}  // namespace fusionscope::cli
