#pragma once

// The CPU's vector math in the generated IR (internal to core/codegen): f32 exp, expm1, log, log1p and atan2 and f64
// exp and log as polynomials with their range reduction done on the bits, f32 tanh and erf as rational
// approximations. Plain arithmetic the loop vectoriser turns into vector code, with no library call and no slow lane.
// ElementEmitter::floatUnary calls these for the CPU; other types go to the vector library or libm.
#include <vector>

#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class VectorMathEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  // x of f32 or f64 (scalars or vectors).
  llvm::Value* cpuExp(llvm::Value* x);
  llvm::Value* cpuLog(llvm::Value* x);
  // x of f32 only.
  llvm::Value* cpuExpm1(llvm::Value* x);
  llvm::Value* cpuLog1p(llvm::Value* x);
  llvm::Value* cpuAtan2(llvm::Value* y, llvm::Value* x);
  llvm::Value* rationalTanh(llvm::Value* x);
  llvm::Value* rationalErf(llvm::Value* x);

 private:
  llvm::Value* expF32(llvm::Value* x, bool minusOne);
  llvm::Value* expF64(llvm::Value* x);
  llvm::Value* logF64(llvm::Value* x);
  // c0 * x^(n-1) + ... + c(n-1), by Horner's rule with fused multiply-adds.
  llvm::Value* horner(const std::vector<double>& coefficients, llvm::Value* x);
};

}  // namespace fusionscope::core
