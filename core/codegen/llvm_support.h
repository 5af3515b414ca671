#pragma once

// Internal to fs_codegen (LLVM types): target initialisation, verification and the O3 pipeline.

#include "core/base/status.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace fusionscope::core {

struct VectorUnit;

// Initialises every target LLVM was built with (the JIT's native one, NVPTX, AArch64 for ahead-of-time
// compilation, ...) once per process.
void initializeLlvmTargets();
// The vector registers of the CPU `machine` compiles for (x86: AVX-512, AVX/AVX2, else SSE's; AArch64: NEON's 32 of
// 16 bytes), or those of `registerBytes` when set (16, 32 or 64: another x86 generation's).
StatusOr<VectorUnit> vectorUnitFor(const llvm::TargetMachine& machine, int registerBytes);
// verifyModule, with LLVM's message as the error.
Status verifyLlvmModule(const llvm::Module& module);
// The new pass manager's default O3 pipeline for `machine`. With `glibcVectorMath`, loops calling exp, log, sin,
// ... may vectorise into calls of glibc's libmvec (the caller makes sure libmvec's symbols resolve).
void optimizeLlvmModule(llvm::Module& module, llvm::TargetMachine& machine, bool glibcVectorMath = false);

}  // namespace fusionscope::core
