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
#include "core/base/json_output.h"
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

nlohmann::ordered_json movesJson(const std::vector<PlanMove>& moves) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const PlanMove& move : moves) {
    nlohmann::ordered_json entry = {{"from", move.from}, {"to", move.to}};
    if (move.swap) entry["swap"] = true;
    out.push_back(entry);
  }
  return out;
}

// bundle.json's "program": PlanStep as JSON (docs/BUNDLE.md, "Control flow").
nlohmann::ordered_json programJson(const std::vector<PlanStep>& steps) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const PlanStep& step : steps) {
    switch (step.kind) {
      case PlanStep::Kind::kKernel: out.push_back({{"kernel", step.kernel}}); break;
      case PlanStep::Kind::kWhile:
        out.push_back({{"while", step.instruction},
                       {"init", movesJson(step.init)},
                       {"state", step.state},
                       {"condition", programJson(step.condition)},
                       {"predicate", step.predicate},
                       {"body", programJson(step.body)},
                       {"update", movesJson(step.update)}});
        break;
      case PlanStep::Kind::kConditional: {
        nlohmann::ordered_json branches = nlohmann::ordered_json::array();
        nlohmann::ordered_json results = nlohmann::ordered_json::array();
        for (size_t i = 0; i < step.branches.size(); ++i) {
          branches.push_back(programJson(step.branches[i]));
          results.push_back(movesJson(step.branchResults[i]));
        }
        out.push_back({{"conditional", step.instruction},
                       {"selector", step.selector},
                       {"selector_dtype", bundleDtype(step.selectorType)},
                       {"branches", branches},
                       {"branch_results", results},
                       {"results", step.results}});
        break;
      }
    }
  }
  return out;
}

}  // namespace

StatusOr<PtxBundle> compilePtxBundle(const HloModule& input, bool fusion, const PtxOptions& options) {
  // As on the CPU: batch norms expanded when no preset did it (`--pipeline=none`), calls and library fusions
  // inlined. The plan's instruction pointers are only used while compiling, so the copy may die with this call.
  StatusOr<std::unique_ptr<HloModule>> prepared = prepareForCodegen(input);
  if (!prepared.ok()) return prepared.status();
  const HloModule& module = *prepared ? **prepared : input;
  StatusOr<ExecutionPlan> plan = planExecution(module);
  if (!plan.ok()) return plan.status();
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
      StatusOr<std::vector<uint8_t>> bytes = constantBytes(*buffer.constant);
      if (!bytes.ok()) return bytes.status();
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
  // Loops and branches: the program says in which order kernels run, where the host reads a predicate or branch
  // index back, and which buffers move at loop and branch boundaries. Absent when the kernels simply run in order.
  if (firstControlFlowStep(p) != nullptr) json["program"] = programJson(p.steps);
  json["peak_bytes"] = p.peakBytes;
  bundle.json = jsonOutputText(json, 2) + "\n";
  return bundle;
}

Status writePtxBundle(const PtxBundle& bundle, const std::string& directory) {
  StatusOr<DirectoryLock> lock = lockDirectory(directory);  // creates it; one writer at a time
  if (!lock.ok()) return lock.status();
  const std::filesystem::path dir(directory);
  // All files or none: a failure half-way used to leave new PTX beside an earlier bundle.json. bundle.json is
  // renamed last, so a reader that sees it sees the files it names.
  std::vector<FileContent> files = {{(dir / "kernels.ptx").string(), bundle.ptx}};
  if (!bundle.constants.empty()) {
    files.push_back({(dir / "constants.bin").string(),
                     std::string(reinterpret_cast<const char*>(bundle.constants.data()), bundle.constants.size())});
  }
  files.push_back({(dir / "bundle.json").string(), bundle.json});
  FS_RETURN_IF_ERROR(writeFilesAtomic(files));
  // An earlier bundle's constants that this one does not have would only mislead.
  if (bundle.constants.empty()) {
    std::error_code ec;
    std::filesystem::remove(dir / "constants.bin", ec);
  }
  return okStatus();
}

}  // namespace fusionscope::core
