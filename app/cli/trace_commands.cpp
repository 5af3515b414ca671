#include "app/cli/trace_commands.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/cli_output.h"
#include "core/base/file_util.h"
#include "core/eval/evaluator.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "core/pipeline/fusion_correspondence.h"
#include "core/pipeline/stage.h"
#include "core/pipeline/xla_stages.h"
#include "core/text/hlo_parser.h"
#include "profiler/compare/time_attribution.h"
#include "profiler/hlo_link/op_attribution.h"
#include "profiler/compare/trace_compare.h"
#include "profiler/compare/trace_stats.h"
#include "profiler/trace/chrome_json_import.h"

namespace fusionscope::cli {

struct TraceCommands {
  CLI::App* stats = nullptr;
  CLI::App* compare = nullptr;
  CLI::App* traceCommand = nullptr;
  std::vector<std::string> command;
  std::string apiRecords = "filtered";
  std::string trace;
  std::string before;
  std::string after;
  std::string stages;
  std::string fusedHlo;
  std::string unfusedHlo;
  std::string output;
  std::string hlo;    // stats --hlo: attribute kernel time to the module's source lines, scopes, ops
  std::string by;     // stats --by (default source), compare --by (none: the kernel comparison)
  std::string pprof;  // stats --pprof: the attribution as a gzipped pprof profile
  bool json = false;
  size_t top = 20;
};

const char* builtInjectionLibrary();  // injection_library.cpp: this build's CUPTI injection library, or nullptr

namespace {

constexpr int kExitNoCuda = 3;

// Only the first line: a one-line message per bad file.
void printError(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  std::fprintf(stderr, "%s\n", line.c_str());
}

// Imports a trace; a file that loads but whose events were all rejected is bad input too.
StatusOr<profiler::Trace> loadTrace(const std::string& path) {
  StatusOr<profiler::Trace> trace = profiler::importChromeTrace(path);
  if (!trace.ok()) return trace;
  if (trace->events.empty() && trace->stats.skippedTotal() > 0) {
    return Status::error(path + ": error: no usable events (" + std::to_string(trace->stats.skippedTotal()) +
                         " malformed events skipped)");
  }
  return trace;
}

int runAttribution(const TraceCommands& c, const profiler::Trace& trace);

int runStats(const TraceCommands& c) {
  StatusOr<profiler::Trace> trace = loadTrace(c.trace);
  if (!trace.ok()) {
    printError(trace.message());
    return exitCodeFor(trace.status(), kExitBadInput);
  }
  if (!c.hlo.empty()) return runAttribution(c, *trace);
  if (!c.by.empty()) {
    std::fprintf(stderr, "stats --by needs --hlo (the module the trace ran)\n");
    return kExitBadInput;
  }
  profiler::TraceStats stats = profiler::computeStats(*trace);
  if (c.json) return emit(profiler::statsJson(stats), c.output);
  std::string text = c.trace + ": " + std::to_string(trace->events.size()) + " events";
  if (trace->stats.skippedTotal() > 0) {
    text += " (" + std::to_string(trace->stats.skippedTotal()) + " malformed events skipped)";
  }
  text += "\n" + profiler::statsText(stats, c.top);
  return emit(text, c.output);
}

// The HLO module most of a trace's kernels ran in (XLA's args.hlo_module); empty when they do not say.
std::string mainHloModule(const profiler::Trace& trace) {
  const profiler::KernelClassifier kernels(trace);
  std::map<std::string, int64_t> counts;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (kernels.isKernel(i)) ++counts[profiler::hloModule(trace.events[i])];
  }
  counts.erase("");
  auto most =
      std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return most == counts.end() ? std::string() : most->first;
}

// `--fused-hlo` / `--unfused-hlo` name XLA's `*after_optimizations.txt`, or the `--xla_dump_to` directory holding
// it: then the module is the one the trace's kernels ran in (core::selectXlaModule: by name, or XLA's default pick
// when the trace names none).
StatusOr<std::string> afterOptimizationsFile(const std::string& path, const std::string& module) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return path;
  StatusOr<core::XlaDumpDirectory> directory = core::scanXlaDumpDirectory(path);
  if (!directory.ok()) return directory.status();
  StatusOr<const core::XlaDumpModule*> selected = core::selectXlaModule(*directory, module);
  if (!selected.ok()) return selected.status();
  for (const core::XlaDumpFile& file : (*selected)->files) {
    if (file.kind == core::XlaDumpFile::Kind::kAfterOptimizations && !file.textPath.empty()) return file.textPath;
  }
  return Status::error(path + ": error: module " + (*selected)->name +
                       " has no *after_optimizations.txt (dump with --xla_dump_hlo_as_text)");
}

// Which unfused kernels each fusion of the fused module replaced. With the unfused module: the unfused
// instructions (the unfused run's hlo_ops) computing one of the fusion's ops (core::replacedInstructions). Without
// it: the fusion's member names, which match only where the unfused kernels are named after the instructions.
profiler::FusionMembership membershipFromHlo(const core::HloModule& fused, const core::HloModule* unfused) {
  profiler::FusionMembership membership;
  if (unfused) {
    membership.members = core::replacedInstructions(fused, *unfused);
    membership.source = "fused+unfused HLO";
    return membership;
  }
  for (core::FusionSummary& fusion : core::summarizeFusions(fused))
    membership.members[fusion.name] = std::move(fusion.members);
  membership.source = "fused HLO";
  return membership;
}

StatusOr<std::unique_ptr<core::HloModule>> loadAfterOptimizations(const std::string& path,
                                                                  const profiler::Trace& trace) {
  StatusOr<std::string> file = afterOptimizationsFile(path, mainHloModule(trace));
  if (!file.ok()) return file.status();
  return core::parseHloModuleFile(*file);
}

// The module a trace ran, for `stats --hlo`: an HLO text file (XLA's *after_optimizations.txt, or a stage of our
// own dump), XLA's --xla_dump_to directory (the trace's module), or our stages.json (its last stage's module_N.txt,
// the one `run` compiles with the same pipeline).
StatusOr<std::unique_ptr<core::HloModule>> loadRunModule(const std::string& path, const profiler::Trace& trace) {
  namespace fs = std::filesystem;
  if (fs::path(path).filename() == "stages.json") {
    StatusOr<std::string> text = readFile(path);
    if (!text.ok()) return text.status();
    const nlohmann::json root = nlohmann::json::parse(*text, nullptr, false);
    if (root.is_discarded() || !root.is_object() || !root.contains("stages") || !root["stages"].is_array() ||
        root["stages"].empty()) {
      return Status::badInput(path + ": error: not a FusionScope stages.json (no \"stages\" array)");
    }
    const nlohmann::json& last = root["stages"].back();
    if (!last.is_object() || !last.contains("files") || !last["files"].is_object() ||
        !last["files"].contains("module") || !last["files"]["module"].is_string()) {
      return Status::badInput(path + ": error: its last stage names no module file (dump with module text)");
    }
    const std::string name = last["files"]["module"].get<std::string>();
    if (name.find('/') != std::string::npos) return Status::badInput(path + ": error: a module file outside it");
    return core::parseHloModuleFile((fs::path(path).parent_path() / name).string());
  }
  return loadAfterOptimizations(path, trace);
}

profiler::AttributionKey attributionKey(const std::string& by) {
  return by == "scope"    ? profiler::AttributionKey::kScope
         : by == "op"     ? profiler::AttributionKey::kOp
         : by == "fusion" ? profiler::AttributionKey::kFusion
                          : profiler::AttributionKey::kSource;
}

// A trace none of whose kernels ran an instruction of the module: said with the counts, exit 2.
bool reportNoMatch(const profiler::TimeAttribution& attribution, const std::string& trace, const std::string& hlo) {
  if (attribution.matchedKernels > 0) return false;
  std::fprintf(stderr,
               "%s: error: none of the trace's %lld kernel launches ran an instruction of %s (e.g. %s): is it the "
               "module this trace ran?\n",
               trace.c_str(), static_cast<long long>(attribution.kernelCount), hlo.c_str(),
               attribution.unmatchedNames.empty() ? "no kernels at all" : attribution.unmatchedNames.front().c_str());
  return true;
}

int runAttribution(const TraceCommands& c, const profiler::Trace& trace) {
  StatusOr<std::unique_ptr<core::HloModule>> module = loadRunModule(c.hlo, trace);
  if (!module.ok()) {
    printError(module.message());
    return exitCodeFor(module.status(), kExitBadInput);
  }
  const profiler::OpAttribution ops = profiler::opAttribution(**module);
  const profiler::TimeAttribution attribution = profiler::attributeTime(trace, ops, attributionKey(c.by), profiler::kOpAttributionModel);
  if (reportNoMatch(attribution, c.trace, c.hlo)) return kExitBadInput;
  if (!c.pprof.empty()) {
    StatusOr<std::string> profile = profiler::attributionPprof(trace, ops);
    Status written = profile.ok() ? writeFileAtomic(c.pprof, *profile) : profile.status();
    if (!written.ok()) {
      printError("--pprof: " + written.message());
      return exitCodeFor(written, kExitFailed);
    }
  }
  if (c.json) return emit(profiler::attributionJson(attribution), c.output);
  return emit(c.trace + " with " + c.hlo + "\n" + profiler::attributionText(attribution, c.top), c.output);
}

// `compare --by source|scope|op`: each trace's kernel time attributed with its own module, rows joined by key.
int runCompareBy(const TraceCommands& c, const profiler::Trace& before, const profiler::Trace& after) {
  if (c.unfusedHlo.empty() || c.fusedHlo.empty()) {
    std::fprintf(stderr,
                 "compare --by needs --unfused-hlo (the before run's module) and --fused-hlo (the after run's)\n");
    return kExitBadInput;
  }
  profiler::TimeAttribution sides[2];
  const profiler::Trace* traces[2] = {&before, &after};
  const std::string* paths[2] = {&c.unfusedHlo, &c.fusedHlo};
  const std::string* names[2] = {&c.before, &c.after};
  for (int side = 0; side < 2; ++side) {
    StatusOr<std::unique_ptr<core::HloModule>> module = loadRunModule(*paths[side], *traces[side]);
    if (!module.ok()) {
      printError(module.message());
      return exitCodeFor(module.status(), kExitBadInput);
    }
    sides[side] = profiler::attributeTime(*traces[side], profiler::opAttribution(**module), attributionKey(c.by),
                                          profiler::kOpAttributionModel);
    if (reportNoMatch(sides[side], *names[side], *paths[side])) return kExitBadInput;
  }
  return emit(c.json ? profiler::attributionComparisonJson(sides[0], sides[1])
                     : "before: " + c.before + "\nafter:  " + c.after + "\n" +
                           profiler::attributionComparisonText(sides[0], sides[1], c.top),
              c.output);
}

int runCompare(const TraceCommands& c) {
  StatusOr<profiler::Trace> before = loadTrace(c.before);
  if (!before.ok()) {
    printError(before.message());
    return exitCodeFor(before.status(), kExitBadInput);
  }
  StatusOr<profiler::Trace> after = loadTrace(c.after);
  if (!after.ok()) {
    printError(after.message());
    return exitCodeFor(after.status(), kExitBadInput);
  }
  if (!c.by.empty()) return runCompareBy(c, *before, *after);
  std::optional<profiler::FusionMembership> membership;
  if (!c.stages.empty()) {
    StatusOr<profiler::FusionMembership> loaded = profiler::loadFusionMembership(c.stages);
    if (!loaded.ok()) {
      printError(loaded.message());
      return kExitBadInput;
    }
    membership = std::move(*loaded);
  } else if (!c.fusedHlo.empty()) {
    StatusOr<std::unique_ptr<core::HloModule>> fused = loadAfterOptimizations(c.fusedHlo, *after);
    if (!fused.ok()) {
      printError(fused.message());
      return kExitBadInput;
    }
    std::unique_ptr<core::HloModule> unfused;
    if (!c.unfusedHlo.empty()) {
      StatusOr<std::unique_ptr<core::HloModule>> loaded = loadAfterOptimizations(c.unfusedHlo, *before);
      if (!loaded.ok()) {
        printError(loaded.message());
        return kExitBadInput;
      }
      unfused = std::move(*loaded);
    }
    membership = membershipFromHlo(**fused, unfused.get());
  }
  profiler::TraceComparison comparison = profiler::compareTraces(*before, *after, membership ? &*membership : nullptr);
  if (c.json) return emit(profiler::comparisonJson(comparison), c.output);
  return emit("before: " + c.before + "\nafter:  " + c.after + "\n\n" + profiler::comparisonText(comparison, c.top),
              c.output);
}

// The injection library: the one this build made, else lib/ next to the installed binary.
std::string injectionLibrary() {
  namespace fs = std::filesystem;
  if (const char* built = builtInjectionLibrary(); built != nullptr && fs::exists(built)) return built;
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    fs::path installed = self.parent_path().parent_path() / "lib" / "libfusionscope_inject.so";
    if (fs::exists(installed)) return installed.string();
  }
  return {};
}

// The traced program's pid while `trace` waits for it, for the signal handler below.
volatile sig_atomic_t g_tracedChild = 0;

// While the program runs, `trace` stays alive to report on it: SIGTERM and SIGHUP sent to the CLI are passed on to
// the program (whose collector then flushes, signal_flush.h); a Ctrl-C from the terminal already reaches the whole
// process group, so SIGINT is passed on only when another process sent it to the CLI alone.
void forwardSignal(int signal, siginfo_t* info, void*) {
  bool fromTerminal = signal == SIGINT && info != nullptr && info->si_code > 0;  // SI_KERNEL: the tty driver
  if (g_tracedChild > 0 && !fromTerminal) ::kill(static_cast<pid_t>(g_tracedChild), signal);
}

// "N events; R activity records captured, D dropped" from the collector's summary in the trace it wrote.
std::string collectedSummary(const std::string& path) {
  StatusOr<profiler::Trace> trace = profiler::importChromeTrace(path);
  if (!trace.ok()) return trace.message();
  std::string text = std::to_string(trace->events.size()) + " events";
  for (const auto& [key, raw] : trace->otherKeys) {
    if (key != "fusionscope_cupti") continue;
    nlohmann::json summary = nlohmann::json::parse(raw, nullptr, false);
    if (summary.is_discarded() || !summary.is_object()) break;
    int64_t records = summary.value("unknown_records", int64_t{0});
    if (summary.contains("records") && summary["records"].is_object()) {
      for (const auto& [kind, count] : summary["records"].items())
        records += count.is_number() ? count.get<int64_t>() : 0;
    }
    text += "; " + std::to_string(records) + " activity records captured, " +
            std::to_string(summary.value("dropped_records", int64_t{0})) + " dropped";
  }
  return text;
}

int runTrace(const TraceCommands& c) {
  if (builtInjectionLibrary() == nullptr) {
    std::fprintf(stderr, "fusionscope-cli trace: this build has no CUPTI collector (the CUDA toolkit was not found)\n");
    return kExitNoCuda;
  }
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) {
    std::fprintf(stderr, "fusionscope-cli trace: no CUDA driver found (libcuda.so.1 cannot be loaded)\n");
    return kExitNoCuda;
  }
  ::dlclose(driver);
  std::string library = injectionLibrary();
  if (library.empty()) {
    std::fprintf(stderr, "fusionscope-cli trace: libfusionscope_inject.so not found\n");
    return kExitFailed;
  }
  std::error_code error;
  std::string output = std::filesystem::absolute(c.output.empty() ? "timeline.ctf.json" : c.output, error).string();
  std::filesystem::remove(output, error);  // so that a stale file is never mistaken for this run's trace
  ::setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
  ::setenv("FUSIONSCOPE_TRACE", output.c_str(), 1);
  ::setenv("FUSIONSCOPE_TRACE_API", c.apiRecords.c_str(), 1);
  std::fflush(nullptr);
  struct sigaction forward {};
  forward.sa_sigaction = forwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  struct sigaction previous[3]{};
  const int kForwarded[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &forward, &previous[i]);
  pid_t child = ::fork();
  if (child < 0) {
    std::perror("fusionscope-cli trace: fork");
    for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &previous[i], nullptr);
    return kExitFailed;
  }
  if (child == 0) {
    for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &previous[i], nullptr);
    std::vector<char*> argv;
    for (const std::string& arg : c.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "fusionscope-cli trace: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  g_tracedChild = child;
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_tracedChild = 0;
  for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &previous[i], nullptr);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  std::string ended = WIFSIGNALED(status) ? std::string("program ended by signal ") + ::strsignal(WTERMSIG(status))
                                          : "program exit code " + std::to_string(code);
  if (!std::filesystem::exists(output)) {
    std::fprintf(stderr, "fusionscope-cli trace: no trace was written to %s (%s; did it use CUDA?)\n", output.c_str(),
                 ended.c_str());
    return code != 0 ? code : kExitFailed;
  }
  std::fprintf(stderr, "fusionscope-cli trace: %s: %s (%s)\n", output.c_str(), collectedSummary(output).c_str(),
               ended.c_str());
  return code;
}

}  // namespace

std::shared_ptr<TraceCommands> addTraceCommands(CLI::App& app) {
  auto c = std::make_shared<TraceCommands>();
  c->stats = app.add_subcommand("stats",
                                "Statistics of a Chrome trace: per-name counts, totals and percentiles, "
                                "device time per category, busy/idle, launch gaps, bytes moved");
  c->stats->add_option("trace", c->trace, "Chrome trace (.json or .json.gz)")->required();
  c->stats->add_flag("--json", c->json, "Machine-readable JSON (times in ns)");
  c->stats->add_option("--top", c->top, "Rows of the per-name table")->capture_default_str();
  c->stats->add_option("-o,--output", c->output, "Write to this file instead of stdout (atomically)");
  CLI::Option* hloOption = c->stats->add_option(
      "--hlo", c->hlo,
      "The module the trace ran (XLA's *after_optimizations.txt or --xla_dump_to directory, an HLO file, or our "
      "stages.json): kernel time by source line, scope, op or fusion instead of the per-name statistics");
  c->stats
      ->add_option("--by", c->by,
                   "With --hlo: rows by source line (file:line of the innermost stack frame), scope (op_name path), "
                   "op (the framework op) or fusion (the kernel's instruction)")
      ->check(CLI::IsMember({"source", "scope", "op", "fusion"}))
      ->needs(hloOption);
  c->stats
      ->add_option("--pprof", c->pprof, "With --hlo: also write the time as a gzipped pprof profile (profile.proto)")
      ->needs(hloOption);

  c->compare = app.add_subcommand("compare",
                                  "Compare two traces (e.g. unfused vs fused): kernels, device time, "
                                  "busy/idle, gaps, bytes, and which kernels each new kernel replaced");
  c->compare->add_option("before", c->before, "Trace of the baseline run")->required();
  c->compare->add_option("after", c->after, "Trace of the changed run")->required();
  CLI::Option* stagesOption =
      c->compare->add_option("--stages", c->stages, "stages.json of the dump that produced the fused module");
  CLI::Option* fusedHloOption = c->compare->add_option(
      "--fused-hlo", c->fusedHlo,
      "XLA's *after_optimizations.txt of the after run, or its --xla_dump_to directory: fusions and their members");
  c->compare
      ->add_option("--unfused-hlo", c->unfusedHlo,
                   "The same for the before run: unfused kernels are matched to fusions by op, shape and metadata")
      ->needs(fusedHloOption);
  stagesOption->excludes(fusedHloOption);
  c->compare
      ->add_option("--by", c->by,
                   "Kernel time per source line, scope or op before and after (each trace with its module: "
                   "--unfused-hlo and --fused-hlo): which lines fusion made faster or slower")
      ->check(CLI::IsMember({"source", "scope", "op"}))
      ->needs(fusedHloOption);
  c->compare->add_flag("--json", c->json, "Machine-readable JSON (times in ns)");
  c->compare->add_option("--top", c->top, "Rows of the top-kernel tables")->capture_default_str();
  c->compare->add_option("-o,--output", c->output, "Write to this file instead of stdout (atomically)");

  c->traceCommand = app.add_subcommand("trace",
                                       "Run a CUDA program under the CUPTI collector (CUDA_INJECTION64_PATH) and "
                                       "write its timeline; exit code 3 when there is no CUDA driver");
  c->traceCommand->add_option("-o,--output", c->output, "Trace file (Chrome JSON; default timeline.ctf.json)");
  c->traceCommand
      ->add_option("--api", c->apiRecords,
                   "Which CUDA API calls get records: filtered (all but the per-launch queries such as "
                   "cudaGetDevice), all, or none (kernels and copies only; no launch flows)")
      ->check(CLI::IsMember({"filtered", "all", "none"}))
      ->capture_default_str();
  c->traceCommand->add_option("command", c->command, "The program and its arguments, after --")
      ->required()
      ->expected(-1);
  return c;
}

std::optional<int> runTraceCommands(const TraceCommands& commands) {
  if (commands.stats && commands.stats->parsed()) return runStats(commands);
  if (commands.compare && commands.compare->parsed()) return runCompare(commands);
  if (commands.traceCommand && commands.traceCommand->parsed()) return runTrace(commands);
  return std::nullopt;
}

}  // namespace fusionscope::cli
