#pragma once

// Elementwise ops on complex values (internal to core/codegen): a c64 or c128 value is an LLVM struct {re, im} of
// its part type (complex_emitter.cpp lists the ops).
#include <utility>

#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class ComplexEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  llvm::Value* makeComplex(PrimitiveType type, llvm::Value* re, llvm::Value* im);
  std::pair<llvm::Value*, llvm::Value*> complexParts(llvm::Value* z);
  // add, subtract, multiply, divide of two complex values (nullptr for other ops).
  llvm::Value* complexBinary(HloOpcode op, PrimitiveType type, llvm::Value* x, llvm::Value* y);
  // An elementwise instruction, convert or compare with a complex operand or result.
  llvm::Value* complexElementwise(const HloInstruction* instruction, const Index& index);

 private:
  // exp, expm1, log, log1p, sin, cos, sqrt of a real part, as floatUnary lowers them for the target.
  llvm::Value* realMath(HloOpcode op, llvm::Value* x);
  llvm::Value* complexDivide(PrimitiveType type, llvm::Value* x, llvm::Value* y);
  llvm::Value* complexAbs(llvm::Value* re, llvm::Value* im);
  llvm::Value* complexTanh(PrimitiveType type, llvm::Value* z);
};

}  // namespace fusionscope::core
