#include "core/codegen/ptx_bundle.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <nlohmann/json.hpp>

#include "core/base/file_util.h"
#include "core/codegen/codegen_preparation.h"
#include "core/codegen/element_types.h"
#include "core/codegen/kernel_emitter.h"
#include "core/codegen/llvm_support.h"
#include "core/eval/value.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

std::string bundleDtype(PrimitiveType type) {
  return std::string(primitiveTypeName(type));
}

namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

Status linkLibdevice(llvm::Module& module, const std::string& path) {
  bool needed = false;
  for (const llvm::Function& fn : module) {
    if (fn.isDeclaration() && fn.getName().starts_with("__nv_")) needed = true;
  }
  if (!needed) return okStatus();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    return Status::error(
        fmt::format("cannot read libdevice ({}): {} (needed for math functions)", path, buffer.getError().message()));
  }
  llvm::Expected<std::unique_ptr<llvm::Module>> libdevice =
      llvm::parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!libdevice) return Status::error("cannot parse libdevice: " + llvm::toString(libdevice.takeError()));
  (*libdevice)->setTargetTriple(kTriple);
  (*libdevice)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*libdevice), llvm::Linker::LinkOnlyNeeded)) {
    return Status::error("cannot link libdevice");
  }
  // Only the kernels are entry points; everything libdevice brought in may be inlined and dropped.
  for (llvm::Function& fn : module) {
    if (!fn.isDeclaration() && fn.getCallingConv() != llvm::CallingConv::PTX_Kernel) {
      fn.setLinkage(llvm::GlobalValue::InternalLinkage);
    }
  }
  return okStatus();
}

}  // namespace

StatusOr<PtxBundle> compilePtxBundle(const HloModule& input, bool fusion, const PtxOptions& options) {
  // Batch norms have no kernels of their own: expanded here too when no preset did it (`--pipeline=none`). The
  // plan's instruction pointers are only used while compiling, so the copy may die with this call.
  StatusOr<std::unique_ptr<HloModule>> expanded = expandBatchNorms(input);
  if (!expanded.ok()) return expanded.status();
  const HloModule& module = *expanded ? **expanded : input;
  // A bundle is a flat list of kernels a host launches in order; loops and branches would need the host to read
  // device results between launches, which the bundle format has no way to say (docs/BUNDLE.md). Checked before
  // planning, so the message names the loop, not something planning its body fails on.
  if (const HloComputation* entry = module.entry()) {
    StatusOr<std::vector<HloInstruction*>> order = entry->postOrder();
    if (!order.ok()) return order.status();
    for (const HloInstruction* instruction : *order) {
      if (instruction->opcode() == HloOpcode::kWhile || instruction->opcode() == HloOpcode::kConditional) {
        return Status::error(
            fmt::format("{}: control flow ({}) is not supported by the nvptx bundle (the CPU backend runs it: `run`)",
                        instruction->name(), instruction->opcodeString()));
      }
    }
  }
  StatusOr<ExecutionPlan> plan = planExecution(module);
  if (!plan.ok()) return plan.status();
  if (const PlanStep* step = firstControlFlowStep(*plan)) {  // reached through a call
    return Status::error(fmt::format("{}: control flow is not supported by the nvptx bundle", step->instruction));
  }
  if (options.blockSize <= 0 || options.blockSize % 32 != 0) {  // warp row reductions need whole warps per block
    return Status::error(fmt::format("block size {} is not a positive multiple of 32", options.blockSize));
  }
  PtxBundle bundle;
  bundle.plan = std::move(*plan);
  const ExecutionPlan& p = bundle.plan;

  initializeLlvmTargets();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (target == nullptr) return Status::error("NVPTX target unavailable: " + error);
  const std::string cpu = fmt::format("sm_{}", options.sm);
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kTriple, cpu, "", llvm::TargetOptions(), std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (machine == nullptr) return Status::error("cannot create the NVPTX target machine for " + cpu);

  llvm::LLVMContext context;
  llvm::Module llvmModule(p.module, context);
  llvmModule.setTargetTriple(kTriple);
  llvmModule.setDataLayout(machine->createDataLayout());
  StatusOr<std::vector<EmittedKernel>> emitted = emitKernels(p, KernelTarget::kNvptx, llvmModule);
  if (!emitted.ok()) return emitted.status();
  FS_RETURN_IF_ERROR(verifyLlvmModule(llvmModule));
  FS_RETURN_IF_ERROR(linkLibdevice(llvmModule, options.libdevicePath));
  llvmModule.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", static_cast<uint32_t>(0));
  optimizeLlvmModule(llvmModule, *machine);
  FS_RETURN_IF_ERROR(verifyLlvmModule(llvmModule));

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream stream(ptx);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, stream, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    return Status::error("the NVPTX backend cannot emit assembly");
  }
  codegen.run(llvmModule);
  bundle.ptx = std::string(ptx.str());

  // bundle.json (schema fusionscope.bundle/1, docs/BUNDLE.md).
  nlohmann::ordered_json json;
  json["schema"] = "fusionscope.bundle/1";
  json["module"] = p.module;
  json["fusion"] = fusion;
  json["target"] = {{"triple", kTriple}, {"sm", options.sm}, {"ptx", "kernels.ptx"}};
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const PlanBuffer& buffer : p.buffers) {
    // A zero-element value still gets a (1-byte) allocation: runners allocate every buffer and reject size 0.
    nlohmann::ordered_json entry = {{"id", buffer.id}, {"bytes", std::max<int64_t>(buffer.bytes, 1)}};
    if (buffer.constant != nullptr) {
      StatusOr<Value> value = Value::fromLiteral(*buffer.constant->literal());
      if (!value.ok()) return Status::error(buffer.constant->name() + ": " + value.message());
      StatusOr<std::vector<uint8_t>> bytes = valueToBytes(*value);
      if (!bytes.ok()) return Status::error(buffer.constant->name() + ": " + bytes.message());
      entry["constant_offset"] = bundle.constants.size();
      bundle.constants.insert(bundle.constants.end(), bytes->begin(), bytes->end());
    }
    buffers.push_back(entry);
  }
  json["buffers"] = buffers;
  if (!bundle.constants.empty()) json["constants"] = "constants.bin";
  nlohmann::ordered_json parameters = nlohmann::ordered_json::array();
  for (const PlanParameter& parameter : p.parameters) {
    parameters.push_back({{"index", parameter.index},
                          {"name", parameter.name},
                          {"dtype", bundleDtype(parameter.shape.elementType())},
                          {"dims", parameter.shape.dimensions()},
                          {"buffer", parameter.buffer}});
  }
  json["parameters"] = parameters;
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (const PlanOutput& output : p.outputs) {
    nlohmann::ordered_json entry = {{"index", output.index},
                                    {"name", output.name},
                                    {"dtype", bundleDtype(output.shape.elementType())},
                                    {"dims", output.shape.dimensions()},
                                    {"buffer", output.buffer}};
    if (output.aliasesParameter) entry["aliases_parameter"] = *output.aliasesParameter;
    outputs.push_back(entry);
  }
  json["outputs"] = outputs;
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const PlanKernel& kernel = p.kernels[k];
    std::vector<int> args = kernel.inputs;
    args.insert(args.end(), kernel.outputs.begin(), kernel.outputs.end());
    const int64_t range = (*emitted)[k].range;
    const int64_t blocks = std::max<int64_t>(1, (range + options.blockSize - 1) / options.blockSize);
    kernels.push_back({{"name", kernel.name},
                       {"instruction", kernel.instructionName.empty() ? kernel.name : kernel.instructionName},
                       {"kind", kernel.kind},
                       {"grid", {blocks, 1, 1}},
                       {"block", {options.blockSize, 1, 1}},
                       {"shared_bytes", 0},
                       {"args", args},
                       {"bytes_read", kernel.bytesRead},
                       {"bytes_written", kernel.bytesWritten},
                       {"elements", kernel.elements}});
  }
  json["kernels"] = kernels;
  json["peak_bytes"] = p.peakBytes;
  bundle.json = json.dump(2) + "\n";
  return bundle;
}

Status writePtxBundle(const PtxBundle& bundle, const std::string& directory) {
  FS_RETURN_IF_ERROR(makeDirectories(directory));
  const std::filesystem::path dir(directory);
  FS_RETURN_IF_ERROR(writeFileAtomic((dir / "kernels.ptx").string(), bundle.ptx));
  if (!bundle.constants.empty()) {
    std::string_view bytes(reinterpret_cast<const char*>(bundle.constants.data()), bundle.constants.size());
    FS_RETURN_IF_ERROR(writeFileAtomic((dir / "constants.bin").string(), bytes));
  }
  // bundle.json last: a reader that sees it sees the files it names.
  return writeFileAtomic((dir / "bundle.json").string(), bundle.json);
}

}  // namespace fusionscope::core
