#include "core/codegen/aot_compiler.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "core/base/file_util.h"
#include "core/codegen/aot_header.h"
#include "core/codegen/codegen_preparation.h"
#include "core/codegen/element_types.h"
#include "core/codegen/kernel_emitter.h"
#include "core/codegen/llvm_support.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {
namespace {

// Constants live in the object's read-only data, which the small code model addresses with 32-bit offsets.
constexpr int64_t kMaxConstantBytes = int64_t{1} << 30;
constexpr int64_t kBufferAlignment = 64;

int64_t alignUp(int64_t bytes) {
  return (std::max<int64_t>(bytes, 1) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

struct TargetChoice {
  std::string triple;
  std::string cpu;
  std::string features;
};

std::string hostFeatures() {
  std::vector<std::string> features;
  for (const auto& feature : llvm::sys::getHostCPUFeatures()) {
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  }
  std::sort(features.begin(), features.end());
  return fmt::format("{}", fmt::join(features, ","));
}

StatusOr<TargetChoice> chooseTarget(const AotOptions& options) {
  TargetChoice choice;
  if (options.target == "x86-64") {
    choice = {"x86_64-unknown-linux-gnu", "x86-64", ""};
  } else if (options.target == "aarch64") {
    choice = {"aarch64-unknown-linux-gnu", "generic", ""};
  } else if (options.target == "host") {
    choice = {llvm::sys::getProcessTriple(), llvm::sys::getHostCPUName().str(), hostFeatures()};
  } else {
    return Status::badInput(
        fmt::format("unknown target '{}': x86-64, aarch64 or host (nvptx writes a GPU bundle)", options.target));
  }
  if (!options.cpu.empty()) choice.cpu = options.cpu;
  if (!options.features.empty()) choice.features = options.features;
  return choice;
}

// Refuses a CPU or feature name the target does not know (LLVM would only warn on stderr and ignore it).
Status checkCpuAndFeatures(const llvm::Target& target, const TargetChoice& choice) {
  std::unique_ptr<llvm::MCSubtargetInfo> info(target.createMCSubtargetInfo(choice.triple, choice.cpu, ""));
  if (info == nullptr) return Status::error("cannot describe the CPUs of " + choice.triple);
  if (!info->isCPUStringValid(choice.cpu)) {
    return Status::badInput(fmt::format("--cpu {}: not a CPU LLVM knows for {}", choice.cpu, choice.triple));
  }
  std::set<std::string> known;
  for (const llvm::SubtargetFeatureKV& feature : info->getAllProcessorFeatures()) known.insert(feature.Key);
  std::string_view rest = choice.features;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    if (item[0] != '+' && item[0] != '-') {
      return Status::badInput(fmt::format("--features: '{}' must start with + or - (\"+avx2,+fma\")", item));
    }
    if (known.count(std::string(item.substr(1))) == 0) {
      return Status::badInput(fmt::format("--features: '{}' is not a feature of {}", item.substr(1), choice.triple));
    }
  }
  return okStatus();
}

StatusOr<std::vector<std::string>> splitClassName(const std::string& name) {
  static const std::set<std::string> kKeywords = {
      "alignas",  "alignof",  "and",    "asm",      "auto",      "bool",      "break",    "case",     "catch",
      "char",     "class",    "const",  "continue", "default",   "delete",    "do",       "double",   "else",
      "enum",     "explicit", "export", "extern",   "false",     "float",     "for",      "friend",   "goto",
      "if",       "inline",   "int",    "long",     "mutable",   "namespace", "new",      "noexcept", "not",
      "nullptr",  "operator", "or",     "private",  "protected", "public",    "register", "return",   "short",
      "signed",   "sizeof",   "static", "struct",   "switch",    "template",  "this",     "throw",    "true",
      "try",      "typedef",  "typeid", "typename", "union",     "unsigned",  "using",    "virtual",  "void",
      "volatile", "while",    "std"};
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t sep = name.find("::", start);
    parts.push_back(name.substr(start, sep == std::string::npos ? std::string::npos : sep - start));
    if (sep == std::string::npos) break;
    start = sep + 2;
  }
  for (const std::string& part : parts) {
    const bool identifier = !part.empty() && !std::isdigit(static_cast<unsigned char>(part[0])) &&
                            std::all_of(part.begin(), part.end(),
                                        [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!identifier || kKeywords.count(part) != 0 || part.find("__") != std::string::npos) {
      return Status::badInput(fmt::format(
          "--cpp-class '{}': expected NAME or NAMESPACE::NAME of C++ identifiers ('{}' is not one)", name, part));
    }
  }
  return parts;
}

// Where each buffer lives at the start of a run: arguments and results in the caller-visible block the class owns,
// temporaries in the temp block, constants in the object.
enum class Region { kIo, kTemp, kConstant };

struct BufferLayout {
  std::vector<Region> region;
  std::vector<int64_t> offset;
  int64_t ioBytes = 0;
  int64_t tempBytes = 0;
};

BufferLayout layOutBuffers(const ExecutionPlan& plan) {
  BufferLayout layout;
  for (const PlanBuffer& buffer : plan.buffers) {
    Region region = Region::kTemp;
    if (buffer.constant != nullptr) {
      region = Region::kConstant;
    } else if (buffer.parameter >= 0 || buffer.output) {
      region = Region::kIo;
    }
    int64_t offset = 0;
    if (region == Region::kIo) {
      offset = layout.ioBytes;
      layout.ioBytes += alignUp(buffer.bytes);
    } else if (region == Region::kTemp) {
      offset = layout.tempBytes;
      layout.tempBytes += alignUp(buffer.bytes);
    }
    layout.region.push_back(region);
    layout.offset.push_back(offset);
  }
  return layout;
}

// Emits the entry function: `i32 entry(ptr io, ptr temp, ptr results)`. It builds the table of buffer pointers,
// runs the plan's steps (kernels over their whole range on this thread, while loops, conditionals, the moves between
// them, as CpuExecutable::runSteps does) and stores where each output ended up into results[i].
class ProgramEmitter {
 public:
  ProgramEmitter(llvm::Module& module, const ExecutionPlan& plan, std::vector<llvm::Function*> kernels,
                 std::vector<int64_t> ranges)
      : m_module(module),
        m_b(module.getContext()),
        m_plan(plan),
        m_kernels(std::move(kernels)),
        m_ranges(std::move(ranges)) {}

  void emit(const std::string& symbol, const BufferLayout& layout, const std::vector<llvm::Constant*>& constants) {
    llvm::LLVMContext& context = m_module.getContext();
    m_ptr = llvm::PointerType::get(context, 0);
    auto* type = llvm::FunctionType::get(m_b.getInt32Ty(), {m_ptr, m_ptr, m_ptr}, false);
    m_fn = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, symbol, m_module);
    m_fn->addFnAttr(llvm::Attribute::NoUnwind);
    m_b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", m_fn));
    const auto bufferCount = static_cast<uint64_t>(m_plan.buffers.size());
    m_table = m_b.CreateAlloca(llvm::ArrayType::get(m_ptr, std::max<uint64_t>(bufferCount, 1)), nullptr, "buffers");
    size_t maxArgs = 1;
    for (const PlanKernel& kernel : m_plan.kernels)
      maxArgs = std::max(maxArgs, static_cast<size_t>(kernelArgumentCount(kernel)));
    m_args = m_b.CreateAlloca(llvm::ArrayType::get(m_ptr, maxArgs), nullptr, "args");
    for (size_t i = 0; i < m_plan.buffers.size(); ++i) {
      llvm::Value* pointer = nullptr;
      switch (layout.region[i]) {
        case Region::kConstant: pointer = constants[i]; break;
        case Region::kIo:
          pointer = m_b.CreateConstInBoundsGEP1_64(m_b.getInt8Ty(), m_fn->getArg(0), layout.offset[i]);
          break;
        case Region::kTemp:
          pointer = m_b.CreateConstInBoundsGEP1_64(m_b.getInt8Ty(), m_fn->getArg(1), layout.offset[i]);
          break;
      }
      m_b.CreateStore(pointer, slot(static_cast<int>(i)));
    }
    emitSteps(m_plan.steps);
    for (size_t i = 0; i < m_plan.outputs.size(); ++i) {
      llvm::Value* result = m_b.CreateConstInBoundsGEP1_64(m_ptr, m_fn->getArg(2), i);
      m_b.CreateStore(bufferPointer(m_plan.outputs[i].buffer), result);
    }
    m_b.CreateRet(m_b.getInt32(0));
  }

 private:
  llvm::Value* slot(int buffer) {
    return m_b.CreateConstInBoundsGEP2_64(llvm::ArrayType::get(m_ptr, std::max<size_t>(m_plan.buffers.size(), 1)),
                                          m_table, 0, static_cast<uint64_t>(buffer));
  }
  // Loaded at each use: a loop's moves may have swapped the table's entries.
  llvm::Value* bufferPointer(int buffer) { return m_b.CreateLoad(m_ptr, slot(buffer)); }

  llvm::BasicBlock* newBlock(const std::string& name) {
    return llvm::BasicBlock::Create(m_module.getContext(), name, m_fn);
  }

  void emitKernel(int index) {
    const PlanKernel& kernel = m_plan.kernels[static_cast<size_t>(index)];
    std::vector<int> buffers = kernel.inputs;
    buffers.insert(buffers.end(), kernel.outputs.begin(), kernel.outputs.end());
    for (size_t i = 0; i < buffers.size(); ++i) {
      m_b.CreateStore(bufferPointer(buffers[i]), m_b.CreateConstInBoundsGEP1_64(m_ptr, m_args, i));
    }
    m_b.CreateCall(m_kernels[static_cast<size_t>(index)],
                   {m_args, m_b.getInt64(0), m_b.getInt64(m_ranges[static_cast<size_t>(index)])});
  }

  void emitMoves(const std::vector<PlanMove>& moves) {
    for (const PlanMove& move : moves) {
      if (move.swap) {
        llvm::Value* from = bufferPointer(move.from);
        llvm::Value* to = bufferPointer(move.to);
        m_b.CreateStore(to, slot(move.from));
        m_b.CreateStore(from, slot(move.to));
      } else {
        const int64_t bytes = std::min(m_plan.buffers[static_cast<size_t>(move.from)].bytes,
                                       m_plan.buffers[static_cast<size_t>(move.to)].bytes);
        m_b.CreateMemCpy(bufferPointer(move.to), llvm::MaybeAlign(kBufferAlignment), bufferPointer(move.from),
                         llvm::MaybeAlign(kBufferAlignment), static_cast<uint64_t>(bytes));
      }
    }
  }

  // The branch index as XLA defines it: a pred selects branch 0 when true; an integer outside [0, branches) the
  // last branch (the switch's default).
  void emitConditional(const PlanStep& step) {
    const int64_t branches = static_cast<int64_t>(step.branches.size());
    llvm::Value* selector = bufferPointer(step.selector);
    llvm::Value* index = nullptr;
    const PrimitiveType type = step.selectorType;
    if (type == PrimitiveType::kPred) {
      llvm::Value* value = m_b.CreateLoad(m_b.getInt8Ty(), selector);
      index = m_b.CreateSelect(m_b.CreateICmpNE(value, m_b.getInt8(0)), m_b.getInt64(0), m_b.getInt64(1));
    } else {
      llvm::Type* valueType = m_b.getIntNTy(static_cast<unsigned>(elementByteSize(type) * 8));
      llvm::Value* value = m_b.CreateLoad(valueType, selector);
      index = m_b.CreateIntCast(value, m_b.getInt64Ty(), isSignedInteger(type));
    }
    llvm::BasicBlock* done = newBlock(step.instruction + ".done");
    std::vector<llvm::BasicBlock*> blocks;
    for (int64_t i = 0; i < branches; ++i) blocks.push_back(newBlock(fmt::format("{}.branch{}", step.instruction, i)));
    llvm::SwitchInst* branch = m_b.CreateSwitch(index, blocks.back(), static_cast<unsigned>(branches));
    for (int64_t i = 0; i + 1 < branches; ++i)
      branch->addCase(m_b.getInt64(static_cast<uint64_t>(i)), blocks[static_cast<size_t>(i)]);
    for (int64_t i = 0; i < branches; ++i) {
      m_b.SetInsertPoint(blocks[static_cast<size_t>(i)]);
      emitSteps(step.branches[static_cast<size_t>(i)]);
      emitMoves(step.branchResults[static_cast<size_t>(i)]);
      m_b.CreateBr(done);
    }
    m_b.SetInsertPoint(done);
  }

  void emitWhile(const PlanStep& step) {
    emitMoves(step.init);
    llvm::BasicBlock* condition = newBlock(step.instruction + ".condition");
    llvm::BasicBlock* body = newBlock(step.instruction + ".body");
    llvm::BasicBlock* done = newBlock(step.instruction + ".done");
    m_b.CreateBr(condition);
    m_b.SetInsertPoint(condition);
    emitSteps(step.condition);
    llvm::Value* predicate = m_b.CreateLoad(m_b.getInt8Ty(), bufferPointer(step.predicate));
    m_b.CreateCondBr(m_b.CreateICmpNE(predicate, m_b.getInt8(0)), body, done);
    m_b.SetInsertPoint(body);
    emitSteps(step.body);
    emitMoves(step.update);
    m_b.CreateBr(condition);
    m_b.SetInsertPoint(done);
  }

  void emitSteps(const std::vector<PlanStep>& steps) {
    for (const PlanStep& step : steps) {
      switch (step.kind) {
        case PlanStep::Kind::kKernel: emitKernel(step.kernel); break;
        case PlanStep::Kind::kWhile: emitWhile(step); break;
        case PlanStep::Kind::kConditional: emitConditional(step); break;
      }
    }
  }

  llvm::Module& m_module;
  llvm::IRBuilder<> m_b;
  const ExecutionPlan& m_plan;
  std::vector<llvm::Function*> m_kernels;
  std::vector<int64_t> m_ranges;
  llvm::Function* m_fn = nullptr;
  llvm::Type* m_ptr = nullptr;
  llvm::Value* m_table = nullptr;
  llvm::Value* m_args = nullptr;
};

// One read-only, 64-byte aligned global per constant buffer (its literal's bytes, zero-padded to the buffer).
StatusOr<std::vector<llvm::Constant*>> emitConstants(llvm::Module& module, const ExecutionPlan& plan,
                                                     int64_t& totalBytes) {
  std::vector<llvm::Constant*> globals(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& buffer = plan.buffers[i];
    if (buffer.constant == nullptr) continue;
    totalBytes += buffer.bytes;
    if (totalBytes > kMaxConstantBytes) {
      return Status::badInput(
          fmt::format("the constants take over {} bytes, more than an object file's read-only "
                      "data can address; pass them as arguments instead",
                      kMaxConstantBytes));
    }
    StatusOr<std::vector<uint8_t>> bytes = constantBytes(*buffer.constant);
    if (!bytes.ok()) return bytes.status();
    bytes->resize(static_cast<size_t>(std::max<int64_t>(buffer.bytes, 1)), 0);
    llvm::Constant* data =
        llvm::ConstantDataArray::get(module.getContext(), llvm::ArrayRef<uint8_t>(bytes->data(), bytes->size()));
    auto* global = new llvm::GlobalVariable(module, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data,
                                            "constant." + buffer.constant->name());
    global->setAlignment(llvm::Align(kBufferAlignment));
    globals[i] = global;
  }
  return globals;
}

StatusOr<std::vector<std::string>> undefinedSymbolsOf(const std::string& object) {
  llvm::Expected<std::unique_ptr<llvm::object::ObjectFile>> file =
      llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "object"));
  if (!file) return Status::error("cannot read back the object: " + llvm::toString(file.takeError()));
  std::set<std::string> names;
  for (const llvm::object::SymbolRef& symbol : (*file)->symbols()) {
    llvm::Expected<uint32_t> flags = symbol.getFlags();
    if (!flags) {
      llvm::consumeError(flags.takeError());
      continue;
    }
    if ((*flags & llvm::object::SymbolRef::SF_Undefined) == 0) continue;
    llvm::Expected<llvm::StringRef> name = symbol.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (!name->empty()) names.insert(name->str());
  }
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

StatusOr<AotArtifact> compileAot(const HloModule& input, const AotOptions& options) {
  StatusOr<std::vector<std::string>> classPath = splitClassName(options.className);
  if (!classPath.ok()) return classPath.status();
  StatusOr<TargetChoice> choice = chooseTarget(options);
  if (!choice.ok()) return choice.status();
  initializeLlvmTargets();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(choice->triple, error);
  if (target == nullptr) return Status::error(fmt::format("no LLVM target for {}: {}", choice->triple, error));
  FS_RETURN_IF_ERROR(checkCpuAndFeatures(*target, *choice));
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(choice->triple, choice->cpu, choice->features, llvm::TargetOptions(),
                                  llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (machine == nullptr) return Status::error("cannot create the target machine for " + choice->triple);
  StatusOr<VectorUnit> vectors = vectorUnitFor(*machine, 0);
  if (!vectors.ok()) return vectors.status();

  StatusOr<std::unique_ptr<HloModule>> prepared = prepareForCodegen(input);
  if (!prepared.ok()) return prepared.status();
  const HloModule& module = *prepared ? **prepared : input;
  StatusOr<ExecutionPlan> plan = planExecution(module);
  if (!plan.ok()) return plan.status();
  AotArtifact artifact;
  artifact.baseName = classPath->back();
  artifact.triple = choice->triple;
  artifact.cpu = choice->cpu;
  artifact.features = choice->features;
  artifact.entrySymbol = fmt::format("fusionscope_aot_{}_run", fmt::join(*classPath, "_"));

  llvm::LLVMContext context;
  llvm::Module llvmModule(plan->module, context);
  llvmModule.setTargetTriple(choice->triple);
  llvmModule.setDataLayout(machine->createDataLayout());
  StatusOr<std::vector<EmittedKernel>> emitted = emitKernels(*plan, KernelTarget::kCpu, llvmModule, *vectors);
  if (!emitted.ok()) return emitted.status();
  std::vector<llvm::Function*> kernels;
  std::vector<int64_t> ranges;
  for (size_t k = 0; k < plan->kernels.size(); ++k) {
    llvm::Function* fn = llvmModule.getFunction(plan->kernels[k].name);
    if (fn == nullptr) return Status::error(plan->kernels[k].name + ": the kernel was not emitted");
    // Private: two compiled modules link into one program without their kernels' names clashing.
    fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    // Kept out of line: inlined into the entry function they would make one function of the whole program, which
    // O3 and instruction selection handle superlinearly.
    fn->addFnAttr(llvm::Attribute::NoInline);
    kernels.push_back(fn);
    ranges.push_back((*emitted)[k].range);
  }
  StatusOr<std::vector<llvm::Constant*>> constants = emitConstants(llvmModule, *plan, artifact.constantBytes);
  if (!constants.ok()) return constants.status();
  const BufferLayout layout = layOutBuffers(*plan);
  artifact.ioBytes = layout.ioBytes;
  artifact.tempBytes = layout.tempBytes;
  for (const PlanParameter& parameter : plan->parameters) {
    artifact.argOffsets.push_back(layout.offset[static_cast<size_t>(parameter.buffer)]);
  }
  ProgramEmitter program(llvmModule, *plan, kernels, ranges);
  program.emit(artifact.entrySymbol, layout, *constants);
  FS_RETURN_IF_ERROR(verifyLlvmModule(llvmModule));
  optimizeLlvmModule(llvmModule, *machine);

  llvm::SmallString<0> object;
  llvm::raw_svector_ostream stream(object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, stream, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    return Status::error("the " + choice->triple + " backend cannot emit an object file");
  }
  codegen.run(llvmModule);
  artifact.object = std::string(object.str());
  StatusOr<std::vector<std::string>> undefined = undefinedSymbolsOf(artifact.object);
  if (!undefined.ok()) return undefined.status();
  artifact.undefinedSymbols = std::move(*undefined);
  artifact.plan = std::move(*plan);
  if (options.resultNames.size() == artifact.plan.outputs.size()) {
    for (PlanOutput& output : artifact.plan.outputs) {
      if (output.index >= 0 && static_cast<size_t>(output.index) < options.resultNames.size()) {
        output.name = options.resultNames[static_cast<size_t>(output.index)];
      }
    }
  }
  artifact.header = aotHeaderText(artifact, *classPath);
  return artifact;
}

std::vector<std::string> resultNamesAsWritten(const HloModule& module) {
  std::vector<std::string> names;
  const HloComputation* entry = module.entry();
  if (entry == nullptr || entry->root() == nullptr) return names;
  const HloInstruction* root = entry->root();
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* operand : root->operands()) names.push_back(operand->name());
  } else {
    names.push_back(root->name());
  }
  return names;
}

bool AotArtifact::callsLapack() const {
  return std::find(undefinedSymbols.begin(), undefinedSymbols.end(), "fusionscope_linalg_run") !=
         undefinedSymbols.end();
}

bool AotArtifact::callsFft() const {
  return std::find(undefinedSymbols.begin(), undefinedSymbols.end(), "fusionscope_fft_run") != undefinedSymbols.end();
}

std::string aotLinkFlags(const AotArtifact& artifact) {
  if (!artifact.callsRuntimeLibrary()) return "-lm";
  std::string flags = "libfusionscope_linalg.a";
  if (artifact.callsLapack()) flags += " -llapacke -llapack -lblas";
  if (artifact.callsFft()) flags += " -lfftw3f -lfftw3";
  return flags + " -lm";
}

Status writeAotArtifact(const AotArtifact& artifact, const std::string& directory) {
  StatusOr<DirectoryLock> lock = lockDirectory(directory);
  if (!lock.ok()) return lock.status();
  const std::filesystem::path dir(directory);
  std::vector<FileContent> files = {{(dir / (artifact.baseName + ".o")).string(), artifact.object},
                                    {(dir / (artifact.baseName + ".h")).string(), artifact.header}};
  if (!artifact.runtimeLibrary.empty())
    files.push_back({(dir / "libfusionscope_linalg.a").string(), artifact.runtimeLibrary});
  return writeFilesAtomic(files);
}

}  // namespace fusionscope::core
