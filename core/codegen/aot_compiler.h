#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codegen/execution_plan.h"

namespace fusionscope::core {

class HloModule;

// What an ahead-of-time compilation targets. `target`: "x86-64", "aarch64" or "host" (this machine's triple, CPU
// and features). `cpu` and `features` override the target's defaults (x86-64: the baseline "x86-64", SSE2 only;
// aarch64: "generic", NEON; host: the host's) in LLVM's spelling ("skylake", "+avx2,+fma").
struct AotOptions {
  std::string target = "host";
  std::string cpu;
  std::string features;
  // The generated class, with namespaces: "NS::NAME" or "NAME". Its last component names the files.
  std::string className = "Model";
  // The results' names as the module was written (its root tuple's operands, or its root), one per result: the
  // header's result accessors are named after them, not after what a pipeline made of those instructions (a
  // simplifier rewriting `loss = divide(sum, n)` as a product must not rename a program's result_loss_data()).
  // Empty: the compiled module's own names.
  std::vector<std::string> resultNames;
};

// The names `resultNames` wants for `module` as written.
std::vector<std::string> resultNamesAsWritten(const HloModule& module);

// One compiled module: NAME.h and NAME.o (an ELF relocatable object for `triple`, position independent). The object
// holds every kernel, the constants and the step program (loops and branches included) behind one exported C
// function; the header declares it and wraps it in the class (docs/AOT.md). The object needs nothing but the C
// library's math and memory functions and the compiler's own runtime (libgcc), which `c++ main.cpp NAME.o -lm`
// links: `undefinedSymbols` lists them as the object names them.
struct AotArtifact {
  std::string baseName;  // the class name without namespaces: the file names
  std::string header;
  std::string object;  // ELF bytes
  std::string triple;
  std::string cpu;
  std::string features;
  std::string entrySymbol;  // the exported function the header calls
  ExecutionPlan plan;
  int64_t constantBytes = 0;
  int64_t ioBytes = 0;              // arguments and results (the class owns them)
  int64_t tempBytes = 0;            // temporaries (the class allocates them, or set_temp_buffer)
  std::vector<int64_t> argOffsets;  // where argument i lies in the arguments-and-results block
  std::vector<std::string> undefinedSymbols;
  // Written beside the object as libfusionscope_linalg.a when set (the caller's copy of the LAPACK and FFT runtime).
  std::string runtimeLibrary;
  // The object calls LAPACK (JAX's lapack_* custom calls) through fusionscope_linalg_run, or FFTW (HLO's fft)
  // through fusionscope_fft_run: it links with libfusionscope_linalg.a (core/linalg/linalg_runtime.cpp,
  // fft_runtime.cpp) and the system's LAPACKE and BLAS, or FFTW.
  bool callsLapack() const;
  bool callsFft() const;
  bool callsRuntimeLibrary() const { return callsLapack() || callsFft(); }
};

// The link flags beside the object: `-lm`, or for an object that calls LAPACK or FFTW the runtime library and those
// libraries'.
std::string aotLinkFlags(const AotArtifact& artifact);

// Compiles the module (after its pipeline) ahead of time. Fails with the instruction's name on what codegen cannot
// lower, on a class name that is not a C++ identifier path, and on an unknown target, CPU or feature.
StatusOr<AotArtifact> compileAot(const HloModule& module, const AotOptions& options);

// Writes DIR/NAME.h and DIR/NAME.o, and DIR/libfusionscope_linalg.a when runtimeLibrary is set, together (all or
// none; DIR is created and locked while writing).
Status writeAotArtifact(const AotArtifact& artifact, const std::string& directory);

}  // namespace fusionscope::core
