// The simplifier's worklist over one computation (algebraic_simplifier.cpp) and its rewrites, one file per family:
// simplify_arithmetic.cpp (clamps, constant factors, predicates, divisions), simplify_reductions.cpp (reductions and
// iotas) and simplify_dots.cpp (dots and convolutions). Internal to the simplify pass.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/dce.h"

namespace fusionscope::core::simplifier {

// The scalar 0 of `type` (integer, real or complex).
Literal zeroOf(PrimitiveType type);

// A splat constant equal to `value`, or a broadcast of a scalar constant equal to it.
bool isSplatOf(const HloInstruction& inst, double value);

// Runs the rewrites on one computation from a worklist. Nothing is removed until the worklist is empty, so
// every queued pointer stays valid; then the instructions the rewrites left unused go, with any operand
// that loses its last user that way.
class ComputationSimplifier {
 public:
  ComputationSimplifier(HloModule& module, HloComputation& computation, SideEffectAnalysis& sideEffects,
                        std::map<PrimitiveType, HloComputation*>& addReducers, bool reciprocals)
      : m_module(module),
        m_computation(computation),
        m_sideEffects(sideEffects),
        m_addReducers(addReducers),
        m_reciprocals(reciprocals) {}

  StatusOr<bool> run();

 private:
  void push(HloInstruction* inst) {
    if (m_queued.insert(inst).second) m_queue.push_back(inst);
  }

  // The worklist, identities and folding (algebraic_simplifier.cpp).
  void visit(HloInstruction* inst);
  static std::optional<Literal> fold(const HloInstruction& inst);
  void replace(HloInstruction* inst, HloInstruction* replacement);
  void removeUnused();
  static std::string foldedName(const HloInstruction& inst);
  static bool isNonNegative(const HloInstruction& inst, int depth = 0);
  static HloInstruction* identityReplacement(const HloInstruction& inst);
  bool rewriteInPlace(HloInstruction* inst);
  bool sliceOfConcatenate(HloInstruction* inst);
  bool convertOfBroadcast(HloInstruction* inst);
  bool broadcastAsReshape(HloInstruction* inst);
  bool usedOnlyBy(const HloInstruction& value, const HloInstruction& user) const;
  static std::optional<double> scalarConstant(const HloInstruction& inst);

  // simplify_arithmetic.cpp
  bool clampFromMinMax(HloInstruction* inst);
  bool rewriteDivideByBroadcast(HloInstruction* inst);
  bool divideByExp(HloInstruction* inst);
  bool divideOfDivide(HloInstruction* inst);
  bool productOfExps(HloInstruction* inst);
  bool remainderByPowerOfTwo(HloInstruction* inst);
  bool mergeConstantFactors(HloInstruction* inst);
  bool multiplyByPredicate(HloInstruction* inst);
  bool compareOfIota(HloInstruction* inst);
  HloInstruction* splat(Literal value, const Shape& shape);

  // simplify_reductions.cpp
  static std::optional<HloOpcode> reducerOp(const HloComputation* reducer);
  static bool equalScalarConstants(const HloInstruction& a, const HloInstruction& b);
  static bool isIdentityOf(HloOpcode op, const HloInstruction& value);
  bool reduceOfSizeOneDimensions(HloInstruction* inst);
  bool mergeReduceOfReduce(HloInstruction* inst);
  bool negateOutOfSum(HloInstruction* inst);
  bool broadcastOfIota(HloInstruction* inst);
  bool addOfScatterIntoZeros(HloInstruction* inst);

  // simplify_dots.cpp
  bool foldConvolutionInputPad(HloInstruction* inst);
  bool transposeOfDot(HloInstruction* inst);
  bool dotOfVectors(HloInstruction* inst);
  bool dotWithoutContraction(HloInstruction* inst);

  HloModule& m_module;
  HloComputation& m_computation;
  SideEffectAnalysis& m_sideEffects;
  std::map<PrimitiveType, HloComputation*>& m_addReducers;
  bool m_reciprocals = false;
  std::deque<HloInstruction*> m_queue;
  std::unordered_set<HloInstruction*> m_queued;
  std::vector<HloInstruction*> m_unusedCandidates;
  bool m_changed = false;
};

}  // namespace fusionscope::core::simplifier
