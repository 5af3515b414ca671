// Kernels that call a computation per element: reduce, reduce-window, select-and-scatter, sort and map.
// Reductions visit the operand in row-major order, so each output accumulates its inputs in increasing
// index order (the order XLA's own evaluator uses), and apply the reducer after every element, rounding as
// the reducer's instructions do.

#include <algorithm>
#include <bit>
#include <limits>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/eval/scalar_ops.h"

namespace fusionscope::core::eval {
namespace {

// Result shape i of a kernel with `count` results: the instruction shape or its tuple element.
StatusOr<Shape> resultShape(const HloInstruction& inst, size_t count, size_t i) {
  const Shape& shape = inst.shape();
  if (count == 1 && !shape.isTuple()) return shape;
  if (!shape.isTuple() || static_cast<size_t>(shape.tupleSize()) != count) {
    return Status::error(fmt::format("result shape {} should be a tuple of {} arrays", shape.toString(false), count));
  }
  return shape.tupleElement(static_cast<int>(i));
}

Value packResults(std::vector<Value> values) {
  if (values.size() == 1) return std::move(values[0]);
  return Value::tuple(std::move(values));
}

// Split of 2N operands into N inputs and N scalar initial values of matching types.
Status splitInputsAndInits(Operands operands, std::vector<PrimitiveType>& types) {
  if (operands.empty() || operands.size() % 2 != 0) return Status::error("expected N inputs and N initial values");
  size_t n = operands.size() / 2;
  for (size_t k = 0; k < n; ++k) {
    const Value& input = *operands[k];
    const Value& init = *operands[n + k];
    FS_RETURN_IF_ERROR(expectArray(input, fmt::format("input {}", k)));
    if (input.shape().dimensions() != operands[0]->shape().dimensions()) {
      return Status::error(fmt::format("input {} {} differs in dimensions from input 0 {}", k,
                                       input.shape().toString(false), operands[0]->shape().toString(false)));
    }
    if (!init.isArray() || init.elementCount() != 1 || init.elementType() != input.elementType()) {
      return Status::error(
          fmt::format("initial value {} must be a {} scalar", k, primitiveTypeName(input.elementType())));
    }
    types.push_back(input.elementType());
  }
  return okStatus();
}

Status checkSignature(ElementFunction& fn, const std::vector<PrimitiveType>& types, size_t paramsPerType) {
  std::vector<PrimitiveType> params;
  for (size_t r = 0; r < paramsPerType; ++r) params.insert(params.end(), types.begin(), types.end());
  return fn.expectSignature(params, types);
}

Status checkWindow(const Window* window, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                   std::string_view resultName) {
  if (!window) return Status::error("missing window={...} attribute");
  if (window->dims.size() != in.size() || out.size() != in.size()) {
    return Status::error(fmt::format("window has {} dimension(s), operand rank is {}", window->dims.size(), in.size()));
  }
  for (size_t d = 0; d < in.size(); ++d) {
    const WindowDim& w = window->dims[d];
    if (w.size < 1 || w.stride < 1 || w.windowDilation < 1 || w.baseDilation < 1) {
      return Status::error(fmt::format("invalid window in dimension {}", d));
    }
    int64_t expected = windowOutputSize(in[d], w);
    if (expected != out[d]) {
      return Status::error(
          fmt::format("window gives dimension {} size {}, the {} has {}", d, expected, resultName, out[d]));
    }
  }
  return okStatus();
}

// Visits the operand positions of the window at `outIndex` that fall on real (not padding or base dilation
// hole) elements, in row-major window order, calling f(linear operand index).
class WindowWalker {
 public:
  WindowWalker(const Window& window, const std::vector<int64_t>& in)
      : m_window(window), m_in(in), m_strides(rowMajorStrides(in)), m_index(in.size()) {
    for (const WindowDim& w : window.dims) m_count *= w.size;
  }

  template <class F>
  void walk(const std::vector<int64_t>& outIndex, F&& f) {
    const size_t rank = m_in.size();
    std::fill(m_index.begin(), m_index.end(), 0);
    for (int64_t k = 0; k < m_count; ++k) {
      int64_t linear = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        const WindowDim& wd = m_window.dims[d];
        int64_t pos = outIndex[d] * wd.stride + m_index[d] * wd.windowDilation - wd.padLow;
        if (pos < 0 || pos % wd.baseDilation != 0 || pos / wd.baseDilation >= m_in[d]) {
          inside = false;
          break;
        }
        linear += pos / wd.baseDilation * m_strides[d];
      }
      if (inside) f(linear);
      for (size_t d = rank; d-- > 0;) {
        if (++m_index[d] < m_window.dims[d].size) break;
        m_index[d] = 0;
      }
    }
  }

 private:
  const Window& m_window;
  const std::vector<int64_t>& m_in;
  std::vector<int64_t> m_strides;
  std::vector<int64_t> m_index;  // position inside the window, row-major
  int64_t m_count = 1;
};

// Stable bottom-up merge sort that stays in bounds even when `less` is not a strict weak order.
template <class Less>
void mergeSort(std::vector<int64_t>& v, Less&& less) {
  const size_t n = v.size();
  std::vector<int64_t> tmp(n);
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = std::min(lo + width, n);
      size_t hi = std::min(lo + 2 * width, n);
      size_t i = lo;
      size_t j = mid;
      size_t k = lo;
      while (i < mid && j < hi) tmp[k++] = less(v[j], v[i]) ? v[j++] : v[i++];
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    v.swap(tmp);
  }
}

}  // namespace

StatusOr<Value> evalReduce(const HloInstruction& inst, Operands operands, ElementFunction& reducer) {
  std::vector<PrimitiveType> types;
  FS_RETURN_IF_ERROR(splitInputsAndInits(operands, types));
  FS_RETURN_IF_ERROR(checkSignature(reducer, types, 2));
  size_t n = types.size();
  const std::vector<int64_t>& in = operands[0]->shape().dimensions();
  std::vector<int64_t> dims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
  std::vector<bool> reduced(in.size(), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(in.size()) || reduced[static_cast<size_t>(d)]) {
      return Status::error(fmt::format("dimensions={} invalid for rank {}", dimensionsText(dims), in.size()));
    }
    reduced[static_cast<size_t>(d)] = true;
  }
  std::vector<int64_t> outDims;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) outDims.push_back(in[d]);
  }
  std::vector<Shape> shapes;
  for (size_t k = 0; k < n; ++k) {
    StatusOr<Shape> shape = resultShape(inst, n, k);
    if (!shape.ok()) return shape.status();
    if (shape->dimensions() != outDims || shape->elementType() != types[k]) {
      return Status::error(fmt::format("result {} should be {}{}", shape->toString(false), primitiveTypeName(types[k]),
                                       dimensionsText(outDims)));
    }
    shapes.push_back(*shape);
  }
  // Offsets of each input element in the output: output strides, zero along reduced dimensions.
  std::vector<int64_t> outStrides = rowMajorStrides(outDims);
  std::vector<int64_t> strides(in.size(), 0);
  for (size_t d = 0, o = 0; d < in.size(); ++d) {
    if (!reduced[d]) strides[d] = outStrides[o++];
  }
  auto outCount = static_cast<size_t>(product(outDims));

  if (n == 1 && reducer.simpleBinaryOp()) {
    HloOpcode op = *reducer.simpleBinaryOp();
    PrimitiveType type = types[0];
    const Value& input = *operands[0];
    if (input.holdsFloats()) {
      std::vector<double> acc(outCount, operands[1]->floatData()[0]);
      const double* x = input.floatData().data();
      forEachWithOffset(in, strides, [&](int64_t i, int64_t o) {
        acc[static_cast<size_t>(o)] = roundFloat(type, floatBinary(op, acc[static_cast<size_t>(o)], x[i]));
      });
      return Value::floats(shapes[0], std::move(acc));
    }
    std::vector<int64_t> acc(outCount, operands[1]->intData()[0]);
    const int64_t* x = input.intData().data();
    forEachWithOffset(in, strides, [&](int64_t i, int64_t o) {
      acc[static_cast<size_t>(o)] = integerBinary(op, type, acc[static_cast<size_t>(o)], x[i]);
    });
    return Value::integers(shapes[0], std::move(acc));
  }

  std::vector<std::vector<Scalar>> acc(n);
  for (size_t k = 0; k < n; ++k) acc[k].assign(outCount, scalarAt(*operands[n + k], 0));
  std::vector<Scalar> args(2 * n);
  std::vector<Scalar> results(n);
  Status status;
  forEachWithOffset(in, strides, [&](int64_t i, int64_t o) {
    if (!status.ok()) return;
    for (size_t k = 0; k < n; ++k) {
      args[k] = acc[k][static_cast<size_t>(o)];
      args[n + k] = scalarAt(*operands[k], i);
    }
    status = reducer.call(args.data(), results.data());
    for (size_t k = 0; k < n; ++k) acc[k][static_cast<size_t>(o)] = results[k];
  });
  if (!status.ok()) return status;
  std::vector<Value> values;
  for (size_t k = 0; k < n; ++k) values.push_back(valueFromScalars(shapes[k], acc[k]));
  return packResults(std::move(values));
}

StatusOr<Value> evalReduceWindow(const HloInstruction& inst, Operands operands, ElementFunction& reducer) {
  std::vector<PrimitiveType> types;
  FS_RETURN_IF_ERROR(splitInputsAndInits(operands, types));
  FS_RETURN_IF_ERROR(checkSignature(reducer, types, 2));
  size_t n = types.size();
  const std::vector<int64_t>& in = operands[0]->shape().dimensions();
  std::vector<Shape> shapes;
  for (size_t k = 0; k < n; ++k) {
    StatusOr<Shape> shape = resultShape(inst, n, k);
    if (!shape.ok()) return shape.status();
    if (shape->elementType() != types[k] || (k > 0 && shape->dimensions() != shapes[0].dimensions())) {
      return Status::error(fmt::format("result {} does not match input {}", shape->toString(false), k));
    }
    shapes.push_back(*shape);
  }
  const std::vector<int64_t>& out = shapes[0].dimensions();
  const Window* window = inst.attributes().window ? &*inst.attributes().window : nullptr;
  FS_RETURN_IF_ERROR(checkWindow(window, in, out, "result"));

  WindowWalker walker(*window, in);
  auto outCount = static_cast<size_t>(product(out));
  std::vector<std::vector<Scalar>> acc(n, std::vector<Scalar>(outCount));
  std::vector<Scalar> args(2 * n);
  std::vector<Scalar> results(n);
  Status status;
  size_t o = 0;
  forEachIndex(out, [&](const std::vector<int64_t>& outIndex) {
    for (size_t k = 0; k < n; ++k) args[k] = scalarAt(*operands[n + k], 0);
    walker.walk(outIndex, [&](int64_t linear) {
      if (!status.ok()) return;
      for (size_t k = 0; k < n; ++k) args[n + k] = scalarAt(*operands[k], linear);
      status = reducer.call(args.data(), results.data());
      for (size_t k = 0; k < n; ++k) args[k] = results[k];
    });
    for (size_t k = 0; k < n; ++k) acc[k][o] = args[k];
    ++o;
  });
  if (!status.ok()) return status;
  std::vector<Value> values;
  for (size_t k = 0; k < n; ++k) values.push_back(valueFromScalars(shapes[k], acc[k]));
  return packResults(std::move(values));
}

StatusOr<Value> evalSelectAndScatter(const HloInstruction& inst, Operands operands, ElementFunction& select,
                                     ElementFunction& scatter) {
  if (operands.size() != 3) return Status::error("select-and-scatter takes operand, source and init value");
  const Value& operand = *operands[0];
  const Value& source = *operands[1];
  const Value& init = *operands[2];
  FS_RETURN_IF_ERROR(expectArray(operand, "operand"));
  FS_RETURN_IF_ERROR(expectArray(source, "source"));
  PrimitiveType type = operand.elementType();
  if (source.elementType() != type || !init.isArray() || init.elementType() != type || init.elementCount() != 1) {
    return Status::error("source and init value must have the operand's element type");
  }
  FS_RETURN_IF_ERROR(expectSameDims(operand, inst.shape(), "operand"));
  FS_RETURN_IF_ERROR(select.expectSignature({type, type}, {PrimitiveType::kPred}));
  FS_RETURN_IF_ERROR(scatter.expectSignature({type, type}, {type}));
  const std::vector<int64_t>& in = operand.shape().dimensions();
  const Window* window = inst.attributes().window ? &*inst.attributes().window : nullptr;
  FS_RETURN_IF_ERROR(checkWindow(window, in, source.shape().dimensions(), "source"));

  WindowWalker walker(*window, in);
  std::vector<Scalar> result(static_cast<size_t>(operand.elementCount()), scalarAt(init, 0));
  Scalar args[2];
  Scalar out[1];
  Status status;
  int64_t s = 0;
  forEachIndex(source.shape().dimensions(), [&](const std::vector<int64_t>& index) {
    int64_t sourceLinear = s++;
    if (!status.ok()) return;
    int64_t selected = -1;
    Scalar selectedValue;
    walker.walk(index, [&](int64_t linear) {
      if (!status.ok()) return;
      Scalar candidate = scalarAt(operand, linear);
      if (selected < 0) {
        selected = linear;
        selectedValue = candidate;
        return;
      }
      args[0] = selectedValue;
      args[1] = candidate;
      status = select.call(args, out);
      if (!out[0].i) {
        selected = linear;
        selectedValue = candidate;
      }
    });
    if (selected < 0 || !status.ok()) return;
    args[0] = result[static_cast<size_t>(selected)];
    args[1] = scalarAt(source, sourceLinear);
    status = scatter.call(args, out);
    result[static_cast<size_t>(selected)] = out[0];
  });
  if (!status.ok()) return status;
  return valueFromScalars(operand.shape(), result);
}

StatusOr<Value> evalSort(const HloInstruction& inst, Operands operands, ElementFunction& comparator) {
  if (operands.empty()) return Status::error("sort without operands");
  const std::vector<int64_t>& dims = operands[0]->shape().dimensions();
  std::vector<PrimitiveType> params;
  for (size_t k = 0; k < operands.size(); ++k) {
    const Value& v = *operands[k];
    if (!v.isArray() || v.shape().dimensions() != dims) {
      return Status::error(fmt::format("operand {} must be an array with the dimensions of operand 0", k));
    }
    params.push_back(v.elementType());
    params.push_back(v.elementType());
  }
  FS_RETURN_IF_ERROR(comparator.expectSignature(params, {PrimitiveType::kPred}));
  std::vector<int64_t> sortDims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (dims.empty()) {
    // Sorting scalars leaves them as they are.
    std::vector<Value> copies;
    for (const Value* v : operands) copies.push_back(*v);
    return packResults(std::move(copies));
  }
  if (sortDims.size() != 1 || sortDims[0] < 0 || sortDims[0] >= static_cast<int64_t>(dims.size())) {
    return Status::error(fmt::format("dimensions={} must name one dimension", dimensionsText(sortDims)));
  }
  auto dim = static_cast<size_t>(sortDims[0]);
  std::vector<int64_t> strides = rowMajorStrides(dims);
  int64_t length = dims[dim];
  int64_t stride = strides[dim];
  // Every slice along `dim` starts at an index whose `dim` coordinate is 0.
  std::vector<int64_t> outer = dims;
  outer[dim] = 1;
  size_t n = operands.size();
  std::vector<std::vector<Scalar>> results(n);
  for (size_t k = 0; k < n; ++k) results[k].resize(static_cast<size_t>(operands[k]->elementCount()));
  std::vector<Scalar> args(2 * n);
  Scalar less[1];
  Status status;
  std::vector<int64_t> order(static_cast<size_t>(length));
  forEachWithOffset(outer, strides, [&](int64_t, int64_t base) {
    for (int64_t i = 0; i < length; ++i) order[static_cast<size_t>(i)] = i;
    mergeSort(order, [&](int64_t a, int64_t b) {
      if (!status.ok()) return false;
      for (size_t k = 0; k < n; ++k) {
        args[2 * k] = scalarAt(*operands[k], base + a * stride);
        args[2 * k + 1] = scalarAt(*operands[k], base + b * stride);
      }
      status = comparator.call(args.data(), less);
      return status.ok() && less[0].i != 0;
    });
    for (int64_t i = 0; i < length; ++i) {
      for (size_t k = 0; k < n; ++k) {
        results[k][static_cast<size_t>(base + i * stride)] =
            scalarAt(*operands[k], base + order[static_cast<size_t>(i)] * stride);
      }
    }
  });
  if (!status.ok()) return status;
  std::vector<Value> values;
  for (size_t k = 0; k < n; ++k) values.push_back(valueFromScalars(operands[k]->shape(), results[k]));
  return packResults(std::move(values));
}

StatusOr<Value> evalTopK(const HloInstruction& inst, Operands operands, ElementFunction* comparator) {
  if (operands.size() != 1 || !operands[0]->isArray() || operands[0]->shape().rank() == 0) {
    return Status::error("top-k takes one array of rank 1 or more");
  }
  const Value& x = *operands[0];
  const std::vector<int64_t>& dims = x.shape().dimensions();
  const int64_t length = dims.back();
  int64_t k = -1;
  bool largest = true;
  if (inst.opcode() == HloOpcode::kTopK) {
    StatusOr<int64_t> kAttribute = rawInt(inst, "k", std::nullopt);
    if (!kAttribute.ok()) return kAttribute.status();
    k = *kAttribute;
    largest = rawAttribute(inst, "largest").value_or("true") == "true";
  } else if (inst.shape().isTuple() && inst.shape().tupleElements().size() == 2 &&
             inst.shape().tupleElement(0).rank() == x.shape().rank()) {
    k = inst.shape().tupleElement(0).dimension(x.shape().rank() - 1);
  }
  if (k < 0 || k > length) return Status::error(fmt::format("k={} must be in 0..{}", k, length));
  if (comparator != nullptr) {
    FS_RETURN_IF_ERROR(comparator->expectSignature(
        {x.elementType(), x.elementType(), PrimitiveType::kS32, PrimitiveType::kS32}, {PrimitiveType::kPred}));
  }
  // Without a comparator, values compare in total order (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN), as XLA's
  // TopK does: the bits of the double as a signed integer, negative ones flipped.
  auto key = [&](int64_t linear) -> int64_t {
    if (x.holdsFloats()) {
      const int64_t bits = std::bit_cast<int64_t>(x.floatData()[static_cast<size_t>(linear)]);
      return bits < 0 ? bits ^ std::numeric_limits<int64_t>::max() : bits;
    }
    const int64_t value = x.intData()[static_cast<size_t>(linear)];
    return x.elementType() == PrimitiveType::kU64 ? value ^ std::numeric_limits<int64_t>::min() : value;
  };
  std::vector<int64_t> outDims = dims;
  outDims.back() = k;
  std::vector<Scalar> values;
  std::vector<int64_t> indices;
  const int64_t rows = length > 0 ? x.elementCount() / length : 0;
  values.reserve(static_cast<size_t>(rows * k));
  indices.reserve(static_cast<size_t>(rows * k));
  std::vector<int64_t> order(static_cast<size_t>(length));
  Scalar args[4];
  Scalar before[1];
  Status status;
  for (int64_t row = 0; row < rows && status.ok(); ++row) {
    const int64_t base = row * length;
    for (int64_t i = 0; i < length; ++i) order[static_cast<size_t>(i)] = i;
    if (comparator != nullptr) {
      mergeSort(order, [&](int64_t a, int64_t b) {
        if (!status.ok()) return false;
        args[0] = scalarAt(x, base + a);
        args[1] = scalarAt(x, base + b);
        args[2].i = a;
        args[3].i = b;
        status = comparator->call(args, before);
        return status.ok() && before[0].i != 0;
      });
    } else {
      mergeSort(order, [&](int64_t a, int64_t b) {
        return largest ? key(base + a) > key(base + b) : key(base + a) < key(base + b);
      });
    }
    for (int64_t i = 0; i < k; ++i) {
      values.push_back(scalarAt(x, base + order[static_cast<size_t>(i)]));
      indices.push_back(order[static_cast<size_t>(i)]);
    }
  }
  if (!status.ok()) return status;
  return Value::tuple({valueFromScalars(Shape(x.elementType(), outDims), values),
                       Value::integers(Shape(PrimitiveType::kS32, outDims), std::move(indices))});
}

StatusOr<Value> evalMap(const HloInstruction& inst, Operands operands, ElementFunction& function) {
  const Shape& shape = inst.shape();
  std::vector<PrimitiveType> params;
  for (size_t k = 0; k < operands.size(); ++k) {
    FS_RETURN_IF_ERROR(expectSameDims(*operands[k], shape, fmt::format("operand {}", k)));
    params.push_back(operands[k]->elementType());
  }
  FS_RETURN_IF_ERROR(function.expectSignature(params, {shape.elementType()}));
  auto count = static_cast<size_t>(shape.elementCount());
  std::vector<Scalar> out(count);
  std::vector<Scalar> args(operands.size());
  for (size_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < operands.size(); ++k) args[k] = scalarAt(*operands[k], static_cast<int64_t>(i));
    FS_RETURN_IF_ERROR(function.call(args.data(), &out[i]));
  }
  return valueFromScalars(shape, out);
}

}  // namespace fusionscope::core::eval
