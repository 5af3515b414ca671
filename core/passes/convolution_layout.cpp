#include "core/passes/convolution_layout.h"

#include <string>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/shape_rules.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {

bool wantsConvolutionLayout(const HloInstruction& convolution) {
  if (convolution.opcode() != HloOpcode::kConvolution || !convolution.shape().isArray()) return false;
  StatusOr<ConvolutionDims> dims = convolutionDims(convolution);
  if (!dims.ok()) return false;
  const int rank = convolution.shape().rank();
  const PrimitiveType type = convolution.shape().elementType();
  return isFloatingPoint(type) && convolution.operand(0)->shape().elementType() == type &&
         convolution.operand(1)->shape().elementType() == type && dims->featureGroups == 1 && dims->batchGroups == 1 &&
         rank - 2 <= 10 && !convolution.shape().hasDynamicDimension() &&
         (dims->outFeature != rank - 1 || dims->rhsOutput != rank - 1);
}

namespace {

Shape rowMajorLike(const Shape& like, std::vector<int64_t> dims) {
  Shape shape(like.elementType(), std::move(dims));
  if (like.layout()) {
    Layout layout;
    for (int dim = shape.rank() - 1; dim >= 0; --dim) layout.minorToMajor.push_back(dim);
    shape.setLayout(layout);
  }
  return shape;
}

HloInstruction* transpose(HloComputation& computation, HloInstruction* operand, const std::vector<int64_t>& order,
                          const HloInstruction& from) {
  std::vector<int64_t> dims;
  for (int64_t dim : order) dims.push_back(operand->shape().dimension(static_cast<int>(dim)));
  HloInstruction* t =
      computation.addInstruction("transpose", HloOpcode::kTranspose, rowMajorLike(operand->shape(), dims), {operand});
  t->mutableAttributes().dimensions = order;
  t->mutableAttributes().metadata = from.attributes().metadata;
  return t;
}

void rewrite(HloComputation& computation, HloInstruction* convolution) {
  const ConvolutionDims dims = *convolutionDims(*convolution);
  const int rank = convolution->shape().rank();
  const size_t spatial = static_cast<size_t>(rank) - 2;
  const std::string* oldLabels = convolution->attributes().findRaw("dim_labels");
  std::string lhsLabels;
  if (oldLabels != nullptr) {
    lhsLabels = oldLabels->substr(0, oldLabels->find('_'));
  } else {
    lhsLabels = "bf";
    for (size_t s = 0; s < spatial; ++s) lhsLabels += static_cast<char>('0' + s);
  }
  std::string rhsLabels;
  std::string outLabels = "b";
  for (size_t s = 0; s < spatial; ++s) {
    rhsLabels += static_cast<char>('0' + s);
    outLabels += static_cast<char>('0' + s);
  }
  rhsLabels += "io";
  outLabels += "f";

  HloInstruction* kernel = convolution->operand(1);
  if (dims.rhsOutput != rank - 1 || dims.rhsInput != rank - 2 || dims.rhsSpatial != [&] {
        std::vector<int64_t> identity;
        for (size_t s = 0; s < spatial; ++s) identity.push_back(static_cast<int64_t>(s));
        return identity;
      }()) {
    std::vector<int64_t> order(dims.rhsSpatial.begin(), dims.rhsSpatial.end());
    order.push_back(dims.rhsInput);
    order.push_back(dims.rhsOutput);
    kernel = transpose(computation, kernel, order, *convolution);
  }
  // The new result is [batch, spatial..., feature]; newPosition[d] is where original result dimension d went.
  std::vector<int64_t> newOrder = {dims.outBatch};
  newOrder.insert(newOrder.end(), dims.outSpatial.begin(), dims.outSpatial.end());
  newOrder.push_back(dims.outFeature);
  std::vector<int64_t> newDims;
  std::vector<int64_t> newPosition(static_cast<size_t>(rank));
  for (size_t p = 0; p < newOrder.size(); ++p) {
    newDims.push_back(convolution->shape().dimension(static_cast<int>(newOrder[p])));
    newPosition[static_cast<size_t>(newOrder[p])] = static_cast<int64_t>(p);
  }
  HloInstruction* nhwc =
      computation.addInstruction(convolution->name(), HloOpcode::kConvolution,
                                 rowMajorLike(convolution->shape(), newDims), {convolution->operand(0), kernel});
  InstructionAttributes& attributes = nhwc->mutableAttributes();
  attributes = convolution->attributes();
  bool replaced = false;
  for (auto& [key, value] : attributes.raw) {
    if (key == "dim_labels") {
      value = lhsLabels + "_" + rhsLabels + "->" + outLabels;
      replaced = true;
    }
  }
  if (!replaced) attributes.raw.emplace_back("dim_labels", lhsLabels + "_" + rhsLabels + "->" + outLabels);
  bool identity = true;
  for (int dim = 0; dim < rank; ++dim) identity = identity && newPosition[static_cast<size_t>(dim)] == dim;
  HloInstruction* back = identity ? nhwc : transpose(computation, nhwc, newPosition, *convolution);
  convolution->replaceAllUsesWith(back);
  if (computation.root() == convolution) computation.setRoot(back);
}

}  // namespace

StatusOr<bool> ConvolutionLayout::run(HloModule& module, PassContext&) {
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    StatusOr<std::vector<HloInstruction*>> order = computation->postOrder();
    if (!order.ok()) return order.status();
    std::vector<HloInstruction*> rewritten;
    for (HloInstruction* inst : *order) {
      if (!wantsConvolutionLayout(*inst)) continue;
      rewrite(*computation, inst);
      rewritten.push_back(inst);
    }
    for (HloInstruction* inst : rewritten) FS_RETURN_IF_ERROR(computation->removeInstruction(inst));
    if (!rewritten.empty()) {
      changed = true;
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  return changed;
}

}  // namespace fusionscope::core
