// Complex elements (c64, c128) in the elemental emitter: a value is an LLVM struct {re, im} of the part type (float,
// double), loaded and stored as the (re, im) pairs XLA's buffers hold. Data movement, select and constants need
// nothing special beyond that type; this file lowers the arithmetic (complexSupportedInCodegen lists it):
// add, subtract, multiply (the schoolbook product, as XLA), divide (Smith's algorithm), negate, abs (scaled, inline),
// real, imag, complex, convert to or between complex types, compare EQ/NE, exp, expm1, log, log1p, sqrt, rsqrt, sign,
// sin, cos, and the add/multiply reducers of a complex reduce.

#include <fmt/format.h>

#include "core/codegen/element_emitter.h"

namespace fusionscope::core {

llvm::Value* ComplexEmitter::makeComplex(PrimitiveType type, llvm::Value* re, llvm::Value* im) {
  llvm::Value* z = llvm::PoisonValue::get(computeType(type));
  z = m_b.CreateInsertValue(z, re, {0});
  return m_b.CreateInsertValue(z, im, {1});
}

std::pair<llvm::Value*, llvm::Value*> ComplexEmitter::complexParts(llvm::Value* z) {
  return {m_b.CreateExtractValue(z, {0}), m_b.CreateExtractValue(z, {1})};
}

llvm::Value* ComplexEmitter::realMath(HloOpcode op, llvm::Value* x) {
  const bool nvptx = m_target == KernelTarget::kNvptx;
  switch (op) {
    case HloOpcode::kExp: return nvptx ? mathCall("exp", {x}) : m_e.math().cpuExp(x);
    case HloOpcode::kExpm1: return nvptx ? mathCall("expm1", {x}) : m_e.math().cpuExpm1(x);
    case HloOpcode::kLog: return nvptx ? mathCall("log", {x}) : m_e.math().cpuLog(x);
    case HloOpcode::kLog1p: return nvptx ? mathCall("log1p", {x}) : m_e.math().cpuLog1p(x);
    case HloOpcode::kSin: return nvptx ? mathCall("sin", {x}) : intrinsic(llvm::Intrinsic::sin, {x});
    case HloOpcode::kCos: return nvptx ? mathCall("cos", {x}) : intrinsic(llvm::Intrinsic::cos, {x});
    case HloOpcode::kSqrt: return intrinsic(llvm::Intrinsic::sqrt, {x});
    default: return nullptr;
  }
}

// (a + bi) / (c + di) by Smith's algorithm: the larger of |c|, |d| divides the other, so no intermediate squares
// overflow or underflow where the quotient does not.
// |a + bi| without overflow or underflow where the result has none, and without a libm call (hypot is scalar):
// m sqrt(1 + (n/m)^2) with m = max(|a|, |b|), n = min; 0 when m is 0, infinity when either part is infinite, NaN
// when a part is NaN and none is infinite (C's hypot).
llvm::Value* ComplexEmitter::complexAbs(llvm::Value* a, llvm::Value* b) {
  llvm::Type* type = a->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Value* x = intrinsic(llvm::Intrinsic::fabs, {a});
  llvm::Value* y = intrinsic(llvm::Intrinsic::fabs, {b});
  llvm::Value* xBigger = m_b.CreateFCmpOGE(x, y);
  llvm::Value* m = m_b.CreateSelect(xBigger, x, y);
  llvm::Value* n = m_b.CreateSelect(xBigger, y, x);
  llvm::Value* r = m_b.CreateFDiv(n, m);
  llvm::Value* result =
      m_b.CreateFMul(m, intrinsic(llvm::Intrinsic::sqrt, {m_b.CreateFAdd(constant(1.0), m_b.CreateFMul(r, r))}));
  result = m_b.CreateSelect(m_b.CreateFCmpOEQ(m, constant(0.0)), constant(0.0), result);
  llvm::Value* infinity = llvm::ConstantFP::getInfinity(type);
  llvm::Value* infinite = m_b.CreateOr(m_b.CreateFCmpOEQ(x, infinity), m_b.CreateFCmpOEQ(y, infinity));
  llvm::Value* nan = m_b.CreateFCmpUNO(x, y);
  result = m_b.CreateSelect(nan, llvm::ConstantFP::getNaN(type), result);
  return m_b.CreateSelect(infinite, infinity, result);
}

llvm::Value* ComplexEmitter::complexDivide(PrimitiveType type, llvm::Value* x, llvm::Value* y) {
  auto [a, b] = complexParts(x);
  auto [c, d] = complexParts(y);
  llvm::Value* cBigger =
      m_b.CreateFCmpOGE(intrinsic(llvm::Intrinsic::fabs, {c}), intrinsic(llvm::Intrinsic::fabs, {d}));
  // |c| >= |d|: r = d / c, t = c + d r, ((a + b r) / t, (b - a r) / t)
  llvm::Value* r1 = m_b.CreateFDiv(d, c);
  llvm::Value* t1 = m_b.CreateFAdd(c, m_b.CreateFMul(d, r1));
  llvm::Value* re1 = m_b.CreateFDiv(m_b.CreateFAdd(a, m_b.CreateFMul(b, r1)), t1);
  llvm::Value* im1 = m_b.CreateFDiv(m_b.CreateFSub(b, m_b.CreateFMul(a, r1)), t1);
  // |c| < |d|: r = c / d, t = d + c r, ((a r + b) / t, (b r - a) / t)
  llvm::Value* r2 = m_b.CreateFDiv(c, d);
  llvm::Value* t2 = m_b.CreateFAdd(d, m_b.CreateFMul(c, r2));
  llvm::Value* re2 = m_b.CreateFDiv(m_b.CreateFAdd(m_b.CreateFMul(a, r2), b), t2);
  llvm::Value* im2 = m_b.CreateFDiv(m_b.CreateFSub(m_b.CreateFMul(b, r2), a), t2);
  return makeComplex(type, m_b.CreateSelect(cBigger, re1, re2), m_b.CreateSelect(cBigger, im1, im2));
}

// tanh(a + bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b); past |a| = 20 (where cosh 2a would soon overflow and
// tanh a is 1 in f32 and within 4e-18 of it in f64) (sign a, 4 sin b cos b e^(-2|a|)), the same quotient's limit.
llvm::Value* ComplexEmitter::complexTanh(PrimitiveType type, llvm::Value* z) {
  auto [a, b] = complexParts(z);
  llvm::Type* part = a->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(part, v); };
  llvm::Value* twoA = m_b.CreateFMul(constant(2.0), a);
  llvm::Value* twoB = m_b.CreateFMul(constant(2.0), b);
  llvm::Value* sin2b = realMath(HloOpcode::kSin, twoB);
  llvm::Value* denominator = m_b.CreateFAdd(mathCall("cosh", {twoA}), realMath(HloOpcode::kCos, twoB));
  llvm::Value* re = m_b.CreateFDiv(mathCall("sinh", {twoA}), denominator);
  llvm::Value* im = m_b.CreateFDiv(sin2b, denominator);
  llvm::Value* magnitude = intrinsic(llvm::Intrinsic::fabs, {a});
  llvm::Value* large = m_b.CreateFCmpOGT(magnitude, constant(20.0));
  llvm::Value* farRe = intrinsic(llvm::Intrinsic::copysign, {constant(1.0), a});
  llvm::Value* farIm = m_b.CreateFMul(m_b.CreateFMul(constant(2.0), sin2b),
                                      realMath(HloOpcode::kExp, m_b.CreateFMul(constant(-2.0), magnitude)));
  return makeComplex(type, m_b.CreateSelect(large, farRe, re), m_b.CreateSelect(large, farIm, im));
}

llvm::Value* ComplexEmitter::complexBinary(HloOpcode op, PrimitiveType type, llvm::Value* x, llvm::Value* y) {
  auto [a, b] = complexParts(x);
  auto [c, d] = complexParts(y);
  switch (op) {
    case HloOpcode::kAdd: return makeComplex(type, m_b.CreateFAdd(a, c), m_b.CreateFAdd(b, d));
    case HloOpcode::kSubtract: return makeComplex(type, m_b.CreateFSub(a, c), m_b.CreateFSub(b, d));
    case HloOpcode::kMultiply:
      return makeComplex(type, m_b.CreateFSub(m_b.CreateFMul(a, c), m_b.CreateFMul(b, d)),
                         m_b.CreateFAdd(m_b.CreateFMul(a, d), m_b.CreateFMul(b, c)));
    case HloOpcode::kDivide: return complexDivide(type, x, y);
    default: return nullptr;
  }
}

llvm::Value* ComplexEmitter::complexElementwise(const HloInstruction* instruction, const Index& index) {
  const HloOpcode op = instruction->opcode();
  const PrimitiveType type = instruction->shape().elementType();
  const PrimitiveType operandType = instruction->operand(0)->shape().elementType();
  const PrimitiveType partType = complexPartType(isComplex(type) ? type : operandType);
  llvm::Type* part = computeType(partType);
  auto constant = [&](double v) { return llvm::ConstantFP::get(part, v); };
  llvm::Value* x = operandAt(instruction, 0, index);
  switch (op) {
    case HloOpcode::kConvert: return convert(operandType, type, x);
    case HloOpcode::kComplex: return makeComplex(type, x, operandAt(instruction, 1, index));
    case HloOpcode::kReal: return complexParts(x).first;
    case HloOpcode::kImag: return complexParts(x).second;
    case HloOpcode::kAbs: {
      auto [re, im] = complexParts(x);
      return complexAbs(re, im);
    }
    case HloOpcode::kCompare: {
      auto [a, b] = complexParts(x);
      auto [c, d] = complexParts(operandAt(instruction, 1, index));
      if (*instruction->attributes().direction == ComparisonDirection::kEq) {
        return m_b.CreateAnd(m_b.CreateFCmpOEQ(a, c), m_b.CreateFCmpOEQ(b, d));
      }
      return m_b.CreateOr(m_b.CreateFCmpUNE(a, c), m_b.CreateFCmpUNE(b, d));
    }
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide: return complexBinary(op, type, x, operandAt(instruction, 1, index));
    case HloOpcode::kNegate: {
      auto [re, im] = complexParts(x);
      return makeComplex(type, m_b.CreateFNeg(re), m_b.CreateFNeg(im));
    }
    case HloOpcode::kCopy: return x;
    case HloOpcode::kExp: {
      // e^a (cos b, sin b)
      auto [a, b] = complexParts(x);
      llvm::Value* e = realMath(HloOpcode::kExp, a);
      return makeComplex(type, m_b.CreateFMul(e, realMath(HloOpcode::kCos, b)),
                         m_b.CreateFMul(e, realMath(HloOpcode::kSin, b)));
    }
    case HloOpcode::kExpm1: {
      // (expm1(a) cos b - 2 sin^2(b/2), e^a sin b): no cancellation near 0.
      auto [a, b] = complexParts(x);
      llvm::Value* half = realMath(HloOpcode::kSin, m_b.CreateFMul(b, constant(0.5)));
      llvm::Value* re = m_b.CreateFSub(m_b.CreateFMul(realMath(HloOpcode::kExpm1, a), realMath(HloOpcode::kCos, b)),
                                       m_b.CreateFMul(constant(2.0), m_b.CreateFMul(half, half)));
      return makeComplex(type, re, m_b.CreateFMul(realMath(HloOpcode::kExp, a), realMath(HloOpcode::kSin, b)));
    }
    case HloOpcode::kLog: {
      auto [a, b] = complexParts(x);
      return makeComplex(type, realMath(HloOpcode::kLog, complexAbs(a, b)), m_e.atan2Of(b, a));
    }
    case HloOpcode::kLog1p: {
      // (log1p(a (2 + a) + b^2) / 2, atan2(b, 1 + a))
      auto [a, b] = complexParts(x);
      llvm::Value* inner = m_b.CreateFAdd(m_b.CreateFMul(a, m_b.CreateFAdd(constant(2.0), a)), m_b.CreateFMul(b, b));
      return makeComplex(type, m_b.CreateFMul(constant(0.5), realMath(HloOpcode::kLog1p, inner)),
                         m_e.atan2Of(b, m_b.CreateFAdd(constant(1.0), a)));
    }
    case HloOpcode::kSqrt:
    case HloOpcode::kRsqrt: {
      // The principal root: t = sqrt((|a| + |z|) / 2); a >= 0: (t, b / 2t), else (|b| / 2t, copysign(t, b)); 0 at 0.
      auto [a, b] = complexParts(x);
      llvm::Value* t = realMath(
          HloOpcode::kSqrt,
          m_b.CreateFMul(m_b.CreateFAdd(intrinsic(llvm::Intrinsic::fabs, {a}), complexAbs(a, b)), constant(0.5)));
      llvm::Value* twoT = m_b.CreateFMul(constant(2.0), t);
      llvm::Value* zero = m_b.CreateFCmpOEQ(t, constant(0.0));
      llvm::Value* other = m_b.CreateSelect(zero, constant(0.0), m_b.CreateFDiv(b, twoT));
      llvm::Value* nonNegative = m_b.CreateFCmpOGE(a, constant(0.0));
      llvm::Value* re = m_b.CreateSelect(nonNegative, t, intrinsic(llvm::Intrinsic::fabs, {other}));
      llvm::Value* im = m_b.CreateSelect(nonNegative, other, intrinsic(llvm::Intrinsic::copysign, {t, b}));
      llvm::Value* root = makeComplex(type, re, im);
      if (op == HloOpcode::kSqrt) return root;
      return complexDivide(type, makeComplex(type, constant(1.0), constant(0.0)), root);
    }
    case HloOpcode::kSign: {
      // z / |z|, 0 at 0
      auto [a, b] = complexParts(x);
      llvm::Value* r = complexAbs(a, b);
      llvm::Value* zero = m_b.CreateFCmpOEQ(r, constant(0.0));
      llvm::Value* safe = m_b.CreateSelect(zero, constant(1.0), r);
      return makeComplex(type, m_b.CreateFDiv(a, safe), m_b.CreateFDiv(b, safe));
    }
    case HloOpcode::kTanh: return complexTanh(type, x);
    case HloOpcode::kLogistic: {
      // 1 / (1 + e^-z) = (1 + tanh(z / 2)) / 2: no overflow of e^-z for a large negative real part.
      auto [a, b] = complexParts(x);
      llvm::Value* half = constant(0.5);
      auto [re, im] =
          complexParts(complexTanh(type, makeComplex(type, m_b.CreateFMul(a, half), m_b.CreateFMul(b, half))));
      return makeComplex(type, m_b.CreateFMul(m_b.CreateFAdd(constant(1.0), re), half), m_b.CreateFMul(im, half));
    }
    case HloOpcode::kTan: {
      // tan z = -i tanh(i z)
      auto [a, b] = complexParts(x);
      auto [re, im] = complexParts(complexTanh(type, makeComplex(type, m_b.CreateFNeg(b), a)));
      return makeComplex(type, im, m_b.CreateFNeg(re));
    }
    case HloOpcode::kPower: {
      // exp(w log z), with XLA's 0^0 = 1 and 0^w = 0 for w with a positive real part.
      llvm::Value* w = operandAt(instruction, 1, index);
      auto [a, b] = complexParts(x);
      auto [c, d] = complexParts(w);
      llvm::Value* logZ = makeComplex(type, realMath(HloOpcode::kLog, complexAbs(a, b)), m_e.atan2Of(b, a));
      auto [lr, li] = complexParts(complexBinary(HloOpcode::kMultiply, type, w, logZ));
      llvm::Value* e = realMath(HloOpcode::kExp, lr);
      llvm::Value* general = makeComplex(type, m_b.CreateFMul(e, realMath(HloOpcode::kCos, li)),
                                         m_b.CreateFMul(e, realMath(HloOpcode::kSin, li)));
      llvm::Value* zBase = m_b.CreateAnd(m_b.CreateFCmpOEQ(a, constant(0.0)), m_b.CreateFCmpOEQ(b, constant(0.0)));
      llvm::Value* zExponent = m_b.CreateAnd(m_b.CreateFCmpOEQ(c, constant(0.0)), m_b.CreateFCmpOEQ(d, constant(0.0)));
      llvm::Value* one = makeComplex(type, constant(1.0), constant(0.0));
      llvm::Value* zero = makeComplex(type, constant(0.0), constant(0.0));
      llvm::Value* r = m_b.CreateSelect(m_b.CreateAnd(zBase, m_b.CreateFCmpOGT(c, constant(0.0))), zero, general);
      return m_b.CreateSelect(m_b.CreateAnd(zBase, zExponent), one, r);
    }
    case HloOpcode::kSin:
    case HloOpcode::kCos: {
      // sin z = (sin a cosh b, cos a sinh b), cos z = (cos a cosh b, -sin a sinh b)
      auto [a, b] = complexParts(x);
      llvm::Value* s = realMath(HloOpcode::kSin, a);
      llvm::Value* c = realMath(HloOpcode::kCos, a);
      llvm::Value* ch = mathCall("cosh", {b});
      llvm::Value* sh = mathCall("sinh", {b});
      if (op == HloOpcode::kSin) return makeComplex(type, m_b.CreateFMul(s, ch), m_b.CreateFMul(c, sh));
      return makeComplex(type, m_b.CreateFMul(c, ch), m_b.CreateFNeg(m_b.CreateFMul(s, sh)));
    }
    default: break;
  }
  return fail(instruction, fmt::format("{} of complex values has no lowering", instruction->opcodeString()));
}

}  // namespace fusionscope::core
