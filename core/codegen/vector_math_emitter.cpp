// The CPU's vector math in the generated IR (the elemental emitter's floatUnary calls these): f32 exp, expm1, log,
// log1p, sin and cos as polynomials with their range reduction done on the bits, tanh and erf as rational
// approximations. Plain arithmetic the loop vectoriser turns into vector code with no library call and no slow lane;
// accuracy in ulp against the double functions in tests/core/runtime/vector_math_test.cpp, figures in docs/CODEGEN.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include "core/codegen/element_emitter.h"

namespace fusionscope::core {
namespace {

// What exp's and log's reductions on the bits need to know of f32 and f64.
struct FloatBits {
  llvm::Type* intType;
  int width;          // 32, 64
  int mantissaBits;   // 23, 52
  int bias;           // 127, 1023
  int64_t sqrtHalf;   // the bits of sqrt(1/2)
  int denormalShift;  // a denormal's bit pattern, read as an integer, is x 2^denormalShift (149, 1074)
  int64_t infinity() const { return static_cast<int64_t>(2 * bias + 1) << mantissaBits; }
  int64_t magnitudeMask() const { return width == 64 ? INT64_MAX : (int64_t{1} << (width - 1)) - 1; }
};

FloatBits floatBits(llvm::IRBuilder<>& b, llvm::Type* type) {
  if (type->isDoubleTy()) return {b.getInt64Ty(), 64, 52, 1023, 0x3fe6a09e667f3bcd, 1074};
  return {b.getInt32Ty(), 32, 23, 127, 0x3f3504f3, 149};
}

llvm::Value* intConstant(llvm::Type* intType, int64_t v) {
  return llvm::ConstantInt::get(intType, static_cast<uint64_t>(v), true);
}

// exp(r) 2^n (n a float holding an integer, exp(r) in [sqrt(1/2), sqrt(2)]) without float arithmetic on a denormal
// anywhere (x86 takes a microcode assist per such lane, 7x slower): for n >= 2 - bias the result is normal, exp(r)
// times two powers of two (n up to bias + 1 does not fit one); below, it is exp(r) 2^(n + denormalShift) rounded to an
// integer, which is the denormal's bit pattern (one rounding, as the hardware's). Returns the result and n as an
// integer.
std::pair<llvm::Value*, llvm::Value*> timesPowerOfTwo(llvm::IRBuilder<>& b, llvm::Value* expR, llvm::Value* n) {
  llvm::Type* type = expR->getType();
  const FloatBits f = floatBits(b, type);
  auto integer = [&](int64_t v) { return intConstant(f.intType, v); };
  auto powerOfTwo = [&](llvm::Value* k) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(k, integer(f.bias)), integer(f.mantissaBits)), type);
  };
  llvm::Value* ni = b.CreateFPToSI(n, f.intType);
  const int64_t lowestNormal = 2 - f.bias;
  llvm::Value* denormal = b.CreateICmpSLT(ni, integer(lowestNormal));
  llvm::Value* nNormal = b.CreateSelect(denormal, integer(lowestNormal), ni);
  llvm::Value* half = b.CreateAShr(nNormal, integer(1));
  llvm::Value* normal = b.CreateFMul(b.CreateFMul(expR, powerOfTwo(half)), powerOfTwo(b.CreateSub(nNormal, half)));
  llvm::Value* k = b.CreateAdd(ni, integer(f.denormalShift));
  k = b.CreateSelect(b.CreateICmpSGT(k, integer(f.mantissaBits)), integer(f.mantissaBits), k);
  // exp(r) 2^k < 2^(mantissaBits + 1.5): below 2^mantissaBits rounded by adding and subtracting that, from there on
  // already an integer.
  llvm::Value* scaled = b.CreateFMul(expR, powerOfTwo(k));
  llvm::Value* unit = llvm::ConstantFP::get(type, std::ldexp(1.0, f.mantissaBits));
  llvm::Value* rounded = b.CreateFSub(b.CreateFAdd(scaled, unit), unit);
  llvm::Value* bits = b.CreateFPToSI(b.CreateSelect(b.CreateFCmpOLT(scaled, unit), rounded, scaled), f.intType);
  return {b.CreateSelect(denormal, b.CreateBitCast(bits, type), normal), ni};
}

// log's reduction on the bits: x = m 2^e with m in [sqrt(1/2), sqrt(2)) and f = m - 1 (exact), a denormal x first read
// as its integer bit pattern converted to float (exactly x 2^denormalShift), so no lane does float arithmetic on one.
struct LogReduction {
  llvm::Value* f;          // m - 1
  llvm::Value* exponent;   // e, as a float
  llvm::Value* bits;       // x's
  llvm::Value* magnitude;  // x's bits without the sign
};

LogReduction logReduce(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  const FloatBits fb = floatBits(b, type);
  auto integer = [&](int64_t v) { return intConstant(fb.intType, v); };
  LogReduction r;
  r.bits = b.CreateBitCast(x, fb.intType);
  r.magnitude = b.CreateAnd(r.bits, integer(fb.magnitudeMask()));
  llvm::Value* denormal =
      b.CreateICmpULT(b.CreateSub(r.bits, integer(1)), integer((int64_t{1} << fb.mantissaBits) - 1));
  llvm::Value* scaledBits = b.CreateBitCast(b.CreateSelect(denormal, b.CreateSIToFP(r.bits, type), x), fb.intType);
  // e such that the mantissa lands in [sqrt(1/2), sqrt(2)): subtract sqrt(1/2)'s bits and keep the exponent field.
  llvm::Value* e = b.CreateAShr(b.CreateSub(scaledBits, integer(fb.sqrtHalf)), integer(fb.mantissaBits));
  llvm::Value* m = b.CreateBitCast(b.CreateSub(scaledBits, b.CreateShl(e, integer(fb.mantissaBits))), type);
  r.f = b.CreateFSub(m, llvm::ConstantFP::get(type, 1.0));
  r.exponent = b.CreateSIToFP(b.CreateSub(e, b.CreateSelect(denormal, integer(fb.denormalShift), integer(0))), type);
  return r;
}

// log's special inputs, by their bits: +inf and NaN give themselves, +-0 -inf, anything else negative NaN.
llvm::Value* logSpecials(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* r, const LogReduction& reduction) {
  llvm::Type* type = x->getType();
  const FloatBits fb = floatBits(b, type);
  r = b.CreateSelect(b.CreateICmpUGE(reduction.magnitude, intConstant(fb.intType, fb.infinity())), x, r);
  r = b.CreateSelect(b.CreateICmpSLT(reduction.bits, intConstant(fb.intType, 0)), llvm::ConstantFP::getNaN(type), r);
  return b.CreateSelect(b.CreateICmpEQ(reduction.magnitude, intConstant(fb.intType, 0)),
                        llvm::ConstantFP::getInfinity(type, true), r);
}

// exp's range reduction: x clamped to [lowest, highest] (NaN passes as the other operand of minnum/maxnum, so the
// arithmetic never sees one), n = x / ln2 rounded to the nearest integer by adding and subtracting 1.5 * 2^mantissa
// (exact below 2^(mantissa - 1): plain adds on every target, where llvm.roundeven is a libm call on x86-64 before
// SSE4.1, the AOT baseline), and r = x - n ln2 with ln2 in two parts (n * ln2Hi exact). Returns n and r.
std::pair<llvm::Value*, llvm::Value*> expReduce(llvm::IRBuilder<>& b, llvm::Module& module, llvm::Value* x,
                                                double lowest, double highest, double ln2Hi, double ln2Lo) {
  llvm::Type* type = x->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto call = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
    return b.CreateCall(llvm::Intrinsic::getDeclaration(&module, id, {type}), args);
  };
  llvm::Value* clamped =
      call(llvm::Intrinsic::maxnum, {call(llvm::Intrinsic::minnum, {x, constant(highest)}), constant(lowest)});
  llvm::Value* shifter = constant(1.5 * std::ldexp(1.0, floatBits(b, type).mantissaBits));
  llvm::Value* n = b.CreateFSub(b.CreateFAdd(b.CreateFMul(clamped, constant(1.4426950408889634)), shifter), shifter);
  llvm::Value* minusN = b.CreateFNeg(n);
  llvm::Value* r = call(llvm::Intrinsic::fmuladd, {minusN, constant(ln2Hi), clamped});
  r = call(llvm::Intrinsic::fmuladd, {minusN, constant(ln2Lo), r});
  return {n, r};
}

}  // namespace

llvm::Value* VectorMathEmitter::horner(const std::vector<double>& coefficients, llvm::Value* x) {
  llvm::Type* type = x->getType();
  llvm::Value* p = llvm::ConstantFP::get(type, coefficients.front());
  for (size_t i = 1; i < coefficients.size(); ++i) {
    p = intrinsic(llvm::Intrinsic::fmuladd, {p, x, llvm::ConstantFP::get(type, coefficients[i])});
  }
  return p;
}

// The minimax rational approximations XLA's CPU backend emits for f32 tanh and erf (x * P(x^2) / Q(x^2) on a
// clamped x): plain arithmetic the loop vectoriser turns into vector code, where libm's tanhf/erff are scalar
// calls (14 ns per element here). Beyond the clamp the result is +-1 exactly; NaN propagates (the compares are
// false for it). Against the double functions over every order of magnitude of f32: at most 4.6 ulp (tanh) and
// 5.1 ulp (erf) on the test's inputs, 4.3e-7 absolute (tests/core/runtime/vector_math_test.cpp, docs/CODEGEN.md).
llvm::Value* VectorMathEmitter::rationalTanh(llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  constexpr double kClamp = 7.90531110763549805;
  llvm::Value* magnitude = intrinsic(llvm::Intrinsic::fabs, {x});
  llvm::Value* x2 = m_b.CreateFMul(x, x);
  llvm::Value* numerator = m_b.CreateFMul(
      x, horner({-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f, 5.12229709037114e-08f,
                 1.48572235717979e-05f, 6.37261928875436e-04f, 4.89352455891786e-03f},
                x2));
  llvm::Value* denominator =
      horner({1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f, 4.89352518554385e-03f}, x2);
  llvm::Value* r = m_b.CreateFDiv(numerator, denominator);
  // tanh(x) rounds to x below 0.0004; saturated (and infinite) inputs give +-1.
  r = m_b.CreateSelect(m_b.CreateFCmpOLT(magnitude, constant(0.0004)), x, r);
  return m_b.CreateSelect(m_b.CreateFCmpOGT(magnitude, constant(kClamp)),
                          intrinsic(llvm::Intrinsic::copysign, {constant(1.0), x}), r);
}

llvm::Value* VectorMathEmitter::rationalErf(llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Value* magnitude = intrinsic(llvm::Intrinsic::fabs, {x});
  llvm::Value* x2 = m_b.CreateFMul(x, x);
  llvm::Value* numerator =
      horner({-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
              -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f},
             x2);
  llvm::Value* denominator = horner({-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                                     -7.37332916720468e-03f, -1.42647390514189e-02f},
                                    x2);
  // x times the quotient (about 2/sqrt(pi)), not the product divided: a denormal x loses no bits in between.
  llvm::Value* r = m_b.CreateFMul(x, m_b.CreateFDiv(numerator, denominator));
  // erf(x) is 1 in f32 from |x| = 3.92 on.
  return m_b.CreateSelect(m_b.CreateFCmpOGT(magnitude, constant(4.0)),
                          intrinsic(llvm::Intrinsic::copysign, {constant(1.0), x}), r);
}

// exp on the CPU. f32: in the IR, as XLA's CPU backend does, so that it vectorises into plain arithmetic with no
// slow lanes: the vector exp of libmvec took a scalar path for every lane past its fast range (a masked softmax's
// -1e9 fill made it 14x slower) and for results in the denormal range, and cost about 1 ns per element in cache.
// x = n ln2 + r with |r| <= ln2/2 (n rounded to nearest, ln2 split so n * ln2_hi is exact), exp(r) as
// 1 + r + r^2 P(r) with P of degree 5 (a weighted least-squares fit of (e^r - 1 - r) / r^2 on that interval,
// 5e-11 relative), then scaled by 2^n (below). x is clamped to [-104, 89] first, where the result is 0 or inf
// whatever the rounding; NaN passes through. At most 1 ulp against the double exp, a denormal result within one of
// its units (vector_math_test); the same time per element on any input (BM_Exp/exp_masked against exp_normal).
// f64 the same way (expF64).
llvm::Value* VectorMathEmitter::cpuExp(llvm::Value* x) {
  llvm::Type* type = x->getType();
  if (type->isFloatTy()) return expF32(x, false);
  if (type->isDoubleTy()) return expF64(x);
  return intrinsic(llvm::Intrinsic::exp, {x});
}

// f64 exp as f32's (expF32), with double's constants: the vector library's exp took its scalar path for a result in
// the denormal range (x below -708), and for the lanes past its range, which were set aside by selects around it.
// x is clamped to [-746, 710] (0 and inf whatever the rounding); x = n ln2 + r, |r| <= ln2/2, with ln2 in two parts
// (fdlibm's: n * ln2_hi is exact for |n| < 2^11); exp(r) = 1 + r + r^2 P(r) with P the Taylor series to r^11 / 13!
// (its remainder, r^12 / 14! at most, is 2^-58 of the result); scaled by 2^n as two powers of two for a normal result
// (n >= -1021) and, below, as exp(r) 2^(n+1074) rounded to an integer: the denormal's bit pattern, with no float
// arithmetic on a denormal. At most 1 ulp against long double exp (vector_math_test).
llvm::Value* VectorMathEmitter::expF64(llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto [n, r] = expReduce(m_b, m_module, x, -746.0, 710.0, 6.93147180369123816490e-01, 1.90821492927058770002e-10);
  // 1/13!, ..., 1/2!.
  std::vector<double> taylor;
  for (int k = 13; k >= 2; --k) {
    double factorial = 1;
    for (int i = 2; i <= k; ++i) factorial *= i;
    taylor.push_back(1.0 / factorial);
  }
  llvm::Value* p = horner(taylor, r);
  llvm::Value* expR = m_b.CreateFAdd(constant(1.0), intrinsic(llvm::Intrinsic::fmuladd, {m_b.CreateFMul(r, r), p, r}));
  llvm::Value* e = timesPowerOfTwo(m_b, expR, n).first;
  return m_b.CreateSelect(m_b.CreateFCmpUNO(x, x), x, e);
}

// expm1 on the CPU: f32 from exp's reduction (expF32), f64 libm's scalar expm1.
llvm::Value* VectorMathEmitter::cpuExpm1(llvm::Value* x) {
  return x->getType()->isFloatTy() ? expF32(x, true) : mathCall("expm1", {x});
}

// exp(x), or exp(x) - 1 with `minusOne` (expm1: built from the polynomial's exp(r) - 1 = r + r^2 P(r), which keeps
// expm1's relative accuracy near 0, where exp(x) - 1 would lose it all).
llvm::Value* VectorMathEmitter::expF32(llvm::Value* x, bool minusOne) {
  llvm::Type* type = x->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto [n, r] = expReduce(m_b, m_module, x, -104.0, 89.0, 0.693359375, -2.12194440054690583e-4);
  llvm::Value* p = horner({1.9790352962445468e-4f, 1.3944648671895266e-3f, 8.333496749401093e-3f, 4.166629537940025e-2f,
                           0.1666666567325592f, 0.5f},
                          r);
  llvm::Value* expRMinusOne = intrinsic(llvm::Intrinsic::fmuladd, {m_b.CreateFMul(r, r), p, r});
  llvm::Value* expR = m_b.CreateFAdd(constant(1.0), expRMinusOne);
  auto [e, ni] = timesPowerOfTwo(m_b, expR, n);
  llvm::Type* intType = ni->getType();
  auto integer = [&](int v) { return llvm::ConstantInt::get(intType, v); };
  auto powerOfTwo = [&](llvm::Value* k) {
    return m_b.CreateBitCast(m_b.CreateShl(m_b.CreateAdd(k, integer(127)), integer(23)), type);
  };
  if (minusOne) {
    // expm1 = 2^n (exp(r) - 1) + (2^n - 1), one rounding of the sum (2^n - 1 is exact for n in [-24, 24]); for
    // other n, exp(x) - 1 loses nothing that matters (-1 or exp(x) itself). x = +-0 keeps its sign.
    llvm::Value* small = m_b.CreateAnd(m_b.CreateICmpSGE(ni, integer(-24)), m_b.CreateICmpSLE(ni, integer(24)));
    llvm::Value* scale = powerOfTwo(m_b.CreateSelect(small, ni, integer(0)));
    llvm::Value* near =
        intrinsic(llvm::Intrinsic::fmuladd, {scale, expRMinusOne, m_b.CreateFSub(scale, constant(1.0))});
    e = m_b.CreateSelect(small, near, m_b.CreateFSub(e, constant(1.0)));
    e = m_b.CreateSelect(m_b.CreateFCmpOEQ(x, constant(0.0)), x, e);
  }
  return m_b.CreateSelect(m_b.CreateFCmpUNO(x, x), x, e);
}

// log on the CPU, f32: in the IR for the same reason as exp (libmvec's vector log took its scalar path for a
// denormal input, 75x slower, and for zero, negative, inf and NaN inputs, 11-13x). Everything is decided on the
// bits, so no lane does float arithmetic on a denormal: a denormal x is first read as its integer bit pattern
// converted to float (exactly x 2^149). Then x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2/2 + f^3 P(f)
// with f = m - 1 (exact) and P of degree 8 (a weighted least-squares fit, 7.5e-10 relative), plus e ln2 in two
// parts. +-0 gives -inf, a negative input NaN, +inf and NaN themselves. At most 1 ulp against
// the double log (vector_math_test). f64: logF64.
llvm::Value* VectorMathEmitter::cpuLog(llvm::Value* x) {
  llvm::Type* type = x->getType();
  if (type->isDoubleTy()) return logF64(x);
  if (!type->isFloatTy()) return intrinsic(llvm::Intrinsic::log, {x});
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  const LogReduction reduction = logReduce(m_b, x);
  llvm::Value* f = reduction.f;
  llvm::Value* p = horner(
      {0.06746640056371689f, -0.11675652116537094f, 0.11888162046670914f, -0.1240558922290802f, 0.14219552278518677f,
       -0.1666799634695053f, 0.2000211924314499f, -0.25000008940696716f, 0.3333331346511841f},
      f);
  llvm::Value* f2 = m_b.CreateFMul(f, f);
  llvm::Value* tail =
      intrinsic(llvm::Intrinsic::fmuladd, {m_b.CreateFMul(f2, f), p, m_b.CreateFMul(f2, constant(-0.5))});
  llvm::Value* logM = m_b.CreateFAdd(f, tail);
  llvm::Value* r = intrinsic(llvm::Intrinsic::fmuladd, {reduction.exponent, constant(-2.12194440054690583e-4), logM});
  r = intrinsic(llvm::Intrinsic::fmuladd, {reduction.exponent, constant(0.693359375), r});
  return logSpecials(m_b, x, r, reduction);
}

// log on the CPU, f64: f32's reduction on the bits (a denormal read as its integer bit pattern, m in [sqrt(1/2),
// sqrt(2)), f = m - 1 exact), then fdlibm's log(1 + f): s = f / (2 + f), log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2)))
// with R the minimax polynomial of degree 7 in s^2 of fdlibm's e_log.c (its published coefficients), plus e ln2 in
// two parts. The same specials as f32. libmvec's vector log took its scalar path for denormal, zero, negative, inf
// and NaN inputs. At most 1 ulp against long double log (vector_math_test).
llvm::Value* VectorMathEmitter::logF64(llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  const LogReduction reduction = logReduce(m_b, x);
  llvm::Value* f = reduction.f;
  llvm::Value* exponent = reduction.exponent;
  llvm::Value* s = m_b.CreateFDiv(f, m_b.CreateFAdd(constant(2.0), f));
  llvm::Value* z = m_b.CreateFMul(s, s);
  llvm::Value* w = m_b.CreateFMul(z, z);
  llvm::Value* odd =
      m_b.CreateFMul(w, horner({1.531383769920937332e-01, 2.222219843214978396e-01, 3.999999999940941908e-01}, w));
  llvm::Value* even = m_b.CreateFMul(z, horner({1.479819860511658591e-01, 1.818357216161805012e-01,
                                                2.857142874366239149e-01, 6.666666666666735130e-01},
                                               w));
  llvm::Value* poly = m_b.CreateFAdd(even, odd);
  llvm::Value* halfSquare = m_b.CreateFMul(constant(0.5), m_b.CreateFMul(f, f));
  llvm::Value* lo = intrinsic(llvm::Intrinsic::fmuladd, {exponent, constant(1.90821492927058770002e-10),
                                                         m_b.CreateFMul(s, m_b.CreateFAdd(halfSquare, poly))});
  llvm::Value* r = m_b.CreateFSub(m_b.CreateFMul(exponent, constant(6.93147180369123816490e-01)),
                                  m_b.CreateFSub(m_b.CreateFSub(halfSquare, lo), f));
  return logSpecials(m_b, x, r, reduction);
}

// atan2(y, x) on the CPU, f32, in the IR (libm's atan2f is a scalar call: jnp.angle over a spectrum was a third of its
// fusion's time): a = min(|x|, |y|) / max(|x|, |y|) in [0, 1], reduced to |t| <= tan(pi/8) by atan(a) = pi/4 +
// atan((a - 1) / (a + 1)) above tan(pi/8), atan(t) = t + t z P(z) with z = t^2 and P Cephes' degree-3 atanf
// polynomial, then the octant: pi/2 - r where |y| > |x|, pi - r where x is negative (its sign bit: -0 too), the sign
// of y. Both zero gives +-0 or +-pi, both infinite +-pi/4 or +-3pi/4, NaN propagates. The multiples of pi/4 in two
// parts. At most 1.96 ulp against the double atan2 (vector_math_test).
llvm::Value* VectorMathEmitter::cpuAtan2(llvm::Value* y, llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Value* ax = intrinsic(llvm::Intrinsic::fabs, {x});
  llvm::Value* ay = intrinsic(llvm::Intrinsic::fabs, {y});
  llvm::Value* yLarger = m_b.CreateFCmpOGT(ay, ax);
  llvm::Value* large = m_b.CreateSelect(yLarger, ay, ax);
  llvm::Value* small = m_b.CreateSelect(yLarger, ax, ay);
  // Both infinite: the angle of (1, 1).
  llvm::Value* bothInfinite = m_b.CreateFCmpOEQ(small, llvm::ConstantFP::getInfinity(type));
  large = m_b.CreateSelect(bothInfinite, constant(1.0), large);
  small = m_b.CreateSelect(bothInfinite, constant(1.0), small);
  llvm::Value* a = m_b.CreateFDiv(small, large);
  a = m_b.CreateSelect(m_b.CreateFCmpOEQ(large, constant(0.0)), constant(0.0), a);
  llvm::Value* reduce = m_b.CreateFCmpOGT(a, constant(0.41421356237309503));
  // (small - large) / (small + large), not (a - 1) / (a + 1): one rounding fewer (a's).
  llvm::Value* t =
      m_b.CreateSelect(reduce, m_b.CreateFDiv(m_b.CreateFSub(small, large), m_b.CreateFAdd(small, large)), a);
  llvm::Value* z = m_b.CreateFMul(t, t);
  llvm::Value* p = horner({8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1}, z);
  llvm::Value* r = intrinsic(llvm::Intrinsic::fmuladd, {m_b.CreateFMul(z, t), p, t});
  // The multiples of pi/4 in two parts (f32's nearest and the rest), the rest added to the small term first: the
  // sums cancel up to half their bits near the octants' edges.
  auto hi = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  const double quarter = 0.78539816339744831;
  r = m_b.CreateFAdd(m_b.CreateSelect(reduce, constant(hi(quarter)), constant(0.0)),
                     m_b.CreateFAdd(r, m_b.CreateSelect(reduce, constant(quarter - hi(quarter)), constant(0.0))));
  auto minus = [&](double v, llvm::Value* w) {
    return m_b.CreateFAdd(m_b.CreateFSub(constant(hi(v)), w), constant(v - hi(v)));
  };
  r = m_b.CreateSelect(yLarger, minus(2 * quarter, r), r);
  llvm::Type* intType = m_b.getInt32Ty();
  llvm::Value* xNegative = m_b.CreateICmpSLT(m_b.CreateBitCast(x, intType), llvm::ConstantInt::get(intType, 0));
  r = m_b.CreateSelect(xNegative, minus(4 * quarter, r), r);
  r = intrinsic(llvm::Intrinsic::copysign, {r, y});
  return m_b.CreateSelect(m_b.CreateFCmpUNO(x, y), m_b.CreateFAdd(x, y), r);
}

namespace {

// 2/pi to 256 bits, most significant first (the bits that sinCos's reduction multiplies f32's up to 2^104 by; it
// needs 212 of them).
constexpr uint32_t kTwoOverPiWords[] = {0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0,
                                        0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561};

// The n bits of 2/pi from the i-th after the binary point on (i >= 1, n <= 53), as an integer.
uint64_t twoOverPiBits(int i, int n) {
  uint64_t v = 0;
  for (int k = i; k < i + n; ++k) {
    const int bit = k - 1;
    v = (v << 1) | ((kTwoOverPiWords[bit / 32] >> (31 - bit % 32)) & 1u);
  }
  return v;
}

}  // namespace

// For each biased f32 exponent e in [1, 254] (a denormal reads as e = 1), with E = e - 150 so that |x| = m 2^E for an
// integer m < 2^24: (2^E 2/pi) mod 4, as three doubles whose sum holds its 109 bits from the first one that counts
// (weight below 4: multiplied by the integer m, the bits above add multiples of 4 quarter turns, whole turns).
// The first two parts have 28 bits, so m times each is exact.
llvm::GlobalVariable* VectorMathEmitter::twoOverPiTable() {
  const char* name = "fusionscope.two_over_pi_mod4";
  if (llvm::GlobalVariable* existing = m_module.getGlobalVariable(name, true)) return existing;
  std::vector<double> parts;
  for (int e = 1; e <= 254; ++e) {
    const int exponent = e - 150;
    const int first = std::max(1, exponent - 1);  // bit i of 2/pi weighs 2^(E - i) in 2^E 2/pi
    parts.push_back(std::ldexp(static_cast<double>(twoOverPiBits(first, 28)), exponent - first - 27));
    parts.push_back(std::ldexp(static_cast<double>(twoOverPiBits(first + 28, 28)), exponent - first - 55));
    parts.push_back(std::ldexp(static_cast<double>(twoOverPiBits(first + 56, 53)), exponent - first - 108));
  }
  llvm::Constant* data = llvm::ConstantDataArray::get(m_module.getContext(), parts);
  return new llvm::GlobalVariable(m_module, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data, name);
}

// sin and cos on the CPU, f32: libmvec's vector sinf/cosf took a scalar path per lane from |x| of about 3e4 on (15x
// slower; rotary position embeddings of long contexts reach such arguments). Here x 2/pi mod 4 (x in quarter turns)
// is computed in double from |x| = m 2^E (m < 2^24 an integer) times the three parts of (2^E 2/pi) mod 4 (Payne and
// Hanek's reduction, exact for any f32; a Cody-Waite reduction in double loses the result from |x| of about 2^24
// on): the first two products are exact, the first taken mod 4 exactly, so the quadrant k (the nearest integer) and
// the rest r = x 2/pi - k, |r| <= 1/2, lose nothing before their sum is rounded once. Below 2^25 (E <= 1) the parts
// are 2/pi's first 109 bits scaled by 2^E, so |x| times three constants; above, they come from a table indexed by E
// (twoOverPiTable). theta = r pi/2; sin and cos of theta by their Taylor series (to theta^11 / 11! and theta^12 / 12!,
// 7e-12 at pi/4), picked and signed by k mod 4 (and x's sign for sin). inf and NaN give NaN, sin keeps a zero's sign.
// At most 0.5 ulp against the double sin and cos over f32's whole range (vector_math_test).
//
// The kernel calls a function, fusionscope_sinf or _cosf, that names vector forms of itself of 4, 8 and 16 lanes
// (the "vector-function-abi-variant" attribute), so the loop vectoriser calls one of those: each computes its lanes
// with the constants and, only when some lane is at or past 2^25 or not finite (a branch on the whole vector), calls
// the scalar function, which reads the table, for each lane. Loads from the table in the vector loop would be
// gathers (three per vector, which tripled the time of every sin).
llvm::Value* VectorMathEmitter::cpuSinCos(llvm::Value* x, bool cosine) {
  if (!x->getType()->isFloatTy()) return intrinsic(cosine ? llvm::Intrinsic::cos : llvm::Intrinsic::sin, {x});
  const std::string name = cosine ? "fusionscope_cosf" : "fusionscope_sinf";
  llvm::Function* scalar = sinCosFunctions(name, cosine);
  llvm::CallInst* call = m_b.CreateCall(scalar, {x});
  std::string variants;
  for (int lanes : {4, 8, 16}) {
    variants += fmt::format("{}_ZGV_LLVM_N{}v_{}({}_v{})", variants.empty() ? "" : ",", lanes, name, name, lanes);
  }
  call->addFnAttr(llvm::Attribute::get(m_context, "vector-function-abi-variant", variants));
  return call;
}

// The scalar function `name` (float -> float) and its vector forms `name`_vN, created once per module.
llvm::Function* VectorMathEmitter::sinCosFunctions(const std::string& name, bool cosine) {
  if (llvm::Function* existing = m_module.getFunction(name)) return existing;
  llvm::IRBuilderBase::InsertPointGuard guard(m_b);
  auto declare = [&](llvm::Type* type, const std::string& functionName) {
    llvm::Function* f = llvm::Function::Create(llvm::FunctionType::get(type, {type}, false),
                                               llvm::GlobalValue::InternalLinkage, functionName, m_module);
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setDoesNotAccessMemory();  // it reads only the constant table
    return f;
  };
  llvm::Type* f32 = m_b.getFloatTy();
  llvm::Function* scalar = declare(f32, name);
  scalar->addFnAttr(llvm::Attribute::NoInline);  // inlined, its table loads would become gathers
  {
    m_b.SetInsertPoint(llvm::BasicBlock::Create(m_context, "entry", scalar));
    llvm::Value* x = scalar->getArg(0);
    llvm::Value* magnitude = m_b.CreateAnd(m_b.CreateBitCast(x, m_b.getInt32Ty()), m_b.getInt32(0x7fffffff));
    llvm::Value* large = m_b.CreateICmpUGE(magnitude, m_b.getInt32(kSinCosLargeBits));
    llvm::BasicBlock* small = llvm::BasicBlock::Create(m_context, "small", scalar);
    llvm::BasicBlock* table = llvm::BasicBlock::Create(m_context, "table", scalar);
    m_b.CreateCondBr(large, table, small);
    m_b.SetInsertPoint(small);
    m_b.CreateRet(sinCosSmall(x, cosine));
    m_b.SetInsertPoint(table);
    m_b.CreateRet(sinCosTable(x, cosine));
  }
  std::vector<llvm::GlobalValue*> vectorForms;
  for (unsigned lanes : {4u, 8u, 16u}) {
    llvm::Type* type = llvm::FixedVectorType::get(f32, lanes);
    llvm::Function* f = declare(type, fmt::format("{}_v{}", name, lanes));
    vectorForms.push_back(f);
    m_b.SetInsertPoint(llvm::BasicBlock::Create(m_context, "entry", f));
    llvm::Value* x = f->getArg(0);
    llvm::Type* intType = llvm::FixedVectorType::get(m_b.getInt32Ty(), lanes);
    llvm::Value* magnitude = m_b.CreateAnd(m_b.CreateBitCast(x, intType), llvm::ConstantInt::get(intType, 0x7fffffff));
    llvm::Value* large = m_b.CreateICmpUGE(magnitude, llvm::ConstantInt::get(intType, kSinCosLargeBits));
    llvm::BasicBlock* small = llvm::BasicBlock::Create(m_context, "small", f);
    llvm::BasicBlock* perLane = llvm::BasicBlock::Create(m_context, "per_lane", f);
    m_b.CreateCondBr(m_b.CreateOrReduce(large), perLane, small);
    m_b.SetInsertPoint(small);
    m_b.CreateRet(sinCosSmall(x, cosine));
    m_b.SetInsertPoint(perLane);
    llvm::Value* result = llvm::PoisonValue::get(type);
    for (unsigned lane = 0; lane < lanes; ++lane) {
      llvm::Value* y = m_b.CreateCall(scalar, {m_b.CreateExtractElement(x, lane)});
      result = m_b.CreateInsertElement(result, y, lane);
    }
    m_b.CreateRet(result);
  }
  llvm::appendToCompilerUsed(m_module, vectorForms);  // kept until the vectoriser has called them
  return scalar;
}

// |x| below 2^25: the parts of (2^E 2/pi) mod 4 are 2/pi's bits 1-28, 29-56 and 57-109 scaled by 2^E, so m times
// each is |x| times 2/pi's. x is f32 or a vector of f32.
llvm::Value* VectorMathEmitter::sinCosSmall(llvm::Value* x, bool cosine) {
  llvm::Type* f64 = x->getType()->getWithNewType(m_b.getDoubleTy());
  llvm::Value* ax = m_b.CreateFPExt(intrinsic(llvm::Intrinsic::fabs, {x}), f64);
  auto part = [&](int first, int bits) {
    return llvm::ConstantFP::get(f64, std::ldexp(static_cast<double>(twoOverPiBits(first, bits)), -(first + bits - 1)));
  };
  return sinCosOfQuarterTurns(x, m_b.CreateFMul(ax, part(1, 28)), m_b.CreateFMul(ax, part(29, 28)),
                              m_b.CreateFMul(ax, part(57, 53)), cosine);
}

// Any f32 x (a scalar): the parts from the table's row for x's exponent.
llvm::Value* VectorMathEmitter::sinCosTable(llvm::Value* x, bool cosine) {
  llvm::Type* f64 = m_b.getDoubleTy();
  llvm::Type* i32 = m_b.getInt32Ty();
  llvm::Value* magnitude = m_b.CreateAnd(m_b.CreateBitCast(x, i32), m_b.getInt32(0x7fffffff));
  llvm::Value* biased = m_b.CreateLShr(magnitude, m_b.getInt32(23));
  llvm::Value* normal = m_b.CreateICmpNE(biased, m_b.getInt32(0));
  llvm::Value* fraction = m_b.CreateAnd(magnitude, m_b.getInt32(0x7fffff));
  llvm::Value* m =
      m_b.CreateSIToFP(m_b.CreateSelect(normal, m_b.CreateOr(fraction, m_b.getInt32(0x800000)), fraction), f64);
  // Row e - 1 of the table (a denormal's row is e = 1's; inf's and NaN's any row: their result is NaN).
  llvm::Value* row = m_b.CreateSub(m_b.CreateSelect(normal, biased, m_b.getInt32(1)), m_b.getInt32(1));
  row = m_b.CreateSelect(m_b.CreateICmpUGT(row, m_b.getInt32(253)), m_b.getInt32(253), row);
  llvm::GlobalVariable* table = twoOverPiTable();
  auto part = [&](int j) {
    llvm::Value* at =
        m_b.CreateZExt(m_b.CreateAdd(m_b.CreateMul(row, m_b.getInt32(3)), m_b.getInt32(j)), m_b.getInt64Ty());
    return m_b.CreateLoad(f64, m_b.CreateInBoundsGEP(table->getValueType(), table, {m_b.getInt64(0), at}));
  };
  return sinCosOfQuarterTurns(x, m_b.CreateFMul(m, part(0)), m_b.CreateFMul(m, part(1)), m_b.CreateFMul(m, part(2)),
                              cosine);
}

// sin or cos of x from |x| 2/pi = a + b + c (doubles, lanes as x's): a < 2^26 and b < 1/4 exact, c the rest.
llvm::Value* VectorMathEmitter::sinCosOfQuarterTurns(llvm::Value* x, llvm::Value* a, llvm::Value* b, llvm::Value* c,
                                                     bool cosine) {
  llvm::Type* f64 = a->getType();
  llvm::Type* i32 = x->getType()->getWithNewType(m_b.getInt32Ty());
  auto constant = [&](double v) { return llvm::ConstantFP::get(f64, v); };
  auto integer = [&](int v) { return llvm::ConstantInt::get(i32, static_cast<uint64_t>(v), true); };
  // a mod 4, exactly: a / 4 < 2^24 truncates to its floor.
  llvm::Value* whole = m_b.CreateSIToFP(m_b.CreateFPToSI(m_b.CreateFMul(a, constant(0.25)), i32), f64);
  llvm::Value* a4 = m_b.CreateFSub(a, m_b.CreateFMul(whole, constant(4.0)));
  // The quadrant: |x| 2/pi mod 4 (in [0, 4.25)) rounded to the nearest integer.
  llvm::Value* k = m_b.CreateFPToSI(m_b.CreateFAdd(m_b.CreateFAdd(a4, b), constant(0.5)), i32);
  llvm::Value* r = m_b.CreateFAdd(m_b.CreateFAdd(m_b.CreateFSub(a4, m_b.CreateSIToFP(k, f64)), b), c);
  llvm::Value* theta = m_b.CreateFMul(r, constant(1.5707963267948966));
  llvm::Value* t2 = m_b.CreateFMul(theta, theta);
  auto taylor = [](int first, int last) {  // (-1)^(n/2) / n! for n = last, last - 2, ..., first
    std::vector<double> coefficients;
    for (int n = last; n >= first; n -= 2) {
      double factorial = 1;
      for (int i = 2; i <= n; ++i) factorial *= i;
      coefficients.push_back(((n / 2) % 2 == 0 ? 1.0 : -1.0) / factorial);
    }
    return coefficients;
  };
  llvm::Value* sinTheta = m_b.CreateFMul(theta, horner(taylor(1, 11), t2));
  llvm::Value* cosTheta = horner(taylor(0, 12), t2);
  // sin(|x|) by quadrant: sin, cos, -sin, -cos of theta; cos is sin one quadrant on.
  llvm::Value* quadrant = cosine ? m_b.CreateAdd(k, integer(1)) : k;
  llvm::Value* odd = m_b.CreateICmpNE(m_b.CreateAnd(quadrant, integer(1)), integer(0));
  llvm::Value* negate = m_b.CreateICmpNE(m_b.CreateAnd(quadrant, integer(2)), integer(0));
  llvm::Value* bits = m_b.CreateBitCast(x, i32);
  if (!cosine) negate = m_b.CreateXor(negate, m_b.CreateICmpSLT(bits, integer(0)));
  llvm::Value* v = m_b.CreateSelect(odd, cosTheta, sinTheta);
  v = m_b.CreateFPTrunc(m_b.CreateSelect(negate, m_b.CreateFNeg(v), v), x->getType());
  llvm::Value* finite = m_b.CreateICmpULT(m_b.CreateAnd(bits, integer(0x7fffffff)), integer(0x7f800000));
  return m_b.CreateSelect(finite, v, llvm::ConstantFP::getNaN(x->getType()));
}

// log1p on the CPU, f32: log(u) with u = 1 + x rounded, corrected by what the rounding lost, (u - 1 - x) / u (the
// first-order term of log(1 + x) - log(u)); for tiny x, u = 1 and the result is x. Where log(u) is not finite
// (x = -1, x < -1, inf, NaN) it is the result. f64 keeps libm's log1p.
llvm::Value* VectorMathEmitter::cpuLog1p(llvm::Value* x) {
  llvm::Type* type = x->getType();
  if (!type->isFloatTy()) return mathCall("log1p", {x});
  llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
  llvm::Value* u = m_b.CreateFAdd(one, x);
  llvm::Value* logU = cpuLog(u);
  llvm::Value* lost = m_b.CreateFDiv(m_b.CreateFSub(m_b.CreateFSub(u, one), x), u);
  llvm::Value* finite =
      m_b.CreateFCmpOLT(intrinsic(llvm::Intrinsic::fabs, {logU}), llvm::ConstantFP::getInfinity(type));
  llvm::Value* r = m_b.CreateSelect(finite, m_b.CreateFSub(logU, lost), logU);
  return m_b.CreateSelect(m_b.CreateFCmpOEQ(x, llvm::ConstantFP::get(type, 0.0)), x, r);  // +-0 keeps its sign
}

}  // namespace fusionscope::core
