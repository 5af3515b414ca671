// ElementFunction (scalar programs for reducers and comparators) and the small helpers every kernel file
// shares: index arithmetic, raw attribute parsing and operand checks.

#include <charconv>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/eval/scalar_ops.h"
#include "core/ir/hlo_computation.h"
#include "core/text/attribute_text.h"

namespace fusionscope::core::eval {

int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

Value valueFromScalars(const Shape& shape, const std::vector<Scalar>& scalars) {
  if (isComplex(shape.elementType())) {
    std::vector<double> re(scalars.size());
    std::vector<double> im(scalars.size());
    for (size_t i = 0; i < scalars.size(); ++i) {
      re[i] = scalars[i].f;
      im[i] = scalars[i].im;
    }
    return Value::complex(shape, std::move(re), std::move(im));
  }
  if (isFloatingPoint(shape.elementType())) {
    std::vector<double> out(scalars.size());
    for (size_t i = 0; i < scalars.size(); ++i) out[i] = scalars[i].f;
    return Value::floats(shape, std::move(out));
  }
  std::vector<int64_t> out(scalars.size());
  for (size_t i = 0; i < scalars.size(); ++i) out[i] = scalars[i].i;
  return Value::integers(shape, std::move(out));
}

Status expectArray(const Value& v, std::string_view what) {
  if (v.isArray()) return okStatus();
  return Status::error(fmt::format("{} is {}, not an array", what, v.shape().toString(false)));
}

Status expectSameDims(const Value& v, const Shape& shape, std::string_view what) {
  if (v.isArray() && v.shape().dimensions() == shape.dimensions()) return okStatus();
  return Status::error(fmt::format("{} has shape {}, expected dimensions {}", what, v.shape().toString(false),
                                   dimensionsText(shape.dimensions())));
}

// ---- attributes -------------------------------------------------------------------------------------

std::optional<std::string_view> rawAttribute(const HloInstruction& inst, std::string_view key) {
  const std::string* value = inst.attributes().findRaw(key);
  if (!value) return std::nullopt;
  return std::string_view(*value);
}

StatusOr<std::vector<int64_t>> rawIntList(const HloInstruction& inst, std::string_view key,
                                          std::optional<std::vector<int64_t>> missing) {
  std::optional<std::string_view> text = rawAttribute(inst, key);
  if (!text) {
    if (missing) return *missing;
    return Status::error(fmt::format("missing attribute {}", key));
  }
  std::vector<int64_t> out;
  if (AttributeResult error = parseIntList(*text, out)) {
    return Status::error(fmt::format("invalid {}={}: {}", key, *text, error->message));
  }
  return out;
}

StatusOr<int64_t> rawInt(const HloInstruction& inst, std::string_view key, std::optional<int64_t> missing) {
  std::optional<std::string_view> text = rawAttribute(inst, key);
  if (!text) {
    if (missing) return *missing;
    return Status::error(fmt::format("missing attribute {}", key));
  }
  int64_t out = 0;
  if (AttributeResult error = parseInt(*text, out)) {
    return Status::error(fmt::format("invalid {}={}: {}", key, *text, error->message));
  }
  return out;
}

StatusOr<double> rawFloat(const HloInstruction& inst, std::string_view key, std::optional<double> missing) {
  std::optional<std::string_view> text = rawAttribute(inst, key);
  if (!text) {
    if (missing) return *missing;
    return Status::error(fmt::format("missing attribute {}", key));
  }
  double out = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), out);
  if (ec != std::errc() || ptr != text->data() + text->size()) {
    return Status::error(fmt::format("invalid {}={}: expected a number", key, *text));
  }
  return out;
}

bool rawBool(const HloInstruction& inst, std::string_view key) {
  std::optional<std::string_view> text = rawAttribute(inst, key);
  return text && *text == "true";
}

// ---- ElementFunction --------------------------------------------------------------------------------

namespace {

bool scalarHeldType(const Shape& shape) {
  return shape.isArray() && shape.rank() == 0 && isEvaluableElementType(shape.elementType());
}

std::string typesText(const std::vector<PrimitiveType>& types) {
  std::string out = "(";
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out += ", ";
    out += primitiveTypeName(types[i]);
  }
  return out + ")";
}

}  // namespace

StatusOr<ElementFunction> ElementFunction::create(const HloComputation& computation, Fallback fallback) {
  ElementFunction fn;
  fn.m_name = computation.name();
  fn.m_fallback = std::move(fallback);
  for (const HloInstruction* p : computation.parameters()) {
    if (!p || !scalarHeldType(p->shape())) {
      return Status::error(fmt::format("computation {} must take scalar parameters", computation.name()));
    }
    fn.m_parameterTypes.push_back(p->shape().elementType());
  }
  const HloInstruction* root = computation.root();
  if (!root) return Status::error(fmt::format("computation {} has no root", computation.name()));
  if (root->shape().isTuple()) {
    for (const Shape& e : root->shape().tupleElements()) {
      if (!scalarHeldType(e)) {
        return Status::error(fmt::format("computation {} must return scalars", computation.name()));
      }
      fn.m_resultTypes.push_back(e.elementType());
    }
  } else {
    if (!scalarHeldType(root->shape())) {
      return Status::error(fmt::format("computation {} must return a scalar", computation.name()));
    }
    fn.m_resultTypes.push_back(root->shape().elementType());
  }
  fn.m_compiled = fn.compile(computation);
  return fn;
}

bool ElementFunction::compile(const HloComputation& computation) {
  StatusOr<std::vector<HloInstruction*>> order = computation.postOrder();
  if (!order.ok()) return false;
  std::unordered_map<const HloInstruction*, int> reg;
  m_registers.assign(m_parameterTypes.size(), Scalar{});
  auto newRegister = [&]() {
    m_registers.emplace_back();
    return static_cast<int>(m_registers.size()) - 1;
  };
  const HloInstruction* root = computation.root();
  for (const HloInstruction* inst : *order) {
    HloOpcode op = inst->opcode();
    const Shape& shape = inst->shape();
    if (op == HloOpcode::kTuple) {
      if (inst != root) return false;
      continue;
    }
    if (!scalarHeldType(shape)) return false;
    // Complex scalars (a complex scatter's combiner, a sort comparator reading real and imag parts) run in the
    // general evaluator, which holds both parts.
    if (isComplex(shape.elementType())) return false;
    for (const HloInstruction* operand : inst->operands()) {
      if (operand->shape().isArray() && isComplex(operand->shape().elementType())) return false;
    }
    std::vector<int> in;
    for (const HloInstruction* operand : inst->operands()) {
      auto it = reg.find(operand);
      if (it == reg.end()) return false;
      in.push_back(it->second);
    }
    auto operandType = [&](int i) { return inst->operand(i)->shape().elementType(); };
    PrimitiveType type = shape.elementType();
    bool floating = isFloatingPoint(type);
    Step step{};
    step.op = op;
    step.type = type;
    switch (op) {
      case HloOpcode::kParameter:
        if (inst->parameterNumber() < 0 || inst->parameterNumber() >= static_cast<int64_t>(m_parameterTypes.size())) {
          return false;
        }
        reg[inst] = static_cast<int>(inst->parameterNumber());
        continue;
      case HloOpcode::kConstant: {
        if (!inst->literal()) return false;
        StatusOr<Value> v = Value::fromLiteral(*inst->literal());
        if (!v.ok() || v->elementCount() != 1 || v->elementType() != type) return false;
        int r = newRegister();
        m_registers[static_cast<size_t>(r)] = scalarAt(*v, 0);
        reg[inst] = r;
        continue;
      }
      case HloOpcode::kCopy:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
      case HloOpcode::kBroadcast:
        if (in.size() != 1 || operandType(0) != type) return false;
        reg[inst] = in[0];
        continue;
      case HloOpcode::kCompare:
        if (in.size() != 2 || !inst->attributes().direction || operandType(0) != operandType(1)) return false;
        step.kind = isFloatingPoint(operandType(0)) ? StepKind::kCompareFloat : StepKind::kCompareInteger;
        step.direction = *inst->attributes().direction;
        step.totalOrder = rawAttribute(*inst, "type") == std::optional<std::string_view>("TOTALORDER");
        break;
      case HloOpcode::kIsFinite:
        if (in.size() != 1 || !isFloatingPoint(operandType(0))) return false;
        step.kind = StepKind::kIsFinite;
        break;
      case HloOpcode::kSelect:
        if (in.size() != 3 || operandType(0) != PrimitiveType::kPred || operandType(1) != type ||
            operandType(2) != type) {
          return false;
        }
        step.kind = StepKind::kSelect;
        break;
      case HloOpcode::kClamp:
        if (in.size() != 3 || operandType(0) != type || operandType(1) != type || operandType(2) != type) return false;
        step.kind = floating ? StepKind::kClampFloat : StepKind::kClampInteger;
        break;
      case HloOpcode::kConvert:
        if (in.size() != 1) return false;
        step.kind = StepKind::kConvert;
        break;
      case HloOpcode::kReducePrecision: {
        StatusOr<int64_t> e = rawInt(*inst, "exponent_bits", std::nullopt);
        StatusOr<int64_t> m = rawInt(*inst, "mantissa_bits", std::nullopt);
        if (in.size() != 1 || !floating || operandType(0) != type || !e.ok() || !m.ok() || *e < 1 || *e > 30 ||
            *m < 0 || *m > 52) {
          return false;
        }
        step.kind = StepKind::kReducePrecision;
        step.exponentBits = static_cast<int>(*e);
        step.mantissaBits = static_cast<int>(*m);
        break;
      }
      default: {
        bool sameTypes = true;
        for (int i = 0; i < inst->operandCount(); ++i) sameTypes = sameTypes && operandType(i) == type;
        if (!sameTypes) return false;
        bool pred = type == PrimitiveType::kPred;
        if (in.size() == 1 && floating && isFloatUnaryOp(op)) {
          step.kind = StepKind::kFloatUnary;
        } else if (in.size() == 1 && !floating && isIntegerUnaryOp(op) && (!pred || isPredAllowedOp(op))) {
          step.kind = StepKind::kIntegerUnary;
        } else if (in.size() == 2 && floating && isFloatBinaryOp(op)) {
          step.kind = StepKind::kFloatBinary;
        } else if (in.size() == 2 && !floating && isIntegerBinaryOp(op) && (!pred || isPredAllowedOp(op))) {
          step.kind = StepKind::kIntegerBinary;
        } else {
          return false;
        }
        break;
      }
    }
    step.operandType = in.empty() ? type : operandType(0);
    step.a = in.size() > 0 ? in[0] : 0;
    step.b = in.size() > 1 ? in[1] : 0;
    step.c = in.size() > 2 ? in[2] : 0;
    step.dst = newRegister();
    reg[inst] = step.dst;
    m_steps.push_back(step);
  }
  if (root->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* operand : root->operands()) {
      auto it = reg.find(operand);
      if (it == reg.end()) return false;
      m_resultRegisters.push_back(it->second);
    }
  } else {
    auto it = reg.find(root);
    if (it == reg.end()) return false;
    m_resultRegisters.push_back(it->second);
  }
  if (m_resultRegisters.size() != m_resultTypes.size()) return false;
  if (m_steps.size() == 1 && m_parameterTypes.size() == 2 && m_resultRegisters[0] == m_steps[0].dst &&
      (m_steps[0].kind == StepKind::kFloatBinary || m_steps[0].kind == StepKind::kIntegerBinary) && m_steps[0].a == 0 &&
      m_steps[0].b == 1 && m_parameterTypes[0] == m_steps[0].type && m_parameterTypes[1] == m_steps[0].type) {
    m_simpleBinary = m_steps[0].op;
  }
  return true;
}

std::optional<HloOpcode> ElementFunction::simpleBinaryOp() const {
  return m_simpleBinary;
}

Status ElementFunction::expectSignature(const std::vector<PrimitiveType>& parameters,
                                        const std::vector<PrimitiveType>& results) const {
  if (parameters == m_parameterTypes && results == m_resultTypes) return okStatus();
  return Status::error(fmt::format("computation {} has signature {} -> {}, expected {} -> {}", m_name,
                                   typesText(m_parameterTypes), typesText(m_resultTypes), typesText(parameters),
                                   typesText(results)));
}

Status ElementFunction::call(const Scalar* args, Scalar* results) {
  if (!m_compiled) return m_fallback(args, results);
  Scalar* r = m_registers.data();
  for (size_t i = 0; i < m_parameterTypes.size(); ++i) r[i] = args[i];
  for (const Step& s : m_steps) {
    Scalar& d = r[s.dst];
    const Scalar& a = r[s.a];
    const Scalar& b = r[s.b];
    const Scalar& c = r[s.c];
    switch (s.kind) {
      case StepKind::kFloatUnary: d.f = roundFloat(s.type, floatUnary(s.op, a.f)); break;
      case StepKind::kIntegerUnary: d.i = integerUnary(s.op, s.type, a.i); break;
      case StepKind::kFloatBinary: d.f = roundFloat(s.type, floatBinary(s.op, a.f, b.f)); break;
      case StepKind::kIntegerBinary: d.i = integerBinary(s.op, s.type, a.i, b.i); break;
      case StepKind::kCompareFloat: d.i = compareFloats(s.direction, s.totalOrder, a.f, b.f) ? 1 : 0; break;
      case StepKind::kCompareInteger: d.i = compareIntegers(s.direction, s.operandType, a.i, b.i) ? 1 : 0; break;
      case StepKind::kIsFinite: d.i = std::isfinite(a.f) ? 1 : 0; break;
      case StepKind::kSelect: d = a.i ? b : c; break;
      case StepKind::kClampFloat:
        d.f = floatBinary(HloOpcode::kMinimum, floatBinary(HloOpcode::kMaximum, b.f, a.f), c.f);
        break;
      case StepKind::kClampInteger:
        d.i = integerBinary(HloOpcode::kMinimum, s.type, integerBinary(HloOpcode::kMaximum, s.type, b.i, a.i), c.i);
        break;
      case StepKind::kConvert:
        if (isFloatingPoint(s.type)) {
          d.f = convertToFloat(s.operandType, a.f, a.i, s.type);
        } else {
          d.i = convertToInteger(s.operandType, a.f, a.i, s.type);
        }
        break;
      case StepKind::kReducePrecision: d.f = reducePrecision(s.type, a.f, s.exponentBits, s.mantissaBits); break;
    }
  }
  for (size_t i = 0; i < m_resultRegisters.size(); ++i) results[i] = r[m_resultRegisters[i]];
  return okStatus();
}

}  // namespace fusionscope::core::eval
