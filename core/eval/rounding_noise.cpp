#include "core/eval/rounding_noise.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "core/eval/scalar_ops.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/opcode.h"
#include "core/ir/shape_rules.h"
#include "core/linalg/linalg_call.h"

namespace fusionscope::core::eval {
namespace {

constexpr double kF32Roundoff = 0x1p-24;  // the unit roundoff of f32, where narrower types accumulate

// A reducer that picks one of its operands (max, min, and, or, a select): its result is exact in any order.
bool picks(const HloInstruction& inst) {
  const HloComputation* reducer = inst.toApply();
  if (reducer == nullptr || reducer->root() == nullptr) return true;
  switch (reducer->root()->opcode()) {
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kSelect:
    case HloOpcode::kTuple: return true;  // variadic reducers (argmax) select
    default: return false;
  }
}

// The number of terms each element of a sum adds (K), from the op's shapes.
int64_t termsPerElement(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::kDot: {
      int64_t k = 1;
      if (!inst.attributes().dot || inst.operandCount() < 1) return 1;
      const Shape& lhs = inst.operand(0)->shape();
      for (int64_t d : inst.attributes().dot->lhsContracting) {
        if (d >= 0 && d < lhs.rank()) k *= lhs.dimension(static_cast<int>(d));
      }
      return k;
    }
    case HloOpcode::kConvolution: {
      StatusOr<ConvolutionDims> dims = convolutionDims(inst);
      if (!dims.ok() || inst.operandCount() < 2) return 1;
      const Shape& kernel = inst.operand(1)->shape();
      const int64_t outputs = kernel.dimension(static_cast<int>(dims->rhsOutput));
      return outputs > 0 ? kernel.elementCount() / outputs : 1;  // spatial size x input features per group
    }
    case HloOpcode::kReduce: {
      const int64_t out = inst.shape().isArray() ? inst.shape().elementCount() : 1;
      return out > 0 && inst.operandCount() > 0 ? inst.operand(0)->shape().elementCount() / out : 1;
    }
    case HloOpcode::kReduceWindow: {
      int64_t k = 1;
      if (inst.attributes().window) {
        for (const WindowDim& w : inst.attributes().window->dims) k *= w.size;
      }
      return k;
    }
    default: return 1;
  }
}

}  // namespace

double ulpOf(PrimitiveType type, double x) {
  const FloatFormat* format = floatFormat(type);
  if (format == nullptr || !std::isfinite(x)) return 0;
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, std::max(exponent - 1, format->minExponent) - format->mantissaBits);
}

uint64_t NoiseStream::next() {
  uint64_t z = (m_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double NoiseStream::uniform() {
  return static_cast<double>(next() >> 11) * 0x1p-52 - 1.0;
}

namespace {

// Compiled code converts to a float narrower than f32 through f32 (its compute type), which rounds twice when the
// operand has more precision than f32: f64, or an integer of more than 24 bits.
bool roundsTwice(const HloInstruction& inst) {
  if (inst.operandCount() != 1 || !inst.operand(0)->shape().isArray()) return true;
  const PrimitiveType from = complexPartType(inst.operand(0)->shape().elementType());
  const PrimitiveType to = complexPartType(inst.shape().elementType());
  const FloatFormat* target = floatFormat(to);
  if (target == nullptr || target->mantissaBits >= 23) return false;
  if (from == PrimitiveType::kF64) return true;
  return !isFloatingPoint(from) && from != PrimitiveType::kPred && primitiveTypeBitWidth(from) > 24;
}

}  // namespace

NoiseClass noiseClassOf(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::kBatchNormTraining:
    case HloOpcode::kBatchNormInference:
    case HloOpcode::kBatchNormGrad: return NoiseClass::kNormalization;
    default: break;
  }
  if (linalg::isLapackCustomCall(inst)) return NoiseClass::kBackwardStable;
  if (inst.opcode() == HloOpcode::kFft) return NoiseClass::kFft;
  // |z| of a complex z: a square root of a sum of squares, rounded a few times.
  if (inst.opcode() == HloOpcode::kAbs && inst.operandCount() == 1 && inst.operand(0)->shape().isArray() &&
      isComplex(inst.operand(0)->shape().elementType())) {
    return NoiseClass::kRounded;
  }
  const Shape& shape = inst.shape();
  if (!shape.isArray() || !isFloatingPoint(complexPartType(shape.elementType()))) return NoiseClass::kExact;
  switch (inst.opcode()) {
    case HloOpcode::kDot:
    case HloOpcode::kConvolution: return NoiseClass::kSum;
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow: return picks(inst) ? NoiseClass::kExact : NoiseClass::kSum;
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder: return NoiseClass::kRounded;
    case HloOpcode::kConvert:
    case HloOpcode::kReducePrecision: return roundsTwice(inst) ? NoiseClass::kRounded : NoiseClass::kExact;
    case HloOpcode::kPower:
    case HloOpcode::kAtan2: return NoiseClass::kVectorMath;
    default: return isTranscendental(inst.opcode()) ? NoiseClass::kVectorMath : NoiseClass::kExact;
  }
}

namespace {

// `evaluateOn` run on the operands with each float array's elements changed by `change` (in operand order: the
// noise stream is read in that order), the others as they are. `widen`: the changed arrays are held in f64 (a
// change finer than the element type's spacing survives), else in their own type.
StatusOr<Value> evaluateOnMapped(Operands operands, const std::function<StatusOr<Value>(Operands)>& evaluateOn,
                                 bool widen, const std::function<void(std::vector<double>&)>& change,
                                 bool complexParts = false) {
  std::vector<Value> changed;
  changed.reserve(operands.size());
  for (const Value* operand : operands) {
    if (!operand->isArray() || !operand->holdsFloats()) {
      changed.push_back(*operand);
      continue;
    }
    const Shape& shape = operand->shape();
    if (operand->holdsComplex() && complexParts) {
      // Both parts changed, as one array of the real parts followed by the imaginary ones; still complex.
      const size_t count = static_cast<size_t>(operand->elementCount());
      std::vector<double> data(operand->floatData().begin(), operand->floatData().end());
      data.insert(data.end(), operand->imagData().begin(), operand->imagData().end());
      change(data);
      std::vector<double> imag(data.begin() + static_cast<std::ptrdiff_t>(count), data.end());
      data.resize(count);
      const PrimitiveType type = widen ? PrimitiveType::kC128 : shape.elementType();
      changed.push_back(Value::complex(Shape(type, shape.dimensions()), std::move(data), std::move(imag)));
      continue;
    }
    if (operand->holdsComplex()) {
      // Complex operands are changed through their magnitudes (and become real numbers of that size).
      std::vector<double> data(static_cast<size_t>(operand->elementCount()));
      for (size_t i = 0; i < data.size(); ++i) data[i] = std::hypot(operand->floatData()[i], operand->imagData()[i]);
      change(data);
      changed.push_back(Value::complex(shape, std::move(data), std::vector<double>(operand->imagData().size(), 0.0)));
      continue;
    }
    std::vector<double> data(operand->floatData().begin(), operand->floatData().end());
    change(data);
    changed.push_back(Value::floats(widen ? Shape(PrimitiveType::kF64, shape.dimensions()) : shape, std::move(data)));
  }
  std::vector<const Value*> pointers;
  for (const Value& value : changed) pointers.push_back(&value);
  return evaluateOn(Operands(pointers.data(), pointers.size()));
}

// fft results and complex results of the other classes (the header's rules).
Status addComplexNoise(const HloInstruction& inst, NoiseClass kind, Operands operands, Value& value, NoiseStream& noise,
                       const std::function<StatusOr<Value>(Operands)>& evaluateOn) {
  const PrimitiveType part = complexPartType(value.elementType());
  const double roundoff = part == PrimitiveType::kF64 ? 0x1p-53 : kF32Roundoff;
  std::vector<double> re(value.floatData().begin(), value.floatData().end());
  std::vector<double> im(value.imagData().begin(), value.imagData().end());
  const bool complexResult = value.holdsComplex();
  auto magnitude = [&](size_t i) { return complexResult ? std::hypot(re[i], im[i]) : std::fabs(re[i]); };
  // spread(i): how far each part of element i may move.
  std::function<double(size_t)> spread;
  std::vector<double> s;
  double fftSpread = 0;
  std::vector<bool> selfConjugate;  // RFFT: elements whose imaginary part is exactly 0
  if (kind == NoiseClass::kFft) {
    double points = 1;
    const std::vector<int64_t>& dims = (complexResult ? inst.operand(0)->shape() : inst.shape()).dimensions();
    StatusOr<std::vector<int64_t>> lengths = rawIntList(inst, "fft_length", std::vector<int64_t>{});
    if (lengths.ok()) {
      for (int64_t n : *lengths) points *= static_cast<double>(n);
    } else if (!dims.empty()) {
      points = static_cast<double>(dims.back());
    }
    double squares = 0;
    size_t finite = 0;
    for (size_t i = 0; i < re.size(); ++i) {
      const double m = magnitude(i);
      if (std::isfinite(m)) {
        squares += m * m;
        ++finite;
      }
    }
    const double rms = finite > 0 ? std::sqrt(squares / static_cast<double>(finite)) : 0.0;
    fftSpread = (std::log2(std::max(points, 2.0)) + 1) * roundoff * rms;
    spread = [&](size_t) { return fftSpread; };
    // A real input's transform is real where every frequency index is its own negative (0 or n/2 in each
    // transformed dimension): FFTW's real-input plans write an exact 0 there, so those imaginary parts get no noise
    // (an angle taken of them would otherwise turn by pi).
    const std::string* type = inst.attributes().findRaw("fft_type");
    if (type != nullptr && *type == "RFFT" && lengths.ok() && !lengths->empty() && lengths->size() <= dims.size()) {
      const std::vector<int64_t>& out = inst.shape().dimensions();
      const size_t rank = lengths->size();
      selfConjugate.assign(re.size(), true);
      for (size_t i = 0; i < re.size(); ++i) {
        int64_t linear = static_cast<int64_t>(i);
        for (size_t j = 0; j < rank; ++j) {
          const size_t d = out.size() - 1 - j;
          const int64_t k = linear % out[d];
          linear /= out[d];
          const int64_t n = (*lengths)[rank - 1 - j];
          if (k != 0 && 2 * k != n) selfConjugate[i] = false;
        }
      }
    }
  } else if (kind == NoiseClass::kSum) {
    StatusOr<Value> scale = evaluateOnMapped(operands, evaluateOn, /*widen=*/false, [](std::vector<double>& data) {
      for (double& x : data) x = std::fabs(x);
    });
    if (!scale.ok()) return scale.status();
    if (!scale->isArray() || scale->floatData().size() != re.size()) return okStatus();
    s.assign(scale->floatData().begin(), scale->floatData().end());
    const double factor = std::sqrt(static_cast<double>(termsPerElement(inst)) + 1.0) * roundoff;
    spread = [&s, factor](size_t i) { return factor * std::fabs(s[i]); };
  } else {
    const double ulps = kind == NoiseClass::kRounded ? 2 : 8;
    spread = [&, ulps](size_t i) { return ulps * ulpOf(part, magnitude(i)); };
  }
  for (size_t i = 0; i < re.size(); ++i) {
    const double d = spread(i);
    if (!std::isfinite(d)) continue;
    if (std::isfinite(re[i])) re[i] += noise.uniform() * d;
    const bool exactlyReal = !selfConjugate.empty() && selfConjugate[i];
    if (complexResult && std::isfinite(im[i]) && !exactlyReal) im[i] += noise.uniform() * d;
  }
  value = complexResult ? Value::complex(value.shape(), std::move(re), std::move(im))
                        : Value::floats(value.shape(), std::move(re));
  return okStatus();
}

}  // namespace

Status addRoundingNoise(const HloInstruction& inst, Operands operands, Value& value, NoiseStream& noise,
                        const std::function<StatusOr<Value>(Operands)>& evaluateOn) {
  const NoiseClass kind = noiseClassOf(inst);
  if (kind == NoiseClass::kNormalization) {
    // Batch norm (one op here, a mean, a variance and a scaling in compiled code): each output array gets the noise
    // of a sum over the batch and spatial elements of a feature, relative to the array's largest magnitude.
    if (inst.operandCount() < 1 || !inst.operand(0)->shape().isArray()) return okStatus();
    const Shape& input = inst.operand(0)->shape();
    StatusOr<int64_t> index = rawInt(inst, "feature_index", input.rank() - 1);
    const int featureIndex = index.ok() ? static_cast<int>(*index) : input.rank() - 1;
    const int64_t features = featureIndex >= 0 && featureIndex < input.rank() ? input.dimension(featureIndex) : 1;
    const int64_t terms = features > 0 ? input.elementCount() / features : 1;
    auto perturb = [&](const Value& array) -> Value {
      if (!array.isArray() || !array.holdsFloats()) return array;
      std::vector<double> data(array.floatData().begin(), array.floatData().end());
      double largest = 0;
      for (double x : data) {
        if (std::isfinite(x)) largest = std::max(largest, std::fabs(x));
      }
      const double spread = std::sqrt(static_cast<double>(terms) + 1.0) * kF32Roundoff * largest;
      for (double& x : data) {
        if (std::isfinite(x)) x += noise.uniform() * spread;
      }
      return Value::floats(array.shape(), std::move(data));
    };
    if (!value.isTuple()) {
      value = perturb(value);
      return okStatus();
    }
    std::vector<Value> elements;
    for (int i = 0; i < value.tupleSize(); ++i) elements.push_back(perturb(value.tupleElement(i)));
    value = Value::tuple(std::move(elements));
    return okStatus();
  }
  if (kind == NoiseClass::kBackwardStable) {
    if (inst.operandCount() < 1 || !inst.operand(0)->shape().isArray() || inst.operand(0)->shape().rank() < 2) {
      return okStatus();
    }
    const Shape& matrix = inst.operand(0)->shape();
    const int64_t order = std::max(matrix.dimension(matrix.rank() - 1), matrix.dimension(matrix.rank() - 2));
    const double roundoff = complexPartType(matrix.elementType()) == PrimitiveType::kF64 ? 0x1p-53 : kF32Roundoff;
    // A complex matrix is perturbed part by part (both parts of every element): a row's norm is sqrt(2) times the
    // parts' root mean square times sqrt(n).
    const double partsPerElement = isComplex(matrix.elementType()) ? 2.0 : 1.0;
    StatusOr<linalg::Call> call = linalg::callOf(inst);
    if (!call.ok()) return call.status();
    // The eigensolver and the SVD (a reduction to tridiagonal or bidiagonal form, then an iteration on it) are held
    // to LAPACK's own bound, p(n) * u with p growing about linearly: (n + 1) * u. The random walk's sqrt(n + 1) * u
    // left their vectors 1.3-2.5x outside it at a few elements on 4 of 10 seeds of 8 x 8 and 8 x 5 batches.
    const bool iterative = call->routine == linalg::Routine::kSyevd || call->routine == linalg::Routine::kGesdd ||
                           call->routine == linalg::Routine::kGeev;
    // The general eigensolver (Hessenberg reduction, then the double-shift QR iteration): twice that. sgeev's results
    // on 400 uniform random matrices each of orders 4, 6, 8 and 16 left residuals |A v - lambda v| of 6-11 u times a
    // row's norm at the median and 19-32 at the largest, about (n + 1) and 3-5 (n + 1).
    const double geevFactor = call->routine == linalg::Routine::kGeev ? 2.0 : 1.0;
    const double relative =
        (iterative ? static_cast<double>(order) + 1.0 : std::sqrt(static_cast<double>(order) + 1.0)) * roundoff *
        geevFactor;
    const bool orthogonal = call->routine == linalg::Routine::kGeqrf || call->routine == linalg::Routine::kOrgqr ||
                            call->routine == linalg::Routine::kSyevd || call->routine == linalg::Routine::kGesdd ||
                            call->routine == linalg::Routine::kGeev;
    // Cholesky, LU and triangular solves: relative to the element, no less than the array's root mean square. QR,
    // the eigensolver and the SVD (orthogonal transformations): normwise, every element moved by as much, relative
    // to a row's norm (a random n x n perturbation of that size has a 2-norm near u * sqrt(n + 1) times the
    // matrix's, the normwise backward error these routines have).
    StatusOr<Value> result = evaluateOnMapped(
        operands, evaluateOn, /*widen=*/true,
        [&](std::vector<double>& data) {
          double squares = 0;
          int64_t finite = 0;
          for (double x : data) {
            if (std::isfinite(x)) {
              squares += x * x;
              ++finite;
            }
          }
          const double rms = finite > 0 ? std::sqrt(squares / static_cast<double>(finite)) : 0.0;
          const double rowNorm = rms * std::sqrt(partsPerElement * static_cast<double>(order));  // a row's 2-norm
          for (double& x : data) {
            if (!std::isfinite(x)) continue;
            x += noise.uniform() * relative * (orthogonal ? rowNorm : std::max(std::fabs(x), rms));
          }
        },
        /*complexParts=*/true);
    if (!result.ok()) return result.status();
    value = std::move(*result);
    if ((call->routine == linalg::Routine::kSyevd || call->routine == linalg::Routine::kGesdd) && value.isTuple() &&
        value.tupleSize() > 1 && value.tupleElement(1).holdsFloats()) {
      // A random perturbation moves an eigenvalue or singular value by about its size (u^T E v), a backward error of
      // that 2-norm by up to the whole norm (Weyl): each also moves by up to sqrt(n + 1) * u * the largest one.
      const Value& w = value.tupleElement(1);
      std::vector<double> data(w.floatData().begin(), w.floatData().end());
      double largest = 0;
      for (double x : data) {
        if (std::isfinite(x)) largest = std::max(largest, std::fabs(x));
      }
      for (double& x : data) {
        if (std::isfinite(x)) x += noise.uniform() * relative * largest;
      }
      std::vector<Value> elements = value.tupleElements();
      elements[1] = Value::floats(w.shape(), std::move(data));
      value = Value::tuple(std::move(elements));
    }
    if (call->routine == linalg::Routine::kGeev && value.isTuple() && value.tupleSize() > 1) {
      // The eigenvalues: (wr, wi) of a real matrix, one complex array of a complex one; the vectors follow.
      std::vector<Value> elements = value.tupleElements();
      const bool complexMatrix = elements[0].holdsComplex();
      if (!elements[0].holdsFloats() || (!complexMatrix && !elements[1].holdsFloats())) return okStatus();
      const Value& values = elements[0];
      std::vector<double> re(values.floatData().begin(), values.floatData().end());
      std::vector<double> im =
          complexMatrix ? std::vector<double>(values.imagData().begin(), values.imagData().end())
                        : std::vector<double>(elements[1].floatData().begin(), elements[1].floatData().end());
      // The general eigensolver (Hessenberg reduction and QR iteration, unitary similarities: normwise backward
      // stable) moves each eigenvalue's real and imaginary parts by up to (n + 1) * u * the largest |lambda| as well;
      // how far an ill-conditioned eigenvalue moves beyond that the perturbed operand's run shows.
      double largest = 0;
      for (size_t i = 0; i < re.size() && i < im.size(); ++i) {
        const double magnitude = std::hypot(re[i], im[i]);
        if (std::isfinite(magnitude)) largest = std::max(largest, magnitude);
      }
      for (double& x : re) {
        if (std::isfinite(x)) x += noise.uniform() * relative * largest;
      }
      for (double& x : im) {
        // A real matrix's real eigenvalue stays real; a complex matrix's have no such structure.
        if (std::isfinite(x) && (x != 0 || complexMatrix)) x += noise.uniform() * relative * largest;
      }
      if (complexMatrix) {
        elements[0] = Value::complex(values.shape(), std::move(re), std::move(im));
      } else {
        elements[0] = Value::floats(values.shape(), std::move(re));
        elements[1] = Value::floats(elements[1].shape(), std::move(im));
      }
      // Its left and right eigenvectors are not those of one nearby matrix: each is computed to its own residual, so
      // u_j^H v_k is not exactly 0 for j != k as the perturbed operand's exact vectors make it (a state rebuilt from
      // both sets, V (U^H V)^-1 U^H x, came back exactly x in every noisy run and 1e-5 off in f32). Each part of every
      // vector element (unit-norm columns) moves by up to the same relative amount.
      const size_t firstVectors = complexMatrix ? 1 : 2;
      for (size_t side : {firstVectors, firstVectors + 1}) {
        if (side >= elements.size() || !elements[side].holdsComplex()) continue;
        const Value& vectors = elements[side];
        std::vector<double> vre(vectors.floatData().begin(), vectors.floatData().end());
        std::vector<double> vim(vectors.imagData().begin(), vectors.imagData().end());
        for (size_t i = 0; i < vre.size(); ++i) {
          if (std::isfinite(vre[i])) vre[i] += noise.uniform() * relative;
          if (std::isfinite(vim[i])) vim[i] += noise.uniform() * relative;
        }
        elements[side] = Value::complex(vectors.shape(), std::move(vre), std::move(vim));
      }
      value = Value::tuple(std::move(elements));
    }
    return okStatus();
  }
  if (kind == NoiseClass::kExact || !value.isArray() || !value.holdsFloats()) return okStatus();
  if (kind == NoiseClass::kFft || value.holdsComplex())
    return addComplexNoise(inst, kind, operands, value, noise, evaluateOn);
  const PrimitiveType type = value.elementType();
  std::vector<double> data(value.floatData().begin(), value.floatData().end());
  if (kind == NoiseClass::kSum) {
    // S: the same sum over the operands' magnitudes (init values and padding as they are: zeros for a sum).
    StatusOr<Value> scale = evaluateOnMapped(operands, evaluateOn, /*widen=*/false, [](std::vector<double>& data) {
      for (double& x : data) x = std::fabs(x);
    });
    if (!scale.ok()) return scale.status();
    if (!scale->isArray() || !scale->holdsFloats() || scale->floatData().size() != data.size()) return okStatus();
    const double roundoff = type == PrimitiveType::kF64 ? 0x1p-53 : kF32Roundoff;
    // A sum of K terms rounds at most K times along any term's path (fewer in the row dot's blocked sum, 32 + K/32),
    // each time by at most the unit roundoff of a partial sum no larger than S; independent roundings add up as a
    // random walk, so its error has a spread of about sqrt(K) * u * S (the deterministic worst case, K * u * S, is
    // reached only when every rounding goes the same way). A product reducer is the same with S = |result|.
    const double factor = std::sqrt(static_cast<double>(termsPerElement(inst)) + 1.0) * roundoff;
    std::span<const double> s = scale->floatData();
    for (size_t i = 0; i < data.size(); ++i) {
      if (!std::isfinite(data[i])) continue;
      data[i] += noise.uniform() * factor * s[i];
      if (type != PrimitiveType::kF32 && type != PrimitiveType::kF64) data[i] += noise.uniform() * ulpOf(type, data[i]);
    }
  } else {
    // Whole ulps, so that the value stays one of the type's numbers: round(uniform(-1, 1)) ulps for a rounded op
    // (-1, 0, +1 with odds 1:2:1, drawn from two random bits), round(4 uniform + 0..2 of one sign) for vector math.
    // Large arrays make this the check's hot loop (a profile of a 51M-element module): f32's ulp is read off the
    // exponent bits, and one 64-bit draw serves 32 elements of a rounded op.
    const bool f32 = type == PrimitiveType::kF32;
    const auto ulp = [&](double x) {
      if (!f32) return ulpOf(type, x);
      const int exponent = static_cast<int>((std::bit_cast<uint64_t>(x) >> 52) & 0x7ff) - 1023;
      return std::bit_cast<double>(static_cast<uint64_t>(std::max(exponent, -126) - 23 + 1023) << 52);
    };
    // Rounding differences never carry a finite result past the type's largest value: a value an op rounded to 448
    // in f8e4m3fn (its largest) is not 480, which that format has only as NaN. Such a move is made towards zero. (An
    // exact zero still moves: compiled code contracts multiply-adds, and its vector math may return a denormal where
    // the exact result underflows to zero.)
    const eval::FloatFormat* format = eval::floatFormat(type);
    const double largest = format != nullptr ? format->maxFinite : std::numeric_limits<double>::max();
    const auto moved = [&](double x, double by) {
      const double y = x + by;
      return std::fabs(y) <= largest ? y : x - by;
    };
    if (kind == NoiseClass::kRounded) {
      uint64_t bits = 0;
      for (size_t i = 0; i < data.size(); ++i) {
        if (i % 32 == 0) bits = noise.next();
        const unsigned pair = static_cast<unsigned>(bits & 3);
        bits >>= 2;
        if (pair == 1 || pair == 2 || !std::isfinite(data[i])) continue;
        data[i] = moved(data[i], (pair == 0 ? -1.0 : 1.0) * ulp(data[i]));
      }
    } else {
      const double coherent = noise.next() & 1 ? 2 : -2;
      for (double& x : data) {
        if (!std::isfinite(x)) continue;
        x = moved(x, std::round(4 * noise.uniform() + coherent * 0.5 * (1 + noise.uniform())) * ulp(x));
      }
    }
  }
  value = Value::floats(value.shape(), std::move(data));
  return okStatus();
}

}  // namespace fusionscope::core::eval
