#include "core/ir/shape_inference.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {
namespace {

// The shape without its layout (an inferred shape is row-major, as one written without `{...}`).
Shape plain(const Shape& shape) {
  if (shape.isTuple()) {
    std::vector<Shape> elements;
    for (const Shape& element : shape.tupleElements()) elements.push_back(plain(element));
    return Shape::tuple(std::move(elements));
  }
  if (!shape.isArray()) return shape;
  return Shape(shape.elementType(), shape.dimensions());
}

Status needs(const HloInstruction& inst, std::string_view what) {
  return Status::badInput(fmt::format("{} needs {}", inst.opcodeString(), what));
}

StatusOr<const Shape*> arrayOperand(const HloInstruction& inst, size_t i) {
  if (inst.operands().size() <= i) return needs(inst, fmt::format("operand {}", i));
  const Shape& shape = inst.operands()[i]->shape();
  if (!shape.isArray()) return needs(inst, fmt::format("an array as operand {}", i));
  return &shape;
}

StatusOr<const std::vector<int64_t>*> dimensionsAttribute(const HloInstruction& inst) {
  if (!inst.attributes().dimensions) return needs(inst, "dimensions={...}");
  return &*inst.attributes().dimensions;
}

StatusOr<Shape> rootOf(const HloInstruction& inst, std::string_view key) {
  const HloComputation* called = inst.calledComputation(key);
  if (called == nullptr || called->root() == nullptr) return needs(inst, fmt::format("{}=", key));
  return plain(called->root()->shape());
}

StatusOr<Shape> transposed(const HloInstruction& inst) {
  StatusOr<const Shape*> operand = arrayOperand(inst, 0);
  if (!operand.ok()) return operand.status();
  StatusOr<const std::vector<int64_t>*> permutation = dimensionsAttribute(inst);
  if (!permutation.ok()) return permutation.status();
  if (static_cast<int>((*permutation)->size()) != (*operand)->rank()) return needs(inst, "a permutation of its rank");
  std::vector<int64_t> dims;
  for (int64_t d : **permutation) {
    if (d < 0 || d >= (*operand)->rank()) return needs(inst, "dimensions within its operand's rank");
    dims.push_back((*operand)->dimension(static_cast<int>(d)));
  }
  return Shape((*operand)->elementType(), dims);
}

StatusOr<Shape> sliced(const HloInstruction& inst) {
  StatusOr<const Shape*> operand = arrayOperand(inst, 0);
  if (!operand.ok()) return operand.status();
  const auto& slice = inst.attributes().slice;
  if (!slice || static_cast<int>(slice->size()) != (*operand)->rank()) return needs(inst, "slice={...} per dimension");
  std::vector<int64_t> dims;
  for (const SliceDim& s : *slice) {
    if (s.stride <= 0 || s.limit < s.start) return needs(inst, "slices with start <= limit and stride > 0");
    dims.push_back((s.limit - s.start + s.stride - 1) / s.stride);
  }
  return Shape((*operand)->elementType(), dims);
}

StatusOr<Shape> concatenated(const HloInstruction& inst) {
  StatusOr<const Shape*> first = arrayOperand(inst, 0);
  if (!first.ok()) return first.status();
  StatusOr<const std::vector<int64_t>*> dimension = dimensionsAttribute(inst);
  if (!dimension.ok()) return dimension.status();
  if ((*dimension)->size() != 1 || (**dimension)[0] < 0 || (**dimension)[0] >= (*first)->rank()) {
    return needs(inst, "one dimension within its operands' rank");
  }
  const int axis = static_cast<int>((**dimension)[0]);
  std::vector<int64_t> dims = (*first)->dimensions();
  for (size_t i = 1; i < inst.operands().size(); ++i) {
    StatusOr<const Shape*> operand = arrayOperand(inst, i);
    if (!operand.ok()) return operand.status();
    if ((*operand)->rank() != (*first)->rank()) return needs(inst, "operands of one rank");
    dims[static_cast<size_t>(axis)] += (*operand)->dimension(axis);
  }
  return Shape((*first)->elementType(), dims);
}

StatusOr<Shape> padded(const HloInstruction& inst) {
  StatusOr<const Shape*> operand = arrayOperand(inst, 0);
  if (!operand.ok()) return operand.status();
  const auto& padding = inst.attributes().padding;
  if (!padding || static_cast<int>(padding->size()) != (*operand)->rank()) return needs(inst, "padding= per dimension");
  std::vector<int64_t> dims;
  for (int d = 0; d < (*operand)->rank(); ++d) {
    const PaddingDim& p = (*padding)[static_cast<size_t>(d)];
    const int64_t size = (*operand)->dimension(d);
    dims.push_back(p.low + p.high + size + std::max<int64_t>(size - 1, 0) * p.interior);
  }
  return Shape((*operand)->elementType(), dims);
}

StatusOr<Shape> dotted(const HloInstruction& inst) {
  StatusOr<const Shape*> lhs = arrayOperand(inst, 0);
  if (!lhs.ok()) return lhs.status();
  StatusOr<const Shape*> rhs = arrayOperand(inst, 1);
  if (!rhs.ok()) return rhs.status();
  if ((*lhs)->elementType() != (*rhs)->elementType()) {
    return needs(inst, "its result type written out when its operands' types differ");
  }
  const DotDimensionNumbers dnums = inst.attributes().dot.value_or(DotDimensionNumbers{});
  auto in = [](const std::vector<int64_t>& list, int d) { return std::count(list.begin(), list.end(), d) > 0; };
  std::vector<int64_t> dims;
  for (int64_t d : dnums.lhsBatch) {
    if (d < 0 || d >= (*lhs)->rank()) return needs(inst, "batch dimensions within its operands");
    dims.push_back((*lhs)->dimension(static_cast<int>(d)));
  }
  for (int d = 0; d < (*lhs)->rank(); ++d) {
    if (!in(dnums.lhsBatch, d) && !in(dnums.lhsContracting, d)) dims.push_back((*lhs)->dimension(d));
  }
  for (int d = 0; d < (*rhs)->rank(); ++d) {
    if (!in(dnums.rhsBatch, d) && !in(dnums.rhsContracting, d)) dims.push_back((*rhs)->dimension(d));
  }
  return Shape((*lhs)->elementType(), dims);
}

// reduce and reduce-window: (inputs..., inits...) give one result per input, in its init's type, with the dimensions
// `dims` derives from the input (a tuple when there are several inputs).
template <typename Dims>
StatusOr<Shape> perInput(const HloInstruction& inst, Dims&& dims) {
  const size_t count = inst.operands().size() / 2;
  if (count == 0 || inst.operands().size() % 2 != 0) return needs(inst, "as many init values as inputs");
  std::vector<Shape> results;
  for (size_t i = 0; i < count; ++i) {
    StatusOr<const Shape*> input = arrayOperand(inst, i);
    if (!input.ok()) return input.status();
    StatusOr<const Shape*> init = arrayOperand(inst, count + i);
    if (!init.ok()) return init.status();
    StatusOr<std::vector<int64_t>> d = dims(**input);
    if (!d.ok()) return d.status();
    results.emplace_back((*init)->elementType(), std::move(*d));
  }
  return results.size() == 1 ? results[0] : Shape::tuple(std::move(results));
}

// reduce: the inputs without the reduced dimensions.
StatusOr<Shape> reduced(const HloInstruction& inst) {
  StatusOr<const std::vector<int64_t>*> reducedDims = dimensionsAttribute(inst);
  if (!reducedDims.ok()) return reducedDims.status();
  return perInput(inst, [&](const Shape& input) -> StatusOr<std::vector<int64_t>> {
    std::vector<int64_t> dims;
    for (int d = 0; d < input.rank(); ++d) {
      if (std::count((*reducedDims)->begin(), (*reducedDims)->end(), d) == 0) dims.push_back(input.dimension(d));
    }
    return dims;
  });
}

// reduce-window: each dimension (padded and base-dilated, less the dilated window) / stride + 1.
StatusOr<Shape> windowReduced(const HloInstruction& inst) {
  const auto& window = inst.attributes().window;
  return perInput(inst, [&](const Shape& input) -> StatusOr<std::vector<int64_t>> {
    if (!window || static_cast<int>(window->dims.size()) != input.rank()) {
      return needs(inst, "window={size=...} per dimension");
    }
    std::vector<int64_t> dims;
    for (int d = 0; d < input.rank(); ++d) {
      const WindowDim& w = window->dims[static_cast<size_t>(d)];
      if (w.stride <= 0 || w.size <= 0 || w.baseDilation <= 0 || w.windowDilation <= 0) {
        return needs(inst, "positive window sizes, strides and dilations");
      }
      const int64_t size = input.dimension(d);
      const int64_t base = size == 0 ? 0 : (size - 1) * w.baseDilation + 1;
      const int64_t extent = (w.size - 1) * w.windowDilation + 1;
      const int64_t span = base + w.padLow + w.padHigh - extent;
      dims.push_back(span < 0 ? 0 : span / w.stride + 1);
    }
    return dims;
  });
}

// Several operands (sort, scatter's inputs): a tuple of their shapes; one: its shape.
Shape operandsShape(const HloInstruction& inst, size_t count) {
  if (count == 1) return plain(inst.operands()[0]->shape());
  std::vector<Shape> elements;
  for (size_t i = 0; i < count; ++i) elements.push_back(plain(inst.operands()[i]->shape()));
  return Shape::tuple(std::move(elements));
}

StatusOr<Shape> dynamicSliced(const HloInstruction& inst) {
  StatusOr<const Shape*> operand = arrayOperand(inst, 0);
  if (!operand.ok()) return operand.status();
  std::optional<std::vector<int64_t>> sizes = inst.attributes().rawIntegers("dynamic_slice_sizes");
  if (!sizes || static_cast<int>(sizes->size()) != (*operand)->rank()) {
    return needs(inst, "dynamic_slice_sizes={...} per dimension");
  }
  return Shape((*operand)->elementType(), *sizes);
}

}  // namespace

StatusOr<Shape> inferShape(const HloInstruction& inst) {
  const HloOpcode opcode = inst.opcode();
  for (const HloInstruction* operand : inst.operands()) {
    if (operand->shape().elementType() == PrimitiveType::kInvalid) {
      return Status::badInput(fmt::format("operand {} has no shape yet", operand->name()));
    }
  }
  switch (opcode) {
    case HloOpcode::kCompare:
    case HloOpcode::kIsFinite: {
      StatusOr<const Shape*> operand = arrayOperand(inst, 0);
      if (!operand.ok()) return operand.status();
      return Shape(PrimitiveType::kPred, (*operand)->dimensions());
    }
    case HloOpcode::kSelect:
    case HloOpcode::kClamp: {
      StatusOr<const Shape*> operand = arrayOperand(inst, 1);
      if (!operand.ok()) return operand.status();
      // clamp(min, x, max) and select(pred, on_true, on_false): the middle operand's shape (min/max and pred may be
      // scalars).
      return plain(**operand);
    }
    case HloOpcode::kTuple: {
      std::vector<Shape> elements;
      for (const HloInstruction* operand : inst.operands()) elements.push_back(plain(operand->shape()));
      return Shape::tuple(std::move(elements));
    }
    case HloOpcode::kGetTupleElement: {
      if (inst.operands().size() != 1 || !inst.operands()[0]->shape().isTuple()) return needs(inst, "a tuple operand");
      const Shape& tuple = inst.operands()[0]->shape();
      const int64_t index = inst.attributes().tupleIndex.value_or(-1);
      if (index < 0 || index >= static_cast<int64_t>(tuple.tupleElements().size())) {
        return needs(inst, "index= within its operand's elements");
      }
      return plain(tuple.tupleElement(static_cast<int>(index)));
    }
    case HloOpcode::kTranspose: return transposed(inst);
    case HloOpcode::kSlice: return sliced(inst);
    case HloOpcode::kConcatenate: return concatenated(inst);
    case HloOpcode::kPad: return padded(inst);
    case HloOpcode::kDot: return dotted(inst);
    case HloOpcode::kReduce: return reduced(inst);
    case HloOpcode::kReduceWindow: return windowReduced(inst);
    case HloOpcode::kDynamicSlice: return dynamicSliced(inst);
    case HloOpcode::kSort:
      if (inst.operands().empty()) return needs(inst, "operands");
      return operandsShape(inst, inst.operands().size());
    case HloOpcode::kScatter:
      if (inst.operands().size() < 3 || inst.operands().size() % 2 == 0)
        return needs(inst, "operands, indices, updates");
      return operandsShape(inst, inst.operands().size() / 2);
    case HloOpcode::kMap: {
      StatusOr<const Shape*> operand = arrayOperand(inst, 0);
      if (!operand.ok()) return operand.status();
      StatusOr<Shape> root = rootOf(inst, "to_apply");
      if (!root.ok()) return root.status();
      return Shape(root->elementType(), (*operand)->dimensions());
    }
    case HloOpcode::kCall: return rootOf(inst, "to_apply");
    case HloOpcode::kFusion: return rootOf(inst, "calls");
    case HloOpcode::kWhile:
      if (inst.operands().size() != 1) return needs(inst, "one operand");
      return plain(inst.operands()[0]->shape());
    case HloOpcode::kConditional: {
      const std::vector<CalledComputationRef>& refs = inst.calledComputationRefs();
      for (const CalledComputationRef& ref : refs) {
        for (const HloComputation* branch : ref.computations) {
          if (branch != nullptr && branch->root() != nullptr) return plain(branch->root()->shape());
        }
      }
      return needs(inst, "branch computations");
    }
    case HloOpcode::kAfterAll: return Shape(PrimitiveType::kToken, {});
    case HloOpcode::kGetDimensionSize: return Shape::scalar(PrimitiveType::kS32);
    case HloOpcode::kConvert:
    case HloOpcode::kBitcastConvert:
    case HloOpcode::kReal:
    case HloOpcode::kImag:
    case HloOpcode::kComplex:
    case HloOpcode::kRng: return needs(inst, "its result shape written out (the element type is not its operands')");
    default: break;
  }
  const OpCategory category = opcodeCategory(opcode);
  const bool sameAsOperand = isElementwise(opcode) || opcode == HloOpcode::kCopy || opcode == HloOpcode::kReverse ||
                             opcode == HloOpcode::kDynamicUpdateSlice || opcode == HloOpcode::kOptimizationBarrier ||
                             opcode == HloOpcode::kAddDependency || category == OpCategory::kCollective;
  if (sameAsOperand && !inst.operands().empty()) return plain(inst.operands()[0]->shape());
  return needs(inst, "its result shape written out (XLA cannot infer it either)");
}

}  // namespace fusionscope::core
