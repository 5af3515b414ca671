#pragma once

// The base of core/codegen's per-family emitters (internal to it). One ElementEmitter generates a kernel: it owns
// the kernel's builder, function, leaves and value cache, lowers elementwise ops and data movement itself, and hands
// every other op to the emitter of its family, each a FamilyEmitter over the same state:
//   vector_math_emitter  VectorMathEmitter     the CPU's exp, expm1, log, log1p, atan2, tanh, erf in the IR
//   complex_emitter      ComplexEmitter        elementwise ops on complex values
//   reduction_emitter    ReductionEmitter      reduce (the plain one and the variadic one)
//   dot_emitter          DotEmitter            dot: the CPU's register-blocked row dot and the generic loop nest
//   transpose_emitter    TransposeEmitter      the CPU's strip transpose and in-register block transposes
//   window_emitter       WindowEmitter         reduce-window, convolution (and the CPU's row convolution),
//                                              select-and-scatter, gather
//   serial_emitter       SerialEmitter         scatter and sort: whole-kernel loops
//   gpu_reduction_emitter  WarpReductionEmitter  NVPTX only: reductions and normalizations a warp per row
// A family emitter computes its operands' values through ElementEmitter::generate and uses the shared IR helpers
// (loops, branches, loads and stores in an element type) through the forwarders below.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "core/base/status.h"
#include "core/codegen/kernel_emitter.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

class ElementEmitter;

// A multi-dimensional index into the shape of the instruction being generated; `linear` is its row-major
// linear index when already known (saves recomputing it for loads of same-shaped buffers).
struct Index {
  std::vector<llvm::Value*> dims;
  llvm::Value* linear = nullptr;
};

class FamilyEmitter {
 public:
  explicit FamilyEmitter(ElementEmitter& e);
  FamilyEmitter(const FamilyEmitter&) = delete;
  FamilyEmitter& operator=(const FamilyEmitter&) = delete;

  // Columns per tile of the blocked kernels: two vector registers of f32 (32 on AVX-512, 16 on AVX2, 8 on SSE).
  static int64_t vectorN(VectorUnit vectors) { return 2 * vectors.registerBytes / 4; }

 protected:
  using CacheKey = std::pair<const HloInstruction*, std::vector<llvm::Value*>>;

  // Forwarders to the owning ElementEmitter's helpers (element_emitter.h).
  llvm::Value* i64(int64_t v);
  llvm::Type* computeType(PrimitiveType type);
  llvm::Type* storageType(PrimitiveType type);
  Index delinearize(llvm::Value* linear, const std::vector<int64_t>& shape);
  llvm::Value* linearize(const std::vector<llvm::Value*>& dims, const std::vector<int64_t>& shape);
  llvm::Value* linearOf(const Index& index, const Shape& shape);
  llvm::Value* load(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear);
  void store(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear, llvm::Value* v);
  llvm::Value* roundTo(PrimitiveType type, llvm::Value* v);
  llvm::Value* fail(const HloInstruction* instruction, const std::string& why);
  llvm::Value* generate(const HloInstruction* instruction, const Index& index);
  llvm::AllocaInst* entryAlloca(llvm::Type* type);
  std::map<CacheKey, llvm::Value*> saveCache();
  void restoreCache(std::map<CacheKey, llvm::Value*> saved);
  template <typename Body>
  void loop(llvm::Value* lo, llvm::Value* hi, const Body& body, const char* name = "i");
  template <typename Then, typename Else>
  llvm::Value* branch(llvm::Value* cond, llvm::Type* type, const Then& thenFn, const Else& elseFn);
  void ifThen(llvm::Value* cond, const std::function<void()>& body);
  llvm::Value* operandAt(const HloInstruction* instruction, int i, const Index& index);
  llvm::Value* convert(PrimitiveType from, PrimitiveType to, llvm::Value* x);
  llvm::Value* mathCall(const char* name, std::vector<llvm::Value*> args);
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args);
  llvm::Value* applyComputation(const HloComputation* computation, const std::vector<llvm::Value*>& arguments,
                                const HloInstruction* user);
  std::vector<llvm::Value*> applyComputationValues(const HloComputation* computation,
                                                   const std::vector<llvm::Value*>& arguments,
                                                   const HloInstruction* user);
  int64_t vectorN() const { return vectorN(m_vectors); }

  ElementEmitter& m_e;
  llvm::Module& m_module;
  llvm::LLVMContext& m_context;
  llvm::IRBuilder<>& m_b;
  const KernelTarget m_target;
  const VectorUnit m_vectors;
  // The owner's per-kernel state (see ElementEmitter::beginFunction).
  llvm::Function*& m_function;
  std::unordered_map<const HloInstruction*, llvm::Value*>& m_leaves;
  std::unordered_map<const HloInstruction*, llvm::Value*>& m_bound;
  std::map<CacheKey, llvm::Value*>& m_cache;
};

}  // namespace fusionscope::core
