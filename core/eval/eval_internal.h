#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/base/status.h"
#include "core/eval/value.h"
#include "core/ir/hlo_instruction.h"

// Pieces shared by the evaluator's kernels (evaluator.cpp dispatches, the other eval/*.cpp files hold the
// kernels by family). Kernels take their operands as values, read attributes from the instruction, check
// every size they index with, and return errors without the instruction name (the dispatcher prefixes it).
namespace fusionscope::core::eval {

using Operands = std::span<const Value* const>;

// ---- index arithmetic -------------------------------------------------------------------------------

int64_t product(const std::vector<int64_t>& dims);

// Calls f(index) for every index of `dims` in row-major order; `index` is the live odometer.
template <class F>
void forEachIndex(const std::vector<int64_t>& dims, F&& f) {
  for (int64_t d : dims) {
    if (d <= 0) return;
  }
  std::vector<int64_t> index(dims.size(), 0);
  const int rank = static_cast<int>(dims.size());
  while (true) {
    f(static_cast<const std::vector<int64_t>&>(index));
    int d = rank - 1;
    for (; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < dims[static_cast<size_t>(d)]) break;
      index[static_cast<size_t>(d)] = 0;
    }
    if (d < 0) return;
  }
}

// Calls f(linear, offset) for every index of `dims` in row-major order, where `linear` is the row-major
// position and `offset` = sum(index[d] * strides[d]) in a second (for example broadcast or reduced) space.
template <class F>
void forEachWithOffset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, F&& f) {
  for (int64_t d : dims) {
    if (d <= 0) return;
  }
  if (dims.empty()) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1];
  const int64_t innerStride = strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t linear = 0;
  int64_t offset = 0;
  while (true) {
    for (int64_t k = 0; k < inner; ++k) f(linear++, offset + k * innerStride);
    size_t dim = rank - 1;
    while (true) {
      if (dim == 0) return;
      --dim;
      offset += strides[dim];
      if (++index[dim] < dims[dim]) break;
      offset -= strides[dim] * dims[dim];
      index[dim] = 0;
    }
  }
}

// Copies the box `counts`: dst[dstBase + sum(i*dstStrides)] = src[srcBase + sum(i*srcStrides)]. Strides may
// be zero (broadcast) or negative (reverse). The caller guarantees every touched index is in range.
template <class T>
void copyBox(const T* src, int64_t srcBase, const std::vector<int64_t>& srcStrides, T* dst, int64_t dstBase,
             const std::vector<int64_t>& dstStrides, const std::vector<int64_t>& counts) {
  const size_t rank = counts.size();
  for (int64_t c : counts) {
    if (c <= 0) return;
  }
  if (rank == 0) {
    dst[dstBase] = src[srcBase];
    return;
  }
  const int64_t inner = counts[rank - 1];
  const int64_t srcInner = srcStrides[rank - 1];
  const int64_t dstInner = dstStrides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t s = srcBase;
  int64_t d = dstBase;
  while (true) {
    for (int64_t k = 0; k < inner; ++k) dst[d + k * dstInner] = src[s + k * srcInner];
    size_t dim = rank - 1;
    while (dim > 0) {
      --dim;
      s += srcStrides[dim];
      d += dstStrides[dim];
      if (++index[dim] < counts[dim]) break;
      s -= srcStrides[dim] * counts[dim];
      d -= dstStrides[dim] * counts[dim];
      index[dim] = 0;
      if (dim == 0) return;
    }
    if (rank == 1) return;
  }
}

// ---- typed access -----------------------------------------------------------------------------------

// The imaginary parts of a complex array, a type apart from the real parts' double: a data-movement kernel's
// fill(src, dst) runs once per part, and dataOf<T> then reads the same part of every other operand it uses.
struct ImagPart {
  double value;
};

template <class T>
const T* dataOf(const Value& v) {
  if constexpr (std::is_same_v<T, double>) {
    return v.floatData().data();
  } else if constexpr (std::is_same_v<T, ImagPart>) {
    return reinterpret_cast<const ImagPart*>(v.imagData().data());
  } else {
    return v.intData().data();
  }
}

// Builds an array of `shape` whose storage type matches `like` (double for floating-point types, int64
// otherwise, both parts of a complex one in turn) by calling fill(src, dst) with typed pointers: the common
// form of data-movement kernels.
template <class F>
Value moveData(const Value& like, const Shape& shape, F&& fill) {
  auto n = static_cast<size_t>(shape.elementCount());
  if (like.holdsComplex()) {
    std::vector<double> real(n);
    std::vector<double> imag(n);
    fill(like.floatData().data(), real.data());
    fill(dataOf<ImagPart>(like), reinterpret_cast<ImagPart*>(imag.data()));
    return Value::complex(shape, std::move(real), std::move(imag));
  }
  if (like.holdsFloats()) {
    std::vector<double> out(n);
    fill(like.floatData().data(), out.data());
    return Value::floats(shape, std::move(out));
  }
  std::vector<int64_t> out(n);
  fill(like.intData().data(), out.data());
  return Value::integers(shape, std::move(out));
}

// One element of either storage kind (the element type says which field is meaningful); a complex element is
// (f, im).
struct Scalar {
  double f = 0;
  int64_t i = 0;
  double im = 0;
};

inline Scalar scalarAt(const Value& v, int64_t linear) {
  Scalar s;
  if (v.holdsFloats()) {
    s.f = v.floatData()[static_cast<size_t>(linear)];
    if (v.holdsComplex()) s.im = v.imagData()[static_cast<size_t>(linear)];
  } else {
    s.i = v.intData()[static_cast<size_t>(linear)];
  }
  return s;
}

// Collects scalars into an array value of `shape`.
Value valueFromScalars(const Shape& shape, const std::vector<Scalar>& scalars);

// ---- element functions ------------------------------------------------------------------------------

// Runs a computation on scalars (a reducer, comparator, map function or scatter combiner), once per element.
// Computations made only of scalar elementwise instructions are compiled to a flat list of steps over a
// register file; anything else goes through `fallback`, the general evaluator. Not reentrant: each kernel
// invocation builds its own.
class ElementFunction {
 public:
  using Fallback = std::function<Status(const Scalar* args, Scalar* results)>;
  // Fails when a parameter or a result (the root, or each element of a root tuple) is not a scalar of a
  // held element type.
  static StatusOr<ElementFunction> create(const HloComputation& computation, Fallback fallback);

  const std::vector<PrimitiveType>& parameterTypes() const { return m_parameterTypes; }
  const std::vector<PrimitiveType>& resultTypes() const { return m_resultTypes; }
  const std::string& name() const { return m_name; }

  // `args` has one scalar per parameter, `results` room for one per result.
  Status call(const Scalar* args, Scalar* results);
  // The opcode when the computation is exactly `ROOT op(parameter(0), parameter(1))` with both parameters
  // and the result of one type: reducers like add and max, for the kernels' fast paths.
  std::optional<HloOpcode> simpleBinaryOp() const;
  // Checks the parameter and result counts and types a kernel will use.
  Status expectSignature(const std::vector<PrimitiveType>& parameters, const std::vector<PrimitiveType>& results) const;

  enum class StepKind : uint8_t {
    kFloatUnary,
    kIntegerUnary,
    kFloatBinary,
    kIntegerBinary,
    kCompareFloat,
    kCompareInteger,
    kIsFinite,
    kSelect,
    kClampFloat,
    kClampInteger,
    kConvert,
    kReducePrecision,
  };
  struct Step {
    StepKind kind;
    HloOpcode op;
    PrimitiveType type;         // result type
    PrimitiveType operandType;  // type of the first data operand
    ComparisonDirection direction = ComparisonDirection::kEq;
    bool totalOrder = false;
    int dst = 0;
    int a = 0;
    int b = 0;
    int c = 0;
    int exponentBits = 0;
    int mantissaBits = 0;
  };

 private:
  bool compile(const HloComputation& computation);

  std::string m_name;
  std::vector<PrimitiveType> m_parameterTypes;
  std::vector<PrimitiveType> m_resultTypes;
  bool m_compiled = false;
  std::vector<Step> m_steps;
  std::vector<Scalar> m_registers;  // parameters first, then one per instruction; constants preset
  std::vector<int> m_resultRegisters;
  std::optional<HloOpcode> m_simpleBinary;
  Fallback m_fallback;
};

// ---- attributes -------------------------------------------------------------------------------------

// Raw `key=value` attributes that InstructionAttributes has no typed field for.
std::optional<std::string_view> rawAttribute(const HloInstruction& inst, std::string_view key);
// `{1,2}` / `{}`; `missing` when absent; an error naming the key when malformed.
StatusOr<std::vector<int64_t>> rawIntList(const HloInstruction& inst, std::string_view key,
                                          std::optional<std::vector<int64_t>> missing = std::nullopt);
StatusOr<int64_t> rawInt(const HloInstruction& inst, std::string_view key, std::optional<int64_t> missing);
StatusOr<double> rawFloat(const HloInstruction& inst, std::string_view key, std::optional<double> missing);
bool rawBool(const HloInstruction& inst, std::string_view key);  // `key=true`

// Opcodes the evaluator implements (custom-call never: its meaning is the backend's).
bool isEvaluableOpcode(HloOpcode op);
// The custom-calls that only annotate sharding (`Sharding`, `SPMDFullToShardShape`, `SPMDShardToFullShape`, which
// JAX writes before XLA's sharding passes remove them): on one device the value of their one operand.
bool isShardingAnnotation(const HloInstruction& inst);

// ---- kernels ----------------------------------------------------------------------------------------

StatusOr<Value> evalElementwise(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalConvert(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalBitcastConvert(const HloInstruction& inst, const Value& operand);
// The elements of `operand` with their bits read as `shape`'s element type (same width, same count).
StatusOr<Value> reinterpretBits(const Value& operand, const Shape& shape);
StatusOr<Value> evalReducePrecision(const HloInstruction& inst, const Value& operand);

StatusOr<Value> evalBroadcast(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalReshape(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalBitcast(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalTranspose(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalReverse(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalSlice(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalDynamicSlice(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalDynamicUpdateSlice(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalConcatenate(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalPad(const HloInstruction& inst, const Value& operand, const Value& padValue);
StatusOr<Value> evalIota(const HloInstruction& inst);
StatusOr<Value> evalGather(const HloInstruction& inst, const Value& operand, const Value& indices);
StatusOr<Value> evalScatter(const HloInstruction& inst, Operands operands, ElementFunction& combiner);

StatusOr<Value> evalReduce(const HloInstruction& inst, Operands operands, ElementFunction& reducer);
StatusOr<Value> evalReduceWindow(const HloInstruction& inst, Operands operands, ElementFunction& reducer);
StatusOr<Value> evalSelectAndScatter(const HloInstruction& inst, Operands operands, ElementFunction& select,
                                     ElementFunction& scatter);
StatusOr<Value> evalSort(const HloInstruction& inst, Operands operands, ElementFunction& comparator);
// topk(x), k=K, largest=true|false along the last dimension (values in total order, ties: lower index first), or
// XLA CPU's TopK custom-call with its (value, value, index, index) comparator: (values, s32 indices).
StatusOr<Value> evalTopK(const HloInstruction& inst, Operands operands, ElementFunction* comparator);
// XLA CPU's custom-call TopK (custom_call_target="TopK"), which the evaluator runs as evalTopK.
bool isTopKCustomCall(const HloInstruction& inst);
// JAX's LAPACK custom calls (`lapack_spotrf_ffi`, ...; core/linalg/linalg_call.h), in f64.
StatusOr<Value> evalLinalg(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalMap(const HloInstruction& inst, Operands operands, ElementFunction& function);

StatusOr<Value> evalDot(const HloInstruction& inst, const Value& lhs, const Value& rhs);

// ---- complex.cpp ------------------------------------------------------------------------------------

// How the evaluator runs an instruction with a c64/c128 operand or result: not complex at all, by its usual kernel
// (data movement, select and dot hold both parts), by evalComplex, or not at all (refused by opcode).
enum class ComplexSupport { kNotComplex, kGeneric, kComplexKernel, kUnsupported };
ComplexSupport complexSupport(const HloInstruction& inst);
// Elementwise ops, convert, reduce (add or multiply reducers) and fft with complex operands or results.
StatusOr<Value> evalComplex(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalFft(const HloInstruction& inst, const Value& operand);
StatusOr<Value> evalConvolution(const HloInstruction& inst, const Value& lhs, const Value& rhs);
StatusOr<Value> evalBatchNormTraining(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalBatchNormInference(const HloInstruction& inst, Operands operands);
StatusOr<Value> evalBatchNormGrad(const HloInstruction& inst, Operands operands);

// ---- random.cpp ---------------------------------------------------------------------------------------

StatusOr<Value> evalRngBitGenerator(const HloInstruction& inst, Operands operands);

// Shared checks.
Status expectArray(const Value& v, std::string_view what);
Status expectSameDims(const Value& v, const Shape& shape, std::string_view what);

}  // namespace fusionscope::core::eval
