#pragma once

// Internal to fs_codegen: LLVM types appear here, so only fs_codegen's own .cpp files include this header
// (the public headers execution_plan.h, cpu_executable.h and ptx_bundle.h stay LLVM-free).

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codegen/execution_plan.h"

namespace llvm {
class Module;
}  // namespace llvm

namespace fusionscope::core {

enum class KernelTarget { kCpu, kNvptx };

// The CPU vector registers the blocked kernels (row dots, row convolutions) size their tiles for: two registers
// of f32 lanes per tile row, as many rows as leave room for the rhs tile and the broadcast operand. The default
// is AVX-512 (32 registers of 64 bytes); an AVX/AVX2 host has 16 of 32 bytes and an SSE-only one 16 of 16
// (hostVectorUnit in cpu_executable.cpp reads them off the JIT's target). Tiles sized for AVX-512 on an AVX2 host
// need twice the registers it has and spill in the innermost loop (64x512x256 f32 dot: 692 us against 150).
struct VectorUnit {
  int registerBytes = 64;
  int registers = 32;
  // The target has x86's multiply-add of 16-bit pairs (pmaddwd) at this register width: SSE2 for 16 bytes, AVX2
  // for 32, AVX-512BW for 64; with VNNI, LLVM folds it and the following add into vpdpwssd. Narrow integer dots
  // (s8/u8/s16 into s32) multiply two k terms per lane with it (DotEmitter::rowDot).
  bool int16Pairs = false;
};

// Launch facts of one emitted kernel (for the NVPTX bundle: the element range its threads cover).
struct EmittedKernel {
  std::string name;
  int64_t range = 0;        // CPU: the [begin, end) range the kernel accepts; NVPTX: threads needed
  int64_t costPerItem = 1;  // rough scalar operations per range item (decides whether to split it)
  // CPU: a split of the range should start at multiples of this (a row dot computes rows in register blocks of
  // this many; a split mid-block leaves slower, latency-bound small blocks).
  int64_t rangeGrain = 1;
};

// Adds one function per kernel of `plan` to `module`, named after PlanKernel::name.
// CPU: `void name(ptr buffers, i64 begin, i64 end)`, buffers[i] being argument i (the kernel's inputs then its
// outputs); the function computes the output elements whose linear index is in [begin, end) (outputs with fewer
// elements than the range cover the proportional part), so the range can be split across threads.
// NVPTX: `void name(ptr addrspace(1) arg0, ...)`, one thread per element of the range, guarded by the count.
// Fails, naming the instruction and opcode, on anything the elemental emitter cannot lower.
// `vectors`: the CPU's vector registers (ignored for NVPTX).
StatusOr<std::vector<EmittedKernel>> emitKernels(const ExecutionPlan& plan, KernelTarget target, llvm::Module& module,
                                                 VectorUnit vectors = {});

// Kernel argument count: inputs then outputs.
inline int kernelArgumentCount(const PlanKernel& kernel) {
  return static_cast<int>(kernel.inputs.size() + kernel.outputs.size());
}
// The range a kernel's outer loop (CPU) or its threads (NVPTX) cover: the largest output's element count.
int64_t kernelRange(const PlanKernel& kernel);

}  // namespace fusionscope::core
