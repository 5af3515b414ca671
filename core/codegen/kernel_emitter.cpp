#include "core/codegen/kernel_emitter.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "core/codegen/element_emitter.h"
#include "core/codegen/element_types.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/literal.h"
#include "core/linalg/fft_call.h"
#include "core/linalg/linalg_call.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {

int64_t kernelRange(const PlanKernel& kernel) {
  int64_t range = 0;
  for (const Shape& shape : kernel.outputShapes) range = std::max(range, shape.elementCount());
  return range;
}

namespace {

// The tuple-shaped reduce or reduce-window a kernel computes: the kernel's instruction itself, or the root of the
// fusion it is; null otherwise.
const HloInstruction* variadicReduction(const HloInstruction* instruction) {
  auto variadic = [](const HloInstruction* inst) {
    return inst != nullptr && inst->shape().isTuple() &&
           (inst->opcode() == HloOpcode::kReduce || inst->opcode() == HloOpcode::kReduceWindow);
  };
  if (variadic(instruction)) return instruction;
  if (instruction != nullptr && instruction->opcode() == HloOpcode::kFusion && instruction->fusedComputation() &&
      variadic(instruction->fusedComputation()->root())) {
    return instruction->fusedComputation()->root();
  }
  return nullptr;
}

// The row dot (or row convolution: `opcode`, `isRow`) a CPU kernel computing `root` can be built around: `root`
// itself when it is one, or the one such instruction inside `fused` whose every dependent up to `root` is
// elementwise over its shape (a kOutput fusion's epilogue). nullptr when there is none.
const HloInstruction* rowOpFor(const HloInstruction* root, const HloComputation* fused, HloOpcode opcode,
                               bool (*isRow)(const HloInstruction*)) {
  if (isRow(root)) return root;
  if (fused == nullptr || root->shape().rank() < 2) return nullptr;
  const HloInstruction* dot = nullptr;
  for (const auto& instruction : fused->instructions()) {
    if (instruction->opcode() != opcode) continue;
    if (dot != nullptr) return nullptr;  // two of them: not an epilogue
    dot = instruction.get();
  }
  if (dot == nullptr || !isRow(dot) || dot->shape().dimensions() != root->shape().dimensions()) {
    return nullptr;
  }
  std::unordered_map<const HloInstruction*, bool> depends;
  bool ok = true;
  std::function<bool(const HloInstruction*)> visit = [&](const HloInstruction* node) -> bool {
    if (node == dot) return true;
    if (auto it = depends.find(node); it != depends.end()) return it->second;
    bool result = false;
    for (const HloInstruction* operand : node->operands()) result = visit(operand) || result;
    if (result && (!isElementwise(node->opcode()) || node->shape().dimensions() != root->shape().dimensions())) {
      ok = false;
    }
    depends[node] = result;
    return result;
  };
  return visit(root) && ok ? dot : nullptr;
}

// The value roots a kernel writes: for a fusion its outputs inside the fused computation, for an unfused kernel
// the instruction itself.
std::vector<const HloInstruction*> kernelRoots(const PlanKernel& kernel) {
  std::vector<const HloInstruction*> roots;
  if (kernel.instruction->opcode() == HloOpcode::kFusion) {
    for (HloInstruction* output : fusionOutputs(*kernel.instruction)) roots.push_back(output);
  } else {
    roots.push_back(kernel.instruction);
  }
  return roots;
}

// The reductions `roots` read that reduce exactly the innermost dimension of an operand of dimensions `dims` to
// the outer dimensions (one result per row of the loop over `dims`), operands before users.
std::vector<const HloInstruction*> rowReductionsOf(const std::vector<const HloInstruction*>& roots,
                                                   const std::vector<int64_t>& dims) {
  std::vector<const HloInstruction*> found;
  std::unordered_map<const HloInstruction*, bool> seen;
  const std::vector<int64_t> outer(dims.begin(), dims.end() - 1);
  std::function<void(const HloInstruction*)> visit = [&](const HloInstruction* node) {
    if (node == nullptr || !seen.emplace(node, true).second) return;
    if (node->opcode() == HloOpcode::kFusion) return;  // reducers and nested bodies are not this loop's values
    for (const HloInstruction* operand : node->operands()) visit(operand);
    if (node->opcode() != HloOpcode::kReduce || node->operandCount() != 2 || !node->shape().isArray()) return;
    const std::vector<int64_t> reduced = node->attributes().dimensions.value_or(std::vector<int64_t>{});
    const Shape& operandShape = node->operand(0)->shape();
    if (operandShape.dimensions() == dims && node->shape().dimensions() == outer && reduced.size() == 1 &&
        reduced[0] == operandShape.rank() - 1) {
      found.push_back(node);
    }
  };
  for (const HloInstruction* root : roots) visit(root);
  return found;
}

struct WarpNormalizationPlan {
  std::vector<const HloInstruction*> reductions;
  std::vector<int64_t> dims;
  int64_t rows = 0;
  std::vector<WarpReductionEmitter::RowOutput> rowOutputs;
  std::vector<WarpReductionEmitter::RowOutput> elementwise;
};

// WarpReductionEmitter::warpNormalization's conditions: every root has the dimensions D of the largest root (rank >= 2)
// or D without its innermost dimension, the roots read at least one reduction of the innermost dimension of an
// operand of dimensions D, and every such reduction can be a warp reduction (at least 32 columns, a reducer whose
// order is free).
std::optional<WarpNormalizationPlan> warpNormalizationPlan(const std::vector<const HloInstruction*>& roots,
                                                           const std::vector<llvm::Value*>& args, size_t inputCount) {
  WarpNormalizationPlan plan;
  for (const HloInstruction* root : roots) {
    if (root == nullptr || !root->shape().isArray()) return std::nullopt;
    if (root->shape().rank() > static_cast<int>(plan.dims.size())) plan.dims = root->shape().dimensions();
  }
  if (plan.dims.size() < 2) return std::nullopt;
  const std::vector<int64_t> outer(plan.dims.begin(), plan.dims.end() - 1);
  for (size_t j = 0; j < roots.size(); ++j) {
    const WarpReductionEmitter::RowOutput output{roots[j], args[inputCount + j]};
    if (roots[j]->shape().dimensions() == plan.dims) {
      plan.elementwise.push_back(output);
    } else if (roots[j]->shape().dimensions() == outer) {
      plan.rowOutputs.push_back(output);
    } else {
      return std::nullopt;
    }
  }
  plan.reductions = rowReductionsOf(roots, plan.dims);
  if (plan.reductions.empty()) return std::nullopt;
  for (const HloInstruction* reduce : plan.reductions) {
    if (WarpReductionEmitter::warpReducedDimension(reduce) != static_cast<int>(plan.dims.size()) - 1)
      return std::nullopt;
  }
  plan.rows = 1;
  for (int64_t d : outer) plan.rows *= d;
  return plan;
}

// CPU kernels take their buffers as an array of pointers, so LLVM cannot tell them apart: a loop that loads
// through a computed index (a gather, a dynamic slice) and stores to the output stayed scalar ("cannot identify
// array bounds" for a runtime alias check). Distinct buffers of the plan never overlap (on the GPU they are noalias
// arguments), so each load and store whose address derives from one buffer gets that buffer's alias scope and is
// declared not to alias the other buffers. A buffer passed twice (an in-place update) gets no scope, nor does an
// access whose address the analysis cannot trace to one buffer: both may alias anything, as before.
void addBufferAliasScopes(llvm::Function& fn, const std::vector<llvm::Value*>& args,
                          const std::vector<bool>& distinct) {
  llvm::MDBuilder md(fn.getContext());
  llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(fn.getName());
  std::vector<llvm::MDNode*> scopes(args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    if (distinct[i]) scopes[i] = md.createAnonymousAliasScope(domain, fmt::format("{}.arg{}", fn.getName().str(), i));
  }
  std::unordered_map<const llvm::Value*, size_t> argIndex;
  for (size_t i = 0; i < args.size(); ++i) argIndex.emplace(args[i], i);
  for (llvm::BasicBlock& block : fn) {
    for (llvm::Instruction& inst : block) {
      const llvm::Value* address = nullptr;
      if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) address = load->getPointerOperand();
      if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) address = store->getPointerOperand();
      if (address == nullptr) continue;
      auto found = argIndex.find(llvm::getUnderlyingObject(address, /*MaxLookup=*/0));
      if (found == argIndex.end() || scopes[found->second] == nullptr) continue;
      std::vector<llvm::Metadata*> others;
      for (size_t j = 0; j < scopes.size(); ++j) {
        if (j != found->second && scopes[j] != nullptr) others.push_back(scopes[j]);
      }
      inst.setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(fn.getContext(), {scopes[found->second]}));
      if (!others.empty()) inst.setMetadata(llvm::LLVMContext::MD_noalias, llvm::MDNode::get(fn.getContext(), others));
    }
  }
}

}  // namespace

StatusOr<std::vector<EmittedKernel>> emitKernels(const ExecutionPlan& plan, KernelTarget target, llvm::Module& module,
                                                 VectorUnit vectors) {
  llvm::LLVMContext& context = module.getContext();
  ElementEmitter emitter(module, target, vectors);
  llvm::IRBuilder<>& b = emitter.builder();
  std::vector<EmittedKernel> emitted;
  struct ScopedKernel {
    llvm::Function* fn;
    std::vector<llvm::Value*> args;
    std::vector<bool> distinct;
  };
  std::vector<ScopedKernel> scoped;  // CPU kernels, whose buffers get alias scopes once emitted
  llvm::Type* ptrType = llvm::PointerType::get(context, 0);
  llvm::Type* globalPtrType = llvm::PointerType::get(context, target == KernelTarget::kNvptx ? 1 : 0);
  for (const PlanKernel& kernel : plan.kernels) {
    const int argCount = kernelArgumentCount(kernel);
    llvm::FunctionType* fnType =
        target == KernelTarget::kCpu
            ? llvm::FunctionType::get(b.getVoidTy(), {ptrType, b.getInt64Ty(), b.getInt64Ty()}, false)
            : llvm::FunctionType::get(b.getVoidTy(),
                                      std::vector<llvm::Type*>(static_cast<size_t>(argCount), globalPtrType), false);
    llvm::Function* fn = llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage, kernel.name, module);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    // The loop vectoriser's width is the one the blocked kernels are sized for: LLVM's tuning for AVX-512 hosts
    // prefers 32-byte vectors, which left an in-cache f32 exp (the polynomial in cpuExp) at 0.9 ns per element
    // against 0.6 with 64-byte ones. int8_inference's quantising loops were slower with them until float -> int
    // converts stopped going lane by lane (floatToInteger); now the whole program is faster too (docs/CODEGEN.md).
    if (target == KernelTarget::kCpu) fn->addFnAttr("prefer-vector-width", std::to_string(vectors.registerBytes * 8));
    if (target == KernelTarget::kNvptx) fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    emitter.beginFunction(fn);
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(context, "entry", fn);
    b.SetInsertPoint(entry);
    std::vector<llvm::Value*> args;
    llvm::Value* begin = nullptr;
    llvm::Value* end = nullptr;
    // Buffers that alias no other argument: all but a buffer passed twice (an in-place update in a loop body, an
    // output written into the parameter it aliases).
    std::vector<bool> distinct(static_cast<size_t>(argCount), true);
    {
      std::vector<int> buffers = kernel.inputs;
      buffers.insert(buffers.end(), kernel.outputs.begin(), kernel.outputs.end());
      for (size_t i = 0; i < distinct.size() && i < buffers.size(); ++i) {
        distinct[i] = std::count(buffers.begin(), buffers.end(), buffers[i]) == 1;
      }
    }
    if (target == KernelTarget::kCpu) {
      for (int i = 0; i < argCount; ++i) {
        llvm::Value* slot = b.CreateInBoundsGEP(ptrType, fn->getArg(0), emitter.i64(i));
        args.push_back(b.CreateLoad(ptrType, slot, fmt::format("arg{}", i)));
      }
      begin = fn->getArg(1);
      end = fn->getArg(2);
      scoped.push_back({fn, args, distinct});
    } else {
      for (int i = 0; i < argCount; ++i) {
        if (distinct[static_cast<size_t>(i)]) fn->getArg(static_cast<unsigned>(i))->addAttr(llvm::Attribute::NoAlias);
        args.push_back(fn->getArg(static_cast<unsigned>(i)));
      }
      auto read = [&](llvm::Intrinsic::ID id) {
        return b.CreateZExt(b.CreateCall(llvm::Intrinsic::getDeclaration(&module, id)), b.getInt64Ty());
      };
      llvm::Value* block = read(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
      llvm::Value* threads = read(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
      llvm::Value* thread = read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
      begin = b.CreateAdd(b.CreateMul(block, threads), thread);
    }
    const int64_t range = kernelRange(kernel);
    const size_t inputCount = kernel.inputs.size();

    // Roots and their output argument; grouped by element count so equal-sized outputs share one loop.
    std::vector<const HloInstruction*> roots;
    std::vector<Shape> rootShapes;
    if (kernel.instruction == nullptr) {  // synthetic copy
      roots.push_back(nullptr);
    } else {
      roots = kernelRoots(kernel);
      if (kernel.instruction->opcode() == HloOpcode::kFusion) {
        const HloComputation* fused = kernel.instruction->fusedComputation();
        std::vector<HloInstruction*> parameters = fused->parameters();
        for (size_t i = 0; i < parameters.size() && i < inputCount; ++i) emitter.setLeaf(parameters[i], args[i]);
      } else {
        for (size_t i = 0; i < inputCount; ++i)
          emitter.setLeaf(kernel.instruction->operand(static_cast<int>(i)), args[i]);
      }
    }
    // JAX's LAPACK calls: one range item per problem of the batch; the kernel hands its buffers and a descriptor of
    // the call (routine, flags, each array's dimensions and strides) to fusionscope_linalg_run (core/linalg), which
    // calls LAPACK. No GPU kernel: refused by name for NVPTX.
    if (kernel.instruction != nullptr && linalg::isLapackCustomCall(*kernel.instruction)) {
      if (target != KernelTarget::kCpu) {
        return Status::error(fmt::format("{}: custom-call {} (LAPACK) has no GPU kernel here", kernel.instruction->name(),
                                         kernel.instruction->attributes().customCallTarget.value_or("")));
      }
      StatusOr<linalg::Call> call = linalg::callOf(*kernel.instruction);
      if (!call.ok()) return call.status();
      const std::vector<int64_t> words = linalg::encode(*call);
      std::vector<uint64_t> bits(words.begin(), words.end());
      llvm::Constant* init = llvm::ConstantDataArray::get(context, bits);
      auto* descriptor = new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true,
                                                  llvm::GlobalValue::PrivateLinkage, init, kernel.name + ".lapack");
      llvm::FunctionCallee run = module.getOrInsertFunction(
          "fusionscope_linalg_run",
          llvm::FunctionType::get(b.getVoidTy(), {ptrType, ptrType, b.getInt64Ty(), b.getInt64Ty()}, false));
      b.CreateCall(run, {descriptor, fn->getArg(0), begin, end});
      b.CreateRetVoid();
      emitted.push_back({kernel.name, call->batch(), linalg::costPerProblem(*call)});
      continue;
    }
    // HLO's fft: one range item per transform of the batch; the kernel hands its two buffers and a descriptor of the
    // transform (kind, precision, lengths, batch) to fusionscope_fft_run (core/linalg/fft_call.h), which runs FFTW.
    // No GPU kernel (cuFFT is not used here): refused by name for NVPTX.
    if (kernel.instruction != nullptr && linalg::isFft(*kernel.instruction)) {
      if (target != KernelTarget::kCpu) {
        return Status::error(
            fmt::format("{}: fft has no GPU kernel here (the CPU runs it through FFTW)", kernel.instruction->name()));
      }
      StatusOr<linalg::FftCall> call = linalg::fftCallOf(*kernel.instruction);
      if (!call.ok()) return Status::error(kernel.instruction->name() + ": " + call.message());
      const std::vector<int64_t> words = linalg::encodeFft(*call);
      std::vector<uint64_t> bits(words.begin(), words.end());
      llvm::Constant* init = llvm::ConstantDataArray::get(context, bits);
      auto* descriptor = new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true,
                                                  llvm::GlobalValue::PrivateLinkage, init, kernel.name + ".fft");
      llvm::FunctionCallee run = module.getOrInsertFunction(
          "fusionscope_fft_run",
          llvm::FunctionType::get(b.getInt32Ty(), {ptrType, ptrType, b.getInt64Ty(), b.getInt64Ty()}, false));
      b.CreateCall(run, {descriptor, fn->getArg(0), begin, end});
      b.CreateRetVoid();
      emitted.push_back({kernel.name, call->batch,
                         static_cast<int64_t>(call->flops() / static_cast<double>(std::max<int64_t>(call->batch, 1)))});
      continue;
    }
    // Sort and scatter are whole-kernel loops (serial_emitter.cpp), not a value per output element.
    if (kernel.instruction != nullptr && kernel.instruction->opcode() == HloOpcode::kSort) {
      const HloInstruction* sort = kernel.instruction;
      const int64_t slices = SerialEmitter::sortSlices(sort);
      std::vector<llvm::Value*> outs(args.begin() + static_cast<std::ptrdiff_t>(inputCount), args.end());
      if (target == KernelTarget::kCpu) {
        emitter.loop(
            begin, end, [&](llvm::Value* slice) { emitter.serial().sortKernel(sort, outs, slice); }, "slice");
      } else {
        emitter.ifThen(b.CreateICmpSLT(begin, emitter.i64(slices)),
                       [&]() { emitter.serial().sortKernel(sort, outs, begin); });
      }
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      const int64_t length = slices == 0 ? 0 : sort->operand(0)->shape().elementCount() / slices;
      emitted.push_back({kernel.name, slices, length * length});
      continue;
    }
    if (roots.size() == 1 && roots[0] != nullptr && roots[0]->opcode() == HloOpcode::kScatter) {
      // One range item (one thread) applies every update: updates may collide and must apply in order. A
      // variadic scatter (tuple-shaped, so never fused) writes its N outputs in the same pass.
      const HloInstruction* scatter = roots[0];
      std::vector<llvm::Value*> outs(args.begin() + static_cast<std::ptrdiff_t>(inputCount), args.end());
      emitter.ifThen(b.CreateICmpEQ(begin, emitter.i64(0)), [&]() { emitter.serial().scatterKernel(scatter, outs); });
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      const int n = (scatter->operandCount() - 1) / 2;
      emitted.push_back(
          {kernel.name, 1,
           n * (scatter->operand(0)->shape().elementCount() + scatter->operand(n + 1)->shape().elementCount())});
      continue;
    }
    if (const HloInstruction* reduction = variadicReduction(kernel.instruction)) {
      // A variadic reduce (argmax, argmin, min with its index) or reduce-window (values with their indices), alone
      // or as the root of a fusion (XLA's `iota_reduce_fusion` computes the argmax's inputs in the same loop):
      // each output element's N results in one pass over its reduced elements or its window, stored to the N
      // outputs.
      const bool window = reduction->opcode() == HloOpcode::kReduceWindow;
      const Shape& first = reduction->shape().tupleElement(0);
      auto body = [&](llvm::Value* linear) {
        const Index at = emitter.delinearize(linear, first.dimensions());
        std::vector<llvm::Value*> values = window ? emitter.windows().reduceWindowValues(reduction, at)
                                                  : emitter.reductions().variadicReduceValues(reduction, at);
        for (size_t k = 0; k < values.size() && inputCount + k < args.size(); ++k) {
          emitter.store(args[inputCount + k], reduction->shape().tupleElement(static_cast<int>(k)).elementType(),
                        linear, values[k]);
        }
      };
      if (target == KernelTarget::kCpu) {
        emitter.loop(begin, end, body, "out");
      } else {
        emitter.ifThen(b.CreateICmpSLT(begin, emitter.i64(first.elementCount())), [&]() { body(begin); });
      }
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      // Elements each output element reads, per operand.
      int64_t perOutput = 1;
      if (window) {
        if (const std::optional<Window>& w = reduction->attributes().window) {
          for (const WindowDim& dim : w->dims) perOutput *= dim.size;
        }
      } else {
        perOutput = reduction->operand(0)->shape().elementCount() / std::max<int64_t>(first.elementCount(), 1);
      }
      emitted.push_back({kernel.name, first.elementCount(), perOutput * (reduction->operandCount() / 2)});
      continue;
    }
    if (roots.size() != kernel.outputs.size()) {
      return Status::error(
          fmt::format("{}: {} fusion outputs but {} output buffers", kernel.name, roots.size(), kernel.outputs.size()));
    }
    // An in-place dynamic-update-slice: the output buffer holds the operand already, only the window is written.
    if (kernel.updatedInput >= 0 && roots.size() == 1 && roots[0] != nullptr &&
        roots[0]->opcode() == HloOpcode::kDynamicUpdateSlice) {
      const int64_t updateElements = roots[0]->operand(1)->shape().elementCount();
      // GPU: one thread per update element; threads past the update do nothing.
      llvm::Value* last = target == KernelTarget::kCpu
                              ? end
                              : b.CreateSelect(b.CreateICmpSLT(begin, emitter.i64(updateElements)),
                                               b.CreateAdd(begin, emitter.i64(1)), begin);
      emitter.dynamicUpdateSliceInPlace(roots[0], args[inputCount], begin, last);
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      emitted.push_back({kernel.name, updateElements});
      continue;
    }
    const bool singleCpuRoot = target == KernelTarget::kCpu && roots.size() == 1 && roots[0] != nullptr;
    const HloComputation* fused = singleCpuRoot && kernel.instruction->opcode() == HloOpcode::kFusion
                                      ? kernel.instruction->fusedComputation()
                                      : nullptr;
    const HloInstruction* rowDot =
        singleCpuRoot ? rowOpFor(roots[0], fused, HloOpcode::kDot, &DotEmitter::isRowDot) : nullptr;
    const HloInstruction* rowConvolution =
        singleCpuRoot && rowDot == nullptr
            ? rowOpFor(roots[0], fused, HloOpcode::kConvolution, &WindowEmitter::isRowConvolution)
            : nullptr;
    if (rowConvolution != nullptr) {
      emitter.windows().rowConvolution(rowConvolution, roots[0], args[inputCount], begin, end);
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      // Per pixel: every output feature times kernel positions times input features.
      const HloInstruction* rhs = rowConvolution->operand(1);
      emitted.push_back({kernel.name, WindowEmitter::rowConvolutionRows(rowConvolution), rhs->shape().elementCount()});
      continue;
    }
    if (singleCpuRoot && roots[0] == kernel.instruction && TransposeEmitter::isStripTranspose(roots[0])) {
      emitter.transposes().stripTranspose(roots[0], args[0], args[inputCount], begin, end);
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      const int64_t columns = roots[0]->shape().dimensions().back();
      emitted.push_back(
          {kernel.name, TransposeEmitter::stripTransposeStrips(roots[0]), columns * TransposeEmitter::kTransposeStrip});
      continue;
    }
    if (rowDot != nullptr) {
      emitter.dots().rowDot(rowDot, roots[0], args[inputCount], begin, end);
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      const int64_t k =
          rowDot->operand(0)->shape().dimension(static_cast<int>(rowDot->attributes().dot->lhsContracting[0]));
      emitted.push_back({kernel.name, DotEmitter::rowDotRows(rowDot), rowDot->shape().dimensions().back() * k,
                         DotEmitter::rowDotBlock(rowDot, vectors)});
      continue;
    }
    // (reduce(e) over rows, e): one loop over rows computes each row of e once, writes it and reduces it.
    if (target == KernelTarget::kCpu && roots.size() == 2 && roots[0] != nullptr && roots[1] != nullptr) {
      const int reduceRoot = roots[0]->opcode() == HloOpcode::kReduce ? 0 : 1;
      const HloInstruction* reduce = roots[static_cast<size_t>(reduceRoot)];
      const HloInstruction* rowValue = roots[static_cast<size_t>(1 - reduceRoot)];
      if (ReductionEmitter::usesScratchRow(reduce, target) && reduce->operand(0) == rowValue &&
          rowValue->shape().elementType() == reduce->shape().elementType() &&
          kernel.outputShapes[static_cast<size_t>(1 - reduceRoot)].dimensions() == rowValue->shape().dimensions()) {
        const int64_t inner = rowValue->shape().dimensions().back();
        const int64_t rows = reduce->shape().elementCount();
        llvm::Value* reduceOut = args[inputCount + static_cast<size_t>(reduceRoot)];
        llvm::Value* rowOut = args[inputCount + static_cast<size_t>(1 - reduceRoot)];
        emitter.loop(
            begin, end,
            [&](llvm::Value* row) {
              emitter.reductions().setSideOutput({reduce, rowOut, b.CreateMul(row, emitter.i64(inner))});
              llvm::Value* value = emitter.generate(reduce, emitter.delinearize(row, reduce->shape().dimensions()));
              emitter.reductions().setSideOutput({});
              emitter.store(reduceOut, reduce->shape().elementType(), row, value);
            },
            "row");
        b.CreateRetVoid();
        if (!emitter.status().ok()) return emitter.status();
        emitted.push_back({kernel.name, rows, inner});
        continue;
      }
    }
    // NVPTX: reductions over rows (with their epilogues and outputs of their operand's dimensions) as warp row
    // reductions.
    if (target == KernelTarget::kNvptx && !roots.empty() && roots[0] != nullptr) {
      if (std::optional<WarpRowPlan> warp = warpRowPlan(kernel, roots, args, inputCount)) {
        emitter.warps().warpRowReduce(warp->reduces, warp->rowOutputs, warp->elementwise, begin);
        b.CreateRetVoid();
        if (!emitter.status().ok()) return emitter.status();
        emitted.push_back({kernel.name, warp->reduces[0]->shape().elementCount() * WarpReductionEmitter::kWarp});
        continue;
      }
    }
    // NVPTX: a normalization (reductions of the innermost dimension read again by the row's elements, which
    // warpRowPlan cannot take) as one warp per row.
    if (target == KernelTarget::kNvptx && kernel.instruction != nullptr &&
        kernel.instruction->opcode() == HloOpcode::kFusion) {
      if (std::optional<WarpNormalizationPlan> plan = warpNormalizationPlan(roots, args, inputCount)) {
        emitter.warps().warpNormalization(plan->reductions, plan->dims, plan->rowOutputs, plan->elementwise, begin);
        b.CreateRetVoid();
        if (!emitter.status().ok()) return emitter.status();
        emitted.push_back({kernel.name, plan->rows * WarpReductionEmitter::kWarp});
        continue;
      }
    }
    // Outputs of the same dimensions share one loop (a multi-output fusion computes common subexpressions once).
    std::map<std::vector<int64_t>, std::vector<size_t>> groups;
    for (size_t j = 0; j < roots.size(); ++j) groups[kernel.outputShapes[j].dimensions()].push_back(j);
    // The range the kernel accepts: its elements, or (one group of rows on the CPU) its rows.
    int64_t emittedRange = range;
    int64_t emittedCost = 1;
    for (const auto& [dims, members] : groups) {
      const int64_t count = kernel.outputShapes[members[0]].elementCount();
      if (count == 0) continue;
      auto body = [&](llvm::Value* linear, const Index& index) {
        for (size_t j : members) {
          const Shape& outShape = kernel.outputShapes[j];
          llvm::Value* value = nullptr;
          if (roots[j] == nullptr) {
            value = emitter.load(args[0], outShape.elementType(), linear);
          } else {
            value = emitter.generate(roots[j], index);
          }
          emitter.store(args[inputCount + j], outShape.elementType(), linear, value);
        }
      };
      if (target == KernelTarget::kCpu) {
        llvm::Value* lo = begin;
        llvm::Value* hi = end;
        if (count != range) {  // the proportional part of a smaller output
          lo = b.CreateUDiv(b.CreateMul(begin, emitter.i64(count)), emitter.i64(range));
          hi = b.CreateUDiv(b.CreateMul(end, emitter.i64(count)), emitter.i64(range));
        }
        const int64_t inner = dims.empty() ? 1 : dims.back();
        // One group covering the whole range, of at least kMinWholeRows rows (items enough to split across any
        // number of threads): the range counts rows, so every row is whole and the inner loop runs a constant trip
        // count, vectorised without clipping each row to the range (exp over [2,4,64,64]: 19.6 -> 17.3 us, the
        // best of six runs; a softmax's exp after its row max 23.5 -> 21.7).
        constexpr int64_t kMinWholeRows = 64;
        const bool wholeRows =
            groups.size() == 1 && count == range && dims.size() >= 2 && inner >= 2 && count / inner >= kMinWholeRows;
        if (wholeRows) {
          emittedRange = count / inner;
          emittedCost = inner;
        }
        if (dims.size() < 2 || inner < 2) {
          emitter.loop(lo, hi, [&](llvm::Value* linear) { body(linear, emitter.delinearize(linear, dims)); });
        } else {
          // A loop over rows and, inside it, over the innermost dimension, clipped to [lo, hi): the inner loop's
          // index is the last dimension itself, so broadcasts, slices and transposes along the outer dimensions
          // are loop-invariant there and the inner loop vectorises (a flat loop would divide per element).
          const std::vector<int64_t> outerDims(dims.begin(), dims.end() - 1);
          std::vector<const HloInstruction*> groupRoots;
          // An unfused kernel's operands are its inputs, not values it computes.
          if (kernel.instruction != nullptr && kernel.instruction->opcode() == HloOpcode::kFusion) {
            for (size_t j : members) groupRoots.push_back(roots[j]);
          }
          const std::vector<const HloInstruction*> rowReductions = rowReductionsOf(groupRoots, dims);
          llvm::Value* innerSize = emitter.i64(inner);
          llvm::Value* rowLo = wholeRows ? lo : b.CreateUDiv(lo, innerSize);
          llvm::Value* rowHi = wholeRows ? hi : b.CreateUDiv(b.CreateAdd(hi, emitter.i64(inner - 1)), innerSize);
          emitter.loop(
              rowLo, rowHi,
              [&](llvm::Value* row) {
                llvm::Value* rowStart = b.CreateMul(row, innerSize);
                llvm::Value* jLo = emitter.i64(0);
                llvm::Value* jHi = innerSize;
                if (!wholeRows) {
                  jLo = b.CreateSelect(b.CreateICmpSGT(lo, rowStart), b.CreateSub(lo, rowStart), emitter.i64(0));
                  llvm::Value* rowEnd = b.CreateSub(hi, rowStart);
                  jHi = b.CreateSelect(b.CreateICmpSLT(rowEnd, innerSize), rowEnd, innerSize);
                }
                const Index outer = emitter.delinearize(row, outerDims);
                // Reductions of a row of this shape (a softmax's max and sum, a layer norm's mean) are computed
                // once per row here, before the loop over its elements: the element loop reads them at the
                // row's own index values, so it finds them in the emitter's cache instead of reducing the
                // row again for every element.
                for (const HloInstruction* reduce : rowReductions) emitter.generate(reduce, outer);
                emitter.loop(
                    jLo, jHi,
                    [&](llvm::Value* j) {
                      Index index;
                      index.dims = outer.dims;
                      index.dims.push_back(j);
                      index.linear = b.CreateAdd(rowStart, j);
                      body(index.linear, index);
                    },
                    "j");
              },
              "row");
        }
      } else {
        llvm::BasicBlock* then = llvm::BasicBlock::Create(context, "in_range", fn);
        llvm::BasicBlock* after = llvm::BasicBlock::Create(context, "after", fn);
        b.CreateCondBr(b.CreateICmpSLT(begin, emitter.i64(count)), then, after);
        b.SetInsertPoint(then);
        auto saved = emitter.saveCache();
        body(begin, emitter.delinearize(begin, dims));
        emitter.restoreCache(std::move(saved));
        b.CreateBr(after);
        b.SetInsertPoint(after);
      }
    }
    b.CreateRetVoid();
    if (!emitter.status().ok()) return emitter.status();
    emitted.push_back({kernel.name, emittedRange, emittedCost});
  }
  for (ScopedKernel& k : scoped) addBufferAliasScopes(*k.fn, k.args, k.distinct);
  return emitted;
}

}  // namespace fusionscope::core
