#include "core/codegen/llvm_support.h"

#include <dlfcn.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include "core/codegen/kernel_emitter.h"

namespace fusionscope::core {

void initializeLlvmTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

StatusOr<VectorUnit> vectorUnitFor(const llvm::TargetMachine& machine, int registerBytes) {
  const llvm::MCSubtargetInfo* info = machine.getMCSubtargetInfo();
  auto has = [&](const char* feature) { return info != nullptr && info->checkFeatures(feature); };
  VectorUnit unit;
  if (registerBytes == 0) {
    if (machine.getTargetTriple().isAArch64()) {
      unit = VectorUnit{16, 32};
    } else if (has("+avx512f")) {
      unit = VectorUnit{64, 32};
    } else if (has("+avx")) {
      unit = VectorUnit{32, 16};
    } else {
      unit = VectorUnit{16, 16};
    }
  } else {
    switch (registerBytes) {
      case 64: unit = VectorUnit{64, 32}; break;
      case 32: unit = VectorUnit{32, 16}; break;
      case 16: unit = VectorUnit{16, 16}; break;
      default:
        return Status::error(
            fmt::format("vector registers of {} bytes: 16, 32 or 64 (0 for the host's)", registerBytes));
    }
  }
  const char* pairs = unit.registerBytes == 64 ? "+avx512bw" : unit.registerBytes == 32 ? "+avx2" : "+sse2";
  unit.int16Pairs = machine.getTargetTriple().isX86() && has(pairs);
  return unit;
}

Status verifyLlvmModule(const llvm::Module& module) {
  std::string message;
  llvm::raw_string_ostream stream(message);
  if (llvm::verifyModule(module, &stream)) {
    return Status::error("generated LLVM IR does not verify: " + stream.str());
  }
  return okStatus();
}

namespace {

// f64 functions glibc's libmvec (2.35 on) vectorises that LLVM 19's libmvec table lacks: without these, a loop over
// f64 tanh, erf, expm1, log1p, atan2, cbrt, sinh or cosh made one scalar libm call per element (f64 tanh of 65,536
// elements: 2.0 ms). Only the variants the loaded libmvec exports are listed (older glibc has none of them): SSE 2
// lanes and AVX2 4 lanes, as LLVM's own table for sin and exp.
const std::vector<llvm::VecDesc>& libmvecF64Extras() {
  struct Entry {
    const char* scalar;
    const char* parameters;  // "v" per argument
  };
  static const Entry kEntries[] = {{"tanh", "v"},  {"erf", "v"},  {"expm1", "v"}, {"log1p", "v"},
                                   {"atan2", "vv"}, {"cbrt", "v"}, {"sinh", "v"},  {"cosh", "v"}};
  static const std::vector<llvm::VecDesc> kDescriptions = [] {
    std::vector<llvm::VecDesc> found;
    void* library = dlopen("libmvec.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (library == nullptr) return found;
    // The names live as long as the process (VecDesc holds StringRefs; a deque never moves its elements).
    static std::deque<std::string> names;
    for (const Entry& entry : kEntries) {
      for (auto [isa, lanes] : {std::pair{'b', 2}, std::pair{'d', 4}}) {
        std::string vector = fmt::format("_ZGV{}N{}{}_{}", isa, lanes, entry.parameters, entry.scalar);
        if (dlsym(library, vector.c_str()) == nullptr) continue;
        names.push_back(std::move(vector));
        const std::string& vectorName = names.back();
        names.push_back(fmt::format("_ZGV_LLVM_N{}{}", lanes, entry.parameters));
        const std::string& prefix = names.back();
        found.emplace_back(entry.scalar, vectorName, llvm::ElementCount::getFixed(lanes), false, prefix);
      }
    }
    return found;
  }();
  return kDescriptions;
}

}  // namespace

void optimizeLlvmModule(llvm::Module& module, llvm::TargetMachine& machine, bool glibcVectorMath) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  if (glibcVectorMath) {
    llvm::Triple triple(module.getTargetTriple());
    llvm::TargetLibraryInfoImpl library(triple);
    library.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
    if (triple.getArch() == llvm::Triple::x86_64) library.addVectorizableFunctions(libmvecF64Extras());
    fam.registerPass([library] { return llvm::TargetLibraryAnalysis(library); });
  }
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);
}

}  // namespace fusionscope::core
