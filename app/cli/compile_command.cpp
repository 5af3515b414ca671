#include "app/cli/compile_command.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/cli/cli_output.h"
#include "core/base/file_util.h"
#include "core/base/memory_limit.h"
#include "core/codegen/aot_compiler.h"
#include "core/codegen/ptx_bundle.h"
#include "core/ir/hlo_module.h"
#include "core/pipeline/pass_registry.h"

namespace fusionscope::cli {

struct CompileCommand {
  CLI::App* command = nullptr;
  std::string input;
  std::string target = "nvptx";
  int sm = 90;
  std::string outputDir;
  std::string pipeline;  // default: gpu for nvptx, cpu for the CPU targets
  std::string fusion = "on";
  std::string cppClass;
  std::string cpu;
  std::string features;
  bool noFusionReport = false;
};

const char* builtLinalgRuntimeLibrary();  // linalg_runtime_library.cpp: this build's libfusionscope_linalg.a

namespace {

// The architecture this CLI was built for, as a target triple names it.
std::string hostArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "";
#endif
}

int compilePtx(const CompileCommand& args, const core::HloModule& module, const std::string& pipeline) {
  const bool fusion = args.fusion == "on";
  StatusOr<std::unique_ptr<core::HloModule>> prepared = core::optimizedCopy(module, pipeline, fusion);
  if (!prepared.ok()) {
    fmt::print(stderr, "{}: {}\n", args.input, prepared.message());
    return exitCodeFor(prepared.status(), kExitFailed);
  }
  core::PtxOptions options;
  options.sm = args.sm;
  StatusOr<core::PtxBundle> bundle = core::compilePtxBundle(**prepared, fusion, options);
  if (!bundle.ok()) {
    fmt::print(stderr, "{}: {}\n", args.input, bundle.message());
    return kExitFailed;
  }
  OutputDirectoryGuard bundleDirectory(args.outputDir);
  if (Status s = core::writePtxBundle(*bundle, args.outputDir); !s.ok()) {
    fmt::print(stderr, "{}\n", s.message());
    return kExitFailed;
  }
  bundleDirectory.keep();
  fmt::print("{}: {} kernels for sm_{}, {} buffers, peak {} bytes -> {}\n", bundle->plan.module,
             bundle->plan.kernels.size(), args.sm, bundle->plan.buffers.size(), bundle->plan.peakBytes, args.outputDir);
  return kExitOk;
}

StatusOr<core::AotArtifact> compileCpu(const CompileCommand& args, const core::HloModule& module,
                                       const std::string& pipeline, bool fusion) {
  StatusOr<std::unique_ptr<core::HloModule>> prepared = core::optimizedCopy(module, pipeline, fusion);
  if (!prepared.ok()) return prepared.status();
  core::AotOptions options;
  options.target = args.target;
  options.cpu = args.cpu;
  options.features = args.features;
  options.className = args.cppClass;
  options.resultNames = core::resultNamesAsWritten(module);
  return core::compileAot(**prepared, options);
}

std::string objectSummary(const core::AotArtifact& artifact) {
  return fmt::format("{} kernels, object {}", artifact.plan.kernels.size(),
                     humanBytes(static_cast<double>(artifact.object.size())));
}

int compileAhead(const CompileCommand& args, const core::HloModule& module, const std::string& pipeline) {
  if (args.cppClass.empty()) {
    fmt::print(stderr, "compile --target {}: needs --cpp-class NAME or NAMESPACE::NAME (the generated class)\n",
               args.target);
    return kExitBadInput;
  }
  const bool fusion = args.fusion == "on";
  StatusOr<core::AotArtifact> artifact = compileCpu(args, module, pipeline, fusion);
  if (!artifact.ok()) {
    fmt::print(stderr, "{}: {}\n", args.input, artifact.message());
    return exitCodeFor(artifact.status(), kExitFailed);
  }
  // An object that calls LAPACK or FFTW links this build's runtime library: written beside it (with it, all or nothing)
  // when it was built for the object's architecture (this host's); for another, the runtime's one source file is built
  // for it (docs/AOT.md).
  if (artifact->callsRuntimeLibrary()) {
    const char* built = builtLinalgRuntimeLibrary();
    const bool sameArchitecture = artifact->triple.substr(0, artifact->triple.find('-')) == hostArchitecture();
    if (built != nullptr && sameArchitecture) {
      StatusOr<std::string> bytes = readFile(built);
      if (!bytes.ok()) {
        fmt::print(stderr, "the LAPACK and FFT runtime library of this build: {}\n", bytes.message());
        return kExitFailed;
      }
      artifact->runtimeLibrary = std::move(*bytes);
    }
  }
  OutputDirectoryGuard directory(args.outputDir);
  if (Status s = core::writeAotArtifact(*artifact, args.outputDir); !s.ok()) {
    fmt::print(stderr, "{}\n", s.message());
    return kExitFailed;
  }
  directory.keep();
  const std::string base = args.outputDir + "/" + artifact->baseName;
  fmt::print("{}: {} (CPU {}): {} (constants {}); arguments and results {}, temporaries {} -> {}.h, {}.o\n",
             artifact->plan.module, artifact->triple, artifact->cpu, objectSummary(*artifact),
             humanBytes(static_cast<double>(artifact->constantBytes)),
             humanBytes(static_cast<double>(artifact->ioBytes)), humanBytes(static_cast<double>(artifact->tempBytes)),
             base, base);
  fmt::print("  the object calls: {}\n", artifact->undefinedSymbols.empty()
                                             ? std::string("nothing outside itself")
                                             : fmt::format("{}", fmt::join(artifact->undefinedSymbols, " ")));
  fmt::print("  link: c++ your_program.cpp {}.o {}\n", base, core::aotLinkFlags(*artifact));
  if (artifact->callsRuntimeLibrary()) {
    // Which runtime sources and libraries the object needs: LAPACK's, FFTW's or both.
    std::vector<std::string> what;
    std::vector<std::string> sources;
    std::vector<std::string> libraries;
    if (artifact->callsLapack()) {
      what.push_back("LAPACK");
      sources.push_back("core/linalg/linalg_runtime.cpp");
      libraries.push_back("LAPACKE and BLAS");
    }
    if (artifact->callsFft()) {
      what.push_back("FFTW");
      sources.push_back("core/linalg/fft_runtime.cpp");
      libraries.push_back("FFTW");
    }
    fmt::print("  {}: {}\n", fmt::join(what, " and "),
               !artifact->runtimeLibrary.empty()
                   ? fmt::format("libfusionscope_linalg.a (this build's) copied to {}", args.outputDir)
                   : fmt::format("build {} for {} into libfusionscope_linalg.a, with that target's {} (docs/AOT.md)",
                                 fmt::join(sources, " and "), artifact->triple, fmt::join(libraries, " and ")));
  }
  // Fusion's effect on the code: the same module compiled the other way (not written).
  if (!args.noFusionReport) {
    StatusOr<core::AotArtifact> other = compileCpu(args, module, pipeline, !fusion);
    fmt::print("  fusion {}: {}; fusion {}: {}\n", fusion ? "on" : "off", objectSummary(*artifact),
               fusion ? "off" : "on", other.ok() ? objectSummary(*other) : "cannot compile (" + other.message() + ")");
  }
  return kExitOk;
}

}  // namespace

std::shared_ptr<CompileCommand> addCompileCommand(CLI::App& app) {
  auto command = std::make_shared<CompileCommand>();
  CompileCommand& c = *command;
  c.command = app.add_subcommand(
      "compile",
      "Compile ahead of time: a GPU bundle (--target nvptx: PTX + launch plan, docs/BUNDLE.md) or, for a CPU target, "
      "a C++ header and an object file that link with `c++ main.cpp NAME.o -lm` (docs/AOT.md)");
  c.command->add_option("module", c.input, "HLO text file")->required()->check(CLI::ExistingFile);
  c.command->add_option("--target", c.target, "nvptx, x86-64, aarch64 or host (this machine's CPU)")
      ->check(CLI::IsMember({"nvptx", "x86-64", "aarch64", "host"}))
      ->capture_default_str();
  c.command->add_option("--sm", c.sm, "nvptx: compute capability (80, 90, ...)")
      ->check(CLI::IsMember({50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}))
      ->capture_default_str();
  c.command->add_option("-o,--output", c.outputDir, "Output directory (the bundle, or NAME.h and NAME.o)")->required();
  c.command->add_option("--pipeline", c.pipeline, "Pass pipeline: gpu, cpu or none (default: gpu for nvptx, else cpu)")
      ->check(CLI::IsMember({"gpu", "cpu", "none"}));
  c.command->add_option("--fusion", c.fusion, "on or off")->check(CLI::IsMember({"on", "off"}))->capture_default_str();
  c.command->add_option("--cpp-class", c.cppClass,
                        "CPU targets: the generated class, NAME or NAMESPACE::NAME; NAME names the files");
  c.command->add_option("--cpu", c.cpu,
                        "CPU targets: the CPU to tune for, in LLVM's names (x86-64-v3, skylake, neoverse-n1, ...)");
  c.command->add_option("--features", c.features, "CPU targets: LLVM target features, \"+avx2,+fma\"");
  c.command->add_flag("--no-fusion-report", c.noFusionReport,
                      "CPU targets: do not compile the module the other way to report fusion's effect on the code");
  return command;
}

std::optional<int> runCompileCommand(const CompileCommand& args) {
  if (!args.command->parsed()) return std::nullopt;
  const bool gpu = args.target == "nvptx";
  if (!gpu && args.sm != 90) {
    fmt::print(stderr, "compile: --sm is for --target nvptx\n");
    return kExitBadInput;
  }
  if (gpu && (!args.cppClass.empty() || !args.cpu.empty() || !args.features.empty())) {
    fmt::print(stderr, "compile --target nvptx: --cpp-class, --cpu and --features are for the CPU targets\n");
    return kExitBadInput;
  }
  std::unique_ptr<core::HloModule> module = loadModule(args.input, true, false);
  if (!module) return kExitBadInput;
  const std::string pipeline = !args.pipeline.empty() ? args.pipeline : gpu ? "gpu" : "cpu";
  return gpu ? compilePtx(args, *module, pipeline) : compileAhead(args, *module, pipeline);
}

}  // namespace fusionscope::cli
