#pragma once

// reduce (internal to core/codegen): the plain one in the evaluator's order, or in independent lanes where the
// reducer allows (reductionLanes), and the variadic one (argmax's value and index) in row-major order.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/codegen/element_types.h"
#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class ReductionEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  llvm::Value* reduce(const HloInstruction* instruction, const Index& index);

  // Whether reduce() computes `reduce`'s operand row into a scratch row first (CPU, one innermost reduced dimension
  // of 8..16384 elements): then the row can also be written out as a side output (see SideOutput).
  static bool usesScratchRow(const HloInstruction* reduce, KernelTarget target);

  // A multi-output fusion (sum, exp) = (reduce(e), e): while reducing row r, the scratch row of e is also stored
  // to e's output at base + j, so e is computed once, not once per output.
  struct SideOutput {
    const HloInstruction* reduce = nullptr;
    llvm::Value* pointer = nullptr;
    llvm::Value* base = nullptr;
  };
  void setSideOutput(SideOutput side) { m_sideOutput = side; }

  // The N result shapes of a reduce or reduce-window of N inputs (N inputs of one shape, N init values, N results
  // of one shape; N = 1: the plain one), or empty when it is not so formed.
  static std::vector<Shape> variadicResults(const HloInstruction& instruction);
  // The N results of a variadic reduce (N inputs of one shape, N init values: argmax's value and index) at `index`
  // of its outputs, the reduced dimensions visited in row-major order as the evaluator does, so any reducer gives its
  // result; empty after a failure. Tuple-shaped, so never fused: its kernel stores these.
  std::vector<llvm::Value*> variadicReduceValues(const HloInstruction* instruction, const Index& index);

  // Independent partial results a row reduction may keep (0: reduce strictly in order). Only for a reducer that
  // is exactly add/multiply/maximum/minimum/and/or of its two parameters, in f32/f64, integers or pred (f16 and
  // bf16 round after every step, where a different order would show).
  static int64_t reductionLanes(const HloComputation* reducer, PrimitiveType type) {
    const HloInstruction* root = reducer->root();
    std::vector<HloInstruction*> parameters = reducer->parameters();
    if (root == nullptr || parameters.size() != 2 || root->operandCount() != 2) return 0;
    const bool operandsAreParameters = (root->operand(0) == parameters[0] && root->operand(1) == parameters[1]) ||
                                       (root->operand(0) == parameters[1] && root->operand(1) == parameters[0]);
    if (!operandsAreParameters) return 0;
    switch (root->opcode()) {
      case HloOpcode::kAdd:
      case HloOpcode::kMultiply:
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum:
      case HloOpcode::kAnd:
      case HloOpcode::kOr: break;
      default: return 0;
    }
    if (type == PrimitiveType::kF16 || type == PrimitiveType::kBF16 || !isSupportedElementType(type)) return 0;
    return std::min<int64_t>(32, 128 / std::max<int64_t>(elementByteSize(type), 1));
  }

 private:
  friend class ElementEmitter;  // clears the side output per kernel
  SideOutput m_sideOutput;
};

}  // namespace fusionscope::core
