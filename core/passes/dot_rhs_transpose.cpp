#include "core/passes/dot_rhs_transpose.h"

#include <algorithm>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {

bool wantsRhsTranspose(const HloInstruction& dot) {
  if (dot.opcode() != HloOpcode::kDot || !dot.attributes().dot || dot.operandCount() != 2) return false;
  const DotDimensionNumbers& d = *dot.attributes().dot;
  const Shape& rhs = dot.operand(1)->shape();
  const int rank = static_cast<int>(d.rhsBatch.size()) + 2;
  if (d.rhsContracting.size() != 1 || d.lhsContracting.size() != 1 || rhs.rank() != rank ||
      dot.operand(0)->shape().rank() != rank || dot.shape().rank() != rank || !isFloatingPoint(rhs.elementType()) ||
      rhs.hasDynamicDimension() || !hasRowMajorLayout(rhs)) {
    return false;
  }
  if (d.rhsContracting[0] != rank - 1) return false;
  int64_t batch = 1;
  for (int64_t dim : d.rhsBatch) batch *= rhs.dimension(static_cast<int>(dim));
  return batch > 0 && rhs.elementCount() / batch > DotRhsTranspose::kMinRhsElements;
}

namespace {

// rhs -> transpose(rhs) as [batch..., contracting, free]; the dot's rhs dimension numbers follow.
void transposeRhs(HloComputation& computation, HloInstruction* dot) {
  DotDimensionNumbers& d = *dot->mutableAttributes().dot;
  HloInstruction* rhs = dot->operand(1);
  const int rank = rhs->shape().rank();
  std::vector<int64_t> order(d.rhsBatch.begin(), d.rhsBatch.end());
  order.push_back(d.rhsContracting[0]);
  for (int dim = 0; dim < rank; ++dim) {
    if (std::find(order.begin(), order.end(), dim) == order.end()) order.push_back(dim);
  }
  std::vector<int64_t> dims;
  for (int64_t dim : order) dims.push_back(rhs->shape().dimension(static_cast<int>(dim)));
  Shape shape(rhs->shape().elementType(), dims);
  if (rhs->shape().layout()) {  // row-major, as the rhs was: the free dimension is now the innermost
    Layout layout;
    for (int dim = rank - 1; dim >= 0; --dim) layout.minorToMajor.push_back(dim);
    shape.setLayout(layout);
  }
  HloInstruction* transpose = computation.addInstruction("transpose", HloOpcode::kTranspose, shape, {rhs});
  transpose->mutableAttributes().dimensions = order;
  transpose->mutableAttributes().metadata = dot->attributes().metadata;
  d.rhsBatch.clear();
  for (int b = 0; b + 2 < rank; ++b) d.rhsBatch.push_back(b);
  d.rhsContracting = {rank - 2};
  dot->replaceOperand(1, transpose);
}

// Whether operand `i` of a dot has batch dimensions that are not its leading ones (in the dot's batch order): the
// dot then walks each batch's rows and columns through strides (70 us against 9 us for a 4x32x32 dot whose rhs
// batch dimension sat in the middle). Row-major operands only.
bool batchNotLeading(const HloInstruction& dot, int i) {
  if (dot.opcode() != HloOpcode::kDot || !dot.attributes().dot || dot.operandCount() != 2) return false;
  const DotDimensionNumbers& d = *dot.attributes().dot;
  const std::vector<int64_t>& batch = i == 0 ? d.lhsBatch : d.rhsBatch;
  const Shape& shape = dot.operand(i)->shape();
  if (batch.empty() || !shape.isArray() || shape.hasDynamicDimension() || !hasRowMajorLayout(shape)) return false;
  for (size_t b = 0; b < batch.size(); ++b) {
    if (batch[b] != static_cast<int64_t>(b)) return true;
  }
  return false;
}

// operand i -> transpose(operand) as [batch..., the other dimensions in their order], as XLA's dot decomposer
// canonicalizes a dot; the dot's dimension numbers follow.
void moveBatchFirst(HloComputation& computation, HloInstruction* dot, int i) {
  DotDimensionNumbers& d = *dot->mutableAttributes().dot;
  std::vector<int64_t>& batch = i == 0 ? d.lhsBatch : d.rhsBatch;
  std::vector<int64_t>& contracting = i == 0 ? d.lhsContracting : d.rhsContracting;
  HloInstruction* operand = dot->operand(i);
  const int rank = operand->shape().rank();
  std::vector<int64_t> order(batch.begin(), batch.end());
  for (int dim = 0; dim < rank; ++dim) {
    if (std::find(order.begin(), order.end(), dim) == order.end()) order.push_back(dim);
  }
  std::vector<int64_t> position(static_cast<size_t>(rank));
  std::vector<int64_t> dims;
  for (size_t p = 0; p < order.size(); ++p) {
    position[static_cast<size_t>(order[p])] = static_cast<int64_t>(p);
    dims.push_back(operand->shape().dimension(static_cast<int>(order[p])));
  }
  Shape shape(operand->shape().elementType(), dims);
  if (operand->shape().layout()) {
    Layout layout;
    for (int dim = rank - 1; dim >= 0; --dim) layout.minorToMajor.push_back(dim);
    shape.setLayout(layout);
  }
  HloInstruction* transpose = computation.addInstruction("transpose", HloOpcode::kTranspose, shape, {operand});
  transpose->mutableAttributes().dimensions = order;
  // The operand's metadata, as XLA's transposes carry it: the transpose moves that value.
  transpose->mutableAttributes().metadata = operand->attributes().metadata;
  for (int64_t& dim : batch) dim = position[static_cast<size_t>(dim)];
  for (int64_t& dim : contracting) dim = position[static_cast<size_t>(dim)];
  dot->replaceOperand(i, transpose);
}

}  // namespace

StatusOr<bool> DotRhsTranspose::run(HloModule& module, PassContext&) {
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    StatusOr<std::vector<HloInstruction*>> order = computation->postOrder();
    if (!order.ok()) return order.status();
    bool computationChanged = false;
    for (HloInstruction* inst : *order) {
      // The rhs transpose puts the batch dimensions first itself: one transpose, not two.
      const bool rhsTranspose = wantsRhsTranspose(*inst);
      for (int i = 0; i < (rhsTranspose ? 1 : 2); ++i) {
        if (!batchNotLeading(*inst, i)) continue;
        moveBatchFirst(*computation, inst, i);
        computationChanged = true;
      }
      if (!rhsTranspose) continue;
      transposeRhs(*computation, inst);
      computationChanged = true;
    }
    if (computationChanged) {
      changed = true;
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  return changed;
}

}  // namespace fusionscope::core
