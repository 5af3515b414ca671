// The simplifier's arithmetic rewrites: clamps from min/max, merged constant factors, products with predicates and
// divisions, each as XLA's simplifier writes it.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/ir/permutation.h"
#include "core/ir/shape_rules.h"
#include "core/passes/computation_simplifier.h"
#include "core/passes/constant_folding.h"

namespace fusionscope::core::simplifier {

// max(lo, min(x, hi)) and min(hi, max(x, lo)), in either operand order, with lo and hi broadcast scalar
// constants and lo < hi => clamp(lo, x, hi), as XLA's simplifier does (jnp.clip, ReLU6): one op that reads x
// once. Returns whether `inst` was replaced.
bool ComputationSimplifier::clampFromMinMax(HloInstruction* inst) {
  const HloOpcode outer = inst->opcode();
  if ((outer != HloOpcode::kMaximum && outer != HloOpcode::kMinimum) || inst->operandCount() != 2 ||
      !inst->shape().isArray()) {
    return false;
  }
  const HloOpcode inner = outer == HloOpcode::kMaximum ? HloOpcode::kMinimum : HloOpcode::kMaximum;
  for (int i = 0; i < 2; ++i) {
    HloInstruction* bound = inst->operand(i);
    HloInstruction* other = inst->operand(1 - i);
    if (!scalarConstant(*bound) || other->opcode() != inner || other->operandCount() != 2) continue;
    for (int j = 0; j < 2; ++j) {
      HloInstruction* innerBound = other->operand(j);
      HloInstruction* x = other->operand(1 - j);
      if (!scalarConstant(*innerBound) || x->shape() != inst->shape()) continue;
      HloInstruction* lo = outer == HloOpcode::kMaximum ? bound : innerBound;
      HloInstruction* hi = outer == HloOpcode::kMaximum ? innerBound : bound;
      if (!(*scalarConstant(*lo) < *scalarConstant(*hi))) continue;
      HloInstruction* clamp = m_computation.addInstruction(inst->name(), HloOpcode::kClamp, inst->shape(), {lo, x, hi});
      clamp->mutableAttributes().metadata = inst->attributes().metadata;
      replace(inst, clamp);
      push(clamp);
      return true;
    }
  }
  return false;
}

// a / broadcast(b) => a * broadcast(1 / b) for floating-point a when b has fewer elements and the broadcast is
// b's only user: one division per element of b instead of per element of a, as XLA CPU's simplifier does (a
// softmax's division by the row sums becomes a multiplication by their reciprocals; a division by a constant, by
// the folded reciprocal, however many read it; so is a / c for a constant c of a's shape). A computed b that others
// read too stays as it is, as in XLA
// (gp_regression's kernel matrix divides by exp(2 log_scale) twice: once where the gradient reads that exp again,
// which keeps its division, and once where nothing else does). Only for the cpu backend, where XLA's dumps show it.
bool ComputationSimplifier::rewriteDivideByBroadcast(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kDivide || inst->operandCount() != 2 || !inst->shape().isArray() ||
      !isFloatingPoint(inst->shape().elementType())) {
    return false;
  }
  HloInstruction* broadcast = inst->operand(1);
  const PrimitiveType type = inst->shape().elementType();
  if (broadcast->opcode() == HloOpcode::kConstant && inst->operand(0)->opcode() != HloOpcode::kConstant &&
      broadcast->shape().elementType() == type && broadcast->shape().elementCount() == 1) {
    // a / c for a scalar a and constant c (a quantization scale's `amax / 448`): a * (1 / c), the reciprocal folded,
    // as XLA writes it. (An array constant here is a broadcast our constant folding expanded, which XLA keeps as a
    // broadcast: that division is the rule below's.)
    HloInstruction* ones = splat(Literal::floats(Shape::scalar(type), {1.0}), broadcast->shape());
    HloInstruction* reciprocal =
        m_computation.addInstruction("divide", HloOpcode::kDivide, broadcast->shape(), {ones, broadcast});
    HloInstruction* product =
        m_computation.addInstruction("multiply", HloOpcode::kMultiply, inst->shape(), {inst->operand(0), reciprocal});
    for (HloInstruction* created : {ones, reciprocal, product}) {
      created->mutableAttributes().metadata = inst->attributes().metadata;
    }
    replace(inst, product);
    for (HloInstruction* created : {ones, reciprocal, product}) push(created);
    return true;
  }
  if (broadcast->opcode() != HloOpcode::kBroadcast || broadcast->operandCount() != 1 ||
      !broadcast->attributes().dimensions) {
    return false;
  }
  HloInstruction* divisor = broadcast->operand(0);
  if (!divisor->shape().isArray() || divisor->shape().elementType() != inst->shape().elementType() ||
      divisor->shape().elementCount() >= inst->shape().elementCount() ||
      (divisor->opcode() != HloOpcode::kConstant && !usedOnlyBy(*divisor, *broadcast))) {
    return false;
  }
  HloInstruction* ones = splat(Literal::floats(Shape::scalar(type), {1.0}), divisor->shape());
  HloInstruction* reciprocal =
      m_computation.addInstruction("divide", HloOpcode::kDivide, divisor->shape(), {ones, divisor});
  HloInstruction* spread =
      m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, broadcast->shape(), {reciprocal});
  spread->mutableAttributes().dimensions = broadcast->attributes().dimensions;
  HloInstruction* product =
      m_computation.addInstruction("multiply", HloOpcode::kMultiply, inst->shape(), {inst->operand(0), spread});
  for (HloInstruction* created : {ones, reciprocal, spread, product}) {
    created->mutableAttributes().metadata = inst->attributes().metadata;
  }
  replace(inst, product);
  for (HloInstruction* created : {ones, reciprocal, spread, product}) push(created);
  return true;
}

// a / exp(b) => a * exp(-b) for real floating-point values, as XLA CPU's simplifier does (its fast math allows
// it): a multiplication where a division was, and 1 / exp(b), as the rule above writes a reciprocal, becomes
// exp(-b) once the product with one goes. Only for the cpu backend, with the rule above.
bool ComputationSimplifier::divideByExp(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kDivide || inst->operandCount() != 2 || !inst->shape().isArray() ||
      !isFloatingPoint(inst->shape().elementType()) || isComplex(inst->shape().elementType())) {
    return false;
  }
  HloInstruction* exp = inst->operand(1);
  if (exp->opcode() != HloOpcode::kExp || exp->operandCount() != 1 || exp->shape() != inst->shape()) return false;
  HloInstruction* negate =
      m_computation.addInstruction("negate", HloOpcode::kNegate, exp->operand(0)->shape(), {exp->operand(0)});
  HloInstruction* newExp = m_computation.addInstruction("exponential", HloOpcode::kExp, exp->shape(), {negate});
  HloInstruction* product =
      m_computation.addInstruction("multiply", HloOpcode::kMultiply, inst->shape(), {inst->operand(0), newExp});
  for (HloInstruction* created : {negate, newExp, product}) {
    created->mutableAttributes().metadata = inst->attributes().metadata;
  }
  replace(inst, product);
  for (HloInstruction* created : {negate, newExp, product}) push(created);
  return true;
}

// exp(a) * exp(b) => exp(a + b), as XLA's simplifier rewrites a product of exponentials on both backends (whatever
// else reads them): one transcendental where there were two, and exp(x)^2 written as a product is exp(x + x), which
// a division by it then turns into exp(-(x + x)). Results may round differently.
bool ComputationSimplifier::productOfExps(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kMultiply || inst->operandCount() != 2 || !inst->shape().isArray() ||
      !isFloatingPoint(inst->shape().elementType())) {
    return false;
  }
  HloInstruction* lhs = inst->operand(0);
  HloInstruction* rhs = inst->operand(1);
  auto isExp = [&](const HloInstruction* value) {
    return value->opcode() == HloOpcode::kExp && value->operandCount() == 1 && value->shape() == inst->shape() &&
           value->operand(0)->shape() == inst->shape();
  };
  if (!isExp(lhs) || !isExp(rhs)) return false;
  HloInstruction* sum =
      m_computation.addInstruction("add", HloOpcode::kAdd, inst->shape(), {lhs->operand(0), rhs->operand(0)});
  HloInstruction* exp = m_computation.addInstruction("exponential", HloOpcode::kExp, inst->shape(), {sum});
  for (HloInstruction* created : {sum, exp}) created->mutableAttributes().metadata = inst->attributes().metadata;
  m_unusedCandidates.push_back(lhs);
  m_unusedCandidates.push_back(rhs);
  replace(inst, exp);
  for (HloInstruction* created : {sum, exp}) push(created);
  return true;
}

// x % 2^k => x & (2^k - 1) for unsigned integers and, for signed ones, the same on |x| with x's sign given back:
// select(x < 0, -(|x| & m), |x| & m), |x| = select(x < 0, -x, x), as XLA's simplifier writes a remainder by a
// power of two (jnp.linalg.det's pivot parity `count % 2`). Exact for every x (INT_MIN's negation wraps to itself,
// whose low bits are 0).
bool ComputationSimplifier::remainderByPowerOfTwo(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kRemainder || inst->operandCount() != 2 || !inst->shape().isArray() ||
      !isInteger(inst->shape().elementType())) {
    return false;
  }
  const HloInstruction* divisor = inst->operand(1);
  std::optional<double> value = scalarConstant(*divisor);
  if (!value && divisor->opcode() == HloOpcode::kConstant) {
    const Literal* literal = decodedLiteral(*divisor);
    if (literal && literal->valueCount() > 0 && literal->isSplat()) value = literal->asDouble(0);
  }
  if (!value || *value < 1 || *value > 0x1p62 || *value != std::floor(*value)) return false;
  const auto c = static_cast<int64_t>(*value);
  if ((c & (c - 1)) != 0) return false;
  const Shape& shape = inst->shape();
  const PrimitiveType type = shape.elementType();
  HloInstruction* x = inst->operand(0);
  std::vector<HloInstruction*> created;
  auto make = [&](HloOpcode opcode, Shape result, std::vector<HloInstruction*> operands) {
    HloInstruction* made =
        m_computation.addInstruction(std::string(opcodeName(opcode)), opcode, std::move(result), operands);
    made->mutableAttributes().metadata = inst->attributes().metadata;
    created.push_back(made);
    return made;
  };
  HloInstruction* mask = splat(Literal::integers(Shape::scalar(type), {c - 1}), shape);
  created.push_back(mask);
  HloInstruction* result = nullptr;
  if (isUnsignedInteger(type)) {
    result = make(HloOpcode::kAnd, shape, {x, mask});
  } else {
    HloInstruction* zero = splat(Literal::integers(Shape::scalar(type), {0}), shape);
    created.push_back(zero);
    Shape predicate(PrimitiveType::kPred, shape.dimensions());
    predicate.setLayout(shape.layout());
    HloInstruction* negative = make(HloOpcode::kCompare, predicate, {x, zero});
    negative->mutableAttributes().direction = ComparisonDirection::kLt;
    HloInstruction* magnitude = make(HloOpcode::kSelect, shape, {negative, make(HloOpcode::kNegate, shape, {x}), x});
    HloInstruction* low = make(HloOpcode::kAnd, shape, {magnitude, mask});
    result = make(HloOpcode::kSelect, shape, {negative, make(HloOpcode::kNegate, shape, {low}), low});
  }
  replace(inst, result);
  for (HloInstruction* made : created) push(made);
  return true;
}

// Quotients of quotients become one division, as XLA's simplifier writes them on both backends (not for integers,
// whose divisions truncate): (a / b) / (c / d) => (a * d) / (b * c), (a / b) / c => a / (b * c) and
// a / (b / c) => (a * c) / b. AdamW's m / (1 - b1^t) / (sqrt(v_hat) + eps) is one division by a product. The
// inner quotient stays for its other readers. Floating-point results may round differently.
bool ComputationSimplifier::divideOfDivide(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kDivide || inst->operandCount() != 2 || !inst->shape().isArray() ||
      !isFloatingPoint(inst->shape().elementType())) {
    return false;
  }
  auto isQuotient = [&](const HloInstruction* value) {
    return value->opcode() == HloOpcode::kDivide && value->operandCount() == 2 && value->shape() == inst->shape();
  };
  HloInstruction* numerator = inst->operand(0);
  HloInstruction* denominator = inst->operand(1);
  const bool outerTop = isQuotient(numerator);
  const bool outerBottom = isQuotient(denominator);
  if (!outerTop && !outerBottom) return false;
  auto multiply = [&](HloInstruction* a, HloInstruction* b) {
    HloInstruction* product = m_computation.addInstruction("multiply", HloOpcode::kMultiply, inst->shape(), {a, b});
    product->mutableAttributes().metadata = inst->attributes().metadata;
    return product;
  };
  HloInstruction* top = nullptr;
  HloInstruction* bottom = nullptr;
  if (outerTop && outerBottom) {
    top = multiply(numerator->operand(0), denominator->operand(1));
    bottom = multiply(numerator->operand(1), denominator->operand(0));
  } else if (outerTop) {
    top = numerator->operand(0);
    bottom = multiply(numerator->operand(1), denominator);
  } else {
    top = multiply(numerator, denominator->operand(1));
    bottom = denominator->operand(0);
  }
  HloInstruction* quotient = m_computation.addInstruction("divide", HloOpcode::kDivide, inst->shape(), {top, bottom});
  quotient->mutableAttributes().metadata = inst->attributes().metadata;
  replace(inst, quotient);
  for (HloInstruction* created : {top, bottom, quotient}) push(created);
  return true;
}

// (a * c1) * c2 => a * (c1 * c2), in either operand order, for a that is not a constant and c1, c2 both constants
// or both broadcasts of scalar constants, as XLA's simplifier does (a running statistic's momentum times a mean's
// 1/n): the constants fold into one, one multiply per element instead of two. A constant factor also joins a
// broadcast scalar s that multiplies the product next, when nothing else reads the product: (a * c) * broadcast(s)
// => a * broadcast(s * c), as XLA CPU's dumps show (gp_regression's -0.5 * distances / exp(2 log_scale) multiplies
// the distances once, by one scalar). Floating-point products may round differently.
bool ComputationSimplifier::mergeConstantFactors(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kMultiply || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
  auto isConstant = [](const HloInstruction* value) { return value->opcode() == HloOpcode::kConstant; };
  auto isScalarSplat = [&](const HloInstruction* value) {
    return value->opcode() == HloOpcode::kBroadcast && value->operandCount() == 1 && isConstant(value->operand(0)) &&
           value->operand(0)->shape().isScalar();
  };
  for (int i = 0; i < 2; ++i) {
    HloInstruction* c2 = inst->operand(i);
    HloInstruction* inner = inst->operand(1 - i);
    if (inner->opcode() != HloOpcode::kMultiply || inner->operandCount() != 2 || inner->shape() != inst->shape()) {
      continue;
    }
    for (int j = 0; j < 2; ++j) {
      HloInstruction* c1 = inner->operand(j);
      HloInstruction* a = inner->operand(1 - j);
      if (isConstant(a)) continue;
      HloInstruction* factor = nullptr;
      if (isConstant(c1) && isConstant(c2) && c1->shape() == c2->shape()) {
        factor = m_computation.addInstruction("multiply", HloOpcode::kMultiply, c1->shape(), {c1, c2});
        push(factor);
      } else if (isScalarSplat(c1) && isScalarSplat(c2) && c1->operand(0)->shape() == c2->operand(0)->shape()) {
        HloInstruction* product = m_computation.addInstruction(
            "multiply", HloOpcode::kMultiply, c1->operand(0)->shape(), {c1->operand(0), c2->operand(0)});
        factor = m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, inst->shape(), {product});
        factor->mutableAttributes().dimensions = std::vector<int64_t>{};
        push(product);
        push(factor);
      } else if (isScalarSplat(c1) && c2->opcode() == HloOpcode::kBroadcast && c2->operandCount() == 1 &&
                 c2->operand(0)->shape() == c1->operand(0)->shape() && !isConstant(c2->operand(0)) &&
                 usedOnlyBy(*inner, *inst)) {
        HloInstruction* product = m_computation.addInstruction(
            "multiply", HloOpcode::kMultiply, c1->operand(0)->shape(), {c2->operand(0), c1->operand(0)});
        product->mutableAttributes().metadata = inst->attributes().metadata;
        factor = m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, inst->shape(), {product});
        factor->mutableAttributes().dimensions = std::vector<int64_t>{};
        push(product);
        push(factor);
      } else {
        continue;
      }
      HloInstruction* product =
          m_computation.addInstruction(inst->name(), HloOpcode::kMultiply, inst->shape(), {a, factor});
      product->mutableAttributes().metadata = inst->attributes().metadata;
      replace(inst, product);
      push(product);
      return true;
    }
  }
  return false;
}

// x * convert(p) and convert(p) * x, with p a predicate of the product's dimensions => select(p, x, 0), as XLA's
// simplifier does (JAX's jnp.eye is a convert of `iota == iota`, and the gradient of a product with it multiplies by
// that convert again): the mask stays a predicate, one select instead of a convert and a multiply. Where p is
// false and x is inf or NaN, the select gives 0 and the product NaN; XLA's rewrite accepts that too. Complex products
// too (x * (1 + 0i) is x exactly; XLA's dumps show the select for a complex `a + 8 * jnp.eye(n, dtype=c64)`).
bool ComputationSimplifier::multiplyByPredicate(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kMultiply || inst->operandCount() != 2 || !inst->shape().isArray()) return false;
  const PrimitiveType type = inst->shape().elementType();
  if (type == PrimitiveType::kPred) return false;
  for (int i = 0; i < 2; ++i) {
    HloInstruction* convert = inst->operand(i);
    if (convert->opcode() != HloOpcode::kConvert || convert->operandCount() != 1) continue;
    HloInstruction* predicate = convert->operand(0);
    if (!predicate->shape().isArray() || predicate->shape().elementType() != PrimitiveType::kPred ||
        predicate->shape().dimensions() != inst->shape().dimensions()) {
      continue;
    }
    HloInstruction* zeros = splat(zeroOf(type), inst->shape());
    HloInstruction* select = m_computation.addInstruction("select", HloOpcode::kSelect, inst->shape(),
                                                          {predicate, inst->operand(1 - i), zeros});
    for (HloInstruction* created : {zeros, select}) created->mutableAttributes().metadata = inst->attributes().metadata;
    replace(inst, select);
    for (HloInstruction* created : {zeros->operand(0), zeros, select}) push(created);
    return true;
  }
  return false;
}

// compare(iota, broadcast(c)) and compare(broadcast(c), iota) with a scalar constant c the iota's values [0, n-1]
// all lie on one side of => a broadcast true or false, as XLA's simplifier folds them (JAX's index wrap
// `where(i < 0, i + n, i)` over an iota of indices; the select by the folded predicate then goes too).
bool ComputationSimplifier::compareOfIota(HloInstruction* inst) {
  if (inst->opcode() != HloOpcode::kCompare || inst->operandCount() != 2 || !inst->attributes().direction ||
      !inst->shape().isArray()) {
    return false;
  }
  ComparisonDirection direction = *inst->attributes().direction;
  const HloInstruction* iota = inst->operand(0);
  const HloInstruction* bound = inst->operand(1);
  if (iota->opcode() != HloOpcode::kIota) {
    std::swap(iota, bound);
    switch (direction) {  // c < iota is iota > c
      case ComparisonDirection::kLt: direction = ComparisonDirection::kGt; break;
      case ComparisonDirection::kGt: direction = ComparisonDirection::kLt; break;
      case ComparisonDirection::kLe: direction = ComparisonDirection::kGe; break;
      case ComparisonDirection::kGe: direction = ComparisonDirection::kLe; break;
      default: break;
    }
  }
  if (iota->opcode() != HloOpcode::kIota || !iota->attributes().iotaDimension || !iota->shape().isArray() ||
      !isInteger(iota->shape().elementType())) {
    return false;
  }
  const std::optional<double> c = scalarConstant(*bound);
  const int64_t size = iota->shape().dimension(static_cast<int>(*iota->attributes().iotaDimension));
  if (!c || size <= 0) return false;
  const double low = 0;
  const double high = static_cast<double>(size - 1);
  std::optional<bool> value;
  switch (direction) {
    case ComparisonDirection::kLt:
      value = high < *c ? std::optional(true) : low >= *c ? std::optional(false) : std::nullopt;
      break;
    case ComparisonDirection::kLe:
      value = high <= *c ? std::optional(true) : low > *c ? std::optional(false) : std::nullopt;
      break;
    case ComparisonDirection::kGt:
      value = low > *c ? std::optional(true) : high <= *c ? std::optional(false) : std::nullopt;
      break;
    case ComparisonDirection::kGe:
      value = low >= *c ? std::optional(true) : high < *c ? std::optional(false) : std::nullopt;
      break;
    case ComparisonDirection::kEq:
    case ComparisonDirection::kNe:
      if (*c < low || *c > high || *c != std::floor(*c)) value = direction == ComparisonDirection::kNe;
      break;
  }
  if (!value) return false;
  HloInstruction* constantEverywhere =
      splat(Literal::integers(Shape::scalar(PrimitiveType::kPred), {*value ? 1 : 0}), inst->shape());
  constantEverywhere->mutableAttributes().metadata = inst->attributes().metadata;
  replace(inst, constantEverywhere);
  push(constantEverywhere->operand(0));
  push(constantEverywhere);
  return true;
}

// A broadcast of the scalar constant `value` to `shape` (a constant and a broadcast, added to the computation).
HloInstruction* ComputationSimplifier::splat(Literal value, const Shape& shape) {
  HloInstruction* constant = m_computation.addInstruction("constant", HloOpcode::kConstant, value.shape());
  constant->setLiteral(std::move(value));
  HloInstruction* broadcast = m_computation.addInstruction("broadcast", HloOpcode::kBroadcast, shape, {constant});
  broadcast->mutableAttributes().dimensions = std::vector<int64_t>{};
  return broadcast;
}

}  // namespace fusionscope::core::simplifier
