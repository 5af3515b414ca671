#pragma once

// Internal to fs_codegen (LLVM types): target initialisation, verification and the O3 pipeline.

#include "core/base/status.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace fusionscope::core {

// Initialises the native target (and, for nvptx, the NVPTX target) once per process.
void initializeLlvmTargets();
// verifyModule, with LLVM's message as the error.
Status verifyLlvmModule(const llvm::Module& module);
// The new pass manager's default O3 pipeline for `machine`. With `glibcVectorMath`, loops calling exp, log, sin,
// ... may vectorise into calls of glibc's libmvec (the caller makes sure libmvec's symbols resolve).
void optimizeLlvmModule(llvm::Module& module, llvm::TargetMachine& machine, bool glibcVectorMath = false);

}  // namespace fusionscope::core
