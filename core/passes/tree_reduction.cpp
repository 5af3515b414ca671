#include "core/passes/tree_reduction.h"

#include <algorithm>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

bool needsTree(const HloInstruction& reduce) {
  if (reduce.opcode() != HloOpcode::kReduce || reduce.operandCount() != 2 || !reduce.shape().isArray() ||
      reduce.toApply() == nullptr) {
    return false;  // variadic reductions stay, as in XLA
  }
  const Shape& input = reduce.operand(0)->shape();
  if (!input.isArray() || input.hasDynamicDimension()) return false;
  const std::vector<int64_t> dims = reduce.attributes().dimensions.value_or(std::vector<int64_t>{});
  return std::any_of(dims.begin(), dims.end(), [&](int64_t d) {
    return d >= 0 && d < input.rank() && input.dimension(static_cast<int>(d)) > TreeReduction::kWindow;
  });
}

// reduce(x) -> reduce(reduce-window(x)): windows of kWindow elements along every reduced dimension.
void insertWindow(HloComputation& computation, HloInstruction* reduce) {
  HloInstruction* input = reduce->operand(0);
  HloInstruction* init = reduce->operand(1);
  const Shape& inputShape = input->shape();
  const std::vector<int64_t> dims = reduce->attributes().dimensions.value_or(std::vector<int64_t>{});
  Window window;
  std::vector<int64_t> outDims;
  for (int d = 0; d < inputShape.rank(); ++d) {
    WindowDim w;
    const int64_t size = inputShape.dimension(d);
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      w.size = std::min(size, TreeReduction::kWindow);
      w.stride = w.size;
      // SAME padding: ceil(size / stride) windows, the padding split with the extra element at the end.
      const int64_t windows = (size + w.stride - 1) / w.stride;
      const int64_t total = std::max<int64_t>((windows - 1) * w.stride + w.size - size, 0);
      w.padLow = total / 2;
      w.padHigh = total - w.padLow;
    }
    window.dims.push_back(w);
    outDims.push_back(windowOutputSize(size, w));
  }
  Shape shape(inputShape.elementType(), outDims);
  if (inputShape.layout()) {
    Layout layout;
    for (int d = inputShape.rank() - 1; d >= 0; --d) layout.minorToMajor.push_back(d);
    shape.setLayout(layout);
  }
  HloInstruction* windowed =
      computation.addInstruction("reduce-window", HloOpcode::kReduceWindow, shape, {input, init});
  windowed->mutableAttributes().window = window;
  windowed->mutableAttributes().metadata = reduce->attributes().metadata;
  windowed->mutableCalledComputationRefs().push_back({"to_apply", {reduce->toApply()}, false});
  reduce->replaceOperand(0, windowed);
}

}  // namespace

StatusOr<bool> TreeReduction::run(HloModule& module, PassContext&) {
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    StatusOr<std::vector<HloInstruction*>> order = computation->postOrder();
    if (!order.ok()) return order.status();
    bool computationChanged = false;
    for (HloInstruction* inst : *order) {
      while (needsTree(*inst)) {
        insertWindow(*computation, inst);
        computationChanged = true;
      }
    }
    if (computationChanged) {
      changed = true;
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  return changed;
}

}  // namespace fusionscope::core
