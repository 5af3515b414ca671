// The evaluator's companions: what it supports (checkEvaluable), what it would cost
// (estimateEvaluationWork), inputs to run it on (randomArguments) and how to compare what it returns
// (toleranceFor, compareValues).

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/base/memory_limit.h"
#include "core/eval/eval_internal.h"
#include "core/eval/evaluator.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "core/linalg/linalg_call.h"

namespace fusionscope::core {

namespace eval {

bool isShardingAnnotation(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kCustomCall || inst.operandCount() != 1) return false;
  const std::optional<std::string>& target = inst.attributes().customCallTarget;
  return target && (*target == "Sharding" || *target == "SPMDFullToShardShape" || *target == "SPMDShardToFullShape") &&
         inst.shape().toString(false) == inst.operand(0)->shape().toString(false);
}

bool isTopKCustomCall(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::kCustomCall && inst.attributes().customCallTarget == "TopK";
}

bool isEvaluableOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kStochasticConvert: return false;
    default: break;
  }
  if (isElementwise(op)) return true;  // map included
  switch (op) {
    case HloOpcode::kConstant:
    case HloOpcode::kParameter:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kCall:
    case HloOpcode::kFusion:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow:
    case HloOpcode::kSelectAndScatter:
    case HloOpcode::kScatter:
    case HloOpcode::kSort:
    case HloOpcode::kTopK:
    case HloOpcode::kFft:
    case HloOpcode::kCopy:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
    case HloOpcode::kAddDependency:
    case HloOpcode::kAfterAll:
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId:
    case HloOpcode::kGetDimensionSize:
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kReverse:
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kConcatenate:
    case HloOpcode::kPad:
    case HloOpcode::kIota:
    case HloOpcode::kGather:
    case HloOpcode::kDot:
    case HloOpcode::kConvolution:
    case HloOpcode::kBatchNormTraining:
    case HloOpcode::kBatchNormInference:
    case HloOpcode::kBatchNormGrad:
    case HloOpcode::kRngBitGenerator: return true;
    default: return false;
  }
}

}  // namespace eval

namespace {

// Computations reachable from the entry through called computations, callers before callees.
std::vector<const HloComputation*> reachableComputations(const HloModule& module) {
  std::vector<const HloComputation*> out;
  if (!module.entry()) return out;
  std::unordered_set<const HloComputation*> seen{module.entry()};
  out.push_back(module.entry());
  for (size_t i = 0; i < out.size(); ++i) {
    for (const auto& inst : out[i]->instructions()) {
      for (const HloComputation* callee : inst->calledComputations()) {
        if (callee && seen.insert(callee).second) out.push_back(callee);
      }
    }
  }
  return out;
}

void forEachArrayShape(const Shape& shape, const std::function<void(const Shape&)>& f) {
  if (shape.isTuple()) {
    for (const Shape& e : shape.tupleElements()) forEachArrayShape(e, f);
  } else if (shape.isArray()) {
    f(shape);
  }
}

std::string countsText(const std::map<std::string, int64_t>& counts, bool withNames) {
  std::string out;
  for (const auto& [name, count] : counts) {
    if (!out.empty()) out += ", ";
    out += withNames ? fmt::format("{} ({})", name, count) : fmt::format("({})", count);
  }
  return out;
}

}  // namespace

Status checkEvaluable(const HloModule& module) {
  if (!module.entry()) return Status::error("cannot evaluate: the module has no entry computation");
  std::map<std::string, int64_t> opcodes;
  std::map<std::string, int64_t> types;
  std::map<std::string, int64_t> constants;
  for (const HloComputation* computation : reachableComputations(module)) {
    for (const auto& inst : computation->instructions()) {
      HloOpcode op = inst->opcode();
      if (op == HloOpcode::kCustomCall && (eval::isShardingAnnotation(*inst) || eval::isTopKCustomCall(*inst)))
        continue;
      if (linalg::isLapackCustomCall(*inst)) {
        // Refused by name, before evaluating anything, when the routine or its type is not supported.
        StatusOr<linalg::Call> call = linalg::callOf(*inst);
        if (!call.ok()) return Status::badInput("cannot evaluate: " + call.status().message());
        continue;
      }
      if (op == HloOpcode::kCustomCall) {
        ++opcodes[fmt::format("custom-call {}", inst->attributes().customCallTarget.value_or("?"))];
      } else if (!eval::isEvaluableOpcode(op)) {
        ++opcodes[std::string(inst->opcodeString())];
      } else if (eval::complexSupport(*inst) == eval::ComplexSupport::kUnsupported) {
        ++opcodes[fmt::format("{} (complex)", inst->opcodeString())];
      }
      forEachArrayShape(inst->shape(), [&](const Shape& shape) {
        if (!isEvaluableElementType(shape.elementType())) ++types[std::string(primitiveTypeName(shape.elementType()))];
      });
      if (op == HloOpcode::kConstant && inst->literal()) {
        Literal::Kind kind = inst->literal()->kind();
        if (kind == Literal::Kind::kElided) ++constants["elided"];
        if (kind == Literal::Kind::kRaw) ++constants["undecoded"];
      }
    }
  }
  if (opcodes.empty() && types.empty() && constants.empty()) return okStatus();
  std::vector<std::string> parts;
  if (!opcodes.empty()) parts.push_back("unsupported opcode(s) " + countsText(opcodes, true));
  if (!types.empty()) parts.push_back("unsupported element type(s) " + countsText(types, true));
  if (constants.count("elided")) parts.push_back(fmt::format("elided constant(s) ({})", constants["elided"]));
  if (constants.count("undecoded")) parts.push_back(fmt::format("undecoded constant(s) ({})", constants["undecoded"]));
  return Status::error(fmt::format("cannot evaluate: {}", fmt::join(parts, "; ")));
}

namespace {

// The value of a scalar integer constant, looking through a copy or a convert between integer types.
std::optional<int64_t> scalarIntegerConstant(const HloInstruction* inst) {
  while (inst != nullptr && (inst->opcode() == HloOpcode::kCopy || inst->opcode() == HloOpcode::kConvert) &&
         inst->operandCount() == 1 && isInteger(inst->operand(0)->shape().elementType())) {
    inst = inst->operand(0);
  }
  if (inst == nullptr || inst->opcode() != HloOpcode::kConstant || !inst->literal() ||
      inst->literal()->kind() != Literal::Kind::kInteger || inst->literal()->integerValues().size() != 1 ||
      !isInteger(inst->shape().elementType())) {
    return std::nullopt;
  }
  return inst->literal()->integerValues()[0];
}

// True when `inst` reads element `index` of the loop state: get-tuple-element(parameter 0), or (index -1, a state
// that is not a tuple) parameter 0 itself.
bool isStateElement(const HloInstruction* inst, int64_t index) {
  if (index < 0) return inst->opcode() == HloOpcode::kParameter && inst->parameterNumber() == 0;
  return inst->opcode() == HloOpcode::kGetTupleElement && inst->attributes().tupleIndex == index &&
         inst->operand(0)->opcode() == HloOpcode::kParameter && inst->operand(0)->parameterNumber() == 0;
}

}  // namespace

std::optional<int64_t> whileTripCount(const HloInstruction& loop) {
  const HloComputation* condition = loop.calledComputation("condition");
  const HloComputation* body = loop.calledComputation("body");
  if (loop.opcode() != HloOpcode::kWhile || loop.operandCount() != 1 || !condition || !body || !condition->root() ||
      !body->root()) {
    return std::nullopt;
  }
  // The condition: compare(state[k], bound) or compare(bound, state[k]).
  const HloInstruction* compare = condition->root();
  if (compare->opcode() != HloOpcode::kCompare || compare->operandCount() != 2 || !compare->attributes().direction) {
    return std::nullopt;
  }
  ComparisonDirection direction = *compare->attributes().direction;
  const HloInstruction* counter = compare->operand(0);
  std::optional<int64_t> bound = scalarIntegerConstant(compare->operand(1));
  if (!bound) {
    counter = compare->operand(1);
    bound = scalarIntegerConstant(compare->operand(0));
    switch (direction) {  // bound OP counter  ==  counter OP' bound
      case ComparisonDirection::kLt: direction = ComparisonDirection::kGt; break;
      case ComparisonDirection::kLe: direction = ComparisonDirection::kGe; break;
      case ComparisonDirection::kGt: direction = ComparisonDirection::kLt; break;
      case ComparisonDirection::kGe: direction = ComparisonDirection::kLe; break;
      default: break;
    }
  }
  if (!bound) return std::nullopt;
  // The counter: element k of a tuple state, or the whole state when it is a scalar (k = -1).
  const int64_t k = counter->opcode() == HloOpcode::kGetTupleElement && counter->attributes().tupleIndex
                        ? *counter->attributes().tupleIndex
                        : -1;
  if (!isStateElement(counter, k)) return std::nullopt;
  const HloInstruction* init = loop.operand(0);
  const HloInstruction* update = body->root();
  if (k >= 0) {
    if (init->opcode() != HloOpcode::kTuple || update->opcode() != HloOpcode::kTuple || k >= init->operandCount() ||
        k >= update->operandCount()) {
      return std::nullopt;
    }
    init = init->operand(static_cast<int>(k));
    update = update->operand(static_cast<int>(k));
  }
  // The start: a constant; the step: state[k] + c (or c + state[k], or state[k] - c).
  const std::optional<int64_t> start = scalarIntegerConstant(init);
  std::optional<int64_t> step;
  if (update->opcode() == HloOpcode::kAdd && update->operandCount() == 2) {
    if (isStateElement(update->operand(0), k))
      step = scalarIntegerConstant(update->operand(1));
    else if (isStateElement(update->operand(1), k))
      step = scalarIntegerConstant(update->operand(0));
  } else if (update->opcode() == HloOpcode::kSubtract && update->operandCount() == 2 &&
             isStateElement(update->operand(0), k)) {
    step = scalarIntegerConstant(update->operand(1));
    if (step) step = -*step;
  }
  if (!start || !step || *step == 0) return std::nullopt;
  // Trips of `for (i = start; i OP bound; i += step)`, in 128-bit arithmetic (no overflow on 64-bit inputs); a
  // counter that moves away from its bound (it would end only by wrapping around) is left unknown.
  const __int128 s = *start, b = *bound, c = *step;
  __int128 trips = -1;
  switch (direction) {
    case ComparisonDirection::kLt: trips = c > 0 ? (s >= b ? 0 : (b - s + c - 1) / c) : (s >= b ? 0 : -1); break;
    case ComparisonDirection::kLe: trips = c > 0 ? (s > b ? 0 : (b - s) / c + 1) : (s > b ? 0 : -1); break;
    case ComparisonDirection::kGt: trips = c < 0 ? (s <= b ? 0 : (s - b + (-c) - 1) / (-c)) : (s <= b ? 0 : -1); break;
    case ComparisonDirection::kGe: trips = c < 0 ? (s < b ? 0 : (s - b) / (-c) + 1) : (s < b ? 0 : -1); break;
    case ComparisonDirection::kNe: trips = s == b ? 0 : ((b - s) % c == 0 && (b - s) / c > 0) ? (b - s) / c : -1; break;
    case ComparisonDirection::kEq: trips = s == b ? -1 : 0; break;
  }
  if (trips < 0 || trips > std::numeric_limits<int64_t>::max()) return std::nullopt;
  return static_cast<int64_t>(trips);
}

namespace {

class WorkEstimator {
 public:
  // The work of `inst` alone: control flow (fusion, call, while, conditional) counts 1, its callees count as they run.
  double ownWork(const HloInstruction& inst) {
    switch (inst.opcode()) {
      case HloOpcode::kFusion:
      case HloOpcode::kCall:
      case HloOpcode::kWhile:
      case HloOpcode::kConditional: return 1;
      default: return instruction(inst);
    }
  }

  double computation(const HloComputation* computation) {
    if (!computation) return 0;
    auto it = m_memo.find(computation);
    if (it != m_memo.end()) return it->second;
    m_memo[computation] = 0;  // a recursive call counts as free rather than looping forever
    double total = 0;
    for (const auto& inst : computation->instructions()) total += instruction(*inst);
    m_memo[computation] = total;
    return total;
  }

 private:
  static double elements(const Shape& shape) {
    double n = 0;
    forEachArrayShape(shape, [&](const Shape& s) { n += static_cast<double>(std::max<int64_t>(s.elementCount(), 0)); });
    return n;
  }

  // Cost of one call of a per-element computation: its instruction count.
  static double perCall(const HloComputation* computation) {
    return computation ? static_cast<double>(std::max<int64_t>(computation->instructionCount(), 1)) : 1;
  }

  static double windowSize(const HloInstruction& inst) {
    double size = 1;
    if (inst.attributes().window) {
      for (const WindowDim& d : inst.attributes().window->dims)
        size *= static_cast<double>(std::max<int64_t>(d.size, 1));
    }
    return size;
  }

  static double tripCount(const HloInstruction& inst) {
    if (std::optional<int64_t> trips = whileTripCount(inst)) return static_cast<double>(*trips);
    // XLA records a loop's trip count as backend_config={"known_trip_count":{"n":"5"}}.
    if (inst.attributes().backendConfig) {
      const std::string& config = *inst.attributes().backendConfig;
      size_t at = config.find("known_trip_count");
      if (at != std::string::npos) {
        at = config.find("\"n\"", at);
        if (at != std::string::npos) {
          at = config.find_first_of("0123456789", at + 3);
          if (at != std::string::npos) return std::strtod(config.c_str() + at, nullptr);
        }
      }
    }
    return 10;
  }

  double instruction(const HloInstruction& inst) {
    double out = std::max(elements(inst.shape()), 1.0);
    auto operandElements = [&](int i) { return i < inst.operandCount() ? elements(inst.operand(i)->shape()) : 0.0; };
    switch (inst.opcode()) {
      case HloOpcode::kFusion:
      case HloOpcode::kCall:
        return computation(inst.calledComputations().empty() ? nullptr : inst.calledComputations()[0]);
      case HloOpcode::kWhile:
        return tripCount(inst) *
               (computation(inst.calledComputation("condition")) + computation(inst.calledComputation("body")));
      case HloOpcode::kConditional: {
        double most = 0;
        for (const HloComputation* c : inst.calledComputations()) most = std::max(most, computation(c));
        return most;
      }
      case HloOpcode::kReduce: {
        double in = 0;
        for (int i = 0; i < inst.operandCount() / 2; ++i) in += operandElements(i);
        return std::max(in, out) * perCall(inst.toApply());
      }
      case HloOpcode::kReduceWindow: return out * windowSize(inst) * perCall(inst.toApply());
      case HloOpcode::kSelectAndScatter:
        return operandElements(1) * windowSize(inst) * (perCall(inst.calledComputation("select")) + 1) + out;
      case HloOpcode::kMap: return out * perCall(inst.toApply());
      case HloOpcode::kScatter: return out + operandElements(inst.operandCount() - 1) * perCall(inst.toApply());
      case HloOpcode::kSort: {
        double n = operandElements(0);
        return n * std::max(std::log2(std::max(n, 2.0)), 1.0) * perCall(inst.toApply());
      }
      case HloOpcode::kTopK: {
        const Shape& x = inst.operandCount() == 1 ? inst.operand(0)->shape() : inst.shape();
        const double row = x.isArray() && x.rank() > 0 ? static_cast<double>(x.dimension(x.rank() - 1)) : 1.0;
        return operandElements(0) * std::max(std::log2(std::max(row, 2.0)), 1.0);
      }
      case HloOpcode::kDot: {
        double k = 1;
        if (inst.attributes().dot && inst.operandCount() > 0) {
          for (int64_t d : inst.attributes().dot->lhsContracting) {
            const Shape& lhs = inst.operand(0)->shape();
            if (d >= 0 && d < lhs.rank()) k *= static_cast<double>(lhs.dimension(static_cast<int>(d)));
          }
        }
        return out * k;
      }
      case HloOpcode::kConvolution: {
        // Per output element: kernel elements / output features (= input features per group x window).
        if (inst.operandCount() < 2) return out;
        const Shape& rhs = inst.operand(1)->shape();
        double perOutput = elements(rhs);
        const std::string* labels = inst.attributes().findRaw("dim_labels");
        if (labels) {
          size_t underscore = labels->find('_');
          size_t o = labels->find('o', underscore == std::string::npos ? 0 : underscore);
          if (underscore != std::string::npos && o != std::string::npos &&
              o - underscore - 1 < static_cast<size_t>(rhs.rank())) {
            perOutput /= static_cast<double>(std::max<int64_t>(rhs.dimension(static_cast<int>(o - underscore - 1)), 1));
          }
        }
        return out * std::max(perOutput, 1.0);
      }
      case HloOpcode::kBatchNormTraining:
      case HloOpcode::kBatchNormInference:
      case HloOpcode::kBatchNormGrad: return 4 * operandElements(0);
      // Ten Philox rounds (twenty ThreeFry ones) per number.
      case HloOpcode::kRngBitGenerator: return 40 * out;
      default: return out;
    }
  }

  std::unordered_map<const HloComputation*, double> m_memo;
};

// SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators").
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : m_state(seed) {}
  uint64_t next() {
    uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t m_state;
};

Value randomValue(const Shape& shape, SplitMix64& rng) {
  if (shape.isTuple()) {
    std::vector<Value> elements;
    for (const Shape& e : shape.tupleElements()) elements.push_back(randomValue(e, rng));
    return Value::tuple(std::move(elements));
  }
  if (!shape.isArray()) return Value::token();
  if (!isEvaluableElementType(shape.elementType())) return Value::zeros(shape);
  auto n = static_cast<size_t>(shape.elementCount());
  PrimitiveType type = shape.elementType();
  if (isFloatingPoint(type)) {
    std::vector<double> values(n);
    // 53 random bits give a uniform double in [0, 1); scaled to [-1, 1) and rounded by Value::floats.
    for (double& v : values) v = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    return Value::floats(shape, std::move(values));
  }
  if (isComplex(type)) {
    std::vector<double> re(n);
    std::vector<double> im(n);
    for (size_t i = 0; i < n; ++i) {
      re[i] = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
      im[i] = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    }
    return Value::complex(shape, std::move(re), std::move(im));
  }
  std::vector<int64_t> values(n);
  for (int64_t& v : values) v = static_cast<int64_t>(type == PrimitiveType::kPred ? rng.next() & 1 : rng.next() % 8);
  return Value::integers(shape, std::move(values));
}

std::string indexText(const Shape& shape, int64_t linear) {
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    int64_t extent = std::max<int64_t>(shape.dimension(d), 1);
    index[static_cast<size_t>(d)] = linear % extent;
    linear /= extent;
  }
  return fmt::format("{{{}}}", fmt::join(index, ","));
}

std::string integerText(PrimitiveType type, int64_t v) {
  if (type == PrimitiveType::kU64) return fmt::format("{}", static_cast<uint64_t>(v));
  return fmt::format("{}", v);
}

std::string elementText(PrimitiveType type, double v) {
  if (std::isnan(v)) return "nan";
  if (type == PrimitiveType::kF64) return fmt::format("{}", v);
  return fmt::format("{}", static_cast<float>(v));
}

}  // namespace

int64_t estimateEvaluationWork(const HloModule& module) {
  if (!module.entry()) return 0;
  WorkEstimator estimator;
  double work = estimator.computation(module.entry());
  if (!(work < 9.2e18)) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(work);
}

double estimateInstructionWork(const HloInstruction& instruction) {
  WorkEstimator estimator;
  return estimator.ownWork(instruction);
}

std::vector<Value> randomArguments(const HloModule& module, uint64_t seed) {
  std::vector<Value> args;
  if (!module.entry()) return args;
  SplitMix64 rng(seed);
  for (const HloInstruction* p : module.entry()->parameters()) {
    args.push_back(p ? randomValue(p->shape(), rng) : Value());
  }
  return args;
}

Tolerance toleranceFor(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF64: return {1e-10, 1e-10};
    case PrimitiveType::kF32: return {1e-5, 1e-5};
    case PrimitiveType::kF16: return {1e-2, 1e-2};
    case PrimitiveType::kBF16: return {5e-2, 5e-2};
    default:
      if (isFloatingPoint(type)) return {0.25, 0.25};
      return {0, 0};
  }
}

std::string compareValues(const Value& expected, const Value& actual) {
  if (!expected.shape().compatible(actual.shape())) {
    return fmt::format("shape mismatch: expected {}, got {}", expected.shape().toString(false),
                       actual.shape().toString(false));
  }
  if (expected.isTuple()) {
    for (int i = 0; i < expected.tupleSize(); ++i) {
      std::string message = compareValues(expected.tupleElement(i), actual.tupleElement(i));
      if (!message.empty()) return fmt::format("tuple element {}: {}", i, message);
    }
    return "";
  }
  if (!expected.isArray()) return "";
  if (expected.elementCount() != actual.elementCount()) {
    return fmt::format("element count mismatch: {} vs {}", expected.elementCount(), actual.elementCount());
  }
  const Shape& shape = expected.shape();
  PrimitiveType type = shape.elementType();
  if (!expected.holdsFloats()) {
    std::span<const int64_t> e = expected.intData();
    std::span<const int64_t> a = actual.intData();
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i] != a[i]) {
        return fmt::format("element {}: {} vs {} (exact)", indexText(shape, static_cast<int64_t>(i)),
                           integerText(type, e[i]), integerText(type, a[i]));
      }
    }
    return "";
  }
  Tolerance tolerance = toleranceFor(complexPartType(type));
  // A complex array compares its real parts, then its imaginary parts, each as the part type.
  for (int part = 0; part < (expected.holdsComplex() ? 2 : 1); ++part) {
    std::span<const double> e = part == 0 ? expected.floatData() : expected.imagData();
    std::span<const double> a = part == 0 ? actual.floatData() : actual.imagData();
    if (a.size() != e.size()) return "complex and real values compared";
    for (size_t i = 0; i < e.size(); ++i) {
      double x = e[i];
      double y = a[i];
      if (std::isnan(x) && std::isnan(y)) continue;
      if (x == y) continue;
      bool close = std::isfinite(x) && std::isfinite(y) &&
                   std::fabs(x - y) <= tolerance.absolute + tolerance.relative * std::fabs(x);
      if (!close) {
        return fmt::format("element {}{}: {} vs {} (tolerance {} relative, {} absolute)",
                           indexText(shape, static_cast<int64_t>(i)), part == 0 ? "" : " (imaginary part)",
                           elementText(complexPartType(type), x), elementText(complexPartType(type), y),
                           tolerance.relative, tolerance.absolute);
      }
    }
  }
  return "";
}

namespace {

double arrayBytes(const Shape& shape) {
  double bytes = 0;
  forEachArrayShape(shape, [&](const Shape& array) {
    double elements = 1;
    for (int64_t d : array.dimensions()) elements *= static_cast<double>(std::max<int64_t>(d, 0));
    // What the evaluator stores, not the element type's width: every element is a double or an int64
    // (complex ones two doubles), so s8[1500000000] needs 12 GB, not 1.5.
    bytes += elements * (isComplex(array.elementType()) ? 16 : 8);
  });
  return bytes;
}

}  // namespace

double estimateEvaluationBytes(const HloModule& module) {
  if (!module.entry()) return 0;
  double total = 0;
  for (const auto& inst : module.entry()->instructions()) total += arrayBytes(inst->shape());
  double largestCalled = 0;
  for (const HloComputation* computation : reachableComputations(module)) {
    if (computation == module.entry()) continue;
    for (const auto& inst : computation->instructions())
      largestCalled = std::max(largestCalled, arrayBytes(inst->shape()));
  }
  return total + largestCalled;
}

Status checkEvaluationMemory(const HloModule& module, double limitBytes) {
  const double needed = estimateEvaluationBytes(module);
  if (limitBytes <= 0 || needed <= limitBytes) return okStatus();
  const HloInstruction* largest = nullptr;
  double largestBytes = -1;
  for (const HloComputation* computation : reachableComputations(module)) {
    for (const auto& inst : computation->instructions()) {
      double bytes = arrayBytes(inst->shape());
      if (bytes > largestBytes) largestBytes = bytes, largest = inst.get();
    }
  }
  return Status::error(fmt::format("cannot evaluate: its values need {} (largest: {} {}, {}), more than the {} allowed",
                                   humanBytes(needed), largest ? largest->name() : "?",
                                   largest ? largest->shape().toString(false) : "?", humanBytes(largestBytes),
                                   humanBytes(limitBytes)));
}

}  // namespace fusionscope::core
