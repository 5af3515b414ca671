#include "core/passes/topk_decomposer.h"

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"

namespace fusionscope::core {

bool isTopK(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::kTopK ||
         (inst.opcode() == HloOpcode::kCustomCall && inst.attributes().customCallTarget == "TopK");
}

namespace {

// `compare(a, b)` of two values (TOTALORDER for floating point, so NaNs have a place), ignoring the indices.
HloComputation* valueComparator(HloModule& module, PrimitiveType type, bool largest) {
  auto owned = std::make_unique<HloComputation>(module.uniqueComputationName(largest ? "topk_greater" : "topk_less"));
  HloComputation* comparator = module.addComputation(std::move(owned));
  std::vector<HloInstruction*> params;
  const char* names[] = {"lhs", "rhs", "lhs_index", "rhs_index"};
  for (int64_t number = 0; number < 4; ++number) {
    params.push_back(comparator->addInstruction(names[number], HloOpcode::kParameter,
                                                Shape::scalar(number < 2 ? type : PrimitiveType::kS32)));
    params.back()->setParameterNumber(number);
  }
  HloInstruction* compare = comparator->addInstruction("compare", HloOpcode::kCompare,
                                                       Shape::scalar(PrimitiveType::kPred), {params[0], params[1]});
  compare->mutableAttributes().direction = largest ? ComparisonDirection::kGt : ComparisonDirection::kLt;
  if (isFloatingPoint(type)) compare->mutableAttributes().raw.emplace_back("type", "TOTALORDER");
  comparator->setRoot(compare);
  return comparator;
}

Status checkDecomposable(const HloInstruction& topk) {
  const Shape& x = topk.operandCount() == 1 ? topk.operand(0)->shape() : topk.shape();
  const Shape& result = topk.shape();
  if (topk.operandCount() != 1 || !x.isArray() || x.rank() < 1 || !result.isTuple() ||
      result.tupleElements().size() != 2 || !result.tupleElement(0).isArray() ||
      result.tupleElement(0).rank() != x.rank() || result.tupleElement(1).elementType() != PrimitiveType::kS32) {
    return Status::error(
        fmt::format("{}: a top-k takes one array and gives (values, s32 indices) of its rank", topk.name()));
  }
  if (topk.opcode() == HloOpcode::kCustomCall) {
    const HloComputation* comparator = topk.calledComputations().size() == 1 ? topk.calledComputations()[0] : nullptr;
    if (!comparator || comparator->parameters().size() != 4) {
      return Status::error(
          fmt::format("{}: a TopK custom-call needs one comparator of (value, value, index, index)", topk.name()));
    }
  }
  return okStatus();
}

Status decompose(HloModule& module, HloComputation& computation, HloInstruction* topk) {
  FS_RETURN_IF_ERROR(checkDecomposable(*topk));
  HloInstruction* x = topk->operand(0);
  const Shape& xShape = x->shape();
  const int last = xShape.rank() - 1;
  const Shape& valuesShape = topk->shape().tupleElement(0);
  const int64_t k = valuesShape.dimension(last);
  HloComputation* comparator = nullptr;
  if (topk->opcode() == HloOpcode::kTopK) {
    const std::string* largest = topk->attributes().findRaw("largest");
    comparator = valueComparator(module, xShape.elementType(), largest == nullptr || *largest == "true");
  } else {
    comparator = topk->calledComputations()[0];
  }
  // The parts keep the layouts of the operand and of the top-k's results, so that users of the results read the
  // same shapes as before (and tuple-simplify can hand them the slices).
  Shape plain = xShape;
  Shape indexShape(PrimitiveType::kS32, xShape.dimensions());
  indexShape.setLayout(xShape.layout());
  HloInstruction* iota = computation.addInstruction(topk->name() + ".index", HloOpcode::kIota, indexShape, {});
  iota->mutableAttributes().iotaDimension = last;
  HloInstruction* sort = computation.addInstruction(topk->name() + ".sort", HloOpcode::kSort,
                                                    Shape::tuple({plain, indexShape}), {x, iota});
  sort->mutableAttributes().dimensions = std::vector<int64_t>{last};
  sort->mutableAttributes().raw.emplace_back("is_stable", "true");
  sort->mutableCalledComputationRefs().push_back({"to_apply", {comparator}, false});
  std::vector<SliceDim> window;
  for (int d = 0; d < xShape.rank(); ++d) window.push_back({0, d == last ? k : xShape.dimension(d), 1});
  std::vector<HloInstruction*> parts;
  for (int i = 0; i < 2; ++i) {
    const Shape& sorted = i == 0 ? plain : indexShape;
    HloInstruction* element = computation.addInstruction(topk->name() + (i == 0 ? ".sorted" : ".order"),
                                                         HloOpcode::kGetTupleElement, sorted, {sort});
    element->mutableAttributes().tupleIndex = i;
    const Shape& part = topk->shape().tupleElement(i);
    HloInstruction* slice = computation.addInstruction(topk->name() + (i == 0 ? ".values" : ".indices"),
                                                       HloOpcode::kSlice, part, {element});
    slice->mutableAttributes().slice = window;
    parts.push_back(slice);
  }
  const Shape tupleShape = topk->shape();
  HloInstruction* tuple = computation.addInstruction(topk->name() + ".topk", HloOpcode::kTuple, tupleShape, parts);
  // Every part is the top-k's work: each keeps its source op (what compare-fusions and the viewer's scopes read).
  for (HloInstruction* made : {iota, sort, parts[0]->operand(0), parts[0], parts[1]->operand(0), parts[1], tuple}) {
    made->mutableAttributes().metadata = topk->attributes().metadata;
  }
  const bool root = computation.root() == topk;
  const std::string name = topk->name();
  topk->replaceAllUsesWith(tuple);
  if (root) computation.setRoot(tuple);
  FS_RETURN_IF_ERROR(computation.removeInstruction(topk));
  // The tuple takes the op's name: traces and the viewer find its values under the name the stages show.
  (void)computation.renameInstruction(tuple, name);
  return okStatus();
}

}  // namespace

StatusOr<bool> TopKDecomposer::run(HloModule& module, PassContext& /*context*/) {
  bool changed = false;
  std::vector<HloComputation*> computations;
  for (const auto& computation : module.computations()) computations.push_back(computation.get());
  for (HloComputation* computation : computations) {
    std::vector<HloInstruction*> topks;
    for (const auto& inst : computation->instructions()) {
      if (isTopK(*inst)) topks.push_back(inst.get());
    }
    for (HloInstruction* topk : topks) FS_RETURN_IF_ERROR(decompose(module, *computation, topk));
    if (!topks.empty()) {
      (void)computation->sortInPostOrder();
      changed = true;
    }
  }
  if (changed) module.removeUnreachableComputations();
  return changed;
}

}  // namespace fusionscope::core
