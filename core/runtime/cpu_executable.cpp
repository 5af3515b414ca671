#include "core/runtime/cpu_executable.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <thread>

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "core/base/file_util.h"
#include "core/base/memory_limit.h"
#include "core/codegen/codegen_preparation.h"
#include "core/codegen/element_types.h"
#include "core/codegen/kernel_emitter.h"
#include "core/codegen/llvm_support.h"
#include "core/eval/evaluator.h"
#include "core/eval/result_check.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/linalg/fft_call.h"
#include "core/linalg/linalg_call.h"
#include "core/runtime/thread_pool.h"

namespace fusionscope::core {
namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string llvmErrorText(llvm::Error error) {
  return llvm::toString(std::move(error));
}

// Emits, verifies, optimises and compiles one kernel to an object file on the calling thread (its own LLVMContext;
// `machine` used by this thread alone). Spans: emit, optimize, codegen.
Status compileKernel(const PlanKernel& kernel, llvm::TargetMachine& machine, const llvm::DataLayout& layout,
                     const VectorUnit& vectors, bool vectorMath, const std::string& dumpIrDirectory, int worker,
                     std::unique_ptr<llvm::MemoryBuffer>& object, EmittedKernel& emitted,
                     std::vector<ExecutionSpan>& spans) {
  ExecutionPlan single;
  single.kernels = {kernel};
  llvm::LLVMContext context;
  llvm::Module llvmModule(kernel.name, context);
  llvmModule.setDataLayout(layout);
  llvmModule.setTargetTriple(machine.getTargetTriple().str());
  const int64_t start = nowNs();
  StatusOr<std::vector<EmittedKernel>> kernels = emitKernels(single, KernelTarget::kCpu, llvmModule, vectors);
  if (!kernels.ok()) return kernels.status();
  if (Status verified = verifyLlvmModule(llvmModule); !verified.ok()) {
    return Status::error(kernel.name + ": " + verified.message());
  }
  emitted = (*kernels)[0];
  const int64_t emittedAt = nowNs();
  spans.push_back({"emit " + kernel.name, "emit", start, emittedAt});
  optimizeLlvmModule(llvmModule, machine, vectorMath);
  const int64_t optimizedAt = nowNs();
  spans.push_back({"llvm-optimize " + kernel.name, "optimize", emittedAt, optimizedAt});
  if (!dumpIrDirectory.empty()) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    llvmModule.print(stream, nullptr);
    stream.flush();
    FS_RETURN_IF_ERROR(writeFileAtomic(dumpIrDirectory + "/" + kernel.name + ".ll", text));
  }
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream stream(bytes);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, stream, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    return Status::error(kernel.name + ": the host backend cannot emit an object file");
  }
  codegen.run(llvmModule);
  object = std::make_unique<llvm::SmallVectorMemoryBuffer>(std::move(bytes), kernel.name + ".o",
                                                           /*RequiresNullTerminator=*/false);
  spans.push_back({"jit " + kernel.name, "jit", optimizedAt, nowNs()});
  for (ExecutionSpan& span : spans) span.worker = worker;
  return okStatus();
}

}  // namespace

struct CpuExecutable::Jit {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> machine;
};

CpuExecutable::~CpuExecutable() = default;

int CpuExecutable::threadCount() const {
  return m_pool ? m_pool->threadCount() : 1;
}

StatusOr<std::unique_ptr<CpuExecutable>> CpuExecutable::compile(const HloModule& input,
                                                                const CpuCompileOptions& options) {
  StatusOr<std::unique_ptr<HloModule>> unwrapped = prepareForCodegen(input);
  if (!unwrapped.ok()) return unwrapped.status();
  const HloModule& module = *unwrapped ? **unwrapped : input;
  StatusOr<ExecutionPlan> plan = planExecution(module);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<CpuExecutable> executable(new CpuExecutable());
  executable->m_preparedModule = std::move(*unwrapped);
  executable->m_plan = std::move(*plan);
  executable->m_options = options;
  const ExecutionPlan& p = executable->m_plan;
  // Every buffer stays allocated for the whole run: refuse before allocating what cannot fit.
  double bufferBytes = 0;  // summed as doubles: many huge buffers must not wrap around
  for (const PlanBuffer& buffer : p.buffers) bufferBytes += static_cast<double>(buffer.bytes);
  if (const double limit = memoryLimitBytes() / 2; limit > 0 && bufferBytes > limit) {
    return Status::error(
        fmt::format("cannot run: its buffers need {}, more than the {} allowed (half of this "
                    "machine's memory or address-space limit)",
                    humanBytes(bufferBytes), humanBytes(limit)));
  }

  initializeLlvmTargets();
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return Status::error("cannot detect the host target: " + llvmErrorText(builder.takeError()));
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine = builder->createTargetMachine();
  if (!machine) return Status::error("cannot create the host target machine: " + llvmErrorText(machine.takeError()));
  StatusOr<VectorUnit> vectors = vectorUnitFor(**machine, options.vectorRegisterBytes);
  if (!vectors.ok()) return vectors.status();
  executable->m_vectorRegisterBytes = vectors->registerBytes;
  auto jit = std::make_unique<Jit>();
  jit->machine = std::move(*machine);
  llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> lljit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*builder).create();
  if (!lljit) return Status::error("cannot create the JIT: " + llvmErrorText(lljit.takeError()));
  jit->jit = std::move(*lljit);
  const llvm::DataLayout layout = jit->jit->getDataLayout();
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(layout.getGlobalPrefix());
  if (!generator) return Status::error("cannot expose libm to the JIT: " + llvmErrorText(generator.takeError()));
  jit->jit->getMainJITDylib().addGenerator(std::move(*generator));
  // The LAPACK and FFT kernels' entries (core/linalg), by address: this process need not export them.
  {
    llvm::orc::SymbolMap runtime;
    runtime[jit->jit->mangleAndIntern("fusionscope_linalg_run")] = {
        llvm::orc::ExecutorAddr::fromPtr(&fusionscope_linalg_run), llvm::JITSymbolFlags::Exported};
    runtime[jit->jit->mangleAndIntern("fusionscope_fft_run")] = {llvm::orc::ExecutorAddr::fromPtr(&fusionscope_fft_run),
                                                                 llvm::JITSymbolFlags::Exported};
    if (llvm::Error error = jit->jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(runtime)))) {
      return Status::error("cannot expose the LAPACK runtime to the JIT: " + llvmErrorText(std::move(error)));
    }
  }
  // glibc's vector math (libmvec) lets loops over exp/log/sin/... vectorise; without it they stay scalar calls.
  bool vectorMath = false;
  if (options.vectorMath) {
    auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", layout.getGlobalPrefix());
    if (mvec) {
      jit->jit->getMainJITDylib().addGenerator(std::move(*mvec));
      vectorMath = true;
    } else {
      llvm::consumeError(mvec.takeError());
    }
  }

  // Buffers first: the launches point into them.
  for (const PlanBuffer& buffer : p.buffers) {
    const size_t bytes = static_cast<size_t>((std::max<int64_t>(buffer.bytes, 1) + 63) / 64 * 64);
    auto* memory = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
    if (memory == nullptr) return Status::error(fmt::format("cannot allocate {} bytes", bytes));
    std::memset(memory, 0, bytes);
    executable->m_buffers.emplace_back(memory, &std::free);
    executable->m_pointers.push_back(memory);
    if (buffer.constant != nullptr) {
      StatusOr<std::vector<uint8_t>> data = constantBytes(*buffer.constant);
      if (!data.ok()) return data.status();
      std::memcpy(memory, data->data(), std::min(data->size(), static_cast<size_t>(buffer.bytes)));
    }
  }

  // One LLVM module per kernel, so each kernel's optimisation and code generation is its own span, and kernels
  // compile side by side: each worker thread has a target machine of its own and takes the next kernel (its own
  // LLVMContext) until none is left; the objects are then linked into the JIT in the plan's order.
  struct Compiled {
    Status status = okStatus();
    std::unique_ptr<llvm::MemoryBuffer> object;
    EmittedKernel emitted;
    std::vector<ExecutionSpan> spans;
  };
  std::vector<Compiled> compiled(p.kernels.size());
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = static_cast<int>(std::min<size_t>(
      p.kernels.size(), static_cast<size_t>(options.compileThreads > 0 ? options.compileThreads : hardware)));
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
  for (int w = 0; w < workers; ++w) {
    llvm::Expected<std::unique_ptr<llvm::TargetMachine>> made = builder->createTargetMachine();
    if (!made) return Status::error("cannot create the host target machine: " + llvmErrorText(made.takeError()));
    machines.push_back(std::move(*made));
  }
  std::atomic<size_t> nextKernel{0};
  std::atomic<bool> failed{false};
  auto compileKernels = [&](int worker) {
    llvm::TargetMachine& machine = *machines[static_cast<size_t>(worker)];
    for (size_t k = nextKernel++; k < p.kernels.size() && !failed; k = nextKernel++) {
      compiled[k].status = compileKernel(p.kernels[k], machine, layout, *vectors, vectorMath, options.dumpIrDirectory,
                                         worker, compiled[k].object, compiled[k].emitted, compiled[k].spans);
      if (!compiled[k].status.ok()) failed = true;
    }
  };
  const int64_t compileStart = nowNs();
  {
    std::vector<std::thread> threads;
    for (int w = 1; w < workers; ++w) threads.emplace_back(compileKernels, w);
    if (workers > 0) compileKernels(0);
    for (std::thread& thread : threads) thread.join();
  }
  for (size_t k = 0; k < p.kernels.size(); ++k) {  // the first failure in the plan's order, whichever thread
    if (!compiled[k].status.ok()) return compiled[k].status;
  }
  const int64_t linkStart = nowNs();
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const PlanKernel& kernel = p.kernels[k];
    if (llvm::Error error = jit->jit->addObjectFile(std::move(compiled[k].object))) {
      return Status::error(kernel.name + ": cannot add to the JIT: " + llvmErrorText(std::move(error)));
    }
  }
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const PlanKernel& kernel = p.kernels[k];
    llvm::Expected<llvm::orc::ExecutorAddr> address = jit->jit->lookup(kernel.name);
    if (!address) return Status::error(kernel.name + ": JIT lookup failed: " + llvmErrorText(address.takeError()));
    for (ExecutionSpan& span : compiled[k].spans) executable->m_compileSpans.push_back(std::move(span));
    Launch launch;
    launch.fn = address->toPtr<KernelFn>();
    launch.range = compiled[k].emitted.range;
    launch.cost = compiled[k].emitted.costPerItem;
    launch.grain = std::max<int64_t>(1, compiled[k].emitted.rangeGrain);
    launch.buffers = kernel.inputs;
    launch.buffers.insert(launch.buffers.end(), kernel.outputs.begin(), kernel.outputs.end());
    launch.args.resize(launch.buffers.size());
    executable->m_launches.push_back(std::move(launch));
  }
  if (!p.kernels.empty()) executable->m_compileSpans.push_back({"link", "link", linkStart, nowNs()});
  // FFTW plans are made now, with the code, not in a kernel's first run (where planning, and FFTW's first use in the
  // process, would count as kernel time).
  for (const PlanKernel& kernel : p.kernels) {
    if (kernel.instruction == nullptr || !linalg::isFft(*kernel.instruction)) continue;
    StatusOr<linalg::FftCall> call = linalg::fftCallOf(*kernel.instruction);
    if (!call.ok()) continue;  // the kernel emitter refused it already
    const std::vector<int64_t> words = linalg::encodeFft(*call);
    if (fusionscope_fft_prepare(words.data()) != 0) {
      return Status::error(kernel.instructionName + ": FFTW cannot plan this transform");
    }
  }
  executable->m_compileWallNs = nowNs() - compileStart;
  executable->m_compileThreads = workers;
  executable->m_jit = std::move(jit);
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  executable->m_pool = std::make_unique<ThreadPool>(std::max(threads, 1));
  return executable;
}

Status CpuExecutable::setParameterBytes(int64_t index, const void* data, int64_t bytes) {
  if (index < 0 || index >= static_cast<int64_t>(m_plan.parameters.size())) {
    return Status::error(fmt::format("no parameter {}", index));
  }
  const PlanParameter& parameter = m_plan.parameters[static_cast<size_t>(index)];
  const int64_t expected = m_plan.buffers[static_cast<size_t>(parameter.buffer)].bytes;
  if (bytes != expected) {
    return Status::error(
        fmt::format("parameter {} ({}) takes {} bytes, got {}", index, parameter.name, expected, bytes));
  }
  std::memcpy(m_pointers[static_cast<size_t>(parameter.buffer)], data, static_cast<size_t>(bytes));
  return okStatus();
}

Status CpuExecutable::setParameter(int64_t index, const Value& value) {
  if (index < 0 || index >= static_cast<int64_t>(m_plan.parameters.size())) {
    return Status::error(fmt::format("no parameter {}", index));
  }
  const PlanParameter& parameter = m_plan.parameters[static_cast<size_t>(index)];
  if (!value.shape().compatible(Shape(parameter.shape.elementType(), parameter.shape.dimensions()))) {
    return Status::error(fmt::format("parameter {} ({}) has shape {}, got {}", index, parameter.name,
                                     parameter.shape.toString(false), value.shape().toString(false)));
  }
  StatusOr<std::vector<uint8_t>> bytes = valueToBytes(value);
  if (!bytes.ok()) return bytes.status();
  return setParameterBytes(index, bytes->data(), static_cast<int64_t>(bytes->size()));
}

void CpuExecutable::launch(int kernel, std::vector<ExecutionSpan>* spans) {
  Launch& launch = m_launches[static_cast<size_t>(kernel)];
  for (size_t i = 0; i < launch.buffers.size(); ++i) {
    launch.args[i] = m_pointers[static_cast<size_t>(launch.buffers[i])];
  }
  // A loop of many trips launches its kernels many times: past kMaxSpansPerExecute the rest go unrecorded, so
  // memory stays bounded (a loop that runs until Ctrl-C would otherwise grow the list by gigabytes a minute).
  if (spans != nullptr && m_spansThisExecute++ >= kMaxSpansPerExecute) spans = nullptr;
  const int64_t start = spans != nullptr ? nowNs() : 0;
  m_workThisExecute += static_cast<double>(launch.range) * static_cast<double>(launch.cost);
  void** args = launch.args.data();
  if (launch.range > 1 && launch.range * launch.cost >= m_options.minParallelRange && m_pool->threadCount() > 1) {
    // Split in units of `grain` items (the last unit may be shorter).
    const int64_t grain = launch.grain;
    m_pool->parallelFor((launch.range + grain - 1) / grain, [&](int64_t begin, int64_t end) {
      launch.fn(args, begin * grain, std::min(end * grain, launch.range));
    });
  } else {
    launch.fn(args, 0, launch.range);
  }
  if (spans != nullptr) {
    const PlanKernel& planned = m_plan.kernels[static_cast<size_t>(kernel)];
    spans->push_back({planned.instructionName.empty() ? planned.name : planned.instructionName, planned.kind, start,
                      nowNs(), planned.bytesRead, planned.bytesWritten, planned.elements});
  }
}

void CpuExecutable::move(const std::vector<PlanMove>& moves) {
  for (const PlanMove& move : moves) {
    uint8_t*& from = m_pointers[static_cast<size_t>(move.from)];
    uint8_t*& to = m_pointers[static_cast<size_t>(move.to)];
    if (move.swap) {
      std::swap(from, to);
    } else {
      // Both buffers hold the same shape; the smaller recorded size is the value's (a reused buffer may be larger).
      const int64_t bytes = std::min(m_plan.buffers[static_cast<size_t>(move.from)].bytes,
                                     m_plan.buffers[static_cast<size_t>(move.to)].bytes);
      std::memcpy(to, from, static_cast<size_t>(bytes));
    }
  }
}

namespace {

// The branch a conditional runs for the index in `data` (XLA: a pred selects branch 0 when true, an integer out
// of [0, branches) the last branch).
int64_t branchIndex(const uint8_t* data, PrimitiveType type, int64_t branches) {
  if (type == PrimitiveType::kPred) return *data != 0 ? 0 : 1;
  int64_t index = -1;
  switch (type) {
    case PrimitiveType::kS8: index = *reinterpret_cast<const int8_t*>(data); break;
    case PrimitiveType::kS16: index = *reinterpret_cast<const int16_t*>(data); break;
    case PrimitiveType::kS32: index = *reinterpret_cast<const int32_t*>(data); break;
    case PrimitiveType::kS64: index = *reinterpret_cast<const int64_t*>(data); break;
    case PrimitiveType::kU8: index = *data; break;
    case PrimitiveType::kU16: index = *reinterpret_cast<const uint16_t*>(data); break;
    case PrimitiveType::kU32: index = *reinterpret_cast<const uint32_t*>(data); break;
    case PrimitiveType::kU64: {
      const uint64_t value = *reinterpret_cast<const uint64_t*>(data);
      index = value >= static_cast<uint64_t>(branches) ? -1 : static_cast<int64_t>(value);
      break;
    }
    default: break;
  }
  return index < 0 || index >= branches ? branches - 1 : index;
}

}  // namespace

Status CpuExecutable::runSteps(const std::vector<PlanStep>& steps, std::vector<ExecutionSpan>* spans) {
  for (const PlanStep& step : steps) {
    switch (step.kind) {
      case PlanStep::Kind::kKernel: launch(step.kernel, spans); break;
      case PlanStep::Kind::kWhile: {
        move(step.init);
        for (int64_t iteration = 0;; ++iteration) {
          FS_RETURN_IF_ERROR(runSteps(step.condition, spans));
          if (*m_pointers[static_cast<size_t>(step.predicate)] == 0) break;
          if (m_options.interrupt != nullptr && *m_options.interrupt != 0) {
            return Status::error(fmt::format("{}: interrupted after {} iterations", step.instruction, iteration));
          }
          if (m_options.maxWhileTrips > 0 && ++m_tripsThisExecute > m_options.maxWhileTrips) {
            return Status::badInput(fmt::format(
                "{}: the while loops made {} trips in all ({} of this loop's) and its condition is still true (the "
                "limit; a loop that never ends?)",
                step.instruction, m_options.maxWhileTrips, iteration));
          }
          if (m_options.maxWork > 0 && m_workThisExecute > m_options.maxWork) {
            return Status::badInput(fmt::format(
                "{}: stopped after {} trips of this loop: the kernels did {:.1e} operations, over the budget of "
                "{:.1e} (raise it with --max-work)",
                step.instruction, iteration, m_workThisExecute, m_options.maxWork));
          }
          FS_RETURN_IF_ERROR(runSteps(step.body, spans));
          move(step.update);
        }
        break;
      }
      case PlanStep::Kind::kConditional: {
        const int64_t index = branchIndex(m_pointers[static_cast<size_t>(step.selector)], step.selectorType,
                                          static_cast<int64_t>(step.branches.size()));
        FS_RETURN_IF_ERROR(runSteps(step.branches[static_cast<size_t>(index)], spans));
        move(step.branchResults[static_cast<size_t>(index)]);
        break;
      }
    }
  }
  return okStatus();
}

Status CpuExecutable::execute(std::vector<ExecutionSpan>* spans) {
  m_spansThisExecute = 0;
  m_tripsThisExecute = 0;
  m_workThisExecute = 0;
  return runSteps(m_plan.steps, spans);
}

StatusOr<Value> CpuExecutable::output(int64_t index) const {
  if (index < 0 || index >= static_cast<int64_t>(m_plan.outputs.size())) {
    return Status::error(fmt::format("no output {}", index));
  }
  const PlanOutput& output = m_plan.outputs[static_cast<size_t>(index)];
  return bytesToValue(output.shape, m_pointers[static_cast<size_t>(output.buffer)],
                      m_plan.buffers[static_cast<size_t>(output.buffer)].bytes);
}

StatusOr<Value> CpuExecutable::result() const {
  if (!m_plan.tupleOutput) return output(0);
  std::vector<Value> elements;
  for (size_t i = 0; i < m_plan.outputs.size(); ++i) {
    StatusOr<Value> element = output(static_cast<int64_t>(i));
    if (!element.ok()) return element.status();
    elements.push_back(std::move(*element));
  }
  return Value::tuple(std::move(elements));
}

StatusOr<Value> CpuExecutable::run(const std::vector<Value>& arguments, std::vector<ExecutionSpan>* spans) {
  if (arguments.size() != m_plan.parameters.size()) {
    return Status::error(
        fmt::format("the module takes {} arguments, got {}", m_plan.parameters.size(), arguments.size()));
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    FS_RETURN_IF_ERROR(setParameter(static_cast<int64_t>(i), arguments[i]));
  }
  FS_RETURN_IF_ERROR(execute(spans));
  return result();
}

std::string compareWithReference(const HloModule& module, const std::vector<Value>& arguments, const Value& expected,
                                 const Value& actual) {
  StatusOr<ResultBounds> bounds = resultBounds(module, arguments, expected);
  if (!bounds.ok()) return "the result check's bounds could not be computed: " + bounds.message();
  return resultCheckFailure(checkResult(*bounds, expected, actual));
}

}  // namespace fusionscope::core
