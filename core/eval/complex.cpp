// Complex numbers in the evaluator: elementwise ops with a c64 or c128 operand or result (arithmetic in
// std::complex<double>, each part then rounded to the part type), converts to and between complex types, sums and
// products over complex arrays, and fft (through FFTW in double, core/linalg/fft_call.h). Data movement (broadcast,
// slice, transpose, concatenate, pad, gather, select, ...) needs nothing here: moveData moves both parts, and ops
// that call a computation per element (scatter, sort, reduce-window, map, reduce) pass both parts to it. Every
// other op with a complex operand or result is refused by name (complexSupport).

#include <cmath>
#include <complex>
#include <vector>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/eval/scalar_ops.h"
#include "core/ir/hlo_computation.h"
#include "core/linalg/fft_call.h"
#include "core/linalg/linalg_call.h"

namespace fusionscope::core::eval {
namespace {

using Complex = std::complex<double>;

bool involvesComplex(const Shape& shape) {
  if (shape.isTuple()) {
    for (const Shape& e : shape.tupleElements()) {
      if (involvesComplex(e)) return true;
    }
    return false;
  }
  return shape.isArray() && isComplex(shape.elementType());
}

Complex elementOf(const Value& v, size_t i) {
  if (v.holdsComplex()) return {v.floatData()[i], v.imagData()[i]};
  if (v.holdsFloats()) return {v.floatData()[i], 0.0};
  return {integerToDouble(v.elementType(), v.intData()[i]), 0.0};
}

Value complexValue(const Shape& shape, const std::vector<Complex>& z) {
  std::vector<double> re(z.size());
  std::vector<double> im(z.size());
  for (size_t i = 0; i < z.size(); ++i) {
    re[i] = z[i].real();
    im[i] = z[i].imag();
  }
  return Value::complex(shape, std::move(re), std::move(im));
}

// exp(z) - 1 and log(1 + z) without the cancellation of the direct forms near 0.
Complex expm1(Complex z) {
  const double x = z.real();
  const double y = z.imag();
  const double half = std::sin(y / 2);
  return {std::expm1(x) * std::cos(y) - 2 * half * half, std::exp(x) * std::sin(y)};
}

Complex log1p(Complex z) {
  const double x = z.real();
  const double y = z.imag();
  return {0.5 * std::log1p(x * (2 + x) + y * y), std::atan2(y, 1 + x)};
}

StatusOr<Complex> unaryOp(HloOpcode op, Complex z) {
  switch (op) {
    case HloOpcode::kNegate: return -z;
    case HloOpcode::kCopy: return z;
    case HloOpcode::kExp: return std::exp(z);
    case HloOpcode::kExpm1: return expm1(z);
    case HloOpcode::kLog: return std::log(z);
    case HloOpcode::kLog1p: return log1p(z);
    case HloOpcode::kSqrt: return std::sqrt(z);
    case HloOpcode::kRsqrt: return 1.0 / std::sqrt(z);
    case HloOpcode::kSin: return std::sin(z);
    case HloOpcode::kCos: return std::cos(z);
    case HloOpcode::kTan: return std::tan(z);
    case HloOpcode::kTanh: return std::tanh(z);
    case HloOpcode::kLogistic: return (1.0 + std::tanh(z / 2.0)) / 2.0;  // 1 / (1 + e^-z), no overflow of e^-z
    case HloOpcode::kSign: {
      const double r = std::abs(z);
      if (std::isnan(r)) return Complex(r, r);
      return r == 0 ? Complex(0, 0) : z / r;
    }
    default: return Status::error("");
  }
}

StatusOr<Complex> binaryOp(HloOpcode op, Complex a, Complex b) {
  switch (op) {
    case HloOpcode::kAdd: return a + b;
    case HloOpcode::kSubtract: return a - b;
    case HloOpcode::kMultiply: return a * b;
    case HloOpcode::kDivide: return a / b;
    case HloOpcode::kPower:
      // XLA: 0^0 = 1 and 0^b = 0 for b with a positive real part; the rest as exp(b log a).
      if (a == Complex(0, 0)) {
        if (b == Complex(0, 0)) return Complex(1, 0);
        if (b.real() > 0) return Complex(0, 0);
      }
      return std::pow(a, b);
    default: return Status::error("");
  }
}

Status notDefined(const HloInstruction& inst) {
  return Status::error(fmt::format("{} of complex values is not supported by the evaluator", inst.opcodeString()));
}

// `ROOT op(parameter(0), parameter(1))` with op add or multiply: the reducers a complex reduce may use.
std::optional<HloOpcode> complexReducer(const HloComputation* computation) {
  if (computation == nullptr || computation->root() == nullptr) return std::nullopt;
  const HloInstruction* root = computation->root();
  if (root->opcode() != HloOpcode::kAdd && root->opcode() != HloOpcode::kMultiply) return std::nullopt;
  if (root->operandCount() != 2) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    if (root->operand(i)->opcode() != HloOpcode::kParameter) return std::nullopt;
  }
  if (root->operand(0)->parameterNumber() == root->operand(1)->parameterNumber()) return std::nullopt;
  return root->opcode();
}

}  // namespace

ComplexSupport complexSupport(const HloInstruction& inst) {
  bool involved = involvesComplex(inst.shape());
  for (const HloInstruction* operand : inst.operands()) involved = involved || involvesComplex(operand->shape());
  if (!involved) return ComplexSupport::kNotComplex;
  const HloOpcode op = inst.opcode();
  switch (op) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kCopy:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
    case HloOpcode::kAddDependency:
    case HloOpcode::kCall:
    case HloOpcode::kFusion:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
    case HloOpcode::kReverse:
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kConcatenate:
    case HloOpcode::kPad:
    case HloOpcode::kGather:
    case HloOpcode::kSelect:
    case HloOpcode::kDot:
    // Ops that call a computation per element (a scatter's combiner, a sort's comparator, a reduce-window's
    // reducer) hold complex elements as (re, im) scalars; the computation's own ops are checked as any other.
    case HloOpcode::kMap:
    case HloOpcode::kScatter:
    case HloOpcode::kSort:
    case HloOpcode::kReduceWindow: return ComplexSupport::kGeneric;
    case HloOpcode::kCustomCall:
      // geev's complex eigenvectors (the LAPACK kernels write them); other custom-calls are refused as such.
      return linalg::isLapackCustomCall(inst) ? ComplexSupport::kGeneric : ComplexSupport::kUnsupported;
    case HloOpcode::kBitcast:
      // A reshape in the evaluator's terms, unless it reinterprets the element type.
      return inst.operandCount() == 1 && inst.operand(0)->shape().elementType() == inst.shape().elementType()
                 ? ComplexSupport::kGeneric
                 : ComplexSupport::kUnsupported;
    case HloOpcode::kFft:
    case HloOpcode::kConvert:
    case HloOpcode::kComplex:
    case HloOpcode::kReal:
    case HloOpcode::kImag:
    case HloOpcode::kAbs:
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kPower:
    case HloOpcode::kNegate:
    case HloOpcode::kExp:
    case HloOpcode::kExpm1:
    case HloOpcode::kLog:
    case HloOpcode::kLog1p:
    case HloOpcode::kSqrt:
    case HloOpcode::kRsqrt:
    case HloOpcode::kSin:
    case HloOpcode::kCos:
    case HloOpcode::kTan:
    case HloOpcode::kTanh:
    case HloOpcode::kLogistic:
    case HloOpcode::kSign: return ComplexSupport::kComplexKernel;
    case HloOpcode::kCompare: {
      const auto direction = inst.attributes().direction;
      return direction && (*direction == ComparisonDirection::kEq || *direction == ComparisonDirection::kNe)
                 ? ComplexSupport::kComplexKernel
                 : ComplexSupport::kUnsupported;
    }
    case HloOpcode::kReduce:
      // Sums and products in one pass; any other reducer (several operands, a computation of several ops) once
      // per element like a reduce-window's.
      return inst.operandCount() == 2 && inst.shape().isArray() && complexReducer(inst.toApply())
                 ? ComplexSupport::kComplexKernel
                 : ComplexSupport::kGeneric;
    default: return ComplexSupport::kUnsupported;
  }
}

}  // namespace fusionscope::core::eval

namespace fusionscope::core {

bool supportsComplexForm(const HloInstruction& inst) {
  return eval::complexSupport(inst) != eval::ComplexSupport::kUnsupported;
}

}  // namespace fusionscope::core

namespace fusionscope::core::eval {

StatusOr<Value> evalComplex(const HloInstruction& inst, Operands operands) {
  const HloOpcode op = inst.opcode();
  const Shape& shape = inst.shape();
  for (const Value* v : operands) FS_RETURN_IF_ERROR(expectArray(*v, "operand"));
  const auto n = static_cast<size_t>(shape.elementCount());
  auto elementwiseOperand = [&](size_t i) -> Status {
    if (i >= operands.size()) return Status::error(fmt::format("{} is missing operand {}", inst.opcodeString(), i));
    if (static_cast<size_t>(operands[i]->elementCount()) != n) {
      return Status::error(fmt::format("operand {} has shape {} but the result has {} element(s)", i,
                                       operands[i]->shape().toString(false), n));
    }
    return okStatus();
  };
  switch (op) {
    case HloOpcode::kFft: return evalFft(inst, *operands[0]);
    case HloOpcode::kReduce: {
      const Value& input = *operands[0];
      const Value& init = *operands[1];
      if (!input.holdsComplex() || !init.holdsComplex() || init.elementCount() != 1) {
        return Status::error("a complex reduce needs a complex operand and a complex scalar init value");
      }
      const HloOpcode reducer = *complexReducer(inst.toApply());
      std::vector<int64_t> dims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
      const std::vector<int64_t>& in = input.shape().dimensions();
      std::vector<bool> reduced(in.size(), false);
      for (int64_t d : dims) {
        if (d < 0 || d >= static_cast<int64_t>(in.size()) || reduced[static_cast<size_t>(d)]) {
          return Status::error(fmt::format("dimensions= names dimension {} of a rank-{} operand", d, in.size()));
        }
        reduced[static_cast<size_t>(d)] = true;
      }
      std::vector<int64_t> outDims;
      for (size_t d = 0; d < in.size(); ++d) {
        if (!reduced[d]) outDims.push_back(in[d]);
      }
      if (outDims != shape.dimensions()) return Status::error("the result's dimensions are not the kept ones");
      // Each output's terms in increasing linear order of the operand, as the real reduce sums them.
      std::vector<int64_t> strides(in.size(), 0);
      int64_t stride = 1;
      for (int d = static_cast<int>(in.size()) - 1; d >= 0; --d) {
        if (!reduced[static_cast<size_t>(d)]) {
          strides[static_cast<size_t>(d)] = stride;
          stride *= in[static_cast<size_t>(d)];
        }
      }
      std::vector<Complex> out(n, elementOf(init, 0));
      forEachWithOffset(in, strides, [&](int64_t linear, int64_t offset) {
        Complex& acc = out[static_cast<size_t>(offset)];
        const Complex x = elementOf(input, static_cast<size_t>(linear));
        acc = reducer == HloOpcode::kAdd ? acc + x : acc * x;
      });
      return complexValue(shape, out);
    }
    case HloOpcode::kConvert: {
      FS_RETURN_IF_ERROR(elementwiseOperand(0));
      if (!isComplex(shape.elementType())) {
        return Status::error("convert from a complex type to a real one is not defined (take real() or abs())");
      }
      std::vector<Complex> out(n);
      for (size_t i = 0; i < n; ++i) out[i] = elementOf(*operands[0], i);
      return complexValue(shape, out);
    }
    case HloOpcode::kComplex: {
      FS_RETURN_IF_ERROR(elementwiseOperand(0));
      FS_RETURN_IF_ERROR(elementwiseOperand(1));
      if (operands[0]->holdsComplex() || operands[1]->holdsComplex() || !operands[0]->holdsFloats() ||
          !operands[1]->holdsFloats()) {
        return Status::error("complex takes two real floating-point operands");
      }
      return Value::complex(shape, {operands[0]->floatData().begin(), operands[0]->floatData().end()},
                            {operands[1]->floatData().begin(), operands[1]->floatData().end()});
    }
    case HloOpcode::kReal:
    case HloOpcode::kImag:
    case HloOpcode::kAbs: {
      FS_RETURN_IF_ERROR(elementwiseOperand(0));
      const Value& x = *operands[0];
      if (!x.holdsComplex()) return notDefined(inst);
      std::vector<double> out(n);
      for (size_t i = 0; i < n; ++i) {
        out[i] = op == HloOpcode::kReal   ? x.floatData()[i]
                 : op == HloOpcode::kImag ? x.imagData()[i]
                                          : std::hypot(x.floatData()[i], x.imagData()[i]);
      }
      return Value::floats(shape, std::move(out));
    }
    case HloOpcode::kCompare: {
      FS_RETURN_IF_ERROR(elementwiseOperand(0));
      FS_RETURN_IF_ERROR(elementwiseOperand(1));
      const bool equal = *inst.attributes().direction == ComparisonDirection::kEq;
      std::vector<int64_t> out(n);
      for (size_t i = 0; i < n; ++i) out[i] = (elementOf(*operands[0], i) == elementOf(*operands[1], i)) == equal;
      return Value::integers(shape, std::move(out));
    }
    default: break;
  }
  if (!isComplex(shape.elementType())) return notDefined(inst);
  std::vector<Complex> out(n);
  if (operands.size() == 1) {
    FS_RETURN_IF_ERROR(elementwiseOperand(0));
    for (size_t i = 0; i < n; ++i) {
      StatusOr<Complex> z = unaryOp(op, elementOf(*operands[0], i));
      if (!z.ok()) return notDefined(inst);
      out[i] = *z;
    }
    return complexValue(shape, out);
  }
  if (operands.size() != 2) return notDefined(inst);
  FS_RETURN_IF_ERROR(elementwiseOperand(0));
  FS_RETURN_IF_ERROR(elementwiseOperand(1));
  for (size_t i = 0; i < n; ++i) {
    StatusOr<Complex> z = binaryOp(op, elementOf(*operands[0], i), elementOf(*operands[1], i));
    if (!z.ok()) return notDefined(inst);
    out[i] = *z;
  }
  return complexValue(shape, out);
}

StatusOr<Value> evalFft(const HloInstruction& inst, const Value& operand) {
  StatusOr<linalg::FftCall> call = linalg::fftCallOf(inst);
  if (!call.ok()) return call.status();
  // Every transform in double precision, on interleaved copies.
  linalg::FftCall wide = *call;
  wide.doublePrecision = true;
  const bool complexIn = call->kind != linalg::FftKind::kRfft;
  const bool complexOut = call->kind != linalg::FftKind::kIrfft;
  const auto count = static_cast<size_t>(operand.elementCount());
  std::vector<double> input(complexIn ? 2 * count : count);
  for (size_t i = 0; i < count; ++i) {
    if (complexIn) {
      input[2 * i] = operand.floatData()[i];
      input[2 * i + 1] = operand.imagData()[i];
    } else {
      input[i] = operand.floatData()[i];
    }
  }
  const Shape& shape = inst.shape();
  const auto n = static_cast<size_t>(shape.elementCount());
  std::vector<double> output(complexOut ? 2 * n : n);
  const std::vector<int64_t> words = linalg::encodeFft(wide);
  void* buffers[2] = {input.data(), output.data()};
  if (fusionscope_fft_run(words.data(), buffers, 0, call->batch) != 0) {
    return Status::error("FFTW could not plan the transform (or memory ran out)");
  }
  if (!complexOut) return Value::floats(shape, std::move(output));
  std::vector<double> re(n);
  std::vector<double> im(n);
  for (size_t i = 0; i < n; ++i) {
    re[i] = output[2 * i];
    im[i] = output[2 * i + 1];
  }
  return Value::complex(shape, std::move(re), std::move(im));
}

}  // namespace fusionscope::core::eval
