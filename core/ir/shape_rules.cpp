#include "core/ir/shape_rules.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/ir/shape.h"

namespace fusionscope::core {
namespace {

Status parseLabelGroup(std::string_view text, size_t rank, char first, char second, int64_t& firstDim,
                       int64_t& secondDim, std::vector<int64_t>& spatial) {
  if (text.size() != rank) {
    return Status::error(fmt::format("dim_labels group '{}' does not match rank {}", text, rank));
  }
  size_t spatialCount = rank >= 2 ? rank - 2 : 0;
  spatial.assign(spatialCount, -1);
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto dim = static_cast<int64_t>(i);
    if (c == first && firstDim < 0) {
      firstDim = dim;
    } else if (c == second && secondDim < 0) {
      secondDim = dim;
    } else if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < spatialCount &&
               spatial[static_cast<size_t>(c - '0')] < 0) {
      spatial[static_cast<size_t>(c - '0')] = dim;
    } else {
      return Status::error(fmt::format("invalid dim_labels group '{}'", text));
    }
  }
  if (firstDim < 0 || secondDim < 0) return Status::error(fmt::format("invalid dim_labels group '{}'", text));
  return okStatus();
}

Status parseLabels(const HloInstruction& inst, size_t lhsRank, size_t rhsRank, size_t outRank, ConvolutionDims& out) {
  std::string labels;
  if (const std::string* text = inst.attributes().findRaw("dim_labels")) {
    labels = *text;
  } else {
    // XLA's default dimension numbers: bf01_oi01->bf01.
    std::string spatial;
    for (size_t i = 0; i + 2 < lhsRank; ++i) spatial += static_cast<char>('0' + i);
    labels = "bf" + spatial + "_oi" + spatial + "->bf" + spatial;
  }
  size_t underscore = labels.find('_');
  size_t arrow = labels.find("->");
  if (underscore == std::string::npos || arrow == std::string::npos || arrow < underscore) {
    return Status::error(fmt::format("invalid dim_labels={}", labels));
  }
  std::string_view all(labels);
  FS_RETURN_IF_ERROR(
      parseLabelGroup(all.substr(0, underscore), lhsRank, 'b', 'f', out.lhsBatch, out.lhsFeature, out.lhsSpatial));
  FS_RETURN_IF_ERROR(parseLabelGroup(all.substr(underscore + 1, arrow - underscore - 1), rhsRank, 'i', 'o',
                                     out.rhsInput, out.rhsOutput, out.rhsSpatial));
  FS_RETURN_IF_ERROR(
      parseLabelGroup(all.substr(arrow + 2), outRank, 'b', 'f', out.outBatch, out.outFeature, out.outSpatial));
  return okStatus();
}

// `key=N`; `missing` when absent.
StatusOr<int64_t> intAttribute(const HloInstruction& inst, std::string_view key, int64_t missing) {
  const std::string* text = inst.attributes().findRaw(key);
  if (!text) return missing;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size()) {
    return Status::error(fmt::format("invalid {}={}", key, *text));
  }
  return value;
}

}  // namespace

StatusOr<ConvolutionDims> convolutionDims(const HloInstruction& inst) {
  if (inst.operandCount() != 2) return Status::error("a convolution takes an input and a kernel");
  const Shape& shape = inst.shape();
  const std::vector<int64_t>& l = inst.operand(0)->shape().dimensions();
  const std::vector<int64_t>& r = inst.operand(1)->shape().dimensions();
  const std::vector<int64_t>& o = shape.dimensions();
  if (l.size() < 2 || r.size() != l.size() || o.size() != l.size()) {
    return Status::error("lhs, rhs and result of a convolution must have the same rank of at least 2");
  }
  ConvolutionDims dims;
  FS_RETURN_IF_ERROR(parseLabels(inst, l.size(), r.size(), o.size(), dims));
  StatusOr<int64_t> featureGroups = intAttribute(inst, "feature_group_count", 1);
  if (!featureGroups.ok()) return featureGroups.status();
  StatusOr<int64_t> batchGroups = intAttribute(inst, "batch_group_count", 1);
  if (!batchGroups.ok()) return batchGroups.status();
  dims.featureGroups = *featureGroups;
  dims.batchGroups = *batchGroups;
  const size_t spatialCount = l.size() - 2;
  Window& window = dims.window;
  if (inst.attributes().window) {
    window = *inst.attributes().window;
  } else {
    for (size_t s = 0; s < spatialCount; ++s) {
      window.dims.push_back(WindowDim{r[static_cast<size_t>(dims.rhsSpatial[s])], 1, 0, 0, 1, 1, false});
    }
  }
  if (window.dims.size() != spatialCount) {
    return Status::error(
        fmt::format("window has {} dimension(s), the convolution has {} spatial", window.dims.size(), spatialCount));
  }
  const int64_t batchSize = l[static_cast<size_t>(dims.lhsBatch)];
  const int64_t inFeatures = l[static_cast<size_t>(dims.lhsFeature)];
  const int64_t kernelIn = r[static_cast<size_t>(dims.rhsInput)];
  const int64_t outFeatures = r[static_cast<size_t>(dims.rhsOutput)];
  const int64_t g = *featureGroups;
  const int64_t bg = *batchGroups;
  if (g < 1 || bg < 1 || inFeatures != kernelIn * g || outFeatures % g != 0 || outFeatures % bg != 0 ||
      batchSize % bg != 0) {
    return Status::error(
        fmt::format("inconsistent groups: input features {}, kernel input features {}, output features {}, batch {}, "
                    "feature_group_count={}, batch_group_count={}",
                    inFeatures, kernelIn, outFeatures, batchSize, g, bg));
  }
  if (o[static_cast<size_t>(dims.outBatch)] != batchSize / bg ||
      o[static_cast<size_t>(dims.outFeature)] != outFeatures) {
    return Status::error(fmt::format("result {} does not match batch {} / {} and {} output features",
                                     shape.toString(false), batchSize, bg, outFeatures));
  }
  for (size_t s = 0; s < spatialCount; ++s) {
    const WindowDim& w = window.dims[s];
    if (w.size != r[static_cast<size_t>(dims.rhsSpatial[s])] || w.stride < 1 || w.windowDilation < 1 ||
        w.baseDilation < 1 || w.stride > kMaxDimension || w.windowDilation > kMaxDimension ||
        w.baseDilation > kMaxDimension || std::abs(w.padLow) > kMaxDimension || std::abs(w.padHigh) > kMaxDimension) {
      return Status::error(fmt::format("window dimension {} does not match the kernel", s));
    }
    int64_t expected = windowOutputSize(l[static_cast<size_t>(dims.lhsSpatial[s])], w);
    if (o[static_cast<size_t>(dims.outSpatial[s])] != expected) {
      return Status::error(fmt::format("spatial dimension {} of the result should be {}", s, expected));
    }
  }
  return dims;
}

int64_t indexVectorDimOf(const InstructionAttributes& a, int indicesRank) {
  if (const std::optional<std::vector<int64_t>> braced = a.rawIntegers("index_vector_dim")) {
    return braced->empty() ? -1 : braced->front();
  }
  if (const std::string* text = a.findRaw("index_vector_dim")) {
    char* end = nullptr;
    const long long value = std::strtoll(text->c_str(), &end, 10);
    return end != text->c_str() && *end == '\0' ? value : -1;
  }
  return indicesRank;
}

namespace {

// Each entry in [0, bound), no entry twice, and (when `sorted`) ascending; else what is wrong with `name`.
Status checkDimensionNumbers(const std::vector<int64_t>& list, int64_t bound, const char* name, bool sorted) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] < 0 || list[i] >= bound) {
      return Status::error(fmt::format("{} {} names dimension {}, out of range [0, {})", name,
                                       dimensionListText(list), list[i], bound));
    }
    for (size_t j = 0; j < i; ++j) {
      if (list[j] == list[i] || (sorted && list[j] > list[i])) {
        return Status::error(fmt::format("{} {} must be {}", name, dimensionListText(list),
                                         sorted ? "sorted and without repeats" : "without repeats"));
      }
    }
  }
  return okStatus();
}

bool contains(const std::vector<int64_t>& list, int64_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

// XLA's scatter shape rule (every operand, the indices and every update), which the evaluator and the emitters
// index by: the window, inserted and batching dimensions partition the operand's; the updates' other dimensions
// are the indices' batch dimensions (all but index_vector_dim), in order and of the same sizes; each window is no
// larger than the operand dimension it covers.
Status checkScatterShape(const HloInstruction& inst) {
  if (inst.operandCount() < 3 || inst.operandCount() % 2 == 0) {
    return Status::error(
        fmt::format("scatter takes N operands, indices and N updates, has {} operand(s)", inst.operandCount()));
  }
  const int n = (inst.operandCount() - 1) / 2;
  const Shape& operand = inst.operand(0)->shape();
  const Shape& indices = inst.operand(n)->shape();
  const Shape& updates = inst.operand(n + 1)->shape();
  const InstructionAttributes& a = inst.attributes();
  const std::optional<std::vector<int64_t>> windowDims = a.rawIntegers("update_window_dims");
  const std::optional<std::vector<int64_t>> indexMap = a.rawIntegers("scatter_dims_to_operand_dims");
  const std::vector<int64_t> inserted = a.rawIntegers("inserted_window_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> operandBatch = a.rawIntegers("input_batching_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indicesBatch =
      a.rawIntegers("scatter_indices_batching_dims").value_or(std::vector<int64_t>{});
  if (!operand.isArray() || !indices.isArray() || !updates.isArray() || !windowDims || !indexMap) {
    return Status::error("scatter needs array operands and updates, array indices, update_window_dims and "
                         "scatter_dims_to_operand_dims");
  }
  for (int i = 1; i < n; ++i) {
    if (!inst.operand(n + 1 + i)->shape().isArray() ||
        inst.operand(n + 1 + i)->shape().dimensions() != updates.dimensions()) {
      return Status::error(fmt::format("scatter update {} is {}, update 0 is {}", i,
                                       inst.operand(n + 1 + i)->shape().toString(false), updates.toString(false)));
    }
  }
  const int64_t rank = operand.rank();
  const int64_t indexVectorDim = indexVectorDimOf(a, indices.rank());
  if (indexVectorDim < 0 || indexVectorDim > indices.rank()) {
    return Status::error(fmt::format("index_vector_dim {} is out of range for indices {}", indexVectorDim,
                                     indices.toString(false)));
  }
  FS_RETURN_IF_ERROR(checkDimensionNumbers(*windowDims, updates.rank(), "update_window_dims", true));
  FS_RETURN_IF_ERROR(checkDimensionNumbers(inserted, rank, "inserted_window_dims", true));
  FS_RETURN_IF_ERROR(checkDimensionNumbers(operandBatch, rank, "input_batching_dims", false));
  FS_RETURN_IF_ERROR(checkDimensionNumbers(*indexMap, rank, "scatter_dims_to_operand_dims", false));
  FS_RETURN_IF_ERROR(
      checkDimensionNumbers(indicesBatch, indices.rank(), "scatter_indices_batching_dims", false));
  for (int64_t d : operandBatch) {
    if (contains(inserted, d) || contains(*indexMap, d)) {
      return Status::error(fmt::format("input_batching_dims {} overlaps inserted_window_dims or "
                                       "scatter_dims_to_operand_dims", dimensionListText(operandBatch)));
    }
  }
  if (indicesBatch.size() != operandBatch.size() || contains(indicesBatch, indexVectorDim)) {
    return Status::error(fmt::format("scatter_indices_batching_dims {} must pair with input_batching_dims {} and "
                                     "leave out index_vector_dim {}",
                                     dimensionListText(indicesBatch), dimensionListText(operandBatch), indexVectorDim));
  }
  if (static_cast<int64_t>(windowDims->size() + inserted.size() + operandBatch.size()) != rank) {
    return Status::error(fmt::format(
        "update_window_dims {}, inserted_window_dims {} and input_batching_dims {} must together count the "
        "operand's {} dimension(s)",
        dimensionListText(*windowDims), dimensionListText(inserted), dimensionListText(operandBatch), rank));
  }
  const int64_t vectorSize = indexVectorDim == indices.rank() ? 1 : indices.dimension(static_cast<int>(indexVectorDim));
  if (static_cast<int64_t>(indexMap->size()) != vectorSize) {
    return Status::error(fmt::format("scatter_dims_to_operand_dims {} names {} dimension(s), the index vector has {}",
                                     dimensionListText(*indexMap), indexMap->size(), vectorSize));
  }
  // The updates' scatter dimensions against the indices' batch dimensions, in order.
  std::vector<int64_t> indexBatchSizes;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d != indexVectorDim) indexBatchSizes.push_back(indices.dimension(d));
  }
  std::vector<int64_t> updateScatterSizes;
  for (int d = 0; d < updates.rank(); ++d) {
    if (!contains(*windowDims, d)) updateScatterSizes.push_back(updates.dimension(d));
  }
  if (updateScatterSizes != indexBatchSizes) {
    return Status::error(fmt::format("the updates {} have scatter dimensions {} but the indices {} have batch "
                                     "dimensions {} (all but index_vector_dim {})",
                                     updates.toString(false), dimensionListText(updateScatterSizes),
                                     indices.toString(false), dimensionListText(indexBatchSizes), indexVectorDim));
  }
  // Each window dimension against the operand dimension it covers (the operand's dimensions that are neither
  // inserted nor batching, in order).
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (contains(inserted, d) || contains(operandBatch, d)) continue;
    const int64_t window = updates.dimension(static_cast<int>((*windowDims)[next++]));
    if (window > operand.dimension(static_cast<int>(d))) {
      return Status::error(fmt::format("update window of {} elements is larger than dimension {} of the operand {}",
                                       window, d, operand.toString(false)));
    }
  }
  return okStatus();
}

// XLA's gather shape rule: the result holds the batch dimensions of the indices (all but index_vector_dim) and,
// at offset_dims, the slice sizes of the operand dimensions that are neither collapsed nor batching.
Status checkGatherShape(const HloInstruction& inst) {
  if (inst.operandCount() != 2)
    return Status::error(fmt::format("gather takes 2 operands, has {}", inst.operandCount()));
  const Shape& operand = inst.operand(0)->shape();
  const Shape& indices = inst.operand(1)->shape();
  const InstructionAttributes& a = inst.attributes();
  std::optional<std::vector<int64_t>> offsetDims = a.rawIntegers("offset_dims");
  std::optional<std::vector<int64_t>> sliceSizes = a.rawIntegers("slice_sizes");
  std::optional<std::vector<int64_t>> startIndexMap = a.rawIntegers("start_index_map");
  const std::vector<int64_t> collapsed = a.rawIntegers("collapsed_slice_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> batching = a.rawIntegers("operand_batching_dims").value_or(std::vector<int64_t>{});
  const int64_t indexVectorDim = indexVectorDimOf(a, indices.rank());
  if (!operand.isArray() || !indices.isArray() || !isInteger(indices.elementType()) || !offsetDims || !sliceSizes ||
      !startIndexMap) {
    return Status::error(
        "gather needs an array operand, integer indices, offset_dims, slice_sizes and start_index_map");
  }
  if (static_cast<int>(sliceSizes->size()) != operand.rank() || indexVectorDim < 0 || indexVectorDim > indices.rank()) {
    return Status::error(
        fmt::format("gather slice_sizes {} or index_vector_dim {} do not fit operand {} and indices {}",
                    dimensionListText(*sliceSizes), indexVectorDim, operand.toString(false), indices.toString(false)));
  }
  std::vector<int64_t> offsetSizes;
  for (int d = 0; d < operand.rank(); ++d) {
    const int64_t size = (*sliceSizes)[static_cast<size_t>(d)];
    if (size < 0 || size > operand.dimension(d)) {
      return Status::error(
          fmt::format("slice size {} is out of range for dimension {} of {}", size, d, operand.toString(false)));
    }
    const bool isCollapsed = std::find(collapsed.begin(), collapsed.end(), d) != collapsed.end();
    const bool isBatching = std::find(batching.begin(), batching.end(), d) != batching.end();
    if (!isCollapsed && !isBatching) offsetSizes.push_back(size);
  }
  const int64_t vectorSize = indexVectorDim == indices.rank() ? 1 : indices.dimension(static_cast<int>(indexVectorDim));
  if (static_cast<int64_t>(startIndexMap->size()) != vectorSize) {
    return Status::error(fmt::format("start_index_map {} names {} dimension(s), the index vector has {}",
                                     dimensionListText(*startIndexMap), startIndexMap->size(), vectorSize));
  }
  std::vector<int64_t> batchSizes;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d != indexVectorDim) batchSizes.push_back(indices.dimension(d));
  }
  const size_t rank = batchSizes.size() + offsetSizes.size();
  if (offsetDims->size() != offsetSizes.size()) {
    return Status::error(fmt::format("offset_dims {} has {} entries for {} uncollapsed operand dimension(s)",
                                     dimensionListText(*offsetDims), offsetDims->size(), offsetSizes.size()));
  }
  std::vector<int64_t> expected(rank, -1);
  for (size_t j = 0; j < offsetDims->size(); ++j) {
    const int64_t at = (*offsetDims)[j];
    if (at < 0 || static_cast<size_t>(at) >= rank || expected[static_cast<size_t>(at)] >= 0) {
      return Status::error(
          fmt::format("offset_dims {} is out of range for a result of rank {}", dimensionListText(*offsetDims), rank));
    }
    expected[static_cast<size_t>(at)] = offsetSizes[j];
  }
  size_t nextBatch = 0;
  for (int64_t& size : expected) {
    if (size < 0) size = batchSizes[nextBatch++];
  }
  const Shape& result = inst.shape();
  if (!result.isArray() || result.dimensions() != expected || result.elementType() != operand.elementType()) {
    return Status::error(fmt::format("gather of {} gives {}, not {}", operand.toString(false),
                                     Shape(operand.elementType(), expected).toString(false),
                                     inst.shape().toString(false)));
  }
  return okStatus();
}

namespace {

std::string text(const Shape& shape) {
  return shape.toString(false);
}

// Start indices from operand `first` on: one scalar integer per dimension (XLA's current form), or one integer
// vector (the old form).
Status checkStartIndices(const HloInstruction& inst, int first, int rank) {
  const int count = inst.operandCount() - first;
  if (count == 1 && inst.operand(first)->shape().rank() == 1 && inst.operand(first)->shape().dimension(0) == rank) {
    return okStatus();
  }
  if (count != rank) {
    return Status::error(
        fmt::format("{} takes {} start index operand(s) for rank {}, has {}", inst.opcodeString(), rank, rank, count));
  }
  for (int i = first; i < inst.operandCount(); ++i) {
    const Shape& index = inst.operand(i)->shape();
    if (!index.isScalar() || !isInteger(index.elementType())) {
      return Status::error(fmt::format("start index operand {} must be an integer scalar, is {}", i, text(index)));
    }
  }
  return okStatus();
}

}  // namespace

Status checkBitcastConvertShape(const HloInstruction& inst) {
  if (inst.operandCount() != 1) return Status::error("bitcast-convert takes 1 operand");
  const Shape& in = inst.operand(0)->shape();
  const Shape& out = inst.shape();
  if (!in.isArray() || !out.isArray()) return Status::error("bitcast-convert works on arrays");
  const int inBits = primitiveTypeBitWidth(in.elementType());
  const int outBits = primitiveTypeBitWidth(out.elementType());
  // Equal widths keep the dimensions; one wide element becomes a last dimension of narrow ones, and back.
  std::vector<int64_t> expected = in.dimensions();
  if (inBits > outBits && outBits > 0) {
    expected.push_back(inBits / outBits);
  } else if (inBits < outBits && inBits > 0) {
    if (expected.empty() || expected.back() != outBits / inBits) {
      return Status::error(fmt::format("bitcast-convert of {} cannot give {}: its last dimension must be {}", text(in),
                                       text(out), outBits / inBits));
    }
    expected.pop_back();
  }
  if (out.dimensions() != expected) {
    return Status::error(fmt::format("bitcast-convert of {} cannot give {}", text(in), text(out)));
  }
  return okStatus();
}

Status checkPadShape(const HloInstruction& inst) {
  if (inst.operandCount() != 2) return Status::error("pad takes an operand and a padding value");
  const Shape& in = inst.operand(0)->shape();
  if (!inst.operand(1)->shape().isScalar()) return Status::error("pad value must be a scalar");
  const auto& padding = inst.attributes().padding;
  if (!in.isArray() || !padding || static_cast<int>(padding->size()) != in.rank()) {
    return Status::error(fmt::format("pad needs padding= with one entry per dimension of {}", text(in)));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    const PaddingDim& p = (*padding)[static_cast<size_t>(i)];
    const int64_t size = in.dimension(i);
    if (p.interior < 0 || std::abs(p.low) > kMaxDimension || std::abs(p.high) > kMaxDimension ||
        p.interior > kMaxDimension) {
      return Status::error(
          fmt::format("padding {}_{}_{} of dimension {} is out of range", p.low, p.high, p.interior, i));
    }
    dims.push_back(p.low + p.high + size + std::max<int64_t>(size - 1, 0) * p.interior);
  }
  if (!inst.shape().isArray() || inst.shape().dimensions() != dims || inst.shape().elementType() != in.elementType()) {
    return Status::error(fmt::format("pad of {} gives {}, not {}", text(in), dimensionsText(dims), text(inst.shape())));
  }
  return okStatus();
}

Status checkDynamicSliceShape(const HloInstruction& inst) {
  if (inst.operandCount() < 1) return Status::error("dynamic-slice needs an operand");
  const Shape& in = inst.operand(0)->shape();
  if (!in.isArray()) return Status::error("dynamic-slice needs an array operand");
  FS_RETURN_IF_ERROR(checkStartIndices(inst, 1, in.rank()));
  std::optional<std::vector<int64_t>> sizes = inst.attributes().rawIntegers("dynamic_slice_sizes");
  if (!sizes || static_cast<int>(sizes->size()) != in.rank()) {
    return Status::error(fmt::format("dynamic_slice_sizes needs one size per dimension of {}", text(in)));
  }
  for (int i = 0; i < in.rank(); ++i) {
    const int64_t size = (*sizes)[static_cast<size_t>(i)];
    if (size < 0 || size > in.dimension(i)) {
      return Status::error(
          fmt::format("slice size {} is out of range for dimension {} of size {}", size, i, in.dimension(i)));
    }
  }
  if (!inst.shape().isArray() || inst.shape().dimensions() != *sizes ||
      inst.shape().elementType() != in.elementType()) {
    return Status::error(fmt::format("dynamic-slice of {} with sizes {} gives {}, not {}", text(in),
                                     dimensionsText(*sizes), Shape(in.elementType(), *sizes).toString(false),
                                     text(inst.shape())));
  }
  return okStatus();
}

Status checkDynamicUpdateSliceShape(const HloInstruction& inst) {
  if (inst.operandCount() < 2) return Status::error("dynamic-update-slice needs an operand and an update");
  const Shape& in = inst.operand(0)->shape();
  const Shape& update = inst.operand(1)->shape();
  if (!inst.shape().compatible(in)) {
    return Status::error(fmt::format("dynamic-update-slice must produce {} (the shape of its operand), not {}",
                                     text(in), text(inst.shape())));
  }
  if (!in.isArray() || !update.isArray() || update.rank() != in.rank() || update.elementType() != in.elementType()) {
    return Status::error(fmt::format("update {} does not fit operand {}", text(update), text(in)));
  }
  for (int i = 0; i < in.rank(); ++i) {
    if (update.dimension(i) > in.dimension(i)) {
      return Status::error(
          fmt::format("update {} is larger than operand {} in dimension {}", text(update), text(in), i));
    }
  }
  return checkStartIndices(inst, 2, in.rank());
}

}  // namespace fusionscope::core
