#pragma once

// The CPU's vector math in the generated IR (internal to core/codegen): f32 exp, expm1, log, log1p, atan2, sin and
// cos and f64 exp and log as polynomials with their range reduction done on the bits, f32 tanh and erf as rational
// approximations. Plain arithmetic the loop vectoriser turns into vector code, with no library call and no slow lane.
// ElementEmitter::floatUnary calls these for the CPU; other types go to the vector library or libm.
#include <string>
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
  // sin (or cos with `cosine`) of an f32 scalar, any argument; other types go to the LLVM intrinsic.
  llvm::Value* cpuSinCos(llvm::Value* x, bool cosine);

 private:
  llvm::Value* expF32(llvm::Value* x, bool minusOne);
  llvm::Value* expF64(llvm::Value* x);
  llvm::Value* logF64(llvm::Value* x);
  // sin and cos (vector_math_emitter.cpp): the functions the kernel calls, the reductions by |x|'s range, the rest.
  static constexpr int kSinCosLargeBits = 0x4c000000;  // 2^25's bits: from here on, the table
  llvm::Function* sinCosFunctions(const std::string& name, bool cosine);
  llvm::Value* sinCosSmall(llvm::Value* x, bool cosine);
  llvm::Value* sinCosTable(llvm::Value* x, bool cosine);
  llvm::Value* sinCosOfQuarterTurns(llvm::Value* x, llvm::Value* a, llvm::Value* b, llvm::Value* c, bool cosine);
  // For each f32 exponent, (2^E 2/pi) mod 4 in three parts.
  llvm::GlobalVariable* twoOverPiTable();
  // c0 * x^(n-1) + ... + c(n-1), by Horner's rule with fused multiply-adds.
  llvm::Value* horner(const std::vector<double>& coefficients, llvm::Value* x);
};

}  // namespace fusionscope::core
