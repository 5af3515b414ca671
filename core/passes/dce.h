#pragma once

#include <string_view>
#include <unordered_map>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

class HloComputation;
class HloInstruction;

// Whether an instruction must run even when nothing reads its value: HloInstruction::hasSideEffect(), or an
// instruction that calls (call, while, conditional, fusion, ...) a computation holding such an instruction,
// at any depth. Memoized per computation, so asking about every instruction of a module stays linear. The
// answers stay valid while a pass only removes or adds side-effect-free instructions.
class SideEffectAnalysis {
 public:
  bool hasSideEffect(const HloInstruction& instruction);
  bool computationHasSideEffect(const HloComputation& computation);

 private:
  std::unordered_map<const HloComputation*, bool> m_computations;
};

// Removes instructions whose value nobody reads: no users, not the root, not a parameter (fused parameters
// included), no side effects (SideEffectAnalysis) and no control successors. Works in every computation,
// fused ones too, and follows chains (an operand whose last user went is removed in the same run). Then
// drops every computation the entry no longer reaches.
//
//   Before:  p = f32[8] parameter(0)          After:  p = f32[8] parameter(0)
//            e = f32[8] exponential(p)                ROOT n = f32[8] negate(p)
//            ROOT n = f32[8] negate(p)
class DeadCodeElimination : public HloPass {
 public:
  std::string_view name() const override { return "dce"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;

  // The instruction part for one computation; returns how many instructions were removed.
  static int64_t removeDeadInstructions(HloComputation& computation, SideEffectAnalysis& sideEffects);
};

}  // namespace fusionscope::core
