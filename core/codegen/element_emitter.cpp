#include "core/codegen/element_emitter.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <llvm/ADT/APSInt.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "core/eval/scalar_ops.h"
#include "core/ir/literal.h"

namespace fusionscope::core {

llvm::Value* ElementEmitter::floatToBf16Bits(llvm::Value* v) {
  llvm::Value* bits = m_b.CreateBitCast(v, m_b.getInt32Ty());
  llvm::Value* lsb = m_b.CreateAnd(m_b.CreateLShr(bits, 16), m_b.getInt32(1));
  llvm::Value* rounded = m_b.CreateLShr(m_b.CreateAdd(bits, m_b.CreateAdd(lsb, m_b.getInt32(0x7FFF))), 16);
  llvm::Value* isNan = m_b.CreateFCmpUNO(v, v);
  llvm::Value* result = m_b.CreateSelect(isNan, m_b.CreateOr(m_b.CreateLShr(bits, 16), m_b.getInt32(0x40)), rounded);
  return m_b.CreateTrunc(result, m_b.getInt16Ty());
}

llvm::Value* ElementEmitter::floatToByteFloat(PrimitiveType type, llvm::Value* v) {
  const eval::FloatFormat& f = *eval::floatFormat(type);
  const int m = f.mantissaBits;
  const uint32_t expAll = (1u << f.exponentBits) - 1;
  const uint32_t nan = !f.hasNegativeZero ? 0x80u : f.hasInfinity ? (expAll << m) | (1u << (m - 1)) : 0x7fu;
  llvm::Type* i32 = m_b.getInt32Ty();
  auto c32 = [&](int64_t x) { return llvm::ConstantInt::get(i32, static_cast<uint64_t>(x), true); };
  // 2^e as a float (e within f32's normal exponents).
  auto power = [&](llvm::Value* e) {
    return m_b.CreateBitCast(m_b.CreateShl(m_b.CreateAdd(e, c32(127)), 23), m_b.getFloatTy());
  };
  llvm::Value* negative = m_b.CreateICmpSLT(m_b.CreateBitCast(v, i32), c32(0));
  llvm::Value* a = m_b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  // The quantum around a: 2^(max(exponent of a, minExponent) - m); a's multiple of it, to nearest-even (exact).
  llvm::Value* exponent = m_b.CreateSub(m_b.CreateLShr(m_b.CreateBitCast(a, i32), 23), c32(127));
  llvm::Value* clamped =
      m_b.CreateSelect(m_b.CreateICmpSLT(exponent, c32(f.minExponent)), c32(f.minExponent), exponent);
  llvm::Value* quantum = m_b.CreateSub(clamped, c32(m));
  llvm::Value* k =
      m_b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, m_b.CreateFMul(a, power(m_b.CreateNeg(quantum))));
  llvm::Value* overflow =
      m_b.CreateFCmpOGT(m_b.CreateFMul(k, power(quantum)), llvm::ConstantFP::get(m_b.getFloatTy(), f.maxFinite));
  llvm::Value* isNan = m_b.CreateFCmpUNO(v, v);
  llvm::Value* safeK = m_b.CreateSelect(m_b.CreateOr(overflow, isNan), llvm::ConstantFP::get(m_b.getFloatTy(), 0.0), k);
  // The exponent field (clamped + bias) above the mantissa, plus k less its leading one: a carry of k into the next
  // binade and the subnormals (field 0) come out of the same sum.
  llvm::Value* code = m_b.CreateAdd(m_b.CreateShl(m_b.CreateAdd(clamped, c32(1 - f.minExponent)), m),
                                    m_b.CreateSub(m_b.CreateFPToUI(safeK, i32), c32(int64_t{1} << m)));
  llvm::Value* signBit = m_b.CreateSelect(negative, c32(0x80), c32(0));
  llvm::Value* signedCode = m_b.CreateOr(
      code, f.hasNegativeZero ? signBit : m_b.CreateSelect(m_b.CreateICmpEQ(code, c32(0)), c32(0), signBit));
  llvm::Value* overflowCode = f.hasInfinity ? m_b.CreateOr(c32(expAll << m), signBit) : c32(nan);
  llvm::Value* result = m_b.CreateSelect(isNan, c32(nan), m_b.CreateSelect(overflow, overflowCode, signedCode));
  return m_b.CreateTrunc(result, m_b.getInt8Ty());
}

llvm::Value* ElementEmitter::byteFloatToFloat(PrimitiveType type, llvm::Value* byte) {
  const eval::FloatFormat& f = *eval::floatFormat(type);
  const int m = f.mantissaBits;
  const uint32_t expAll = (1u << f.exponentBits) - 1;
  llvm::Type* i32 = m_b.getInt32Ty();
  auto c32 = [&](int64_t x) { return llvm::ConstantInt::get(i32, static_cast<uint64_t>(x), true); };
  llvm::Value* c = m_b.CreateZExt(byte, i32);
  llvm::Value* field = m_b.CreateAnd(m_b.CreateLShr(c, m), c32(expAll));
  llvm::Value* mantissa = m_b.CreateAnd(c, c32((1 << m) - 1));
  llvm::Value* subnormal = m_b.CreateICmpEQ(field, c32(0));
  llvm::Value* significand = m_b.CreateSelect(subnormal, mantissa, m_b.CreateOr(mantissa, c32(1 << m)));
  // significand * 2^scale, exact: 2^scale built from its exponent bits.
  llvm::Value* scale =
      m_b.CreateSelect(subnormal, c32(f.minExponent - m), m_b.CreateAdd(field, c32(f.minExponent - 1 - m)));
  llvm::Value* magnitude =
      m_b.CreateFMul(m_b.CreateUIToFP(significand, m_b.getFloatTy()),
                     m_b.CreateBitCast(m_b.CreateShl(m_b.CreateAdd(scale, c32(127)), 23), m_b.getFloatTy()));
  llvm::Value* nanValue = llvm::ConstantFP::getNaN(m_b.getFloatTy());
  if (f.hasInfinity) {  // exponent all ones: infinity with a zero mantissa, else NaN
    llvm::Value* top = m_b.CreateICmpEQ(field, c32(expAll));
    llvm::Value* special =
        m_b.CreateSelect(m_b.CreateICmpEQ(mantissa, c32(0)), llvm::ConstantFP::getInfinity(m_b.getFloatTy()), nanValue);
    magnitude = m_b.CreateSelect(top, special, magnitude);
  }
  llvm::Value* negative = m_b.CreateICmpNE(m_b.CreateAnd(c, c32(0x80)), c32(0));
  llvm::Value* value = m_b.CreateSelect(negative, m_b.CreateFNeg(magnitude), magnitude);
  if (!f.hasInfinity) {
    // e4m3fn: S.1111.111 of either sign; fnuz: 0x80 alone.
    llvm::Value* isNan =
        f.hasNegativeZero ? m_b.CreateICmpEQ(m_b.CreateAnd(c, c32(0x7f)), c32(0x7f)) : m_b.CreateICmpEQ(c, c32(0x80));
    value = m_b.CreateSelect(isNan, nanValue, value);
  }
  return value;
}

llvm::Value* ElementEmitter::roundTo(PrimitiveType type, llvm::Value* v) {
  if (isByteFloat(type)) return byteFloatToFloat(type, floatToByteFloat(type, v));
  if (type == PrimitiveType::kF16) return m_b.CreateFPExt(m_b.CreateFPTrunc(v, m_b.getHalfTy()), m_b.getFloatTy());
  if (type == PrimitiveType::kBF16) {
    llvm::Value* bits = m_b.CreateZExt(floatToBf16Bits(v), m_b.getInt32Ty());
    return m_b.CreateBitCast(m_b.CreateShl(bits, 16), m_b.getFloatTy());
  }
  return v;
}

FamilyEmitter::FamilyEmitter(ElementEmitter& e)
    : m_e(e),
      m_module(e.m_module),
      m_context(e.m_context),
      m_b(e.m_b),
      m_target(e.m_target),
      m_vectors(e.m_vectors),
      m_function(e.m_function),
      m_leaves(e.m_leaves),
      m_bound(e.m_bound),
      m_cache(e.m_cache) {}

void ElementEmitter::ifThen(llvm::Value* cond, const std::function<void()>& body) {
  llvm::BasicBlock* thenBlock = llvm::BasicBlock::Create(m_context, "if", m_function);
  llvm::BasicBlock* merge = llvm::BasicBlock::Create(m_context, "endif", m_function);
  m_b.CreateCondBr(cond, thenBlock, merge);
  m_b.SetInsertPoint(thenBlock);
  auto saved = saveCache();
  body();
  restoreCache(std::move(saved));
  m_b.CreateBr(merge);
  m_b.SetInsertPoint(merge);
}

llvm::Value* ElementEmitter::fail(const HloInstruction* instruction, const std::string& why) {
  if (m_status.ok()) {
    m_status =
        Status::error(fmt::format("{}: cannot lower {} ({})", instruction->name(), instruction->opcodeString(), why));
  }
  return llvm::PoisonValue::get(computeType(elementByteSize(instruction->shape().elementType()) > 0
                                                ? instruction->shape().elementType()
                                                : PrimitiveType::kF32));
}

llvm::Value* ElementEmitter::generate(const HloInstruction* instruction, const Index& index) {
  if (auto it = m_bound.find(instruction); it != m_bound.end()) return it->second;
  CacheKey key{instruction, index.dims};
  if (auto it = m_cache.find(key); it != m_cache.end()) return it->second;
  llvm::Value* value = nullptr;
  const Shape& shape = instruction->shape();
  if (!shape.isArray() || elementByteSize(shape.elementType()) == 0) {
    return fail(instruction, fmt::format("element type of {} is not supported", shape.toString(false)));
  }
  if (auto it = m_leaves.find(instruction); it != m_leaves.end()) {
    value = load(it->second, shape.elementType(), linearOf(index, shape));
  } else {
    value = generateComputed(instruction, index);
  }
  m_cache[key] = value;
  return value;
}

llvm::Value* ElementEmitter::applyComputation(const HloComputation* computation,
                                              const std::vector<llvm::Value*>& arguments, const HloInstruction* user) {
  std::vector<HloInstruction*> parameters = computation->parameters();
  if (parameters.size() != arguments.size() || computation->root() == nullptr ||
      !computation->root()->shape().isArray()) {
    return fail(user,
                fmt::format("reducer {} must take {} scalars and return one", computation->name(), arguments.size()));
  }
  auto savedBound = m_bound;
  auto savedCache = saveCache();
  for (size_t i = 0; i < parameters.size(); ++i) m_bound[parameters[i]] = arguments[i];
  llvm::Value* result = generate(computation->root(), Index{});
  m_bound = std::move(savedBound);
  restoreCache(std::move(savedCache));
  return result;
}

std::vector<llvm::Value*> ElementEmitter::applyComputationValues(const HloComputation* computation,
                                                                 const std::vector<llvm::Value*>& arguments,
                                                                 const HloInstruction* user) {
  const HloInstruction* root = computation->root();
  if (root == nullptr || root->shape().isArray()) return {applyComputation(computation, arguments, user)};
  std::vector<HloInstruction*> parameters = computation->parameters();
  if (root->opcode() != HloOpcode::kTuple || parameters.size() != arguments.size()) {
    fail(user, fmt::format("reducer {} must take {} scalars and return a tuple of them", computation->name(),
                           arguments.size()));
    return {};
  }
  auto savedBound = m_bound;
  auto savedCache = saveCache();
  for (size_t i = 0; i < parameters.size(); ++i) m_bound[parameters[i]] = arguments[i];
  std::vector<llvm::Value*> results;
  for (const HloInstruction* element : root->operands()) results.push_back(generate(element, Index{}));
  m_bound = std::move(savedBound);
  restoreCache(std::move(savedCache));
  return results;
}

Index ElementEmitter::sameIndex(const Index& index, const HloInstruction* operand) {
  return operand->shape().rank() == 0 ? Index{} : index;
}

llvm::Value* ElementEmitter::operandAt(const HloInstruction* instruction, int i, const Index& index) {
  return generate(instruction->operand(i), sameIndex(index, instruction->operand(i)));
}

llvm::Value* ElementEmitter::mathCall(const char* name, std::vector<llvm::Value*> args) {
  llvm::Type* type = args[0]->getType();
  const bool isFloat = type->isFloatTy();
  std::string symbol = m_target == KernelTarget::kNvptx ? std::string("__nv_") + name : std::string(name);
  if (isFloat) symbol += "f";
  std::vector<llvm::Type*> types(args.size(), type);
  llvm::FunctionCallee callee = m_module.getOrInsertFunction(symbol, llvm::FunctionType::get(type, types, false));
  // A math function of its arguments only: HLO has no errno, so the call reads and writes no memory, which lets the
  // loop vectoriser replace it by a vector variant (libmvec's) and the optimiser move or drop it.
  if (auto* function = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    function->setDoesNotAccessMemory();
    function->setDoesNotThrow();
    function->setWillReturn();
  }
  llvm::CallInst* call = m_b.CreateCall(callee, args);
  call->setDoesNotAccessMemory();
  return call;
}

llvm::Value* ElementEmitter::atan2Of(llvm::Value* y, llvm::Value* x) {
  return m_target == KernelTarget::kCpu && x->getType()->isFloatTy() ? m_math.cpuAtan2(y, x)
                                                                     : mathCall("atan2", {y, x});
}

llvm::Value* ElementEmitter::intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
  llvm::Function* fn = llvm::Intrinsic::getDeclaration(&m_module, id, {args[0]->getType()});
  return m_b.CreateCall(fn, args);
}

llvm::Value* ElementEmitter::floatUnary(const HloInstruction* instruction, llvm::Value* x) {
  llvm::Type* type = x->getType();
  const bool nvptx = m_target == KernelTarget::kNvptx;
  switch (instruction->opcode()) {
    case HloOpcode::kAbs: return intrinsic(llvm::Intrinsic::fabs, {x});
    case HloOpcode::kNegate: return m_b.CreateFNeg(x);
    case HloOpcode::kExp: return nvptx ? mathCall("exp", {x}) : m_math.cpuExp(x);
    case HloOpcode::kExpm1: return nvptx ? mathCall("expm1", {x}) : m_math.cpuExpm1(x);
    case HloOpcode::kLog: return nvptx ? mathCall("log", {x}) : m_math.cpuLog(x);
    case HloOpcode::kLog1p: return nvptx ? mathCall("log1p", {x}) : m_math.cpuLog1p(x);
    case HloOpcode::kLogistic: {
      llvm::Value* e = nvptx ? mathCall("exp", {m_b.CreateFNeg(x)}) : m_math.cpuExp(m_b.CreateFNeg(x));
      llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
      return m_b.CreateFDiv(one, m_b.CreateFAdd(one, e));
    }
    case HloOpcode::kSqrt: return intrinsic(llvm::Intrinsic::sqrt, {x});
    case HloOpcode::kRsqrt:
      return m_b.CreateFDiv(llvm::ConstantFP::get(type, 1.0), intrinsic(llvm::Intrinsic::sqrt, {x}));
    case HloOpcode::kCbrt: return mathCall("cbrt", {x});
    case HloOpcode::kTanh: return !nvptx && type->isFloatTy() ? m_math.rationalTanh(x) : mathCall("tanh", {x});
    case HloOpcode::kSin: return nvptx ? mathCall("sin", {x}) : m_math.cpuSinCos(x, false);
    case HloOpcode::kCos: return nvptx ? mathCall("cos", {x}) : m_math.cpuSinCos(x, true);
    case HloOpcode::kTan: return mathCall("tan", {x});
    case HloOpcode::kErf: return !nvptx && type->isFloatTy() ? m_math.rationalErf(x) : mathCall("erf", {x});
    case HloOpcode::kFloor: return intrinsic(llvm::Intrinsic::floor, {x});
    case HloOpcode::kCeil: return intrinsic(llvm::Intrinsic::ceil, {x});
    case HloOpcode::kRoundNearestAfz: return nvptx ? mathCall("round", {x}) : intrinsic(llvm::Intrinsic::round, {x});
    case HloOpcode::kRoundNearestEven: return intrinsic(llvm::Intrinsic::roundeven, {x});
    case HloOpcode::kCopy: return x;
    case HloOpcode::kSign: {
      llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
      llvm::Value* minusOne = llvm::ConstantFP::get(type, -1.0);
      llvm::Value* r = m_b.CreateSelect(m_b.CreateFCmpOLT(x, llvm::ConstantFP::get(type, 0.0)), minusOne, x);
      return m_b.CreateSelect(m_b.CreateFCmpOGT(x, llvm::ConstantFP::get(type, 0.0)), one, r);
    }
    default: return fail(instruction, "no floating-point lowering");
  }
}

llvm::Value* ElementEmitter::integerUnary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x) {
  llvm::Type* t = x->getType();
  const bool isSigned = isSignedInteger(type);
  switch (instruction->opcode()) {
    case HloOpcode::kNot: return m_b.CreateNot(x);
    case HloOpcode::kCopy: return x;
    case HloOpcode::kAbs:
      if (type == PrimitiveType::kPred) return x;
      return isSigned ? m_b.CreateSelect(m_b.CreateICmpSLT(x, llvm::ConstantInt::get(t, 0)), m_b.CreateNeg(x), x) : x;
    case HloOpcode::kNegate: return m_b.CreateNeg(x);
    case HloOpcode::kSign: {
      llvm::Value* zero = llvm::ConstantInt::get(t, 0);
      llvm::Value* positive = m_b.CreateZExt(isSigned ? m_b.CreateICmpSGT(x, zero) : m_b.CreateICmpNE(x, zero), t);
      if (!isSigned) return positive;
      return m_b.CreateSub(positive, m_b.CreateZExt(m_b.CreateICmpSLT(x, zero), t));
    }
    case HloOpcode::kPopulationCount: return intrinsic(llvm::Intrinsic::ctpop, {x});
    case HloOpcode::kClz:
      return m_b.CreateCall(llvm::Intrinsic::getDeclaration(&m_module, llvm::Intrinsic::ctlz, {t}),
                            {x, m_b.getFalse()});
    default: return fail(instruction, "no integer lowering");
  }
}

llvm::Value* ElementEmitter::floatBinary(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y) {
  switch (instruction->opcode()) {
    case HloOpcode::kAdd: return m_b.CreateFAdd(x, y);
    case HloOpcode::kSubtract: return m_b.CreateFSub(x, y);
    case HloOpcode::kMultiply: return m_b.CreateFMul(x, y);
    case HloOpcode::kDivide: return m_b.CreateFDiv(x, y);
    case HloOpcode::kRemainder:
      return m_target == KernelTarget::kNvptx ? mathCall("fmod", {x, y}) : m_b.CreateFRem(x, y);
    case HloOpcode::kPower:
      return m_target == KernelTarget::kNvptx ? mathCall("pow", {x, y}) : intrinsic(llvm::Intrinsic::pow, {x, y});
    case HloOpcode::kAtan2: return atan2Of(x, y);
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: return floatMaxMin(instruction->opcode() == HloOpcode::kMaximum, x, y);
    default: return fail(instruction, "no floating-point lowering");
  }
}

// XLA: NaN if either is NaN, else the larger (smaller); ties keep the second operand. Scalars or vectors.
llvm::Value* ElementEmitter::floatMaxMin(bool maximum, llvm::Value* x, llvm::Value* y) {
  llvm::Value* pick = maximum ? m_b.CreateFCmpOGT(x, y) : m_b.CreateFCmpOLT(x, y);
  llvm::Value* r = m_b.CreateSelect(pick, x, y);
  return m_b.CreateSelect(m_b.CreateFCmpUNO(x, y), llvm::ConstantFP::getNaN(x->getType()), r);
}

llvm::Value* ElementEmitter::integerMaxMin(bool maximum, bool isSigned, llvm::Value* x, llvm::Value* y) {
  if (maximum) return m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(x, y) : m_b.CreateICmpULT(x, y), y, x);
  return m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(y, x) : m_b.CreateICmpULT(y, x), y, x);
}

llvm::Value* ElementEmitter::reductionStep(HloOpcode op, PrimitiveType type, llvm::Value* x, llvm::Value* y) {
  const bool isFloat = isFloatingPoint(type);
  const bool isPred = type == PrimitiveType::kPred;
  switch (op) {
    case HloOpcode::kAdd: return isFloat ? m_b.CreateFAdd(x, y) : isPred ? m_b.CreateOr(x, y) : m_b.CreateAdd(x, y);
    case HloOpcode::kMultiply:
      return isFloat ? m_b.CreateFMul(x, y) : isPred ? m_b.CreateAnd(x, y) : m_b.CreateMul(x, y);
    case HloOpcode::kAnd: return m_b.CreateAnd(x, y);
    case HloOpcode::kOr: return m_b.CreateOr(x, y);
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: {
      const bool maximum = op == HloOpcode::kMaximum;
      return isFloat ? floatMaxMin(maximum, x, y) : integerMaxMin(maximum, isSignedInteger(type), x, y);
    }
    default: return nullptr;  // reductionLanes admits only the ops above
  }
}

llvm::Value* ElementEmitter::integerBinary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x,
                                           llvm::Value* y) {
  llvm::Type* t = x->getType();
  const bool isSigned = isSignedInteger(type);
  const unsigned width = t->getIntegerBitWidth();
  llvm::Value* zero = llvm::ConstantInt::get(t, 0);
  switch (instruction->opcode()) {
    case HloOpcode::kAdd: return type == PrimitiveType::kPred ? m_b.CreateOr(x, y) : m_b.CreateAdd(x, y);
    case HloOpcode::kSubtract: return m_b.CreateSub(x, y);
    case HloOpcode::kMultiply: return type == PrimitiveType::kPred ? m_b.CreateAnd(x, y) : m_b.CreateMul(x, y);
    case HloOpcode::kAnd: return m_b.CreateAnd(x, y);
    case HloOpcode::kOr: return m_b.CreateOr(x, y);
    case HloOpcode::kXor: return m_b.CreateXor(x, y);
    case HloOpcode::kMaximum: return integerMaxMin(true, isSigned, x, y);
    case HloOpcode::kMinimum: return integerMaxMin(false, isSigned, x, y);
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder: {
      // XLA: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0. Divide by a safe divisor and fix.
      const bool divide = instruction->opcode() == HloOpcode::kDivide;
      llvm::Value* isZero = m_b.CreateICmpEQ(y, zero);
      llvm::Value* minusOne = llvm::ConstantInt::get(t, static_cast<uint64_t>(-1), true);
      llvm::Value* overflow =
          isSigned
              ? m_b.CreateAnd(m_b.CreateICmpEQ(y, minusOne),
                              m_b.CreateICmpEQ(x, llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(width))))
              : m_b.getFalse();
      llvm::Value* safe = m_b.CreateSelect(m_b.CreateOr(isZero, overflow), llvm::ConstantInt::get(t, 1), y);
      llvm::Value* r = divide ? (isSigned ? m_b.CreateSDiv(x, safe) : m_b.CreateUDiv(x, safe))
                              : (isSigned ? m_b.CreateSRem(x, safe) : m_b.CreateURem(x, safe));
      r = m_b.CreateSelect(overflow, divide ? x : zero, r);
      return m_b.CreateSelect(isZero, divide ? minusOne : x, r);
    }
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightLogical:
    case HloOpcode::kShiftRightArithmetic: {
      llvm::Value* tooFar = m_b.CreateICmpUGE(y, llvm::ConstantInt::get(t, width));
      llvm::Value* amount = m_b.CreateSelect(tooFar, zero, y);
      if (instruction->opcode() == HloOpcode::kShiftLeft) {
        return m_b.CreateSelect(tooFar, zero, m_b.CreateShl(x, amount));
      }
      if (instruction->opcode() == HloOpcode::kShiftRightLogical) {
        return m_b.CreateSelect(tooFar, zero, m_b.CreateLShr(x, amount));
      }
      return m_b.CreateAShr(x, m_b.CreateSelect(tooFar, llvm::ConstantInt::get(t, width - 1), y));
    }
    default: return fail(instruction, "no integer lowering");
  }
}

llvm::Value* ElementEmitter::compare(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y) {
  const PrimitiveType type = instruction->operand(0)->shape().elementType();
  if (!instruction->attributes().direction) return fail(instruction, "compare without direction");
  const std::string* compareType = instruction->attributes().findRaw("type");
  const ComparisonDirection direction = *instruction->attributes().direction;
  if (isFloatingPoint(type) && compareType != nullptr && *compareType == "TOTALORDER") {
    // -NaN < -inf < ... < -0 < +0 < ... < inf < NaN (jnp.sort, argsort): the bit patterns ordered as sign-magnitude
    // integers, i.e. negative patterns with every bit but the sign flipped, then a signed comparison. Widening a
    // narrow float to its compute type keeps this order.
    llvm::Type* floatType = x->getType();
    const unsigned bits = floatType->getScalarSizeInBits();
    llvm::Type* intType = m_b.getIntNTy(bits);
    if (auto* vector = llvm::dyn_cast<llvm::VectorType>(floatType)) {
      intType = llvm::VectorType::get(intType, vector->getElementCount());
    }
    auto key = [&](llvm::Value* v) {
      llvm::Value* i = m_b.CreateBitCast(v, intType);
      llvm::Value* negative = m_b.CreateICmpSLT(i, llvm::ConstantInt::get(intType, 0));
      llvm::Value* flipped = m_b.CreateXor(i, llvm::ConstantInt::get(intType, llvm::APInt::getSignedMaxValue(bits)));
      return m_b.CreateSelect(negative, flipped, i);
    };
    x = key(x);
    y = key(y);
    switch (direction) {
      case ComparisonDirection::kEq: return m_b.CreateICmpEQ(x, y);
      case ComparisonDirection::kNe: return m_b.CreateICmpNE(x, y);
      case ComparisonDirection::kGe: return m_b.CreateICmpSGE(x, y);
      case ComparisonDirection::kGt: return m_b.CreateICmpSGT(x, y);
      case ComparisonDirection::kLe: return m_b.CreateICmpSLE(x, y);
      case ComparisonDirection::kLt: return m_b.CreateICmpSLT(x, y);
    }
  }
  if (isFloatingPoint(type)) {
    switch (direction) {
      case ComparisonDirection::kEq: return m_b.CreateFCmpOEQ(x, y);
      case ComparisonDirection::kNe: return m_b.CreateFCmpUNE(x, y);
      case ComparisonDirection::kGe: return m_b.CreateFCmpOGE(x, y);
      case ComparisonDirection::kGt: return m_b.CreateFCmpOGT(x, y);
      case ComparisonDirection::kLe: return m_b.CreateFCmpOLE(x, y);
      case ComparisonDirection::kLt: return m_b.CreateFCmpOLT(x, y);
    }
  }
  const bool isSigned = isSignedInteger(type);
  switch (direction) {
    case ComparisonDirection::kEq: return m_b.CreateICmpEQ(x, y);
    case ComparisonDirection::kNe: return m_b.CreateICmpNE(x, y);
    case ComparisonDirection::kGe: return isSigned ? m_b.CreateICmpSGE(x, y) : m_b.CreateICmpUGE(x, y);
    case ComparisonDirection::kGt: return isSigned ? m_b.CreateICmpSGT(x, y) : m_b.CreateICmpUGT(x, y);
    case ComparisonDirection::kLe: return isSigned ? m_b.CreateICmpSLE(x, y) : m_b.CreateICmpULE(x, y);
    case ComparisonDirection::kLt: return isSigned ? m_b.CreateICmpSLT(x, y) : m_b.CreateICmpULT(x, y);
  }
  return fail(instruction, "unknown direction");
}

// Float to integer as XLA converts: toward zero, saturating at the type's ends, NaN to 0. Clamped in the float type
// to the integer range's ends (rounded toward zero into the float type), converted, then the lanes past an end the
// float type cannot hold exactly (f32 -> s32's 2^31 - 1) and NaN patched by selects. Not llvm.fptosi.sat: x86
// lowers that lane by lane (f32 -> s8 took 1 ns an element, f32 -> f16 0.15).
llvm::Value* ElementEmitter::floatToInteger(llvm::Value* x, llvm::Type* target, bool isSigned) {
  llvm::Type* floatType = x->getType();
  const llvm::fltSemantics& semantics = floatType->getScalarType()->getFltSemantics();
  const unsigned bits = target->getScalarSizeInBits();
  const llvm::APInt min = isSigned ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getMinValue(bits);
  const llvm::APInt max = isSigned ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits);
  auto end = [&](const llvm::APInt& value, bool* exact) {
    llvm::APFloat f(semantics);
    f.convertFromAPInt(value, isSigned, llvm::APFloat::rmTowardZero);
    llvm::APSInt back(bits, !isSigned);
    bool isExact = false;
    f.convertToInteger(back, llvm::APFloat::rmTowardZero, &isExact);
    *exact = isExact && back == value;
    return f;
  };
  bool loExact = false;
  bool hiExact = false;
  llvm::Constant* lo = llvm::ConstantFP::get(floatType, end(min, &loExact));
  llvm::Constant* hi = llvm::ConstantFP::get(floatType, end(max, &hiExact));
  llvm::Value* below = m_b.CreateFCmpOLT(x, lo);
  llvm::Value* above = m_b.CreateFCmpOGT(x, hi);
  llvm::Value* clamped = m_b.CreateSelect(above, hi, m_b.CreateSelect(below, lo, x));
  llvm::Value* r = isSigned ? m_b.CreateFPToSI(clamped, target) : m_b.CreateFPToUI(clamped, target);
  if (!hiExact) r = m_b.CreateSelect(above, llvm::ConstantInt::get(target, max), r);
  if (!loExact) r = m_b.CreateSelect(below, llvm::ConstantInt::get(target, min), r);
  return m_b.CreateSelect(m_b.CreateFCmpUNO(x, x), llvm::Constant::getNullValue(target), r);  // NaN: fptosi's poison
}

llvm::Value* ElementEmitter::convert(PrimitiveType from, PrimitiveType to, llvm::Value* x) {
  llvm::Type* target = computeType(to);
  if (from == to) return x;
  if (isComplex(to)) {
    // To a complex type: a complex operand part by part, a real one as the real part (imaginary part 0).
    const PrimitiveType part = complexPartType(to);
    if (isComplex(from)) {
      auto [re, im] = m_complex.complexParts(x);
      return m_complex.makeComplex(to, convert(complexPartType(from), part, re),
                                   convert(complexPartType(from), part, im));
    }
    return m_complex.makeComplex(to, convert(from, part, x), llvm::ConstantFP::get(computeType(part), 0.0));
  }
  if (to == PrimitiveType::kPred) {
    return isFloatingPoint(from) ? m_b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                                 : m_b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }
  if (isFloatingPoint(from) && isFloatingPoint(to)) {
    llvm::Value* r = x->getType() == target ? x : m_b.CreateFPCast(x, target);
    return roundTo(to, r);
  }
  if (isFloatingPoint(to)) {  // integer or pred to float
    llvm::Value* r = (isSignedInteger(from)) ? m_b.CreateSIToFP(x, target) : m_b.CreateUIToFP(x, target);
    return roundTo(to, r);
  }
  if (isFloatingPoint(from)) return floatToInteger(x, target, isSignedInteger(to));
  return isSignedInteger(from) ? m_b.CreateSExtOrTrunc(x, target) : m_b.CreateZExtOrTrunc(x, target);
}

llvm::Value* ElementEmitter::constantValue(const HloInstruction* instruction, const Index& index) {
  const Literal* literal = instruction->literal();
  const Shape& shape = instruction->shape();
  const PrimitiveType type = shape.elementType();
  if (literal == nullptr || (literal->kind() != Literal::Kind::kFloat && literal->kind() != Literal::Kind::kInteger) ||
      literal->valueCount() != shape.elementCount()) {
    return fail(instruction, "constant value not available");
  }
  if (isComplex(type) && (literal->kind() != Literal::Kind::kFloat ||
                          literal->floatValues().size() != 2 * static_cast<size_t>(shape.elementCount()))) {
    return fail(instruction, "complex constant value not available");
  }
  auto scalarConstant = [&](int64_t i) -> llvm::Value* {
    llvm::Type* t = computeType(type);
    if (isComplex(type)) {
      // Literal values of a complex constant: (re, im) pairs one after the other.
      llvm::Type* part = computeType(complexPartType(type));
      const auto at = static_cast<size_t>(2 * i);
      return llvm::ConstantStruct::get(llvm::cast<llvm::StructType>(t),
                                       {llvm::ConstantFP::get(part, literal->floatValues()[at]),
                                        llvm::ConstantFP::get(part, literal->floatValues()[at + 1])});
    }
    if (isFloatingPoint(type)) return llvm::ConstantFP::get(t, literal->asDouble(i));
    int64_t v = literal->kind() == Literal::Kind::kInteger ? literal->integerValues()[static_cast<size_t>(i)]
                                                           : static_cast<int64_t>(literal->asDouble(i));
    return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), isSignedInteger(type));
  };
  if (shape.elementCount() == 1 || literal->isSplat()) return scalarConstant(0);
  // A table in a global, read at the index.
  auto it = m_constantGlobals.find(instruction);
  llvm::GlobalVariable* global = nullptr;
  if (it != m_constantGlobals.end()) {
    global = it->second;
  } else {
    llvm::Type* storage = storageType(type);
    std::vector<llvm::Constant*> elements;
    for (int64_t i = 0; i < shape.elementCount(); ++i) {
      elements.push_back(llvm::cast<llvm::Constant>(toStorageConstant(type, scalarConstant(i))));
    }
    auto* arrayType = llvm::ArrayType::get(storage, static_cast<uint64_t>(shape.elementCount()));
    const unsigned addressSpace = m_target == KernelTarget::kNvptx ? 1 : 0;
    global = new llvm::GlobalVariable(m_module, arrayType, true, llvm::GlobalValue::InternalLinkage,
                                      llvm::ConstantArray::get(arrayType, elements), "constant_table", nullptr,
                                      llvm::GlobalValue::NotThreadLocal, addressSpace);
    m_constantGlobals[instruction] = global;
  }
  return load(global, type, linearOf(index, shape));
}

llvm::Value* ElementEmitter::toStorageConstant(PrimitiveType type, llvm::Value* v) {
  // Constant folding through the builder gives constants for constant inputs.
  return toStorage(type, v);
}

llvm::Value* ElementEmitter::generateComputed(const HloInstruction* instruction, const Index& index) {
  const Shape& shape = instruction->shape();
  const PrimitiveType type = shape.elementType();
  const HloOpcode opcode = instruction->opcode();
  if ((isElementwise(opcode) || opcode == HloOpcode::kConvert) && opcode != HloOpcode::kSelect &&
      instruction->operandCount() > 0 &&
      (isComplex(type) || isComplex(instruction->operand(0)->shape().elementType()))) {
    return m_complex.complexElementwise(instruction, index);
  }
  switch (opcode) {
    case HloOpcode::kParameter: return fail(instruction, "parameter without a buffer");
    case HloOpcode::kConstant: return constantValue(instruction, index);
    case HloOpcode::kCompare: {
      llvm::Value* x = operandAt(instruction, 0, index);
      llvm::Value* y = operandAt(instruction, 1, index);
      return compare(instruction, x, y);
    }
    case HloOpcode::kSelect: {
      llvm::Value* p = operandAt(instruction, 0, index);
      llvm::Value* x = operandAt(instruction, 1, index);
      llvm::Value* y = operandAt(instruction, 2, index);
      return m_b.CreateSelect(p, x, y);
    }
    case HloOpcode::kClamp: {
      llvm::Value* lo = operandAt(instruction, 0, index);
      llvm::Value* x = operandAt(instruction, 1, index);
      llvm::Value* hi = operandAt(instruction, 2, index);
      if (isFloatingPoint(type)) {
        // min(max(x, lo), hi) with XLA's NaN-propagating max/min.
        llvm::Value* m = m_b.CreateSelect(m_b.CreateFCmpOGT(x, lo), x, lo);
        m = m_b.CreateSelect(m_b.CreateFCmpUNO(x, lo), llvm::ConstantFP::getNaN(x->getType()), m);
        llvm::Value* r = m_b.CreateSelect(m_b.CreateFCmpOLT(m, hi), m, hi);
        return m_b.CreateSelect(m_b.CreateFCmpUNO(m, hi), llvm::ConstantFP::getNaN(x->getType()), r);
      }
      const bool isSigned = isSignedInteger(type);
      llvm::Value* m = m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(x, lo) : m_b.CreateICmpULT(x, lo), lo, x);
      return m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(hi, m) : m_b.CreateICmpULT(hi, m), hi, m);
    }
    case HloOpcode::kConvert:
      return convert(instruction->operand(0)->shape().elementType(), type, operandAt(instruction, 0, index));
    case HloOpcode::kIsFinite: {
      llvm::Value* x = operandAt(instruction, 0, index);
      return m_b.CreateFCmpOLT(intrinsic(llvm::Intrinsic::fabs, {x}), llvm::ConstantFP::getInfinity(x->getType()));
    }
    case HloOpcode::kBroadcast: {
      const HloInstruction* operand = instruction->operand(0);
      const std::vector<int64_t> dims = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
      if (static_cast<int>(dims.size()) != operand->shape().rank()) return fail(instruction, "bad dimensions");
      Index operandIndex;
      for (int64_t d : dims) operandIndex.dims.push_back(index.dims[static_cast<size_t>(d)]);
      return generate(operand, operandIndex);
    }
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast: {
      const HloInstruction* operand = instruction->operand(0);
      if (operand->shape().elementType() != type) {
        // XLA's own modules (after layout assignment) write a bitcast-convert of one width as a bitcast: the same
        // bytes under another type, e.g. f32 -> s32 in the total-order comparator of a TopK or a sort.
        if (opcode == HloOpcode::kBitcast && operand->shape().dimensions() == shape.dimensions() &&
            elementByteSize(operand->shape().elementType()) == elementByteSize(type)) {
          return bitcastConvert(instruction, index);
        }
        return fail(instruction, "bitcast changing the element type and the dimensions or the width");
      }
      const std::vector<int64_t> toPhysical = physicalStrides(shape);
      const std::vector<int64_t> fromPhysical = physicalStrides(operand->shape());
      if (opcode == HloOpcode::kReshape || (toPhysical == rowMajorStrides(shape.dimensions()) &&
                                            fromPhysical == rowMajorStrides(operand->shape().dimensions()))) {
        // Only dimensions of size 1 added or dropped ([rows] -> [rows,1]): the operand's index is the same
        // index values without them, so values computed once per row (kernel_emitter's row reductions) are
        // found again by their index instead of through a linear index.
        std::vector<llvm::Value*> kept;
        std::vector<int64_t> keptSizes;
        for (size_t d = 0; d < index.dims.size(); ++d) {
          if (shape.dimension(static_cast<int>(d)) == 1) continue;
          kept.push_back(index.dims[d]);
          keptSizes.push_back(shape.dimension(static_cast<int>(d)));
        }
        std::vector<int64_t> operandSizes;
        for (int64_t d : operand->shape().dimensions()) {
          if (d != 1) operandSizes.push_back(d);
        }
        if (keptSizes == operandSizes) {
          Index operandIndex;
          operandIndex.linear = index.linear;
          size_t next = 0;
          for (int64_t d : operand->shape().dimensions()) operandIndex.dims.push_back(d == 1 ? i64(0) : kept[next++]);
          return generate(operand, operandIndex);
        }
        return generate(operand, delinearize(linearOf(index, shape), operand->shape().dimensions()));
      }
      // A bitcast between layouts: result index -> physical offset -> operand index (the evaluator's rule).
      llvm::Value* physical = i64(0);
      for (size_t d = 0; d < index.dims.size(); ++d) {
        physical = m_b.CreateAdd(physical, m_b.CreateMul(index.dims[d], i64(toPhysical[d])));
      }
      Index operandIndex;
      const std::vector<int64_t>& dims = operand->shape().dimensions();
      for (size_t d = 0; d < dims.size(); ++d) {
        operandIndex.dims.push_back(m_b.CreateURem(m_b.CreateUDiv(physical, i64(fromPhysical[d])), i64(dims[d])));
      }
      return generate(operand, operandIndex);
    }
    case HloOpcode::kTranspose: {
      const std::vector<int64_t> perm = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
      if (static_cast<int>(perm.size()) != shape.rank()) return fail(instruction, "bad dimensions");
      Index operandIndex;
      operandIndex.dims.resize(perm.size());
      for (size_t j = 0; j < perm.size(); ++j) operandIndex.dims[static_cast<size_t>(perm[j])] = index.dims[j];
      return generate(instruction->operand(0), operandIndex);
    }
    case HloOpcode::kReverse: {
      const HloInstruction* operand = instruction->operand(0);
      Index operandIndex{index.dims, nullptr};
      for (int64_t d : instruction->attributes().dimensions.value_or(std::vector<int64_t>{})) {
        operandIndex.dims[static_cast<size_t>(d)] =
            m_b.CreateSub(i64(shape.dimension(static_cast<int>(d)) - 1), index.dims[static_cast<size_t>(d)]);
      }
      return generate(operand, operandIndex);
    }
    case HloOpcode::kSlice: {
      if (!instruction->attributes().slice) return fail(instruction, "slice without slice={...}");
      const auto& slice = *instruction->attributes().slice;
      Index operandIndex;
      for (size_t i = 0; i < slice.size(); ++i) {
        operandIndex.dims.push_back(
            m_b.CreateAdd(i64(slice[i].start), m_b.CreateMul(index.dims[i], i64(slice[i].stride))));
      }
      return generate(instruction->operand(0), operandIndex);
    }
    case HloOpcode::kDynamicSlice: {
      const HloInstruction* operand = instruction->operand(0);
      Index operandIndex;
      for (int i = 0; i < shape.rank(); ++i) {
        llvm::Value* start = clampedStart(instruction, 1 + i, operand->shape().dimension(i) - shape.dimension(i));
        operandIndex.dims.push_back(m_b.CreateAdd(start, index.dims[static_cast<size_t>(i)]));
      }
      return generate(operand, operandIndex);
    }
    case HloOpcode::kDynamicUpdateSlice: return dynamicUpdateSlice(instruction, index);
    case HloOpcode::kIota: {
      const int64_t d = instruction->attributes().iotaDimension.value_or(0);
      llvm::Value* i = index.dims[static_cast<size_t>(d)];
      return convert(PrimitiveType::kS64, type, i);
    }
    case HloOpcode::kConcatenate: {
      const std::vector<int64_t> dims = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
      if (dims.size() != 1) return fail(instruction, "concatenate without one dimension");
      return concatenate(instruction, index, dims[0], 0, 0);
    }
    case HloOpcode::kBitcastConvert: return bitcastConvert(instruction, index);
    case HloOpcode::kPad: return pad(instruction, index);
    case HloOpcode::kReduce: return m_reductions.reduce(instruction, index);
    case HloOpcode::kDot: return m_dots.dot(instruction, index);
    case HloOpcode::kReduceWindow: return m_windows.reduceWindow(instruction, index);
    case HloOpcode::kConvolution: return m_windows.convolution(instruction, index);
    case HloOpcode::kSelectAndScatter: return m_windows.selectAndScatter(instruction, index);
    case HloOpcode::kGather: return m_windows.gather(instruction, index);
    default: break;
  }
  if (isElementwise(opcode) && (instruction->operandCount() == 1 || instruction->operandCount() == 2)) {
    const PrimitiveType operandType = instruction->operand(0)->shape().elementType();
    if (instruction->operandCount() == 1) {
      llvm::Value* x = operandAt(instruction, 0, index);
      if (isFloatingPoint(operandType)) return roundTo(type, floatUnary(instruction, x));
      return integerUnary(instruction, operandType, x);
    }
    llvm::Value* x = operandAt(instruction, 0, index);
    llvm::Value* y = operandAt(instruction, 1, index);
    if (isFloatingPoint(operandType)) return roundTo(type, floatBinary(instruction, x, y));
    return integerBinary(instruction, operandType, x, y);
  }
  if (opcode == HloOpcode::kCopy) return operandAt(instruction, 0, index);
  return fail(instruction, "opcode not supported by the elemental emitter");
}

// XLA's bitcast-convert: the same bits under another element type. Between types of one width it is elementwise;
// to a type k times narrower the result gains a last dimension of k parts, least significant first (little
// endian, as XLA defines it); to a type k times wider the operand's last dimension of k parts is consumed. Bits
// go through the storage representation, so f16/bf16 keep theirs exactly.
llvm::Value* ElementEmitter::bitcastConvert(const HloInstruction* instruction, const Index& index) {
  const HloInstruction* operand = instruction->operand(0);
  const PrimitiveType from = operand->shape().elementType();
  const PrimitiveType to = instruction->shape().elementType();
  if (from == PrimitiveType::kPred || to == PrimitiveType::kPred) return fail(instruction, "bitcast-convert of pred");
  const auto fromBits = static_cast<unsigned>(8 * elementByteSize(from));
  const auto toBits = static_cast<unsigned>(8 * elementByteSize(to));
  const std::vector<int64_t>& in = operand->shape().dimensions();
  const std::vector<int64_t>& out = instruction->shape().dimensions();
  auto bitsOf = [&](const Index& operandIndex) {
    return m_b.CreateBitCast(toStorage(from, generate(operand, operandIndex)), m_b.getIntNTy(fromBits));
  };
  llvm::Value* bits = nullptr;
  if (fromBits == toBits) {
    if (in != out) return fail(instruction, "bitcast-convert changing the dimensions");
    bits = bitsOf(index);
  } else if (fromBits > toBits) {
    const int64_t parts = fromBits / toBits;
    if (out.empty() || out.back() != parts || std::vector<int64_t>(out.begin(), out.end() - 1) != in) {
      return fail(instruction,
                  "bitcast-convert to a narrower type needs the operand's dimensions plus one of the parts");
    }
    Index operandIndex{std::vector<llvm::Value*>(index.dims.begin(), index.dims.end() - 1), nullptr};
    llvm::Value* shift = m_b.CreateMul(m_b.CreateZExtOrTrunc(index.dims.back(), m_b.getIntNTy(fromBits)),
                                       llvm::ConstantInt::get(m_b.getIntNTy(fromBits), toBits));
    bits = m_b.CreateTrunc(m_b.CreateLShr(bitsOf(operandIndex), shift), m_b.getIntNTy(toBits));
  } else {
    const int64_t parts = toBits / fromBits;
    if (in.empty() || in.back() != parts || std::vector<int64_t>(in.begin(), in.end() - 1) != out) {
      return fail(instruction, "bitcast-convert to a wider type needs a last operand dimension of the parts");
    }
    bits = llvm::ConstantInt::get(m_b.getIntNTy(toBits), 0);
    for (int64_t part = 0; part < parts; ++part) {
      Index operandIndex{index.dims, nullptr};
      operandIndex.dims.push_back(i64(part));
      llvm::Value* piece = m_b.CreateZExt(bitsOf(operandIndex), m_b.getIntNTy(toBits));
      bits = m_b.CreateOr(bits, m_b.CreateShl(piece, static_cast<uint64_t>(part) * fromBits));
    }
  }
  if (bits->getType() != storageType(to)) bits = m_b.CreateBitCast(bits, storageType(to));
  switch (to) {
    case PrimitiveType::kF16: return m_b.CreateFPExt(bits, m_b.getFloatTy());
    case PrimitiveType::kBF16:
      return m_b.CreateBitCast(m_b.CreateShl(m_b.CreateZExt(bits, m_b.getInt32Ty()), 16), m_b.getFloatTy());
    default: return isByteFloat(to) ? byteFloatToFloat(to, bits) : bits;
  }
}

llvm::Value* ElementEmitter::concatenate(const HloInstruction* instruction, const Index& index, int64_t dim,
                                         int operand, int64_t offset) {
  const HloInstruction* op = instruction->operand(operand);
  const int64_t size = op->shape().dimension(static_cast<int>(dim));
  auto here = [&]() {
    Index operandIndex{index.dims, nullptr};
    operandIndex.dims[static_cast<size_t>(dim)] = m_b.CreateSub(index.dims[static_cast<size_t>(dim)], i64(offset));
    return generate(op, operandIndex);
  };
  if (operand + 1 == instruction->operandCount()) return here();
  llvm::Value* inThis = m_b.CreateICmpSLT(index.dims[static_cast<size_t>(dim)], i64(offset + size));
  return branch(inThis, computeType(instruction->shape().elementType()), here,
                [&]() { return concatenate(instruction, index, dim, operand + 1, offset + size); });
}

// The start of `instruction`'s window along `dim`, from its scalar start operand `operand`, clamped as XLA (and
// the evaluator) clamp it: into [0, maxStart], so that the whole window lies inside the operand.
llvm::Value* ElementEmitter::clampedStart(const HloInstruction* instruction, int operand, int64_t maxStart) {
  const HloInstruction* startOperand = instruction->operand(operand);
  llvm::Value* start = generate(startOperand, Index{});
  start = isSignedInteger(startOperand->shape().elementType()) ? m_b.CreateSExtOrTrunc(start, m_b.getInt64Ty())
                                                               : m_b.CreateZExtOrTrunc(start, m_b.getInt64Ty());
  start = m_b.CreateSelect(m_b.CreateICmpSLT(start, i64(0)), i64(0), start);
  return m_b.CreateSelect(m_b.CreateICmpSGT(start, i64(maxStart)), i64(maxStart), start);
}

// Elemental dynamic-update-slice: the update's element where the index lies in the (clamped) window, else the
// operand's. Reads the whole operand, so the result may live in a buffer of its own (no in-place update).
llvm::Value* ElementEmitter::dynamicUpdateSlice(const HloInstruction* instruction, const Index& index) {
  const Shape& shape = instruction->shape();
  const HloInstruction* update = instruction->operand(1);
  if (instruction->operandCount() != 2 + shape.rank() || update->shape().rank() != shape.rank()) {
    return fail(instruction, "dynamic-update-slice needs one scalar start index per dimension");
  }
  llvm::Value* inside = m_b.getTrue();
  Index updateIndex;
  for (int i = 0; i < shape.rank(); ++i) {
    const int64_t size = update->shape().dimension(i);
    if (size > shape.dimension(i)) return fail(instruction, "update larger than the operand");
    llvm::Value* start = clampedStart(instruction, 2 + i, shape.dimension(i) - size);
    llvm::Value* relative = m_b.CreateSub(index.dims[static_cast<size_t>(i)], start);
    // Unsigned: a negative relative index is out of the window too.
    inside = m_b.CreateAnd(inside, m_b.CreateICmpULT(relative, i64(size)));
    updateIndex.dims.push_back(relative);
  }
  return branch(
      inside, computeType(shape.elementType()), [&]() { return generate(update, updateIndex); },
      [&]() { return generate(instruction->operand(0), index); });
}

void ElementEmitter::dynamicUpdateSliceInPlace(const HloInstruction* instruction, llvm::Value* out, llvm::Value* begin,
                                               llvm::Value* end) {
  const Shape& shape = instruction->shape();
  const HloInstruction* update = instruction->operand(1);
  if (instruction->operandCount() != 2 + shape.rank() || update->shape().rank() != shape.rank()) {
    fail(instruction, "dynamic-update-slice needs one scalar start index per dimension");
    return;
  }
  // The clamped starts do not depend on the element: computed once, before the loop.
  std::vector<llvm::Value*> starts;
  for (int i = 0; i < shape.rank(); ++i) {
    const int64_t size = update->shape().dimension(i);
    if (size > shape.dimension(i)) {
      fail(instruction, "update larger than the operand");
      return;
    }
    starts.push_back(clampedStart(instruction, 2 + i, shape.dimension(i) - size));
  }
  loop(
      begin, end,
      [&](llvm::Value* i) {
        Index updateIndex = delinearize(i, update->shape().dimensions());
        std::vector<llvm::Value*> target;
        for (size_t d = 0; d < starts.size(); ++d) target.push_back(m_b.CreateAdd(starts[d], updateIndex.dims[d]));
        store(out, shape.elementType(), linearize(target, shape.dimensions()), generate(update, updateIndex));
      },
      "update");
}

llvm::Value* ElementEmitter::pad(const HloInstruction* instruction, const Index& index) {
  if (!instruction->attributes().padding) return fail(instruction, "pad without padding=");
  const auto& padding = *instruction->attributes().padding;
  const HloInstruction* operand = instruction->operand(0);
  llvm::Value* inside = m_b.getTrue();
  Index operandIndex;
  for (size_t i = 0; i < padding.size(); ++i) {
    llvm::Value* t = m_b.CreateSub(index.dims[i], i64(padding[i].low));
    const int64_t step = padding[i].interior + 1;
    llvm::Value* q = step == 1 ? t : m_b.CreateSDiv(t, i64(step));
    inside = m_b.CreateAnd(inside, m_b.CreateICmpSGE(t, i64(0)));
    if (step != 1) inside = m_b.CreateAnd(inside, m_b.CreateICmpEQ(m_b.CreateSRem(t, i64(step)), i64(0)));
    inside = m_b.CreateAnd(inside, m_b.CreateICmpSLT(q, i64(operand->shape().dimension(static_cast<int>(i)))));
    operandIndex.dims.push_back(q);
  }
  return branch(
      inside, computeType(instruction->shape().elementType()), [&]() { return generate(operand, operandIndex); },
      [&]() { return generate(instruction->operand(1), Index{}); });
}

}  // namespace fusionscope::core
