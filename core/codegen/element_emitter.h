#pragma once

// The elemental IR emitter of core/codegen (internal to it): generates the value of an HLO instruction at an index
// from its operands' values, as XLA's elemental IR emitter does. kernel_emitter.cpp drives it per kernel. It lowers
// elementwise ops, constants and data movement (broadcast, slice, concatenate, pad, ...) itself and hands every other
// op to the emitter of its family (family_emitter.h lists them), which share its builder and value cache.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "core/base/status.h"
#include "core/codegen/complex_emitter.h"
#include "core/codegen/dot_emitter.h"
#include "core/codegen/element_types.h"
#include "core/codegen/execution_plan.h"
#include "core/codegen/family_emitter.h"
#include "core/codegen/gpu_reduction_emitter.h"
#include "core/codegen/kernel_emitter.h"
#include "core/codegen/reduction_emitter.h"
#include "core/codegen/serial_emitter.h"
#include "core/codegen/transpose_emitter.h"
#include "core/codegen/vector_math_emitter.h"
#include "core/codegen/window_emitter.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

// Generates the value of an instruction at an index from the values of its operands (XLA's elemental IR
// emitter): leaves (fusion parameters, operands of an unfused kernel) are loads from argument buffers, reducer
// parameters are bound scalars, and everything else is computed from operands at derived indices.
class ElementEmitter {
 public:
  ElementEmitter(llvm::Module& module, KernelTarget target, VectorUnit vectors = {})
      : m_module(module),
        m_context(module.getContext()),
        m_b(m_context),
        m_target(target),
        m_vectors(vectors),
        m_math(*this),
        m_complex(*this),
        m_reductions(*this),
        m_dots(*this),
        m_transposes(*this),
        m_windows(*this),
        m_serial(*this),
        m_warps(*this) {}
  ElementEmitter(const ElementEmitter&) = delete;
  ElementEmitter& operator=(const ElementEmitter&) = delete;

  // The emitters of the op families.
  VectorMathEmitter& math() { return m_math; }
  ComplexEmitter& complex() { return m_complex; }
  ReductionEmitter& reductions() { return m_reductions; }
  DotEmitter& dots() { return m_dots; }
  TransposeEmitter& transposes() { return m_transposes; }
  WindowEmitter& windows() { return m_windows; }
  SerialEmitter& serial() { return m_serial; }
  WarpReductionEmitter& warps() { return m_warps; }

  Status status() const { return m_status; }
  llvm::IRBuilder<>& builder() { return m_b; }
  llvm::LLVMContext& context() { return m_context; }

  void beginFunction(llvm::Function* function) {
    m_function = function;
    m_leaves.clear();
    m_bound.clear();
    m_cache.clear();
    m_reductions.setSideOutput({});
  }
  void setLeaf(const HloInstruction* instruction, llvm::Value* pointer) { m_leaves[instruction] = pointer; }

  llvm::Value* i64(int64_t v) { return llvm::ConstantInt::get(m_b.getInt64Ty(), static_cast<uint64_t>(v), true); }

  llvm::Type* computeType(PrimitiveType type) {
    switch (type) {
      case PrimitiveType::kPred: return m_b.getInt1Ty();
      case PrimitiveType::kF16:
      case PrimitiveType::kBF16:
      case PrimitiveType::kF32: return m_b.getFloatTy();
      case PrimitiveType::kF64: return m_b.getDoubleTy();
      case PrimitiveType::kC64: return llvm::StructType::get(m_context, {m_b.getFloatTy(), m_b.getFloatTy()});
      case PrimitiveType::kC128: return llvm::StructType::get(m_context, {m_b.getDoubleTy(), m_b.getDoubleTy()});
      default:
        if (isByteFloat(type)) return m_b.getFloatTy();
        return m_b.getIntNTy(static_cast<unsigned>(8 * elementByteSize(type)));
    }
  }
  llvm::Type* storageType(PrimitiveType type) {
    switch (type) {
      case PrimitiveType::kPred: return m_b.getInt8Ty();
      case PrimitiveType::kF16: return m_b.getHalfTy();
      case PrimitiveType::kBF16: return m_b.getInt16Ty();
      default: return isByteFloat(type) ? m_b.getInt8Ty() : computeType(type);
    }
  }

  llvm::Value* linearize(const std::vector<llvm::Value*>& dims, const std::vector<int64_t>& shape) {
    llvm::Value* linear = i64(0);
    int64_t stride = 1;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      if (shape[static_cast<size_t>(i)] != 1) {
        linear = m_b.CreateAdd(linear, m_b.CreateMul(dims[static_cast<size_t>(i)], i64(stride)));
      }
      stride *= shape[static_cast<size_t>(i)];
    }
    return linear;
  }
  Index delinearize(llvm::Value* linear, const std::vector<int64_t>& shape) {
    Index index;
    index.linear = linear;
    index.dims.resize(shape.size());
    int64_t stride = 1;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      const int64_t size = shape[static_cast<size_t>(i)];
      llvm::Value* dim = stride == 1 ? linear : m_b.CreateUDiv(linear, i64(stride));
      if (i > 0 && size != 1) dim = m_b.CreateURem(dim, i64(size));
      index.dims[static_cast<size_t>(i)] = size == 1 ? i64(0) : dim;
      stride *= size;
    }
    return index;
  }
  llvm::Value* linearOf(const Index& index, const Shape& shape) {
    return index.linear != nullptr ? index.linear : linearize(index.dims, shape.dimensions());
  }

  llvm::Value* load(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear) {
    llvm::Type* storage = storageType(type);
    llvm::Value* raw = m_b.CreateLoad(storage, m_b.CreateInBoundsGEP(storage, pointer, linear));
    switch (type) {
      case PrimitiveType::kPred: return m_b.CreateICmpNE(raw, m_b.getInt8(0));
      case PrimitiveType::kF16: return m_b.CreateFPExt(raw, m_b.getFloatTy());
      case PrimitiveType::kBF16:
        return m_b.CreateBitCast(m_b.CreateShl(m_b.CreateZExt(raw, m_b.getInt32Ty()), 16), m_b.getFloatTy());
      default: return isByteFloat(type) ? byteFloatToFloat(type, raw) : raw;
    }
  }
  llvm::Value* toStorage(PrimitiveType type, llvm::Value* v) {
    switch (type) {
      case PrimitiveType::kPred: return m_b.CreateZExt(v, m_b.getInt8Ty());
      case PrimitiveType::kF16: return m_b.CreateFPTrunc(v, m_b.getHalfTy());
      case PrimitiveType::kBF16: return floatToBf16Bits(v);
      default: return isByteFloat(type) ? floatToByteFloat(type, v) : v;
    }
  }
  void store(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear, llvm::Value* v) {
    llvm::Type* storage = storageType(type);
    m_b.CreateStore(toStorage(type, v), m_b.CreateInBoundsGEP(storage, pointer, linear));
  }
  // Round-to-nearest-even float -> bf16 bits; NaN stays a quiet NaN.
  llvm::Value* floatToBf16Bits(llvm::Value* v);
  // An 8-bit float type's byte from a float, rounded to nearest-even as the evaluator's roundToFormat (overflow:
  // infinity or NaN as the format has), and the float a byte holds; arithmetic and selects only, so loops vectorise
  // and the GPU needs no table.
  llvm::Value* floatToByteFloat(PrimitiveType type, llvm::Value* v);
  llvm::Value* byteFloatToFloat(PrimitiveType type, llvm::Value* byte);
  // A float computed for a narrow type, rounded to that type (so every op rounds as the evaluator does).
  llvm::Value* roundTo(PrimitiveType type, llvm::Value* v);

  llvm::Value* fail(const HloInstruction* instruction, const std::string& why);

  // Scopes of the value cache: values made inside a loop body or a branch do not dominate what follows it.
  using CacheKey = std::pair<const HloInstruction*, std::vector<llvm::Value*>>;
  std::map<CacheKey, llvm::Value*> saveCache() { return m_cache; }
  void restoreCache(std::map<CacheKey, llvm::Value*> saved) { m_cache = std::move(saved); }

  // for (i = lo; i < hi; ++i) body(i); leaves the builder after the loop.
  template <typename Body>
  void loop(llvm::Value* lo, llvm::Value* hi, const Body& body, const char* name = "i") {
    llvm::BasicBlock* pre = m_b.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(m_context, std::string(name) + ".header", m_function);
    llvm::BasicBlock* bodyBlock = llvm::BasicBlock::Create(m_context, std::string(name) + ".body", m_function);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(m_context, std::string(name) + ".exit", m_function);
    m_b.CreateBr(header);
    m_b.SetInsertPoint(header);
    llvm::PHINode* i = m_b.CreatePHI(m_b.getInt64Ty(), 2, name);
    i->addIncoming(lo, pre);
    m_b.CreateCondBr(m_b.CreateICmpSLT(i, hi), bodyBlock, exit);
    m_b.SetInsertPoint(bodyBlock);
    auto saved = saveCache();
    body(static_cast<llvm::Value*>(i));
    restoreCache(std::move(saved));
    llvm::Value* next = m_b.CreateAdd(i, i64(1), "", true, true);
    i->addIncoming(next, m_b.GetInsertBlock());
    m_b.CreateBr(header);
    m_b.SetInsertPoint(exit);
  }

  // cond ? then() : otherwise(), with control flow so the untaken side is never evaluated (it may read out of
  // bounds).
  template <typename Then, typename Else>
  llvm::Value* branch(llvm::Value* cond, llvm::Type* type, const Then& thenFn, const Else& elseFn) {
    llvm::BasicBlock* thenBlock = llvm::BasicBlock::Create(m_context, "then", m_function);
    llvm::BasicBlock* elseBlock = llvm::BasicBlock::Create(m_context, "else", m_function);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(m_context, "merge", m_function);
    m_b.CreateCondBr(cond, thenBlock, elseBlock);
    m_b.SetInsertPoint(thenBlock);
    auto saved = saveCache();
    llvm::Value* a = thenFn();
    llvm::BasicBlock* thenEnd = m_b.GetInsertBlock();
    m_b.CreateBr(merge);
    restoreCache(saved);
    m_b.SetInsertPoint(elseBlock);
    llvm::Value* c = elseFn();
    llvm::BasicBlock* elseEnd = m_b.GetInsertBlock();
    m_b.CreateBr(merge);
    restoreCache(std::move(saved));
    m_b.SetInsertPoint(merge);
    llvm::PHINode* phi = m_b.CreatePHI(type, 2);
    phi->addIncoming(a, thenEnd);
    phi->addIncoming(c, elseEnd);
    return phi;
  }

  llvm::AllocaInst* entryAlloca(llvm::Type* type) {
    llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
    return entry.CreateAlloca(type);
  }

  llvm::Value* generate(const HloInstruction* instruction, const Index& index);

  // A dynamic-update-slice whose output buffer `out` already holds its operand (PlanKernel::updatedInput): stores
  // the update's elements [begin, end) (row-major over the update) at the clamped window.
  void dynamicUpdateSliceInPlace(const HloInstruction* update, llvm::Value* out, llvm::Value* begin, llvm::Value* end);
  // Applies a scalar computation (a reducer) to bound arguments.
  llvm::Value* applyComputation(const HloComputation* computation, const std::vector<llvm::Value*>& arguments,
                                const HloInstruction* user);
  // The same for a computation returning a tuple of scalars (the reducer of a variadic reduce-window, the combiner
  // of a variadic scatter: N accumulators then N elements in, N results out); one value for an array root.
  std::vector<llvm::Value*> applyComputationValues(const HloComputation* computation,
                                                   const std::vector<llvm::Value*>& arguments,
                                                   const HloInstruction* user);
  // if (cond) body(); with the value cache scoped to the body (its values do not dominate what follows).
  void ifThen(llvm::Value* cond, const std::function<void()>& body);

  // The operand's value at the same index (an elementwise operand), and operand i's value at `index`.
  Index sameIndex(const Index& index, const HloInstruction* operand);
  llvm::Value* operandAt(const HloInstruction* instruction, int i, const Index& index);

  // A call of the math library's `name` (the type's variant: expf, exp), and an LLVM intrinsic of the args' type.
  llvm::Value* mathCall(const char* name, std::vector<llvm::Value*> args);
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args);

  // Elementwise ops on real scalars (or vectors of them) as the instruction's opcode computes them.
  llvm::Value* floatUnary(const HloInstruction* instruction, llvm::Value* x);
  llvm::Value* floatBinary(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y);
  // atan2(y, x): in the IR for f32 on the CPU (VectorMathEmitter::cpuAtan2), else the math library's.
  llvm::Value* atan2Of(llvm::Value* y, llvm::Value* x);
  llvm::Value* floatMaxMin(bool maximum, llvm::Value* x, llvm::Value* y);
  llvm::Value* integerMaxMin(bool maximum, bool isSigned, llvm::Value* x, llvm::Value* y);
  // One step of a reductionLanes reducer (add, multiply, and, or, maximum, minimum) on scalars or vectors of
  // `type`, as the reducer computes it.
  llvm::Value* reductionStep(HloOpcode op, PrimitiveType type, llvm::Value* x, llvm::Value* y);
  llvm::Value* compare(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y);
  llvm::Value* convert(PrimitiveType from, PrimitiveType to, llvm::Value* x);

 private:
  friend class FamilyEmitter;  // binds to the per-kernel state below

  llvm::Value* integerUnary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x);
  llvm::Value* integerBinary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x, llvm::Value* y);
  llvm::Value* floatToInteger(llvm::Value* x, llvm::Type* target, bool isSigned);

  llvm::Value* constantValue(const HloInstruction* instruction, const Index& index);
  llvm::Value* toStorageConstant(PrimitiveType type, llvm::Value* v);

  // Every op that is not a leaf: elementwise ops and data movement here, the others by their family's emitter.
  llvm::Value* generateComputed(const HloInstruction* instruction, const Index& index);

  llvm::Value* concatenate(const HloInstruction* instruction, const Index& index, int64_t dim, int operand,
                           int64_t offset);
  llvm::Value* pad(const HloInstruction* instruction, const Index& index);
  llvm::Value* bitcastConvert(const HloInstruction* instruction, const Index& index);
  llvm::Value* clampedStart(const HloInstruction* instruction, int operand, int64_t maxStart);
  llvm::Value* dynamicUpdateSlice(const HloInstruction* instruction, const Index& index);

  llvm::Module& m_module;
  llvm::LLVMContext& m_context;
  llvm::IRBuilder<> m_b;
  KernelTarget m_target;
  VectorUnit m_vectors;
  llvm::Function* m_function = nullptr;
  Status m_status;
  std::unordered_map<const HloInstruction*, llvm::Value*> m_leaves;
  std::unordered_map<const HloInstruction*, llvm::Value*> m_bound;
  std::map<CacheKey, llvm::Value*> m_cache;
  std::unordered_map<const HloInstruction*, llvm::GlobalVariable*> m_constantGlobals;
  // The families, after the state they refer to.
  VectorMathEmitter m_math;
  ComplexEmitter m_complex;
  ReductionEmitter m_reductions;
  DotEmitter m_dots;
  TransposeEmitter m_transposes;
  WindowEmitter m_windows;
  SerialEmitter m_serial;
  WarpReductionEmitter m_warps;
};

// FamilyEmitter's forwarders.
inline llvm::Value* FamilyEmitter::i64(int64_t v) {
  return m_e.i64(v);
}
inline llvm::Type* FamilyEmitter::computeType(PrimitiveType type) {
  return m_e.computeType(type);
}
inline llvm::Type* FamilyEmitter::storageType(PrimitiveType type) {
  return m_e.storageType(type);
}
inline Index FamilyEmitter::delinearize(llvm::Value* linear, const std::vector<int64_t>& shape) {
  return m_e.delinearize(linear, shape);
}
inline llvm::Value* FamilyEmitter::linearize(const std::vector<llvm::Value*>& dims, const std::vector<int64_t>& shape) {
  return m_e.linearize(dims, shape);
}
inline llvm::Value* FamilyEmitter::linearOf(const Index& index, const Shape& shape) {
  return m_e.linearOf(index, shape);
}
inline llvm::Value* FamilyEmitter::load(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear) {
  return m_e.load(pointer, type, linear);
}
inline void FamilyEmitter::store(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear, llvm::Value* v) {
  m_e.store(pointer, type, linear, v);
}
inline llvm::Value* FamilyEmitter::roundTo(PrimitiveType type, llvm::Value* v) {
  return m_e.roundTo(type, v);
}
inline llvm::Value* FamilyEmitter::fail(const HloInstruction* instruction, const std::string& why) {
  return m_e.fail(instruction, why);
}
inline llvm::Value* FamilyEmitter::generate(const HloInstruction* instruction, const Index& index) {
  return m_e.generate(instruction, index);
}
inline llvm::AllocaInst* FamilyEmitter::entryAlloca(llvm::Type* type) {
  return m_e.entryAlloca(type);
}
inline std::map<FamilyEmitter::CacheKey, llvm::Value*> FamilyEmitter::saveCache() {
  return m_e.saveCache();
}
inline void FamilyEmitter::restoreCache(std::map<CacheKey, llvm::Value*> saved) {
  m_e.restoreCache(std::move(saved));
}
template <typename Body>
void FamilyEmitter::loop(llvm::Value* lo, llvm::Value* hi, const Body& body, const char* name) {
  m_e.loop(lo, hi, body, name);
}
template <typename Then, typename Else>
llvm::Value* FamilyEmitter::branch(llvm::Value* cond, llvm::Type* type, const Then& thenFn, const Else& elseFn) {
  return m_e.branch(cond, type, thenFn, elseFn);
}
inline void FamilyEmitter::ifThen(llvm::Value* cond, const std::function<void()>& body) {
  m_e.ifThen(cond, body);
}
inline llvm::Value* FamilyEmitter::operandAt(const HloInstruction* instruction, int i, const Index& index) {
  return m_e.operandAt(instruction, i, index);
}
inline llvm::Value* FamilyEmitter::convert(PrimitiveType from, PrimitiveType to, llvm::Value* x) {
  return m_e.convert(from, to, x);
}
inline llvm::Value* FamilyEmitter::mathCall(const char* name, std::vector<llvm::Value*> args) {
  return m_e.mathCall(name, std::move(args));
}
inline llvm::Value* FamilyEmitter::intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
  return m_e.intrinsic(id, std::move(args));
}
inline llvm::Value* FamilyEmitter::applyComputation(const HloComputation* computation,
                                                    const std::vector<llvm::Value*>& arguments,
                                                    const HloInstruction* user) {
  return m_e.applyComputation(computation, arguments, user);
}
inline std::vector<llvm::Value*> FamilyEmitter::applyComputationValues(const HloComputation* computation,
                                                                       const std::vector<llvm::Value*>& arguments,
                                                                       const HloInstruction* user) {
  return m_e.applyComputationValues(computation, arguments, user);
}

}  // namespace fusionscope::core
