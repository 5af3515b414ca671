#pragma once

// Ops that are not a function of the output index, as whole-kernel loops: scatter and sort (internal to core/codegen).
#include <cstdint>
#include <functional>
#include <vector>

#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class SerialEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  // scatter: `outs` = the operands (one output per operand: several for a variadic scatter), then the updates
  // applied in the evaluator's order (update elements row-major) with the combiner inlined; one range item (a
  // thread) does it all, since updates may collide.
  void scatterKernel(const HloInstruction* scatter, const std::vector<llvm::Value*>& outs);
  // sort along one dimension: range item `slice` sorts one slice of every operand into `outs` (one per operand),
  // stably, as the evaluator's merge sort orders equal keys.
  void sortKernel(const HloInstruction* sort, const std::vector<llvm::Value*>& outs, llvm::Value* slice);
  static constexpr int64_t kMaxMergeSortLength = 4096;
  // Slices a sort kernel has (its range).
  static int64_t sortSlices(const HloInstruction* sort);

 private:
  // One slice sorted as the evaluator does (its bottom-up merge sort, on an index permutation in two stack
  // arrays of `length`), for slices up to kMaxMergeSortLength; longer ones use an in-place insertion sort.
  void mergeSortSlice(const HloInstruction* sort, const std::vector<llvm::Value*>& outs,
                      const std::vector<int64_t>& dims, int64_t length,
                      const std::function<llvm::Value*(llvm::Value*)>& linearAt);
};

}  // namespace fusionscope::core
