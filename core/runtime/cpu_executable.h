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
  // Threads compiling kernels side by side (each kernel is its own LLVM module); 0 = hardware_concurrency().
  int compileThreads = 0;
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
  // The most trips the while loops of one execute() may make in all, nested loops' trips included, before it stops
  // and fails naming the loop (a loop whose condition never turns false, or loops nested so deep they would run for
  // hours); 0: no limit.
  int64_t maxWhileTrips = 0;
  // The most scalar operations (each launch's range items x their estimated cost) one execute() may do, checked at
  // every while-loop trip: a loop whose trips are few but heavy (10^6 trips of a million-element body) stops with
  // the figure in seconds instead of running for hours; 0: no limit. Work outside loops is bounded by the module's
  // size and is not checked.
  double maxWork = 0;
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
  int worker = 0;  // compile spans: the compiling thread (0, 1, ...); their spans overlap across threads
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
  // Emit, optimise and code-generation ("jit") spans, one of each per kernel, each on its compiling thread
  // (ExecutionSpan::worker), then one "link" span (the objects linked into the JIT).
  const std::vector<ExecutionSpan>& compileSpans() const { return m_compileSpans; }
  // Wall time of compiling every kernel and linking them, and the threads that compiled them.
  int64_t compileWallNs() const { return m_compileWallNs; }
  int compileThreads() const { return m_compileThreads; }
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
  int64_t m_tripsThisExecute = 0;
  double m_workThisExecute = 0;  // range x cost of every launch since execute() began    // while-loop trips of every
                                 // loop since execute() began
  std::vector<Launch> m_launches;
  std::vector<ExecutionSpan> m_compileSpans;
  int64_t m_compileWallNs = 0;
  int m_compileThreads = 0;
};

// Compares a result of compiled code with the evaluator's for the same `arguments` by the result check
// (core/eval/result_check.h: a bound per element from how rounding can move it); "" when every element is within
// its bound, else a message naming the output and the first element outside.
std::string compareWithReference(const HloModule& module, const std::vector<Value>& arguments, const Value& expected,
                                 const Value& actual);

}  // namespace fusionscope::core
