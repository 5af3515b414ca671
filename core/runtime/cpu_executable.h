#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codegen/execution_plan.h"
#include "core/eval/value.h"

namespace fusionscope::core {

class HloModule;
class ThreadPool;

struct CpuCompileOptions {
  int threads = 0;  // worker threads for a kernel's range; 0 = std::thread::hardware_concurrency()
  // Ranges shorter than this run on the calling thread (splitting tiny kernels costs more than it saves).
  int64_t minParallelRange = 4096;
  // Vectorise math calls through glibc's libmvec when it can be loaded.
  bool vectorMath = true;
  // The vector register width (bytes) the blocked kernels (row dots, row convolutions) size their tiles for: 0 for
  // the host's (64 with AVX-512, 32 with AVX/AVX2, else 16), or 16, 32 or 64 to emit them as for such a CPU (the
  // code still runs on this one: LLVM splits wider vectors). Tests use it to cover every tiling on any host.
  int vectorRegisterBytes = 0;
  // When set, each kernel's optimised LLVM IR is written to DIR/KERNEL.ll (the directory must exist).
  std::string dumpIrDirectory;
  // When set, checked before every iteration of a while loop: once nonzero, execute() stops and fails (a loop
  // that never ends stays interruptible; the CLI points it at its SIGINT/SIGTERM flag).
  const volatile std::sig_atomic_t* interrupt = nullptr;
  // The most trips one execution of a while loop may make before execute() stops and fails naming the loop (a
  // loop whose condition never turns false would otherwise run forever); 0: no limit.
  int64_t maxWhileTrips = 0;
};

// A timed phase: compile phases ("llvm-optimize fusion.3", "jit fusion.3") or a kernel launch.
struct ExecutionSpan {
  std::string name;
  std::string kind;     // "kLoop", "dot", ...; for compile spans "emit", "optimize", "jit"
  int64_t startNs = 0;  // steady clock
  int64_t endNs = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  int64_t elements = 0;
};

// The entry computation of a module, lowered kernel by kernel to LLVM IR, optimised at O3 for the host CPU and
// JIT-compiled with ORC LLJIT. Owns every buffer of its ExecutionPlan (parameters, constants, temporaries,
// outputs); execute() runs the plan's steps in order: kernels, each kernel's range split across a thread pool, and
// while / conditional steps, which run their sub-programs on this thread (see PlanStep). Buffers are addressed
// through a table of pointers, so moving a loop body's result into the loop state can swap two buffers' memory
// instead of copying. The module is not referenced after compile(). Not thread-safe: one execute() at a time.
class CpuExecutable {
 public:
  static StatusOr<std::unique_ptr<CpuExecutable>> compile(const HloModule& module,
                                                          const CpuCompileOptions& options = {});
  ~CpuExecutable();
  CpuExecutable(const CpuExecutable&) = delete;
  CpuExecutable& operator=(const CpuExecutable&) = delete;

  const ExecutionPlan& plan() const { return m_plan; }
  // Emit, optimise and JIT spans, one of each per kernel.
  const std::vector<ExecutionSpan>& compileSpans() const { return m_compileSpans; }
  int threadCount() const;
  // The vector register width (bytes) the kernels were blocked for (CpuCompileOptions::vectorRegisterBytes).
  int vectorRegisterBytes() const { return m_vectorRegisterBytes; }

  // Copies an argument into parameter `index`'s buffer (shape must be compatible).
  Status setParameter(int64_t index, const Value& value);
  Status setParameterBytes(int64_t index, const void* data, int64_t bytes);
  // Runs the program once; appends one span per kernel launch when `spans` is given (a kernel inside a loop: one
  // per iteration; at most kMaxSpansPerExecute per call, later launches are not recorded). Fails only when
  // CpuCompileOptions::interrupt stops a loop.
  static constexpr int64_t kMaxSpansPerExecute = 1 << 18;
  Status execute(std::vector<ExecutionSpan>* spans = nullptr);
  // Output i (position in the root tuple) as a Value; result() the whole root (a tuple when the root is one).
  StatusOr<Value> output(int64_t index) const;
  StatusOr<Value> result() const;
  // Raw buffer memory (e.g. for saving outputs or feeding them back).
  const uint8_t* bufferData(int id) const { return m_pointers[static_cast<size_t>(id)]; }
  uint8_t* mutableBufferData(int id) { return m_pointers[static_cast<size_t>(id)]; }

  // setParameter for every argument, execute, result.
  StatusOr<Value> run(const std::vector<Value>& arguments, std::vector<ExecutionSpan>* spans = nullptr);

 private:
  CpuExecutable() = default;
  struct Jit;
  using KernelFn = void (*)(void**, int64_t, int64_t);
  struct Launch {
    KernelFn fn = nullptr;
    std::vector<int> buffers;  // argument buffers, resolved through m_pointers at each launch
    std::vector<void*> args;
    int64_t range = 0;
    int64_t cost = 1;
    int64_t grain = 1;  // EmittedKernel::rangeGrain
  };

  // The rewritten copy compile() planned (calls inlined, batch norms expanded), when it made one: the plan's
  // instruction pointers (constants, kernels) point into it, so it lives as long as the plan.
  std::shared_ptr<const HloModule> m_preparedModule;
  ExecutionPlan m_plan;
  CpuCompileOptions m_options;
  int m_vectorRegisterBytes = 64;
  std::unique_ptr<Jit> m_jit;
  std::unique_ptr<ThreadPool> m_pool;
  Status runSteps(const std::vector<PlanStep>& steps, std::vector<ExecutionSpan>* spans);
  void launch(int kernel, std::vector<ExecutionSpan>* spans);
  void move(const std::vector<PlanMove>& moves);

  std::vector<std::unique_ptr<uint8_t, void (*)(void*)>> m_buffers;  // ownership
  int64_t m_spansThisExecute = 0;
  std::vector<uint8_t*> m_pointers;  // where buffer i is now (PlanMove::swap exchanges entries)
  std::vector<Launch> m_launches;
  std::vector<ExecutionSpan> m_compileSpans;
};

// Compares a CPU result with the evaluator's (the reference the CLI and the tests check against); "" when they
// agree, else a message naming the first difference. compareValues (toleranceFor, elementwise) first. When that
// fails and `module` has a dot or convolution accumulated in f32 (every f32, f16 or bf16 one: XLA's CPU semantics,
// see docs/CODEGEN.md "Dot accumulation") or a sum reduction in f32 or narrower (a row of 4096 random terms that
// cancels to 0.14 differs by ~1e-4 between summation orders), each output array is re-checked normwise: |e - a| <= 1e-5 * max(1, max|e|
// over that array). An f32 dot of K terms has a rounding error bounded relative to the scale of its terms
// (about (32 + K / 32) * 2^-24 * sum|a*b| with the emitter's blocked summation), not relative to an element that
// cancels to near zero, so the elementwise tolerance is the wrong yardstick there; a wrong element is still off
// by far more than the normwise bound.
std::string compareWithReference(const HloModule& module, const Value& expected, const Value& actual);

// compareWithReference, and when that fails for a module whose f32-accumulated dots run inside a while loop, a
// check scaled by how ill-conditioned the reference itself is: a recurrence (an RNN scan: h = tanh(x·Wx + h·Wh))
// can amplify a rounding difference injected at each step by orders of magnitude over the trips, so an f32
// program (ours, or XLA's) differs from the evaluator's double-accumulated dots by far more than one dot's bound.
// The evaluator is run again on `arguments` with every f32/f64 element moved by one ulp; per output array, s =
// max|reference - perturbed reference| is how far one rounding at the inputs moves the result, and elements may
// differ by up to max(normwise bound, (32 + K/32) · s) (K the largest contraction of an f32-accumulated dot: the
// dot's rounding bound in units of one rounding, see docs/CODEGEN.md "Dot accumulation"). A wrong loop (a missed
// update, a wrong slice) is off by O(1), not by the reference's own rounding noise.
std::string compareWithReference(const HloModule& module, const std::vector<Value>& arguments, const Value& expected,
                                 const Value& actual);

// The conditioned check's bound, (32 + K/32) · s, per output array (the root tuple's elements in order, or the
// one non-tuple result), for `fusionscope-cli run --save-reference` (scripts/gpu-check applies it to GPU
// results). Empty unless the module has f32-accumulated dots inside a while loop.
std::vector<double> conditionedBounds(const HloModule& module, const std::vector<Value>& arguments,
                                      const Value& expected);

}  // namespace fusionscope::core
