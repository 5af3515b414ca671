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
StatusOr<std::vector<EmittedKernel>> emitKernels(const ExecutionPlan& plan, KernelTarget target, llvm::Module& module);

// Kernel argument count: inputs then outputs.
inline int kernelArgumentCount(const PlanKernel& kernel) {
  return static_cast<int>(kernel.inputs.size() + kernel.outputs.size());
}
// The range a kernel's outer loop (CPU) or its threads (NVPTX) cover: the largest output's element count.
int64_t kernelRange(const PlanKernel& kernel);

}  // namespace fusionscope::core
