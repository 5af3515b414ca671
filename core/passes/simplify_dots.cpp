// The simplifier's rewrites of dots (transposed products, batched inner products, products that contract nothing) and
// of a convolution's padded input, as XLA's.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/ir/permutation.h"
#include "core/ir/shape_rules.h"
#include "core/passes/computation_simplifier.h"
#include "core/passes/constant_folding.h"

namespace fusionscope::core::simplifier {

// convolution(pad(x, 0), k) => convolution(x, k) with the pad's edges added to the window's padding, as XLA's
// simplifier does (a causal 1-D convolution pads its input on the left): one op instead of a pad that writes the
// padded copy and a convolution that reads it. Only zero padding of the spatial dimensions, without interior
// padding and without negative edges, into a window without base dilation. Returns whether `inst` changed.
bool ComputationSimplifier::foldConvolutionInputPad(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kConvolution || inst->operandCount() != 2) return false;
  HloInstruction* pad = inst->operand(0);
  if (pad->opcode() != HloOpcode::kPad || pad->operandCount() != 2 || !pad->attributes().padding ||
      !isSplatOf(*pad->operand(1), 0) || m_sideEffects.hasSideEffect(*inst)) {
    return false;
  }
  StatusOr<ConvolutionDims> dims = convolutionDims(*inst);
  if (!dims.ok()) return false;
  const std::vector<PaddingDim>& padding = *pad->attributes().padding;
  if (static_cast<int>(padding.size()) != pad->shape().rank()) return false;
  auto unpadded = [&](int64_t d) {
    const PaddingDim& p = padding[static_cast<size_t>(d)];
    return p.low == 0 && p.high == 0 && p.interior == 0;
  };
  if (!unpadded(dims->lhsBatch) || !unpadded(dims->lhsFeature)) return false;
  Window window = dims->window;
  if (window.dims.size() != dims->lhsSpatial.size()) return false;
  for (size_t i = 0; i < window.dims.size(); ++i) {
    const PaddingDim& p = padding[static_cast<size_t>(dims->lhsSpatial[i])];
    WindowDim& w = window.dims[i];
    if (p.interior != 0 || p.low < 0 || p.high < 0 || w.baseDilation != 1) return false;
    w.padLow += p.low;
    w.padHigh += p.high;
  }
  inst->replaceOperand(0, pad->operand(0));
  inst->mutableAttributes().window = std::move(window);
  m_unusedCandidates.push_back(pad);
  m_changed = true;
  push(inst);
  return true;
}

// transpose(dot(a, b)) => dot(b, a) for a matrix product (no batch dimensions, rank-2 operands and result) whose
// only user is the transpose: the product computed in the transposed order, as XLA's simplifier does (a
// gradient's dW^T is one dot, not a dot and a transpose). Returns whether `inst` was replaced.
bool ComputationSimplifier::transposeOfDot(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kTranspose || inst->operandCount() != 1) return false;
  HloInstruction* dot = inst->operand(0);
  const auto& perm = inst->attributes().dimensions;
  const auto& numbers = dot->attributes().dot;
  if (dot->opcode() != HloOpcode::kDot || dot->users().size() != 1 || dot == m_computation.root() || !numbers ||
      !numbers->lhsBatch.empty() || !numbers->rhsBatch.empty() || numbers->lhsContracting.size() != 1 ||
      numbers->rhsContracting.size() != 1 || dot->operandCount() != 2 || !dot->shape().isArray() ||
      dot->shape().rank() != 2 || dot->operand(0)->shape().rank() != 2 || dot->operand(1)->shape().rank() != 2 ||
      !perm || *perm != std::vector<int64_t>{1, 0} || !hasRowMajorLayout(dot->shape()) ||
      m_sideEffects.hasSideEffect(*dot) || !dot->controlSuccessors().empty() || !dot->controlPredecessors().empty() ||
      inst == m_computation.root()) {
    return false;
  }
  // The product in row-major order: a transpose JAX wrote with layout {0,1} (its operand's memory order) reads
  // the same values from it.
  Shape shape = inst->shape();
  if (!hasRowMajorLayout(shape)) shape.setLayout(Layout{{1, 0}, {}});
  HloInstruction* swapped =
      m_computation.addInstruction(dot->name(), HloOpcode::kDot, shape, {dot->operand(1), dot->operand(0)});
  swapped->mutableAttributes() = dot->attributes();
  swapped->mutableAttributes().dot = DotDimensionNumbers{{}, {}, numbers->rhsContracting, numbers->lhsContracting};
  swapped->mutableAttributes().metadata = inst->attributes().metadata;
  replace(inst, swapped);
  push(swapped);
  return true;
}

// dot(a, b) where neither operand has a dimension of its own (each dimension of each is a batch or a contracting
// dimension: a batched inner product, einsum 'bi,bi->b', jnp.dot of two vectors) => reduce(multiply(a, b)) over
// the contracting dimensions, as XLA's simplifier does on both backends (such a dot is no matrix product for a
// GEMM; as a reduction it fuses with what makes its operands). b is transposed into a's dimension order when the
// two differ; both are converted to the accumulation type (the result's, f32 for a narrower float result, which
// is converted back after the sum); the sum's batch dimensions are transposed into the dot's order when a lists
// them out of order. Row-major operands and result only. Returns whether `inst` was replaced.
bool ComputationSimplifier::dotOfVectors(HloInstruction* inst) {
  const auto& numbers = inst->attributes().dot;
  if (inst->opcode() != HloOpcode::kDot || inst->operandCount() != 2 || !numbers || !inst->shape().isArray() ||
      m_sideEffects.hasSideEffect(*inst) || !inst->controlSuccessors().empty() ||
      !inst->controlPredecessors().empty()) {
    return false;
  }
  // A dot that names its algorithm (dot_bf16_bf16_f32, ...) rounds its operands its own way: XLA's simplifier
  // keeps those it cannot write as a multiply of that precision; here, all of them.
  for (const auto& [key, value] : inst->attributes().raw) {
    if (key == "algorithm") return false;
  }
  HloInstruction* lhs = inst->operand(0);
  HloInstruction* rhs = inst->operand(1);
  const Shape& lhsShape = lhs->shape();
  const Shape& rhsShape = rhs->shape();
  const size_t rank = numbers->lhsBatch.size() + numbers->lhsContracting.size();
  const PrimitiveType resultType = inst->shape().elementType();
  if (!lhsShape.isArray() || !rhsShape.isArray() || static_cast<size_t>(lhsShape.rank()) != rank ||
      static_cast<size_t>(rhsShape.rank()) != rank || numbers->rhsBatch.size() != numbers->lhsBatch.size() ||
      numbers->rhsContracting.size() != numbers->lhsContracting.size() || !hasRowMajorLayout(lhsShape) ||
      !hasRowMajorLayout(rhsShape) || !hasRowMajorLayout(inst->shape()) || resultType == PrimitiveType::kPred ||
      !(isFloatingPoint(resultType) || isComplex(resultType) || isInteger(resultType))) {
    return false;
  }
  // rhsOrder[d]: the dimension of b that lines up with dimension d of a.
  std::vector<int64_t> rhsOrder(rank, -1);
  for (size_t k = 0; k < numbers->lhsBatch.size(); ++k) {
    rhsOrder[static_cast<size_t>(numbers->lhsBatch[k])] = numbers->rhsBatch[k];
  }
  for (size_t k = 0; k < numbers->lhsContracting.size(); ++k) {
    rhsOrder[static_cast<size_t>(numbers->lhsContracting[k])] = numbers->rhsContracting[k];
  }
  if (std::find(rhsOrder.begin(), rhsOrder.end(), -1) != rhsOrder.end()) return false;
  for (size_t d = 0; d < rank; ++d) {
    if (rhsShape.dimension(static_cast<int>(rhsOrder[d])) != lhsShape.dimension(static_cast<int>(d))) return false;
  }

  const PrimitiveType accumulation =
      isFloatingPoint(resultType) && primitiveTypeBitWidth(resultType) < 32 ? PrimitiveType::kF32 : resultType;
  std::vector<HloInstruction*> created;
  auto make = [&](std::string_view name, HloOpcode opcode, Shape shape, std::vector<HloInstruction*> operands) {
    HloInstruction* made = m_computation.addInstruction(std::string(name), opcode, std::move(shape), operands);
    made->mutableAttributes().metadata = inst->attributes().metadata;
    created.push_back(made);
    return made;
  };
  auto convert = [&](HloInstruction* value, PrimitiveType type) {
    if (value->shape().elementType() == type) return value;
    return make("convert", HloOpcode::kConvert, Shape(type, value->shape().dimensions()), {value});
  };
  HloInstruction* rhsAligned = rhs;
  bool identity = true;
  for (size_t d = 0; d < rank; ++d) identity = identity && rhsOrder[d] == static_cast<int64_t>(d);
  if (!identity) {
    rhsAligned = make("transpose", HloOpcode::kTranspose, Shape(rhsShape.elementType(), lhsShape.dimensions()), {rhs});
    rhsAligned->mutableAttributes().dimensions = rhsOrder;
  }
  HloInstruction* product = make("multiply", HloOpcode::kMultiply, Shape(accumulation, lhsShape.dimensions()),
                                 {convert(lhs, accumulation), convert(rhsAligned, accumulation)});
  // The sum keeps a's batch dimensions in a's order.
  std::vector<int64_t> contracting = numbers->lhsContracting;
  std::sort(contracting.begin(), contracting.end());
  std::vector<int64_t> keptDims;  // a's batch dimensions, ascending
  std::vector<int64_t> keptSizes;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
    if (std::binary_search(contracting.begin(), contracting.end(), d)) continue;
    keptDims.push_back(d);
    keptSizes.push_back(lhsShape.dimension(static_cast<int>(d)));
  }
  HloInstruction* zero = make("constant", HloOpcode::kConstant, Shape::scalar(accumulation), {});
  zero->setLiteral(zeroOf(accumulation));
  HloInstruction* sum = make("reduce", HloOpcode::kReduce, Shape(accumulation, keptSizes), {product, zero});
  sum->mutableAttributes().dimensions = contracting;
  HloComputation*& reducer = m_addReducers[accumulation];
  if (reducer == nullptr) reducer = addScalarAddComputation(m_module, accumulation);
  sum->mutableCalledComputationRefs().push_back({"to_apply", {reducer}, false});
  // The dot's dimension k is a's batch dimension lhsBatch[k]: at position index-of(lhsBatch[k]) in the sum.
  std::vector<int64_t> toDotOrder;
  for (int64_t d : numbers->lhsBatch) {
    toDotOrder.push_back(std::lower_bound(keptDims.begin(), keptDims.end(), d) - keptDims.begin());
  }
  HloInstruction* result = sum;
  if (!isIdentityPermutation(toDotOrder)) {
    result = make("transpose", HloOpcode::kTranspose, Shape(accumulation, inst->shape().dimensions()), {sum});
    result->mutableAttributes().dimensions = toDotOrder;
  }
  result = convert(result, resultType);
  result->mutableShape().setLayout(inst->shape().layout());
  replace(inst, result);
  for (HloInstruction* made : created) push(made);
  return true;
}

// A dot that contracts nothing (an outer product, a scalar times a vector) as a multiply of its operands broadcast to
// the result, as XLA's simplifier rewrites it on both backends: [batch..., lhs free..., rhs free...] = a[batch...,
// free...] * b[batch..., free...], each operand transposed to batch-first where its batch dimensions are elsewhere.
// Contracting dimensions of size 1 contract nothing either (x[48,1] times y[48,1] over the 1s is an outer product):
// XLA's simplifier removes such degenerate dimensions from a dot first; here each operand is reshaped without them.
// Computed in the result's type (an operand of another type is converted first). Returns whether `inst` changed.
bool ComputationSimplifier::dotWithoutContraction(HloInstruction* inst) {
  const auto& numbers = inst->attributes().dot;
  if (inst->opcode() != HloOpcode::kDot || inst->operandCount() != 2 || !numbers || !inst->shape().isArray() ||
      numbers->lhsContracting.size() != numbers->rhsContracting.size() ||
      numbers->lhsBatch.size() != numbers->rhsBatch.size() || m_sideEffects.hasSideEffect(*inst) ||
      !inst->controlSuccessors().empty() || !inst->controlPredecessors().empty()) {
    return false;
  }
  auto unitDimensions = [](const HloInstruction* operand, const std::vector<int64_t>& dims) {
    const Shape& shape = operand->shape();
    return shape.isArray() && std::all_of(dims.begin(), dims.end(), [&](int64_t d) {
             return d >= 0 && d < shape.rank() && shape.dimension(static_cast<int>(d)) == 1;
           });
  };
  if (!unitDimensions(inst->operand(0), numbers->lhsContracting) ||
      !unitDimensions(inst->operand(1), numbers->rhsContracting)) {
    return false;
  }
  for (const auto& [key, value] : inst->attributes().raw) {
    if (key == "algorithm") return false;
  }
  const PrimitiveType resultType = inst->shape().elementType();
  if (resultType == PrimitiveType::kPred || !(isFloatingPoint(resultType) || isInteger(resultType))) return false;
  const Shape& out = inst->shape();
  const int batch = static_cast<int>(numbers->lhsBatch.size());
  std::vector<HloInstruction*> created;
  auto make = [&](HloOpcode opcode, Shape shape, std::vector<HloInstruction*> operands) {
    HloInstruction* made =
        m_computation.addInstruction(std::string(opcodeName(opcode)), opcode, std::move(shape), operands);
    made->mutableAttributes().metadata = inst->attributes().metadata;
    created.push_back(made);
    return made;
  };
  // `operand` with its batch dimensions first (in the dot's order), its free ones after, ascending, and its
  // contracting ones (all of size 1) dropped; broadcast into the result with the free ones at `freeStart`.
  auto spread = [&](HloInstruction* operand, const std::vector<int64_t>& batchDims,
                    const std::vector<int64_t>& contractingDims, int freeStart) -> HloInstruction* {
    const Shape& shape = operand->shape();
    if (!shape.isArray()) return nullptr;
    std::vector<int64_t> order = batchDims;
    auto listed = [](const std::vector<int64_t>& list, int64_t d) {
      return std::find(list.begin(), list.end(), d) != list.end();
    };
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if (!listed(batchDims, d) && !listed(contractingDims, d)) order.push_back(d);
    }
    const int free = shape.rank() - batch - static_cast<int>(contractingDims.size());
    if (freeStart + free > out.rank()) return nullptr;
    order.insert(order.end(), contractingDims.begin(), contractingDims.end());
    std::vector<int64_t> dims;
    for (int64_t d : order) dims.push_back(shape.dimension(static_cast<int>(d)));
    HloInstruction* value = operand;
    if (value->shape().elementType() != resultType) {
      value = make(HloOpcode::kConvert, Shape(resultType, shape.dimensions()), {value});
    }
    if (!isIdentityPermutation(order)) {
      value = make(HloOpcode::kTranspose, Shape(resultType, dims), {value});
      value->mutableAttributes().dimensions = order;
    }
    if (!contractingDims.empty()) {
      dims.resize(dims.size() - contractingDims.size());
      value = make(HloOpcode::kReshape, Shape(resultType, dims), {value});
    }
    std::vector<int64_t> into;
    for (int k = 0; k < batch; ++k) into.push_back(k);
    for (int k = 0; k < free; ++k) into.push_back(freeStart + k);
    for (size_t k = 0; k < into.size(); ++k) {
      if (out.dimension(static_cast<int>(into[k])) != dims[k]) return nullptr;
    }
    HloInstruction* wide = make(HloOpcode::kBroadcast, Shape(resultType, out.dimensions()), {value});
    wide->mutableAttributes().dimensions = into;
    return wide;
  };
  const int contracting = static_cast<int>(numbers->lhsContracting.size());
  const int lhsFree = inst->operand(0)->shape().rank() - batch - contracting;
  const int rhsFree = inst->operand(1)->shape().rank() - batch - contracting;
  HloInstruction* lhs = spread(inst->operand(0), numbers->lhsBatch, numbers->lhsContracting, batch);
  HloInstruction* rhs =
      lhs ? spread(inst->operand(1), numbers->rhsBatch, numbers->rhsContracting, batch + lhsFree) : nullptr;
  if (!lhs || !rhs || batch + lhsFree + rhsFree != out.rank()) {
    for (auto it = created.rbegin(); it != created.rend(); ++it) (void)m_computation.removeInstruction(*it);
    return false;
  }
  HloInstruction* product = make(HloOpcode::kMultiply, out, {lhs, rhs});
  replace(inst, product);
  for (HloInstruction* made : created) push(made);
  return true;
}

}  // namespace fusionscope::core::simplifier
