#include "core/passes/gather_scatter_expanders.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/shape_rules.h"

namespace fusionscope::core {
namespace {

void setRaw(InstructionAttributes& attributes, std::string_view key, std::string value) {
  for (auto& [name, text] : attributes.raw) {
    if (name == key) {
      text = std::move(value);
      return;
    }
  }
  attributes.raw.emplace_back(std::string(key), std::move(value));
}

void eraseRaw(InstructionAttributes& attributes, std::string_view key) {
  std::erase_if(attributes.raw, [&](const auto& entry) { return entry.first == key; });
}

// The attribute names of a gather and of a scatter, which have the same structure.
struct IndexedOpKeys {
  const char* operandBatching;
  const char* indicesBatching;
  const char* collapsed;
  const char* indexMap;
};
constexpr IndexedOpKeys kGatherKeys = {"operand_batching_dims", "start_indices_batching_dims", "collapsed_slice_dims",
                                       "start_index_map"};
constexpr IndexedOpKeys kScatterKeys = {"input_batching_dims", "scatter_indices_batching_dims", "inserted_window_dims",
                                        "scatter_dims_to_operand_dims"};

// Where a gather's or scatter's indices are, and where its index vector lies in them.
int indicesOperand(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::kGather ? 1 : (inst.operandCount() - 1) / 2;
}

// The largest value an integer type holds, as far as an index needs it.
int64_t largestIndex(PrimitiveType type) {
  const int bits = primitiveTypeBitWidth(type);
  if (bits >= 63) return INT64_MAX;
  return isSignedInteger(type) ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
}

// The new instructions each carry the rewritten op's metadata: they are its work (compare-fusions and the viewer's
// source lines read it).
// In a module with layouts they get the row-major one, as XLA's before layout assignment.
HloInstruction* addLike(HloComputation& computation, const HloInstruction& source, std::string_view base,
                        HloOpcode opcode, Shape shape, const std::vector<HloInstruction*>& operands = {}) {
  if (shape.isArray() && shape.rank() > 0 && !shape.layout() && source.shape().layout()) {
    Layout rowMajor;
    for (int d = shape.rank() - 1; d >= 0; --d) rowMajor.minorToMajor.push_back(d);
    shape.setLayout(std::move(rowMajor));
  }
  HloInstruction* made = computation.addInstruction(base, opcode, std::move(shape), operands);
  if (const OpMetadata* metadata = source.metadata()) made->mutableAttributes().metadata = *metadata;
  return made;
}

HloInstruction* addReshape(HloComputation& computation, const HloInstruction& source, HloInstruction* value,
                           Shape shape) {
  if (value->shape().dimensions() == shape.dimensions()) return value;
  return addLike(computation, source, "reshape", HloOpcode::kReshape, std::move(shape), {value});
}

HloInstruction* addIntegerConstant(HloComputation& computation, const HloInstruction& source, Shape shape,
                                   std::vector<int64_t> values) {
  HloInstruction* constant = addLike(computation, source, "constant", HloOpcode::kConstant, shape);
  constant->setLiteral(Literal::integers(std::move(shape), std::move(values)));
  return constant;
}

// ---- gather-scatter-batching ----

bool normalizeBatching(HloComputation& computation, HloInstruction* inst, const IndexedOpKeys& keys) {
  const InstructionAttributes& a = inst->attributes();
  const std::vector<int64_t> operandBatching = a.rawIntegers(keys.operandBatching).value_or(std::vector<int64_t>{});
  if (operandBatching.empty()) return false;
  const std::optional<std::vector<int64_t>> indicesBatching = a.rawIntegers(keys.indicesBatching);
  const std::optional<std::vector<int64_t>> indexMap = a.rawIntegers(keys.indexMap);
  std::vector<int64_t> collapsed = a.rawIntegers(keys.collapsed).value_or(std::vector<int64_t>{});
  const int at = indicesOperand(*inst);
  HloInstruction* indices = inst->operand(at);
  const Shape& indicesShape = indices->shape();
  const Shape& operandShape = inst->operand(0)->shape();
  if (!indicesBatching || indicesBatching->size() != operandBatching.size() || !indexMap || !indicesShape.isArray() ||
      !operandShape.isArray() || !isInteger(indicesShape.elementType())) {
    return false;  // the verifier names what is wrong
  }
  const int64_t vectorDim = indexVectorDimOf(a, indicesShape.rank());
  if (vectorDim < 0 || vectorDim > indicesShape.rank()) return false;
  for (const int64_t d : operandBatching) {
    if (d < 0 || d >= operandShape.rank() ||
        operandShape.dimension(static_cast<int>(d)) - 1 > largestIndex(indicesShape.elementType())) {
      return false;
    }
  }
  for (const int64_t d : *indicesBatching) {
    if (d < 0 || d >= indicesShape.rank() || d == vectorDim) return false;
  }
  std::vector<int64_t> dims = indicesShape.dimensions();
  if (vectorDim == indicesShape.rank()) {
    dims.push_back(1);
    indices = addReshape(computation, *inst, indices, Shape(indicesShape.elementType(), dims));
  }
  const auto vector = static_cast<size_t>(vectorDim);
  std::vector<int64_t> iotaDims = dims;
  iotaDims[vector] = 1;
  std::vector<HloInstruction*> parts;
  for (const int64_t d : *indicesBatching) {
    HloInstruction* iota =
        addLike(computation, *inst, "iota", HloOpcode::kIota, Shape(indicesShape.elementType(), iotaDims));
    iota->mutableAttributes().iotaDimension = d;
    parts.push_back(iota);
  }
  parts.push_back(indices);
  std::vector<int64_t> joined = dims;
  joined[vector] += static_cast<int64_t>(indicesBatching->size());
  HloInstruction* concatenate = addLike(computation, *inst, "concatenate", HloOpcode::kConcatenate,
                                        Shape(indicesShape.elementType(), joined), parts);
  concatenate->mutableAttributes().dimensions = std::vector<int64_t>{vectorDim};
  inst->replaceOperand(at, concatenate);

  std::vector<int64_t> map = operandBatching;
  map.insert(map.end(), indexMap->begin(), indexMap->end());
  collapsed.insert(collapsed.end(), operandBatching.begin(), operandBatching.end());
  std::sort(collapsed.begin(), collapsed.end());
  InstructionAttributes& attributes = inst->mutableAttributes();
  eraseRaw(attributes, keys.operandBatching);
  eraseRaw(attributes, keys.indicesBatching);
  setRaw(attributes, keys.collapsed, dimensionListText(collapsed));
  setRaw(attributes, keys.indexMap, dimensionListText(map));
  setRaw(attributes, "index_vector_dim", std::to_string(vectorDim));
  return true;
}

// ---- simple gathers and scatters ----

// What one index vector of a gather or scatter addresses: its start in each operand dimension (an s[] scalar per
// dimension, zero where the index map names none) and, for the scatter's bounds check, the whole vector.
struct SingleIndex {
  std::vector<HloInstruction*> starts;  // one per operand dimension
  HloInstruction* vector = nullptr;     // s[rank]: the starts as one vector
};

// The number of index vectors the indices hold (1 for a "simple" gather or scatter); nullopt when the index vector
// dimension is out of range.
std::optional<int64_t> indexCount(const Shape& indices, int64_t vectorDim) {
  if (!indices.isArray() || vectorDim < 0 || vectorDim > indices.rank()) return std::nullopt;
  int64_t count = 1;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d != vectorDim) count *= indices.dimension(d);
  }
  return count;
}

// The starts of the single index vector in `indices`, laid out over an operand of `rank` dimensions by `indexMap`.
// As XLA's expanders: the full vector first (zeros where the map names no dimension), then each start sliced
// from it.
SingleIndex singleIndex(HloComputation& computation, const HloInstruction& source, HloInstruction* indices,
                        int64_t vectorDim, const std::vector<int64_t>& indexMap, int rank) {
  const PrimitiveType type = indices->shape().elementType();
  const int indicesRank = indices->shape().rank();
  std::vector<HloInstruction*> pieces;
  for (int d = 0; d < rank; ++d) {
    const auto mapped = std::find(indexMap.begin(), indexMap.end(), d);
    if (mapped == indexMap.end()) {
      pieces.push_back(addIntegerConstant(computation, source, Shape(type, {1}), {0}));
      continue;
    }
    const int64_t k = mapped - indexMap.begin();
    HloInstruction* entry = indices;
    if (vectorDim < indicesRank && indices->shape().dimension(static_cast<int>(vectorDim)) > 1) {
      std::vector<SliceDim> window;
      std::vector<int64_t> dims;
      for (int i = 0; i < indicesRank; ++i) {
        window.push_back(i == vectorDim ? SliceDim{k, k + 1, 1} : SliceDim{0, indices->shape().dimension(i), 1});
        dims.push_back(i == vectorDim ? 1 : indices->shape().dimension(i));
      }
      entry = addLike(computation, source, "slice", HloOpcode::kSlice, Shape(type, dims), {indices});
      entry->mutableAttributes().slice = window;
    }
    pieces.push_back(addReshape(computation, source, entry, Shape(type, {1})));
  }
  SingleIndex index;
  if (pieces.size() == 1) {
    index.vector = pieces[0];
  } else {
    index.vector = addLike(computation, source, "concatenate", HloOpcode::kConcatenate,
                           Shape(type, {static_cast<int64_t>(rank)}), pieces);
    index.vector->mutableAttributes().dimensions = std::vector<int64_t>{0};
  }
  for (int d = 0; d < rank; ++d) {
    HloInstruction* start = index.vector;
    if (rank > 1) {
      start = addLike(computation, source, "slice", HloOpcode::kSlice, Shape(type, {1}), {index.vector});
      start->mutableAttributes().slice = std::vector<SliceDim>{{d, d + 1, 1}};
    }
    index.starts.push_back(addReshape(computation, source, start, Shape::scalar(type)));
  }
  return index;
}

HloInstruction* addDynamicSlice(HloComputation& computation, const HloInstruction& source, HloInstruction* operand,
                                const std::vector<HloInstruction*>& starts, const std::vector<int64_t>& sizes) {
  std::vector<HloInstruction*> operands = {operand};
  operands.insert(operands.end(), starts.begin(), starts.end());
  HloInstruction* slice = addLike(computation, source, "dynamic-slice", HloOpcode::kDynamicSlice,
                                  Shape(operand->shape().elementType(), sizes), operands);
  setRaw(slice->mutableAttributes(), "dynamic_slice_sizes", dimensionListText(sizes));
  return slice;
}

void replace(HloComputation& computation, HloInstruction* old, HloInstruction* replacement) {
  const bool root = computation.root() == old;
  old->replaceAllUsesWith(replacement);
  if (root) computation.setRoot(replacement);
  (void)computation.removeInstruction(old);
}

bool expandSimpleGather(HloComputation& computation, HloInstruction* gather) {
  const InstructionAttributes& a = gather->attributes();
  HloInstruction* operand = gather->operand(0);
  HloInstruction* indices = gather->operand(1);
  const std::optional<std::vector<int64_t>> indexMap = a.rawIntegers("start_index_map");
  const std::optional<std::vector<int64_t>> sliceSizes = a.rawIntegers("slice_sizes");
  if (!a.rawIntegers("operand_batching_dims").value_or(std::vector<int64_t>{}).empty() || !indexMap || !sliceSizes ||
      !operand->shape().isArray() || !isInteger(indices->shape().elementType()) ||
      static_cast<int>(sliceSizes->size()) != operand->shape().rank() || !checkGatherShape(*gather).ok()) {
    return false;
  }
  const int64_t vectorDim = indexVectorDimOf(a, indices->shape().rank());
  if (indexCount(indices->shape(), vectorDim) != 1) return false;
  const SingleIndex index = singleIndex(computation, *gather, indices, vectorDim, *indexMap, operand->shape().rank());
  HloInstruction* slice = addDynamicSlice(computation, *gather, operand, index.starts, *sliceSizes);
  // The gather's result is the slice with its collapsed dimensions dropped and size-1 batch dimensions added: the
  // same elements in the same order.
  HloInstruction* result = slice;
  if (slice->shape().dimensions() != gather->shape().dimensions()) {
    result = addLike(computation, *gather, "reshape", HloOpcode::kReshape, gather->shape(), {slice});
  } else {
    slice->mutableShape() = gather->shape();
  }
  replace(computation, gather, result);
  return true;
}

// The scatter's computation applied to (old window, update window) elementwise: its scalar instructions cloned at
// the window's shape. Null when it holds anything but parameters, constants and elementwise ops.
HloInstruction* applyCombiner(HloComputation& computation, const HloInstruction& source, const HloComputation& combiner,
                              HloInstruction* old, HloInstruction* update) {
  StatusOr<std::vector<HloInstruction*>> order = combiner.postOrder();
  if (!order.ok()) return nullptr;
  const std::vector<int64_t>& window = old->shape().dimensions();
  std::map<const HloInstruction*, HloInstruction*> made;
  for (HloInstruction* inst : *order) {
    if (!inst->shape().isArray() || inst->shape().rank() != 0) return nullptr;
    if (inst->opcode() == HloOpcode::kParameter) {
      if (inst->parameterNumber() > 1) return nullptr;
      made[inst] = inst->parameterNumber() == 0 ? old : update;
    } else if (inst->opcode() == HloOpcode::kConstant) {
      HloInstruction* scalar = computation.addInstruction(
          inst->cloneWithOperands(computation.uniqueInstructionName("constant"), inst->shape(), {}));
      made[inst] = addLike(computation, source, "broadcast", HloOpcode::kBroadcast,
                           Shape(inst->shape().elementType(), window), {scalar});
      made[inst]->mutableAttributes().dimensions = std::vector<int64_t>{};
    } else if (isElementwise(inst->opcode()) && inst->calledComputations().empty()) {
      std::vector<HloInstruction*> operands;
      for (HloInstruction* operand : inst->operands()) operands.push_back(made.at(operand));
      HloInstruction* clone =
          computation.addInstruction(inst->cloneWithOperands(computation.uniqueInstructionName(inst->opcodeString()),
                                                             Shape(inst->shape().elementType(), window), operands));
      clone->mutableAttributes().metadata = source.metadata() ? std::optional(*source.metadata()) : std::nullopt;
      made[inst] = clone;
    } else {
      return nullptr;
    }
  }
  return made.at(combiner.root());
}

// Whether the scatter's computation is one this expansion can inline (see applyCombiner).
bool inlinableCombiner(const HloComputation* combiner) {
  if (!combiner || combiner->parameterCount() != 2) return false;
  for (const auto& inst : combiner->instructions()) {
    const HloOpcode op = inst->opcode();
    if (!inst->shape().isArray() || inst->shape().rank() != 0) return false;
    if (op != HloOpcode::kParameter && op != HloOpcode::kConstant &&
        !(isElementwise(op) && inst->calledComputations().empty())) {
      return false;
    }
  }
  return true;
}

// `and` of two predicates: the reducer of the scatter's bounds check, one per module.
HloComputation* andReducer(HloModule& module, HloComputation*& cached) {
  if (cached) return cached;
  auto owned = std::make_unique<HloComputation>(module.uniqueComputationName("and.reduce_sub_computation"));
  HloComputation* reducer = module.addComputation(std::move(owned));
  const Shape pred = Shape::scalar(PrimitiveType::kPred);
  HloInstruction* lhs = reducer->addInstruction("lhs", HloOpcode::kParameter, pred);
  lhs->setParameterNumber(0);
  HloInstruction* rhs = reducer->addInstruction("rhs", HloOpcode::kParameter, pred);
  rhs->setParameterNumber(1);
  reducer->setRoot(reducer->addInstruction("and", HloOpcode::kAnd, pred, {lhs, rhs}));
  cached = reducer;
  return reducer;
}

bool expandSimpleScatter(HloModule& module, HloComputation& computation, HloInstruction* scatter,
                         HloComputation*& reducer) {
  const InstructionAttributes& a = scatter->attributes();
  if (scatter->operandCount() != 3 || !scatter->shape().isArray() || !checkScatterShape(*scatter).ok() ||
      !a.rawIntegers("input_batching_dims").value_or(std::vector<int64_t>{}).empty() ||
      !inlinableCombiner(scatter->toApply())) {
    return false;
  }
  HloInstruction* operand = scatter->operand(0);
  HloInstruction* indices = scatter->operand(1);
  HloInstruction* updates = scatter->operand(2);
  const int64_t vectorDim = indexVectorDimOf(a, indices->shape().rank());
  if (indexCount(indices->shape(), vectorDim) != 1) return false;
  const std::vector<int64_t> windowDims = a.rawIntegers("update_window_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> inserted = a.rawIntegers("inserted_window_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indexMap = a.rawIntegers("scatter_dims_to_operand_dims").value_or(std::vector<int64_t>{});
  const Shape& operandShape = operand->shape();
  const int rank = operandShape.rank();
  // The update window in the operand's dimensions: 1 where a dimension is inserted, else the next window dimension
  // of the updates (checkScatterShape holds them in that order).
  std::vector<int64_t> window;
  size_t next = 0;
  for (int d = 0; d < rank; ++d) {
    const bool isInserted = std::find(inserted.begin(), inserted.end(), d) != inserted.end();
    window.push_back(isInserted ? 1 : updates->shape().dimension(static_cast<int>(windowDims[next++])));
  }
  const PrimitiveType indexType = indices->shape().elementType();
  const SingleIndex index = singleIndex(computation, *scatter, indices, vectorDim, indexMap, rank);
  // A scatter writes a window only where all of it lies inside the operand: 0 <= start <= size - window.
  const Shape vectorShape(indexType, {static_cast<int64_t>(rank)});
  const Shape predVector(PrimitiveType::kPred, {static_cast<int64_t>(rank)});
  std::vector<int64_t> limits;
  for (int d = 0; d < rank; ++d) limits.push_back(operandShape.dimension(d) - window[static_cast<size_t>(d)]);
  HloInstruction* zeros = addLike(computation, *scatter, "broadcast", HloOpcode::kBroadcast, vectorShape,
                                  {addIntegerConstant(computation, *scatter, Shape::scalar(indexType), {0})});
  zeros->mutableAttributes().dimensions = std::vector<int64_t>{};
  HloInstruction* lower =
      addLike(computation, *scatter, "compare", HloOpcode::kCompare, predVector, {zeros, index.vector});
  lower->mutableAttributes().direction = ComparisonDirection::kLe;
  HloInstruction* bound = addIntegerConstant(computation, *scatter, vectorShape, limits);
  HloInstruction* upper =
      addLike(computation, *scatter, "compare", HloOpcode::kCompare, predVector, {bound, index.vector});
  upper->mutableAttributes().direction = ComparisonDirection::kGe;
  HloInstruction* both = addLike(computation, *scatter, "and", HloOpcode::kAnd, predVector, {lower, upper});
  HloInstruction* init =
      addLike(computation, *scatter, "constant", HloOpcode::kConstant, Shape::scalar(PrimitiveType::kPred));
  init->setLiteral(Literal::integers(Shape::scalar(PrimitiveType::kPred), {1}));
  HloInstruction* inside =
      addLike(computation, *scatter, "reduce", HloOpcode::kReduce, Shape::scalar(PrimitiveType::kPred), {both, init});
  inside->mutableAttributes().dimensions = std::vector<int64_t>{0};
  inside->mutableCalledComputationRefs().push_back({"to_apply", {andReducer(module, reducer)}, false});
  HloInstruction* mask =
      addLike(computation, *scatter, "broadcast", HloOpcode::kBroadcast, Shape(PrimitiveType::kPred, window), {inside});
  mask->mutableAttributes().dimensions = std::vector<int64_t>{};

  HloInstruction* old = addDynamicSlice(computation, *scatter, operand, index.starts, window);
  HloInstruction* update = addReshape(computation, *scatter, updates, Shape(updates->shape().elementType(), window));
  HloInstruction* combined = applyCombiner(computation, *scatter, *scatter->toApply(), old, update);
  if (!combined) return false;  // inlinableCombiner said yes: not reached
  HloInstruction* kept = addLike(computation, *scatter, "select", HloOpcode::kSelect,
                                 Shape(operandShape.elementType(), window), {mask, combined, old});
  std::vector<HloInstruction*> operands = {operand, kept};
  operands.insert(operands.end(), index.starts.begin(), index.starts.end());
  HloInstruction* written = addLike(computation, *scatter, "dynamic-update-slice", HloOpcode::kDynamicUpdateSlice,
                                    scatter->shape(), operands);
  replace(computation, scatter, written);
  return true;
}

// Applies `rewrite` to every gather or scatter (`opcodes`) of the computations outside fusions, listed before any
// is rewritten (a rewrite adds instructions, and the scatter expander a computation); sorts what changed.
template <typename Rewrite>
StatusOr<bool> rewriteEach(HloModule& module, std::initializer_list<HloOpcode> opcodes, Rewrite rewrite) {
  std::vector<HloComputation*> computations;
  for (const auto& computation : module.computations()) {
    if (!computation->isFusionComputation()) computations.push_back(computation.get());
  }
  bool changed = false;
  for (HloComputation* computation : computations) {
    std::vector<HloInstruction*> targets;
    for (const auto& inst : computation->instructions()) {
      if (std::find(opcodes.begin(), opcodes.end(), inst->opcode()) != opcodes.end()) targets.push_back(inst.get());
    }
    bool here = false;
    for (HloInstruction* inst : targets) here |= rewrite(*computation, inst);
    if (here) FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    changed |= here;
  }
  return changed;
}

}  // namespace

StatusOr<bool> GatherScatterBatchingNormalizer::run(HloModule& module, PassContext& /*context*/) {
  return rewriteEach(module, {HloOpcode::kGather, HloOpcode::kScatter}, [](HloComputation& c, HloInstruction* inst) {
    return normalizeBatching(c, inst, inst->opcode() == HloOpcode::kGather ? kGatherKeys : kScatterKeys);
  });
}

StatusOr<bool> SimpleGatherExpander::run(HloModule& module, PassContext& /*context*/) {
  return rewriteEach(module, {HloOpcode::kGather}, expandSimpleGather);
}

StatusOr<bool> SimpleScatterExpander::run(HloModule& module, PassContext& /*context*/) {
  HloComputation* reducer = nullptr;
  StatusOr<bool> changed = rewriteEach(module, {HloOpcode::kScatter}, [&](HloComputation& c, HloInstruction* scatter) {
    return expandSimpleScatter(module, c, scatter, reducer);
  });
  if (changed.ok() && *changed) module.removeUnreachableComputations();
  return changed;
}

}  // namespace fusionscope::core
