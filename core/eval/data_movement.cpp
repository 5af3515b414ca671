// Data-movement kernels: broadcast, reshape, transpose, reverse, slice, dynamic-slice, dynamic-update-slice,
// concatenate, pad, iota, gather and scatter. Most reduce to copyBox() with strides computed once, so the
// inner loop is a strided copy.

#include <algorithm>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/eval/scalar_ops.h"

namespace fusionscope::core::eval {
namespace {

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Every entry in [0, rank), no duplicates.
Status checkDimensionList(const std::vector<int64_t>& dims, int64_t rank, std::string_view what) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank) {
      return Status::error(fmt::format("{} {} out of range for rank {}", what, dimensionsText(dims), rank));
    }
    for (size_t j = 0; j < i; ++j) {
      if (dims[i] == dims[j])
        return Status::error(fmt::format("{} {} repeats a dimension", what, dimensionsText(dims)));
    }
  }
  return okStatus();
}

Status sameType(const Value& v, const Shape& shape, std::string_view what) {
  if (v.isArray() && v.elementType() == shape.elementType()) return okStatus();
  return Status::error(fmt::format("{} is {}, expected element type {}", what, v.shape().toString(false),
                                   primitiveTypeName(shape.elementType())));
}

// Reads integer start indices given as `count` scalar operands from `first` on, or as one rank-1 operand.
StatusOr<std::vector<int64_t>> startIndices(Operands operands, size_t first, size_t count) {
  std::vector<int64_t> starts;
  if (operands.size() == first + 1 && count != 1 && operands[first]->shape().rank() == 1) {
    const Value& v = *operands[first];
    if (v.holdsFloats() || v.elementCount() != static_cast<int64_t>(count)) {
      return Status::error("start index operand must be an integer vector with one entry per dimension");
    }
    for (int64_t i = 0; i < v.elementCount(); ++i) starts.push_back(v.int64At(i));
    return starts;
  }
  if (operands.size() != first + count) {
    return Status::error(fmt::format("expected {} start index operand(s), got {}", count, operands.size() - first));
  }
  for (size_t i = first; i < operands.size(); ++i) {
    const Value& v = *operands[i];
    if (!v.isArray() || v.holdsFloats() || v.elementCount() != 1) {
      return Status::error(fmt::format("start index operand {} must be an integer scalar", i));
    }
    starts.push_back(v.int64At(0));
  }
  return starts;
}

}  // namespace

StatusOr<Value> evalBroadcast(const HloInstruction& inst, const Value& operand) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  std::vector<int64_t> dims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
  const std::vector<int64_t>& in = operand.shape().dimensions();
  const std::vector<int64_t>& out = shape.dimensions();
  if (dims.size() != in.size()) {
    return Status::error(fmt::format("dimensions={} does not match operand rank {}", dimensionsText(dims), in.size()));
  }
  FS_RETURN_IF_ERROR(checkDimensionList(dims, shape.rank(), "dimensions"));
  std::vector<int64_t> inStrides = rowMajorStrides(in);
  std::vector<int64_t> srcStrides(out.size(), 0);
  for (size_t j = 0; j < dims.size(); ++j) {
    auto d = static_cast<size_t>(dims[j]);
    if (in[j] != out[d]) {
      return Status::error(fmt::format("operand dimension {} (size {}) cannot broadcast to dimension {} (size {})", j,
                                       in[j], d, out[d]));
    }
    srcStrides[d] = inStrides[j];
  }
  std::vector<int64_t> outStrides = rowMajorStrides(out);
  return moveData(operand, shape,
                  [&](const auto* src, auto* dst) { copyBox(src, 0, srcStrides, dst, 0, outStrides, out); });
}

StatusOr<Value> evalReshape(const HloInstruction& inst, const Value& operand) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  if (operand.elementCount() != shape.elementCount()) {
    return Status::error(fmt::format("cannot {} {} ({} elements) to {} ({} elements)", inst.opcodeString(),
                                     operand.shape().toString(false), operand.elementCount(), shape.toString(false),
                                     shape.elementCount()));
  }
  return operand.withShape(shape);
}

namespace {}  // namespace

StatusOr<Value> evalBitcast(const HloInstruction& inst, const Value& operand) {
  // XLA's bitcast reinterprets the buffer: the logical data is reshaped in physical (layout) order, and a
  // change of element type reinterprets each element's bits. Without layouts, it is a reshape.
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(expectArray(operand, "operand"));
  if (operand.elementCount() != shape.elementCount()) {
    return Status::error(fmt::format("cannot bitcast {} ({} elements) to {} ({} elements)",
                                     operand.shape().toString(false), operand.elementCount(), shape.toString(false),
                                     shape.elementCount()));
  }
  Value value = operand;
  if (operand.elementType() != shape.elementType()) {
    StatusOr<Value> reinterpreted = reinterpretBits(operand, Shape(shape.elementType(), operand.shape().dimensions()));
    if (!reinterpreted.ok()) return reinterpreted.status();
    value = std::move(*reinterpreted);
  }
  const Shape& from = inst.operand(0)->shape();
  std::vector<int64_t> fromPhysical = from.isArray() && from.dimensions() == operand.shape().dimensions()
                                          ? physicalStrides(from)
                                          : rowMajorStrides(operand.shape().dimensions());
  std::vector<int64_t> toPhysical = physicalStrides(shape);
  std::vector<int64_t> fromLogical = rowMajorStrides(operand.shape().dimensions());
  std::vector<int64_t> toLogical = rowMajorStrides(shape.dimensions());
  if (fromPhysical == fromLogical && toPhysical == toLogical) return value.withShape(shape);
  return moveData(value, shape, [&](const auto* src, auto* dst) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(src)>>;
    std::vector<T> physical(static_cast<size_t>(shape.elementCount()));
    copyBox(src, 0, fromLogical, physical.data(), 0, fromPhysical, operand.shape().dimensions());
    copyBox(physical.data(), 0, toPhysical, dst, 0, toLogical, shape.dimensions());
  });
}

StatusOr<Value> evalTranspose(const HloInstruction& inst, const Value& operand) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  std::vector<int64_t> perm = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
  const std::vector<int64_t>& in = operand.shape().dimensions();
  const std::vector<int64_t>& out = shape.dimensions();
  if (perm.size() != in.size() || out.size() != in.size()) {
    return Status::error(fmt::format("dimensions={} is not a permutation of rank {}", dimensionsText(perm), in.size()));
  }
  FS_RETURN_IF_ERROR(checkDimensionList(perm, static_cast<int64_t>(in.size()), "dimensions"));
  std::vector<int64_t> inStrides = rowMajorStrides(in);
  std::vector<int64_t> srcStrides(out.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (out[i] != in[static_cast<size_t>(perm[i])]) {
      return Status::error(fmt::format("result dimension {} has size {}, operand dimension {} has {}", i, out[i],
                                       perm[i], in[static_cast<size_t>(perm[i])]));
    }
    srcStrides[i] = inStrides[static_cast<size_t>(perm[i])];
  }
  std::vector<int64_t> outStrides = rowMajorStrides(out);
  return moveData(operand, shape,
                  [&](const auto* src, auto* dst) { copyBox(src, 0, srcStrides, dst, 0, outStrides, out); });
}

StatusOr<Value> evalReverse(const HloInstruction& inst, const Value& operand) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  FS_RETURN_IF_ERROR(expectSameDims(operand, shape, "operand"));
  std::vector<int64_t> dims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
  FS_RETURN_IF_ERROR(checkDimensionList(dims, shape.rank(), "dimensions"));
  const std::vector<int64_t>& out = shape.dimensions();
  std::vector<int64_t> strides = rowMajorStrides(out);
  std::vector<int64_t> srcStrides = strides;
  int64_t base = 0;
  for (int64_t d : dims) {
    auto k = static_cast<size_t>(d);
    base += (out[k] - 1) * strides[k];
    srcStrides[k] = -strides[k];
  }
  return moveData(operand, shape,
                  [&](const auto* src, auto* dst) { copyBox(src, base, srcStrides, dst, 0, strides, out); });
}

StatusOr<Value> evalSlice(const HloInstruction& inst, const Value& operand) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  if (!inst.attributes().slice) return Status::error("slice without a slice={...} attribute");
  const std::vector<SliceDim>& slice = *inst.attributes().slice;
  const std::vector<int64_t>& in = operand.shape().dimensions();
  const std::vector<int64_t>& out = shape.dimensions();
  if (slice.size() != in.size() || out.size() != in.size()) {
    return Status::error(fmt::format("slice has {} dimension(s), operand rank is {}", slice.size(), in.size()));
  }
  std::vector<int64_t> inStrides = rowMajorStrides(in);
  std::vector<int64_t> srcStrides(in.size());
  int64_t base = 0;
  for (size_t d = 0; d < slice.size(); ++d) {
    const SliceDim& s = slice[d];
    if (s.start < 0 || s.start > s.limit || s.limit > in[d] || s.stride < 1) {
      return Status::error(
          fmt::format("slice [{}:{}:{}] is invalid for dimension {} of size {}", s.start, s.limit, s.stride, d, in[d]));
    }
    int64_t count = (s.limit - s.start + s.stride - 1) / s.stride;
    if (count != out[d]) {
      return Status::error(fmt::format("slice of dimension {} has {} element(s), the result has {}", d, count, out[d]));
    }
    base += s.start * inStrides[d];
    srcStrides[d] = inStrides[d] * s.stride;
  }
  std::vector<int64_t> outStrides = rowMajorStrides(out);
  return moveData(operand, shape,
                  [&](const auto* src, auto* dst) { copyBox(src, base, srcStrides, dst, 0, outStrides, out); });
}

StatusOr<Value> evalDynamicSlice(const HloInstruction& inst, Operands operands) {
  const Shape& shape = inst.shape();
  if (operands.empty()) return Status::error("dynamic-slice without operands");
  const Value& operand = *operands[0];
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  const std::vector<int64_t>& in = operand.shape().dimensions();
  const std::vector<int64_t>& out = shape.dimensions();
  if (out.size() != in.size()) return Status::error("result rank differs from the operand rank");
  StatusOr<std::vector<int64_t>> starts = startIndices(operands, 1, in.size());
  if (!starts.ok()) return starts.status();
  std::vector<int64_t> inStrides = rowMajorStrides(in);
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (out[d] > in[d]) {
      return Status::error(fmt::format("slice size {} exceeds dimension {} of size {}", out[d], d, in[d]));
    }
    // XLA clamps the start so the whole slice is in bounds.
    int64_t start = std::clamp<int64_t>((*starts)[d], 0, in[d] - out[d]);
    base += start * inStrides[d];
  }
  std::vector<int64_t> outStrides = rowMajorStrides(out);
  return moveData(operand, shape,
                  [&](const auto* src, auto* dst) { copyBox(src, base, inStrides, dst, 0, outStrides, out); });
}

StatusOr<Value> evalDynamicUpdateSlice(const HloInstruction& inst, Operands operands) {
  const Shape& shape = inst.shape();
  if (operands.size() < 2) return Status::error("dynamic-update-slice needs an operand and an update");
  const Value& operand = *operands[0];
  const Value& update = *operands[1];
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  FS_RETURN_IF_ERROR(sameType(update, shape, "update"));
  FS_RETURN_IF_ERROR(expectSameDims(operand, shape, "operand"));
  const std::vector<int64_t>& out = shape.dimensions();
  const std::vector<int64_t>& up = update.shape().dimensions();
  if (up.size() != out.size()) return Status::error("update rank differs from the operand rank");
  StatusOr<std::vector<int64_t>> starts = startIndices(operands, 2, out.size());
  if (!starts.ok()) return starts.status();
  std::vector<int64_t> outStrides = rowMajorStrides(out);
  int64_t base = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    if (up[d] > out[d]) {
      return Status::error(fmt::format("update size {} exceeds dimension {} of size {}", up[d], d, out[d]));
    }
    base += std::clamp<int64_t>((*starts)[d], 0, out[d] - up[d]) * outStrides[d];
  }
  std::vector<int64_t> upStrides = rowMajorStrides(up);
  return moveData(operand, shape, [&](const auto* src, auto* dst) {
    std::copy(src, src + shape.elementCount(), dst);
    const auto* u = dataOf<std::remove_cv_t<std::remove_pointer_t<decltype(src)>>>(update);
    copyBox(u, 0, upStrides, dst, base, outStrides, up);
  });
}

StatusOr<Value> evalConcatenate(const HloInstruction& inst, Operands operands) {
  const Shape& shape = inst.shape();
  const std::vector<int64_t>& out = shape.dimensions();
  std::vector<int64_t> dims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (dims.size() != 1 || dims[0] < 0 || dims[0] >= shape.rank()) {
    return Status::error(fmt::format("dimensions={} must name one dimension of the result", dimensionsText(dims)));
  }
  if (operands.empty()) return Status::error("concatenate without operands");
  auto cat = static_cast<size_t>(dims[0]);
  int64_t total = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Value& v = *operands[i];
    FS_RETURN_IF_ERROR(sameType(v, shape, fmt::format("operand {}", i)));
    const std::vector<int64_t>& in = v.shape().dimensions();
    bool compatible = in.size() == out.size();
    for (size_t d = 0; compatible && d < in.size(); ++d) compatible = d == cat || in[d] == out[d];
    if (!compatible) {
      return Status::error(
          fmt::format("operand {} {} does not fit result {}", i, v.shape().toString(false), shape.toString(false)));
    }
    total += in[cat];
  }
  if (total != out[cat]) {
    return Status::error(fmt::format("operands add up to {} along dimension {}, result has {}", total, cat, out[cat]));
  }
  std::vector<int64_t> outStrides = rowMajorStrides(out);
  return moveData(*operands[0], shape, [&](const auto* first, auto* dst) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(first)>>;
    int64_t offset = 0;
    for (const Value* v : operands) {
      const std::vector<int64_t>& in = v->shape().dimensions();
      copyBox(dataOf<T>(*v), 0, rowMajorStrides(in), dst, offset * outStrides[cat], outStrides, in);
      offset += in[cat];
    }
  });
}

StatusOr<Value> evalPad(const HloInstruction& inst, const Value& operand, const Value& padValue) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  FS_RETURN_IF_ERROR(sameType(padValue, shape, "padding value"));
  if (padValue.elementCount() != 1) return Status::error("padding value must be a scalar");
  if (!inst.attributes().padding) return Status::error("pad without a padding= attribute");
  const std::vector<PaddingDim>& padding = *inst.attributes().padding;
  const std::vector<int64_t>& in = operand.shape().dimensions();
  const std::vector<int64_t>& out = shape.dimensions();
  if (padding.size() != in.size() || out.size() != in.size()) {
    return Status::error(fmt::format("padding has {} dimension(s), operand rank is {}", padding.size(), in.size()));
  }
  std::vector<int64_t> inStrides = rowMajorStrides(in);
  std::vector<int64_t> outStrides = rowMajorStrides(out);
  std::vector<int64_t> dstStrides(in.size());
  std::vector<int64_t> counts(in.size());
  int64_t srcBase = 0;
  int64_t dstBase = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    const PaddingDim& p = padding[d];
    if (p.interior < 0) return Status::error(fmt::format("negative interior padding in dimension {}", d));
    int64_t padded = p.low + p.high + in[d] + std::max<int64_t>(in[d] - 1, 0) * p.interior;
    if (padded != out[d]) {
      return Status::error(fmt::format("padding gives dimension {} size {}, the result has {}", d, padded, out[d]));
    }
    // Operand element i lands at low + i * (interior + 1); negative padding cuts off what falls outside.
    int64_t step = p.interior + 1;
    int64_t first = p.low >= 0 ? 0 : floorDiv(-p.low + step - 1, step);
    int64_t last = out[d] - 1 - p.low < 0 ? -1 : std::min(in[d] - 1, floorDiv(out[d] - 1 - p.low, step));
    counts[d] = std::max<int64_t>(0, last - first + 1);
    srcBase += first * inStrides[d];
    dstBase += (p.low + first * step) * outStrides[d];
    dstStrides[d] = outStrides[d] * step;
  }
  return moveData(operand, shape, [&](const auto* src, auto* dst) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(src)>>;
    std::fill(dst, dst + shape.elementCount(), dataOf<T>(padValue)[0]);
    copyBox(src, srcBase, inStrides, dst, dstBase, dstStrides, counts);
  });
}

StatusOr<Value> evalIota(const HloInstruction& inst) {
  const Shape& shape = inst.shape();
  int64_t dim = inst.attributes().iotaDimension.value_or(0);
  if (dim < 0 || dim >= shape.rank()) return Status::error(fmt::format("iota_dimension={} out of range", dim));
  const std::vector<int64_t>& out = shape.dimensions();
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(dim) + 1; d < out.size(); ++d) inner *= out[d];
  int64_t extent = out[static_cast<size_t>(dim)];
  auto n = static_cast<size_t>(shape.elementCount());
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<double>((static_cast<int64_t>(i) / inner) % extent);
  return Value::fromDoubles(shape, values);
}

namespace {

// Dimension numbers of gather and scatter in one form: "window" operand dimensions (offset_dims /
// update_window_dims), the operand dimensions the index vector addresses, and batching dimensions.
struct IndexedDims {
  std::vector<int64_t> windowDims;        // in the result (gather) or the updates (scatter)
  std::vector<int64_t> collapsedDims;     // collapsed_slice_dims / inserted_window_dims
  std::vector<int64_t> indexMap;          // start_index_map / scatter_dims_to_operand_dims
  std::vector<int64_t> operandBatchDims;  // operand_batching_dims / input_batching_dims
  std::vector<int64_t> indicesBatchDims;  // start_indices_batching_dims / scatter_indices_batching_dims
  int64_t indexVectorDim = 0;
};

// Reads the index vector for the batch position `batch` (indices dims other than index_vector_dim, in order)
// and fills the operand start `start` (zeros elsewhere).
struct IndexReader {
  const Value* indices;
  std::vector<int64_t> indexDims;  // with the implicit trailing 1 when index_vector_dim == rank
  std::vector<int64_t> strides;
  int64_t indexVectorDim;

  void read(const std::vector<int64_t>& batch, const IndexedDims& dn, std::vector<int64_t>& start) const {
    std::fill(start.begin(), start.end(), 0);
    int64_t base = 0;
    size_t b = 0;
    for (size_t d = 0; d < indexDims.size(); ++d) {
      if (static_cast<int64_t>(d) == indexVectorDim) continue;
      base += batch[b++] * strides[d];
    }
    int64_t vectorStride = strides[static_cast<size_t>(indexVectorDim)];
    for (size_t k = 0; k < dn.indexMap.size(); ++k) {
      start[static_cast<size_t>(dn.indexMap[k])] = indices->int64At(base + static_cast<int64_t>(k) * vectorStride);
    }
    for (size_t k = 0; k < dn.operandBatchDims.size(); ++k) {
      // The batch position of that indices dimension (indices dims skip index_vector_dim).
      int64_t dim = dn.indicesBatchDims[k];
      size_t pos = static_cast<size_t>(dim > indexVectorDim ? dim - 1 : dim);
      start[static_cast<size_t>(dn.operandBatchDims[k])] = batch[pos];
    }
  }
};

StatusOr<IndexReader> makeIndexReader(const Value& indices, const IndexedDims& dn, int64_t operandRank) {
  if (!indices.isArray() || indices.holdsFloats()) return Status::error("indices must be an integer array");
  IndexReader reader{&indices, indices.shape().dimensions(), {}, dn.indexVectorDim};
  if (dn.indexVectorDim < 0 || dn.indexVectorDim > indices.shape().rank()) {
    return Status::error(fmt::format("index_vector_dim={} out of range", dn.indexVectorDim));
  }
  if (dn.indexVectorDim == indices.shape().rank()) reader.indexDims.push_back(1);
  reader.strides = rowMajorStrides(reader.indexDims);
  if (reader.indexDims[static_cast<size_t>(dn.indexVectorDim)] != static_cast<int64_t>(dn.indexMap.size())) {
    return Status::error(fmt::format("index vector has {} entries but the index map {} names {}",
                                     reader.indexDims[static_cast<size_t>(dn.indexVectorDim)],
                                     dimensionsText(dn.indexMap), dn.indexMap.size()));
  }
  FS_RETURN_IF_ERROR(checkDimensionList(dn.indexMap, operandRank, "index map"));
  FS_RETURN_IF_ERROR(checkDimensionList(dn.collapsedDims, operandRank, "collapsed dims"));
  FS_RETURN_IF_ERROR(checkDimensionList(dn.operandBatchDims, operandRank, "operand batching dims"));
  if (dn.operandBatchDims.size() != dn.indicesBatchDims.size()) {
    return Status::error("operand and indices batching dims differ in number");
  }
  for (int64_t d : dn.indicesBatchDims) {
    if (d < 0 || d >= static_cast<int64_t>(reader.indexDims.size()) || d == dn.indexVectorDim) {
      return Status::error(fmt::format("indices batching dim {} out of range", d));
    }
  }
  return reader;
}

// Operand dimensions that are not collapsed or batching, ascending: they pair with windowDims in order.
std::vector<int64_t> operandWindowDims(const IndexedDims& dn, int64_t operandRank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < operandRank; ++d) {
    if (!contains(dn.collapsedDims, d) && !contains(dn.operandBatchDims, d)) dims.push_back(d);
  }
  return dims;
}

// The batch dimensions (not window dims) of `dims`, which must match the indices' batch dimensions.
Status checkBatchDims(const std::vector<int64_t>& dims, const IndexedDims& dn, const IndexReader& reader,
                      std::string_view what, std::vector<int64_t>& batchDims) {
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!contains(dn.windowDims, static_cast<int64_t>(d))) batchDims.push_back(static_cast<int64_t>(d));
  }
  std::vector<int64_t> indexBatch;
  for (size_t d = 0; d < reader.indexDims.size(); ++d) {
    if (static_cast<int64_t>(d) != dn.indexVectorDim) indexBatch.push_back(reader.indexDims[d]);
  }
  std::vector<int64_t> sizes;
  sizes.reserve(batchDims.size());
  for (int64_t d : batchDims) sizes.push_back(dims[static_cast<size_t>(d)]);
  if (sizes != indexBatch) {
    return Status::error(fmt::format("{} batch dimensions {} do not match the indices' {}", what, dimensionsText(sizes),
                                     dimensionsText(indexBatch)));
  }
  return okStatus();
}

}  // namespace

StatusOr<Value> evalGather(const HloInstruction& inst, const Value& operand, const Value& indices) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(sameType(operand, shape, "operand"));
  IndexedDims dn;
  StatusOr<std::vector<int64_t>> offsetDims = rawIntList(inst, "offset_dims");
  StatusOr<std::vector<int64_t>> collapsed = rawIntList(inst, "collapsed_slice_dims", std::vector<int64_t>{});
  StatusOr<std::vector<int64_t>> indexMap = rawIntList(inst, "start_index_map");
  StatusOr<std::vector<int64_t>> sliceSizes = rawIntList(inst, "slice_sizes");
  StatusOr<std::vector<int64_t>> operandBatch = rawIntList(inst, "operand_batching_dims", std::vector<int64_t>{});
  StatusOr<std::vector<int64_t>> indicesBatch = rawIntList(inst, "start_indices_batching_dims", std::vector<int64_t>{});
  StatusOr<int64_t> indexVectorDim = rawInt(inst, "index_vector_dim", indices.shape().rank());
  for (const Status& s : {offsetDims.status(), collapsed.status(), indexMap.status(), sliceSizes.status(),
                          operandBatch.status(), indicesBatch.status(), indexVectorDim.status()}) {
    if (!s.ok()) return s;
  }
  dn.windowDims = *offsetDims;
  dn.collapsedDims = *collapsed;
  dn.indexMap = *indexMap;
  dn.operandBatchDims = *operandBatch;
  dn.indicesBatchDims = *indicesBatch;
  dn.indexVectorDim = *indexVectorDim;
  const std::vector<int64_t>& in = operand.shape().dimensions();
  const std::vector<int64_t>& out = shape.dimensions();
  auto rank = static_cast<int64_t>(in.size());
  StatusOr<IndexReader> reader = makeIndexReader(indices, dn, rank);
  if (!reader.ok()) return reader.status();
  FS_RETURN_IF_ERROR(checkDimensionList(dn.windowDims, shape.rank(), "offset_dims"));
  if (sliceSizes->size() != in.size()) return Status::error("slice_sizes must have one entry per operand dimension");
  for (size_t d = 0; d < in.size(); ++d) {
    if ((*sliceSizes)[d] < 0 || (*sliceSizes)[d] > in[d]) {
      return Status::error(
          fmt::format("slice size {} out of range for dimension {} of size {}", (*sliceSizes)[d], d, in[d]));
    }
  }
  std::vector<int64_t> windowOperandDims = operandWindowDims(dn, rank);
  if (windowOperandDims.size() != dn.windowDims.size()) {
    return Status::error(fmt::format("offset_dims {} does not match the {} uncollapsed operand dimension(s)",
                                     dimensionsText(dn.windowDims), windowOperandDims.size()));
  }
  for (size_t j = 0; j < windowOperandDims.size(); ++j) {
    int64_t size = (*sliceSizes)[static_cast<size_t>(windowOperandDims[j])];
    if (out[static_cast<size_t>(dn.windowDims[j])] != size) {
      return Status::error(fmt::format("result dimension {} has size {}, slice size is {}", dn.windowDims[j],
                                       out[static_cast<size_t>(dn.windowDims[j])], size));
    }
  }
  std::vector<int64_t> batchDims;
  FS_RETURN_IF_ERROR(checkBatchDims(out, dn, *reader, "result", batchDims));

  std::vector<int64_t> inStrides = rowMajorStrides(in);
  std::vector<int64_t> start(in.size());
  std::vector<int64_t> batch(batchDims.size());
  return moveData(operand, shape, [&](const auto* src, auto* dst) {
    int64_t o = 0;
    forEachIndex(out, [&](const std::vector<int64_t>& index) {
      for (size_t b = 0; b < batchDims.size(); ++b) batch[b] = index[static_cast<size_t>(batchDims[b])];
      reader->read(batch, dn, start);
      int64_t linear = 0;
      for (size_t d = 0; d < in.size(); ++d) {
        // XLA clamps start indices so the whole slice is in bounds.
        linear += std::clamp<int64_t>(start[d], 0, in[d] - (*sliceSizes)[d]) * inStrides[d];
      }
      for (size_t j = 0; j < windowOperandDims.size(); ++j) {
        linear += index[static_cast<size_t>(dn.windowDims[j])] * inStrides[static_cast<size_t>(windowOperandDims[j])];
      }
      dst[o++] = src[linear];
    });
  });
}

StatusOr<Value> evalScatter(const HloInstruction& inst, Operands operands, ElementFunction& combiner) {
  if (operands.size() < 3 || operands.size() % 2 == 0) {
    return Status::error("scatter takes N operands, indices and N updates");
  }
  size_t n = (operands.size() - 1) / 2;
  const Value& indices = *operands[n];
  const Value& first = *operands[0];
  FS_RETURN_IF_ERROR(expectArray(first, "operand 0"));
  const std::vector<int64_t>& in = first.shape().dimensions();
  auto rank = static_cast<int64_t>(in.size());
  IndexedDims dn;
  StatusOr<std::vector<int64_t>> windowDims = rawIntList(inst, "update_window_dims");
  StatusOr<std::vector<int64_t>> inserted = rawIntList(inst, "inserted_window_dims", std::vector<int64_t>{});
  StatusOr<std::vector<int64_t>> indexMap = rawIntList(inst, "scatter_dims_to_operand_dims");
  StatusOr<std::vector<int64_t>> operandBatch = rawIntList(inst, "input_batching_dims", std::vector<int64_t>{});
  StatusOr<std::vector<int64_t>> indicesBatch =
      rawIntList(inst, "scatter_indices_batching_dims", std::vector<int64_t>{});
  StatusOr<int64_t> indexVectorDim = rawInt(inst, "index_vector_dim", indices.shape().rank());
  for (const Status& s : {windowDims.status(), inserted.status(), indexMap.status(), operandBatch.status(),
                          indicesBatch.status(), indexVectorDim.status()}) {
    if (!s.ok()) return s;
  }
  dn.windowDims = *windowDims;
  dn.collapsedDims = *inserted;
  dn.indexMap = *indexMap;
  dn.operandBatchDims = *operandBatch;
  dn.indicesBatchDims = *indicesBatch;
  dn.indexVectorDim = *indexVectorDim;
  StatusOr<IndexReader> reader = makeIndexReader(indices, dn, rank);
  if (!reader.ok()) return reader.status();

  std::vector<PrimitiveType> types;
  for (size_t k = 0; k < n; ++k) {
    const Value& operand = *operands[k];
    const Value& update = *operands[n + 1 + k];
    if (!operand.isArray() || operand.shape().dimensions() != in) {
      return Status::error(fmt::format("operand {} must be an array with the dimensions of operand 0", k));
    }
    if (!update.isArray() || update.elementType() != operand.elementType() ||
        update.shape().dimensions() != operands[n + 1]->shape().dimensions()) {
      return Status::error(fmt::format("update {} must match operand {}'s type and update 0's dimensions", k, k));
    }
    types.push_back(operand.elementType());
  }
  std::vector<PrimitiveType> params = types;
  params.insert(params.end(), types.begin(), types.end());
  FS_RETURN_IF_ERROR(combiner.expectSignature(params, types));

  const std::vector<int64_t>& up = operands[n + 1]->shape().dimensions();
  FS_RETURN_IF_ERROR(checkDimensionList(dn.windowDims, static_cast<int64_t>(up.size()), "update_window_dims"));
  std::vector<int64_t> windowOperandDims = operandWindowDims(dn, rank);
  if (windowOperandDims.size() != dn.windowDims.size()) {
    return Status::error(fmt::format("update_window_dims {} does not match the {} window operand dimension(s)",
                                     dimensionsText(dn.windowDims), windowOperandDims.size()));
  }
  // Window extent per operand dimension: the update's size for window dims, 1 for inserted/batching ones.
  std::vector<int64_t> extent(in.size(), 1);
  for (size_t j = 0; j < windowOperandDims.size(); ++j) {
    extent[static_cast<size_t>(windowOperandDims[j])] = up[static_cast<size_t>(dn.windowDims[j])];
  }
  std::vector<int64_t> batchDims;
  FS_RETURN_IF_ERROR(checkBatchDims(up, dn, *reader, "update", batchDims));

  std::vector<std::vector<Scalar>> results(n);
  for (size_t k = 0; k < n; ++k) {
    results[k].resize(static_cast<size_t>(operands[k]->elementCount()));
    for (size_t i = 0; i < results[k].size(); ++i) results[k][i] = scalarAt(*operands[k], static_cast<int64_t>(i));
  }
  std::vector<int64_t> inStrides = rowMajorStrides(in);
  std::vector<int64_t> start(in.size());
  std::vector<int64_t> batch(batchDims.size());
  std::vector<Scalar> args(2 * n);
  std::vector<Scalar> combined(n);
  Status status;
  int64_t u = 0;
  forEachIndex(up, [&](const std::vector<int64_t>& index) {
    int64_t updateLinear = u++;
    if (!status.ok()) return;
    for (size_t b = 0; b < batchDims.size(); ++b) batch[b] = index[static_cast<size_t>(batchDims[b])];
    reader->read(batch, dn, start);
    // An update window that does not fit entirely is skipped, as XLA's GPU and CPU backends do.
    int64_t linear = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      if (start[d] < 0 || start[d] + extent[d] > in[d]) return;
      linear += start[d] * inStrides[d];
    }
    for (size_t j = 0; j < windowOperandDims.size(); ++j) {
      linear += index[static_cast<size_t>(dn.windowDims[j])] * inStrides[static_cast<size_t>(windowOperandDims[j])];
    }
    for (size_t k = 0; k < n; ++k) {
      args[k] = results[k][static_cast<size_t>(linear)];
      args[n + k] = scalarAt(*operands[n + 1 + k], updateLinear);
    }
    status = combiner.call(args.data(), combined.data());
    for (size_t k = 0; k < n; ++k) results[k][static_cast<size_t>(linear)] = combined[k];
  });
  if (!status.ok()) return status;
  if (n == 1) return valueFromScalars(operands[0]->shape(), results[0]);
  std::vector<Value> elements;
  for (size_t k = 0; k < n; ++k) elements.push_back(valueFromScalars(operands[k]->shape(), results[k]));
  return Value::tuple(std::move(elements));
}

}  // namespace fusionscope::core::eval
