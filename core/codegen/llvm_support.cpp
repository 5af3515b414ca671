#include "core/codegen/llvm_support.h"

#include <mutex>

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
  if (registerBytes == 0) {
    if (machine.getTargetTriple().isAArch64()) return VectorUnit{16, 32};
    const llvm::MCSubtargetInfo* info = machine.getMCSubtargetInfo();
    if (info != nullptr && info->checkFeatures("+avx512f")) return VectorUnit{64, 32};
    if (info != nullptr && info->checkFeatures("+avx")) return VectorUnit{32, 16};
    return VectorUnit{16, 16};
  }
  switch (registerBytes) {
    case 64: return VectorUnit{64, 32};
    case 32: return VectorUnit{32, 16};
    case 16: return VectorUnit{16, 16};
    default:
      return Status::error(fmt::format("vector registers of {} bytes: 16, 32 or 64 (0 for the host's)", registerBytes));
  }
}

Status verifyLlvmModule(const llvm::Module& module) {
  std::string message;
  llvm::raw_string_ostream stream(message);
  if (llvm::verifyModule(module, &stream)) {
    return Status::error("generated LLVM IR does not verify: " + stream.str());
  }
  return okStatus();
}

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
