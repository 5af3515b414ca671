#pragma once

// What the while-loop passes (while-simplify, while-licm) share: a loop they may rewrite, described once
// (internal to core/passes).
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

// A loop these passes may rewrite: body and condition called by it alone, state read by element only (inside and
// out), body ending in a tuple, no control dependencies on the pieces they change.
struct WhileLoop {
  HloInstruction* loop = nullptr;
  HloComputation* body = nullptr;
  HloComputation* condition = nullptr;
  HloInstruction* bodyParam = nullptr;
  HloInstruction* conditionParam = nullptr;
  int size = 0;
  // The get-tuple-elements reading each element: of the body's parameter, the condition's, the loop's result.
  std::vector<std::vector<HloInstruction*>> bodyReaders, conditionReaders, outsideReaders;
};

// The while instructions of the module's computations (fused computations hold none), collected before a pass
// rewrites any.
std::vector<HloInstruction*> whileInstructions(const HloModule& module);

// How many instructions call each computation.
std::unordered_map<const HloComputation*, int> callCounts(const HloModule& module);

// Describes `inst` as a WhileLoop; false when it is not a while loop these passes may rewrite.
bool describeWhileLoop(HloInstruction* inst, const std::unordered_map<const HloComputation*, int>& calls,
                       WhileLoop& out);

// A tuple of `parts` in `computation`, with `metadata` when given.
HloInstruction* addTuple(HloComputation& computation, std::string_view name, const std::vector<HloInstruction*>& parts,
                         const OpMetadata* metadata);

}  // namespace fusionscope::core
