#include "core/ir/hlo_verifier.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/base/message_text.h"
#include "core/ir/shape_rules.h"

namespace fusionscope::core {
namespace {

constexpr size_t kMaxProblems = 20;

struct Problem {
  const HloInstruction* inst;  // where it is, when it has a place in the text
  std::string text;
};

class Verifier {
 public:
  explicit Verifier(std::vector<Problem>& problems) : m_problems(problems) {}

  void computation(const HloComputation& comp) {
    m_comp = &comp;
    if (!comp.root()) report(nullptr, "has no ROOT instruction");
    if (!comp.postOrder().ok()) reportCycle(comp);
    checkParameters(comp);
    for (const auto& inst : comp.instructions()) instruction(*inst);
  }

 private:
  void report(const HloInstruction* inst, std::string_view message) {
    if (m_problems.size() >= kMaxProblems) return;
    if (inst) {
      m_problems.push_back({inst, fmt::format("computation {}, %{}: {}", shortenedForMessage(m_comp->name()),
                                              shortenedForMessage(inst->name()), message)});
    } else {
      // A computation-wide problem points at its first instruction, which is where the reader starts looking.
      const HloInstruction* first = m_comp->instructions().empty() ? nullptr : m_comp->instructions().front().get();
      m_problems.push_back({first, fmt::format("computation {}: {}", shortenedForMessage(m_comp->name()), message)});
    }
  }

  // postOrder only says that there is a cycle; this finds one and spells it out in use order, so the
  // message names every instruction on it: `%a depends on %b, which depends on %a`.
  void reportCycle(const HloComputation& comp) {
    auto predecessorAt = [](const HloInstruction* inst, size_t i) -> const HloInstruction* {
      size_t n = inst->operands().size();
      return i < n ? inst->operands()[i] : inst->controlPredecessors()[i - n];
    };
    std::unordered_map<const HloInstruction*, uint8_t> state;  // 0 = unvisited, 1 = on stack, 2 = done
    std::vector<std::pair<const HloInstruction*, size_t>> stack;
    for (const auto& start : comp.instructions()) {
      if (state[start.get()] != 0) continue;
      stack.emplace_back(start.get(), 0);
      state[start.get()] = 1;
      while (!stack.empty()) {
        const HloInstruction* inst = stack.back().first;
        size_t next = stack.back().second++;
        if (next == inst->operands().size() + inst->controlPredecessors().size()) {
          state[inst] = 2;
          stack.pop_back();
          continue;
        }
        const HloInstruction* pred = predecessorAt(inst, next);
        uint8_t& s = state[pred];
        if (s == 1) {
          auto it = std::find_if(stack.begin(), stack.end(), [&](const auto& frame) { return frame.first == pred; });
          std::string path = fmt::format("%{}", pred->name());
          for (++it; it != stack.end(); ++it) path += fmt::format(" depends on %{}, which", it->first->name());
          report(pred, fmt::format("cycle: {} depends on %{}", path, pred->name()));
          return;
        }
        if (s == 0) {
          s = 1;
          stack.emplace_back(pred, 0);
        }
      }
    }
  }

  void checkParameters(const HloComputation& comp) {
    std::map<int64_t, const HloInstruction*> byNumber;
    for (const auto& inst : comp.instructions()) {
      if (inst->opcode() != HloOpcode::kParameter) continue;
      if (!byNumber.emplace(inst->parameterNumber(), inst.get()).second) {
        report(inst.get(), fmt::format("parameter number {} is used twice", inst->parameterNumber()));
      }
    }
    int64_t expected = 0;
    for (const auto& [n, inst] : byNumber) {
      if (n != expected) {
        report(inst, fmt::format("parameter number {} leaves a gap: the {} parameter(s) must be numbered 0..{}, "
                                 "and {} is missing",
                                 n, byNumber.size(), byNumber.size() - 1, expected));
        return;
      }
      ++expected;
    }
  }

  static std::string str(const Shape& s) { return s.toString(false); }
  static bool sameDims(const Shape& a, const Shape& b) {
    return a.isArray() && b.isArray() && a.dimensions() == b.dimensions();
  }

  // A rule of core/ir/shape_rules: its error is this instruction's problem.
  void shapeRule(const HloInstruction& inst, const Status& status) {
    if (!status.ok()) report(&inst, status.message());
  }

  void expectOperands(const HloInstruction& inst, int count) {
    if (inst.operandCount() != count) {
      report(&inst, fmt::format("{} takes {} operand(s), has {}", inst.opcodeString(), count, inst.operandCount()));
    }
  }

  void expectCalleeParams(const HloInstruction& inst, const HloComputation* callee, int64_t count,
                          std::string_view role) {
    if (!callee) {
      report(&inst, fmt::format("{} needs a {} computation", inst.opcodeString(), role));
      return;
    }
    if (callee->parameterCount() != count) {
      report(&inst, fmt::format("{} computation {} takes {} parameter(s), expected {}", role, callee->name(),
                                callee->parameterCount(), count));
      return;
    }
    // For fusion and call the operands are the callee's parameters: their shapes must agree (a pass that merges
    // or inlines the callee would otherwise build an ill-typed module).
    if (inst.opcode() != HloOpcode::kFusion && inst.opcode() != HloOpcode::kCall) return;
    std::vector<HloInstruction*> params = callee->parameters();
    for (int64_t i = 0; i < count && i < inst.operandCount() && i < static_cast<int64_t>(params.size()); ++i) {
      const HloInstruction* param = params[static_cast<size_t>(i)];
      const Shape& operand = inst.operand(static_cast<int>(i))->shape();
      if (param && !param->shape().compatible(operand)) {
        report(&inst, fmt::format("operand {} is {} but parameter {} of {} is {}", i, str(operand), i, callee->name(),
                                  str(param->shape())));
      }
    }
  }

  // Result dims must equal every (non-scalar, where allowed) operand's dims.
  void elementwise(const HloInstruction& inst, bool allowScalarOperands, bool sameType) {
    const Shape& out = inst.shape();
    if (!out.isArray()) {
      report(&inst, fmt::format("elementwise result must be an array, is {}", str(out)));
      return;
    }
    for (int i = 0; i < inst.operandCount(); ++i) {
      const Shape& in = inst.operand(i)->shape();
      if (allowScalarOperands && in.isScalar()) continue;
      if (!sameDims(in, out)) {
        report(&inst, fmt::format("operand {} has shape {} but the result is {}", i, str(in), str(out)));
      } else if (sameType && in.elementType() != out.elementType()) {
        report(&inst, fmt::format("operand {} has element type {} but the result is {}", i,
                                  primitiveTypeName(in.elementType()), primitiveTypeName(out.elementType())));
      }
    }
  }

  void instruction(const HloInstruction& inst) {
    const Shape& out = inst.shape();
    switch (inst.opcode()) {
      case HloOpcode::kAdd:
      case HloOpcode::kSubtract:
      case HloOpcode::kMultiply:
      case HloOpcode::kDivide:
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum:
      case HloOpcode::kPower:
      case HloOpcode::kRemainder:
      case HloOpcode::kAnd:
      case HloOpcode::kOr:
      case HloOpcode::kXor:
      case HloOpcode::kAtan2:
      case HloOpcode::kShiftLeft:
      case HloOpcode::kShiftRightArithmetic:
      case HloOpcode::kShiftRightLogical:
        expectOperands(inst, 2);
        elementwise(inst, false, true);
        break;
      case HloOpcode::kAbs:
      case HloOpcode::kNegate:
      case HloOpcode::kExp:
      case HloOpcode::kExpm1:
      case HloOpcode::kLog:
      case HloOpcode::kLog1p:
      case HloOpcode::kSqrt:
      case HloOpcode::kRsqrt:
      case HloOpcode::kCbrt:
      case HloOpcode::kTanh:
      case HloOpcode::kTan:
      case HloOpcode::kSin:
      case HloOpcode::kCos:
      case HloOpcode::kFloor:
      case HloOpcode::kCeil:
      case HloOpcode::kSign:
      case HloOpcode::kNot:
      case HloOpcode::kLogistic:
      case HloOpcode::kErf:
      case HloOpcode::kRoundNearestAfz:
      case HloOpcode::kRoundNearestEven:
      case HloOpcode::kClz:
      case HloOpcode::kPopulationCount:
        expectOperands(inst, 1);
        // abs of a complex number is real; every other one keeps the element type.
        elementwise(inst, false,
                    !(inst.opcode() == HloOpcode::kAbs && inst.operandCount() == 1 &&
                      isComplex(inst.operand(0)->shape().elementType())));
        break;
      case HloOpcode::kConvert:
      case HloOpcode::kIsFinite:
      case HloOpcode::kReal:
      case HloOpcode::kImag:
      case HloOpcode::kReducePrecision:
        expectOperands(inst, 1);
        elementwise(inst, false, false);
        break;
      case HloOpcode::kCompare:
        expectOperands(inst, 2);
        elementwise(inst, false, false);
        if (out.isArray() && out.elementType() != PrimitiveType::kPred) report(&inst, "compare must produce pred");
        if (inst.operandCount() == 2 &&
            inst.operand(0)->shape().elementType() != inst.operand(1)->shape().elementType()) {
          report(&inst, "compare operands have different element types");
        }
        if (!inst.attributes().direction) report(&inst, "compare needs direction=");
        break;
      case HloOpcode::kSelect:
        expectOperands(inst, 3);
        if (inst.operandCount() == 3) {
          const Shape& pred = inst.operand(0)->shape();
          if (!pred.isArray() || pred.elementType() != PrimitiveType::kPred) {
            report(&inst, fmt::format("select predicate must be pred, is {}", str(pred)));
          }
          elementwise(inst, true, false);
          for (int i = 1; i < 3; ++i) {
            if (inst.operand(i)->shape().elementType() != out.elementType()) {
              report(&inst, fmt::format("select operand {} has element type {} but the result is {}", i,
                                        primitiveTypeName(inst.operand(i)->shape().elementType()),
                                        primitiveTypeName(out.elementType())));
            }
          }
        }
        break;
      case HloOpcode::kClamp:
        expectOperands(inst, 3);
        elementwise(inst, true, true);
        break;
      case HloOpcode::kBroadcast: broadcast(inst); break;
      case HloOpcode::kReshape:
        expectOperands(inst, 1);
        if (inst.operandCount() == 1 && inst.operand(0)->shape().isArray() &&
            inst.operand(0)->shape().elementCount() != out.elementCount()) {
          report(&inst,
                 fmt::format("reshape changes the element count: {} ({}) to {} ({})", str(inst.operand(0)->shape()),
                             inst.operand(0)->shape().elementCount(), str(out), out.elementCount()));
        }
        break;
      case HloOpcode::kTranspose: transpose(inst); break;
      case HloOpcode::kReduce: reduce(inst); break;
      case HloOpcode::kDot: dot(inst); break;
      case HloOpcode::kSlice: slice(inst); break;
      case HloOpcode::kConcatenate: concatenate(inst); break;
      case HloOpcode::kTuple:
        if (!out.isTuple() || out.tupleSize() != inst.operandCount()) {
          report(&inst, fmt::format("tuple of {} operand(s) must have a tuple shape of that size, is {}",
                                    inst.operandCount(), str(out)));
          break;
        }
        for (int i = 0; i < inst.operandCount(); ++i) {
          if (!out.tupleElement(i).compatible(inst.operand(i)->shape())) {
            report(&inst, fmt::format("tuple element {} is {} but operand {} is {}", i, str(out.tupleElement(i)), i,
                                      str(inst.operand(i)->shape())));
          }
        }
        break;
      case HloOpcode::kGetTupleElement: getTupleElement(inst); break;
      case HloOpcode::kFusion:
        if (const HloComputation* fused = inst.fusedComputation()) {
          // A fused computation is the body of one fusion; passes rely on it (fusing edits the body).
          auto [it, first] = m_fusionOf.emplace(fused, &inst);
          if (!first) {
            report(&inst,
                   fmt::format("fused computation {} is also called by fusion %{}", fused->name(), it->second->name()));
          }
        }
        [[fallthrough]];
      case HloOpcode::kCall:
        expectCalleeParams(inst, inst.calledComputation("calls") ? inst.calledComputation("calls") : inst.toApply(),
                           inst.operandCount(), inst.opcode() == HloOpcode::kFusion ? "fused" : "called");
        if (const HloComputation* callee = inst.calledComputation("calls")) {
          if (callee->root() && !callee->root()->shape().compatible(out)) {
            report(&inst, fmt::format("result {} differs from the root {} of {}", str(out),
                                      str(callee->root()->shape()), callee->name()));
          }
        }
        break;
      case HloOpcode::kWhile: whileLoop(inst); break;
      case HloOpcode::kCopy:
      case HloOpcode::kReverse:
        expectOperands(inst, 1);
        if (inst.operandCount() == 1) sameShapeAs(inst, inst.operand(0)->shape(), "operand");
        if (inst.opcode() == HloOpcode::kReverse && inst.operandCount() == 1) {
          dimensionsInRange(inst, inst.attributes().dimensions, inst.operand(0)->shape().rank(), "reverse");
        }
        break;
      case HloOpcode::kMap:
        elementwise(inst, false, false);
        if (inst.toApply()) expectCalleeParams(inst, inst.toApply(), inst.operandCount(), "to_apply");
        break;
      case HloOpcode::kBitcastConvert: shapeRule(inst, checkBitcastConvertShape(inst)); break;
      case HloOpcode::kBitcast:
        // A reinterpretation of the same bytes: it cannot change how many there are.
        expectOperands(inst, 1);
        if (inst.operandCount() == 1 && inst.operand(0)->shape().isArray() && out.isArray() &&
            inst.operand(0)->shape().byteSize() != out.byteSize()) {
          report(&inst, fmt::format("bitcast of {} ({} bytes) to {} ({} bytes) changes the size",
                                    str(inst.operand(0)->shape()), inst.operand(0)->shape().byteSize(), str(out),
                                    out.byteSize()));
        }
        break;
      case HloOpcode::kPad: shapeRule(inst, checkPadShape(inst)); break;
      case HloOpcode::kIota:
        expectOperands(inst, 0);
        if (!out.isArray() || out.rank() == 0) {
          report(&inst, fmt::format("iota produces an array of rank 1 or more, not {}", str(out)));
        } else if (inst.attributes().iotaDimension.value_or(-1) < 0 || *inst.attributes().iotaDimension >= out.rank()) {
          report(&inst, fmt::format("iota_dimension must be in 0..{}", out.rank() - 1));
        }
        break;
      case HloOpcode::kDynamicSlice: shapeRule(inst, checkDynamicSliceShape(inst)); break;
      case HloOpcode::kDynamicUpdateSlice: shapeRule(inst, checkDynamicUpdateSliceShape(inst)); break;
      case HloOpcode::kSort: sort(inst); break;
      case HloOpcode::kTopK: topK(inst); break;
      case HloOpcode::kCustomCall:
        if (inst.attributes().customCallTarget == "TopK") topK(inst);
        break;
      case HloOpcode::kScatter: scatter(inst); break;
      case HloOpcode::kReduceWindow: reduceWindow(inst); break;
      case HloOpcode::kConvolution: shapeRule(inst, convolutionDims(inst).status()); break;
      case HloOpcode::kGather: shapeRule(inst, checkGatherShape(inst)); break;
      case HloOpcode::kSelectAndScatter:
        expectOperands(inst, 3);
        if (inst.operandCount() == 3) {
          sameShapeAs(inst, inst.operand(0)->shape(), "operand");
          if (!inst.operand(2)->shape().isScalar()) report(&inst, "select-and-scatter init value must be a scalar");
          if (inst.attributes().window && inst.operand(0)->shape().isArray()) {
            std::optional<std::vector<int64_t>> windowed = windowOutputDims(inst, inst.operand(0)->shape());
            if (windowed && inst.operand(1)->shape().dimensions() != *windowed) {
              report(&inst, fmt::format("select-and-scatter source is {}, the window gives {}",
                                        str(inst.operand(1)->shape()), dimensionsText(*windowed)));
            }
          }
        }
        break;
      default: break;
    }
  }

  // Result must have exactly `shape` (element type and dimensions; tuples element by element).
  void sameShapeAs(const HloInstruction& inst, const Shape& shape, std::string_view what) {
    if (!inst.shape().compatible(shape)) {
      report(&inst, fmt::format("{} must produce {} (the shape of its {}), not {}", inst.opcodeString(), str(shape),
                                what, str(inst.shape())));
    }
  }

  void dimensionsInRange(const HloInstruction& inst, const std::optional<std::vector<int64_t>>& dims, int rank,
                         std::string_view what) {
    if (!dims) {
      report(&inst, fmt::format("{} needs dimensions=", what));
      return;
    }
    for (int64_t d : *dims) {
      if (d < 0 || d >= rank) report(&inst, fmt::format("{} dimension {} is out of range for rank {}", what, d, rank));
    }
  }

  void whileLoop(const HloInstruction& inst) {
    expectOperands(inst, 1);
    const HloComputation* condition = inst.calledComputation("condition");
    const HloComputation* body = inst.calledComputation("body");
    expectCalleeParams(inst, condition, 1, "condition");
    expectCalleeParams(inst, body, 1, "body");
    if (inst.operandCount() != 1) return;
    sameShapeAs(inst, inst.operand(0)->shape(), "operand");
    // The loop state keeps one shape: what goes in, each computation's parameter, what the body returns.
    for (const HloComputation* callee : {condition, body}) {
      if (!callee || callee->parameterCount() != 1) continue;
      const HloInstruction* param = callee->parameters().front();
      if (param && !param->shape().compatible(inst.shape())) {
        report(&inst, fmt::format("parameter of {} is {}, the loop state is {}", callee->name(), str(param->shape()),
                                  str(inst.shape())));
      }
    }
    if (body && body->root() && !body->root()->shape().compatible(inst.shape())) {
      report(&inst, fmt::format("body {} returns {}, the loop state is {}", body->name(), str(body->root()->shape()),
                                str(inst.shape())));
    }
    if (condition && condition->root() &&
        !(condition->root()->shape().isScalar() && condition->root()->shape().elementType() == PrimitiveType::kPred)) {
      report(&inst,
             fmt::format("condition {} returns {}, not pred[]", condition->name(), str(condition->root()->shape())));
    }
  }

  void sort(const HloInstruction& inst) {
    if (inst.operandCount() == 0) {
      report(&inst, "sort needs operands");
      return;
    }
    const Shape& first = inst.operand(0)->shape();
    std::vector<Shape> shapes;
    for (int i = 0; i < inst.operandCount(); ++i) {
      if (!sameDims(inst.operand(i)->shape(), first)) {
        report(&inst,
               fmt::format("sort operand {} is {}, operand 0 is {}", i, str(inst.operand(i)->shape()), str(first)));
        return;
      }
      shapes.push_back(inst.operand(i)->shape());
    }
    sameShapeAs(inst, shapes.size() == 1 ? shapes.front() : Shape::tuple(shapes), "operands");
    dimensionsInRange(inst, inst.attributes().dimensions, first.rank(), "sort");
    expectCalleeParams(inst, inst.toApply(), 2 * inst.operandCount(), "comparator");
    // The comparator answers "a before b": a pred scalar, and its parameters are scalars of the operands' types
    // in pairs. The emitters and the evaluator branch on that one bit.
    if (const HloComputation* comparator = inst.toApply(); comparator != nullptr && comparator->root() != nullptr) {
      const Shape& answer = comparator->root()->shape();
      if (!answer.isArray() || answer.rank() != 0 || answer.elementType() != PrimitiveType::kPred) {
        report(&inst, fmt::format("sort comparator {} returns {}, not pred[]", comparator->name(), str(answer)));
      }
      const std::vector<HloInstruction*> parameters = comparator->parameters();
      for (int i = 0; i < static_cast<int>(parameters.size()) && i < 2 * inst.operandCount(); ++i) {
        const HloInstruction* parameter = parameters[static_cast<size_t>(i)];
        const Shape& operandShape = inst.operand(i / 2)->shape();
        if (parameter != nullptr && (!parameter->shape().isArray() || parameter->shape().rank() != 0 ||
                                     parameter->shape().elementType() != operandShape.elementType())) {
          report(&inst, fmt::format("sort comparator {} parameter {} is {}, operand {} holds {}", comparator->name(), i,
                                    str(parameter->shape()), i / 2, primitiveTypeName(operandShape.elementType())));
        }
      }
    }
  }

  // topk(x), k=K (and XLA CPU's TopK custom-call): one array of rank 1 or more; the result is (values, s32 indices),
  // both x's shape with the last dimension K, 0 <= K <= x's last dimension. The evaluator and the decomposition into
  // a sort rely on it.
  void topK(const HloInstruction& inst) {
    if (inst.operandCount() != 1) {
      expectOperands(inst, 1);
      return;
    }
    const Shape& x = inst.operand(0)->shape();
    const Shape& out = inst.shape();
    if (!x.isArray() || x.rank() == 0) {
      report(&inst, fmt::format("top-k of {}: needs an array of rank 1 or more", str(x)));
      return;
    }
    int64_t k = -1;
    if (inst.opcode() == HloOpcode::kTopK) {
      const std::string* text = inst.attributes().findRaw("k");
      if (text == nullptr ||
          std::from_chars(text->data(), text->data() + text->size(), k).ptr != text->data() + text->size()) {
        report(&inst, "topk needs k=N");
        return;
      }
      const std::string* largest = inst.attributes().findRaw("largest");
      if (largest != nullptr && *largest != "true" && *largest != "false") {
        report(&inst, fmt::format("largest={} must be true or false", *largest));
      }
    } else if (out.isTuple() && out.tupleElements().size() == 2 && out.tupleElement(0).isArray() &&
               out.tupleElement(0).rank() == x.rank()) {
      k = out.tupleElement(0).dimension(x.rank() - 1);
      const std::vector<HloComputation*> called = inst.calledComputations();
      if (called.size() != 1) {
        report(&inst, "a TopK custom-call needs one comparator (called_computations={...})");
      } else {
        expectCalleeParams(inst, called[0], 4, "comparator");
        if (called[0]->root() != nullptr && called[0]->root()->shape() != Shape::scalar(PrimitiveType::kPred)) {
          report(&inst, fmt::format("TopK comparator {} returns {}, not pred[]", called[0]->name(),
                                    str(called[0]->root()->shape())));
        }
      }
    }
    const int64_t last = x.dimension(x.rank() - 1);
    if (k < 0 || k > last) {
      report(&inst, fmt::format("top-k of {} along its last dimension: k={} must be in 0..{}", str(x), k, last));
      return;
    }
    std::vector<int64_t> dims = x.dimensions();
    dims.back() = k;
    const Shape expected = Shape::tuple({Shape(x.elementType(), dims), Shape(PrimitiveType::kS32, dims)});
    const bool matches = out.isTuple() && out.tupleElements().size() == 2 &&
                         sameDims(out.tupleElement(0), expected.tupleElement(0)) &&
                         sameDims(out.tupleElement(1), expected.tupleElement(1)) &&
                         out.tupleElement(0).elementType() == x.elementType() &&
                         out.tupleElement(1).elementType() == PrimitiveType::kS32;
    if (!matches) report(&inst, fmt::format("top-k must produce {}, not {}", str(expected), str(out)));
  }

  void scatter(const HloInstruction& inst) {
    if (inst.operandCount() < 3 || inst.operandCount() % 2 == 0) {
      report(&inst,
             fmt::format("scatter takes N operands, indices and N updates, has {} operand(s)", inst.operandCount()));
      return;
    }
    const int n = (inst.operandCount() - 1) / 2;
    std::vector<Shape> shapes;
    for (int i = 0; i < n; ++i) {
      shapes.push_back(inst.operand(i)->shape());
      if (!sameDims(inst.operand(i)->shape(), inst.operand(0)->shape())) {
        report(&inst, fmt::format("scatter operand {} differs in dimensions from operand 0", i));
      }
      if (inst.operand(n + 1 + i)->shape().elementType() != inst.operand(i)->shape().elementType()) {
        report(&inst, fmt::format("scatter update {} has another element type than operand {}", i, i));
      }
    }
    if (!inst.operand(n)->shape().isArray() || !isInteger(inst.operand(n)->shape().elementType())) {
      report(&inst, fmt::format("scatter indices must be integers, are {}", str(inst.operand(n)->shape())));
    }
    sameShapeAs(inst, n == 1 ? shapes.front() : Shape::tuple(shapes), "operands");
    expectCalleeParams(inst, inst.toApply(), 2 * n, "to_apply");
    shapeRule(inst, checkScatterShape(inst));
  }

  // The dimensions a window slides over `in` to, or nullopt (reported) when the window does not fit `in`.
  std::optional<std::vector<int64_t>> windowOutputDims(const HloInstruction& inst, const Shape& in) {
    const Window& window = *inst.attributes().window;
    if (static_cast<int>(window.dims.size()) != in.rank()) {
      report(&inst, fmt::format("window has {} dimension(s) for an operand of rank {}", window.dims.size(), in.rank()));
      return std::nullopt;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      const WindowDim& w = window.dims[static_cast<size_t>(i)];
      if (w.size < 0 || w.stride < 1 || w.windowDilation < 1 || w.baseDilation < 1 || w.size > kMaxDimension ||
          w.stride > kMaxDimension || w.windowDilation > kMaxDimension || w.baseDilation > kMaxDimension ||
          std::abs(w.padLow) > kMaxDimension || std::abs(w.padHigh) > kMaxDimension) {
        report(&inst, fmt::format("window dimension {} is out of range", i));
        return std::nullopt;
      }
      dims.push_back(windowOutputSize(in.dimension(i), w));
    }
    return dims;
  }

  void reduceWindow(const HloInstruction& inst) {
    const int n = inst.operandCount() / 2;
    if (inst.operandCount() % 2 != 0 || n == 0) {
      report(&inst,
             fmt::format("reduce-window takes inputs and as many init values, has {} operand(s)", inst.operandCount()));
      return;
    }
    expectCalleeParams(inst, inst.toApply(), 2 * n, "to_apply");
    const Shape& in = inst.operand(0)->shape();
    if (!in.isArray() || !inst.attributes().window) {
      report(&inst, "reduce-window needs array inputs and window=");
      return;
    }
    std::optional<std::vector<int64_t>> dims = windowOutputDims(inst, in);
    if (!dims) return;
    std::vector<Shape> shapes;
    for (int i = 0; i < n; ++i) {
      if (!sameDims(inst.operand(i)->shape(), in)) report(&inst, fmt::format("reduce-window input {} differs", i));
      if (!inst.operand(n + i)->shape().isScalar()) {
        report(&inst, fmt::format("reduce-window init value {} must be a scalar", n + i));
        return;
      }
      shapes.emplace_back(inst.operand(n + i)->shape().elementType(), *dims);
    }
    sameShapeAs(inst, n == 1 ? shapes.front() : Shape::tuple(shapes), "window");
  }

  void broadcast(const HloInstruction& inst) {
    expectOperands(inst, 1);
    if (inst.operandCount() != 1) return;
    const Shape& in = inst.operand(0)->shape();
    const Shape& out = inst.shape();
    // XLA's text omits `dimensions={}` when broadcasting a scalar.
    const std::vector<int64_t> none;
    const std::vector<int64_t>* dims = inst.attributes().dimensions ? &*inst.attributes().dimensions : &none;
    if (static_cast<int>(dims->size()) != in.rank()) {
      report(&inst, fmt::format("broadcast dimensions={{{}}} has {} entries for an operand of rank {}",
                                fmt::join(*dims, ","), dims->size(), in.rank()));
      return;
    }
    for (int i = 0; i < in.rank(); ++i) {
      int64_t d = (*dims)[static_cast<size_t>(i)];
      if (d < 0 || d >= out.rank()) {
        report(&inst, fmt::format("broadcast dimension {} is out of range for result {}", d, str(out)));
      } else if (in.dimension(i) != out.dimension(static_cast<int>(d))) {
        report(&inst, fmt::format("broadcast maps operand dimension {} (size {}) to result dimension {} (size {})", i,
                                  in.dimension(i), d, out.dimension(static_cast<int>(d))));
      }
    }
    if (in.elementType() != out.elementType()) report(&inst, "broadcast changes the element type");
  }

  void transpose(const HloInstruction& inst) {
    expectOperands(inst, 1);
    if (inst.operandCount() != 1) return;
    const Shape& in = inst.operand(0)->shape();
    const Shape& out = inst.shape();
    const auto& dims = inst.attributes().dimensions;
    std::vector<int64_t> sorted = dims ? *dims : std::vector<int64_t>();
    std::sort(sorted.begin(), sorted.end());
    bool permutation = static_cast<int>(sorted.size()) == in.rank();
    for (size_t i = 0; permutation && i < sorted.size(); ++i) permutation = sorted[i] == static_cast<int64_t>(i);
    if (!dims || !permutation) {
      report(&inst, fmt::format("transpose dimensions must be a permutation of 0..{}", in.rank() - 1));
      return;
    }
    for (int i = 0; i < out.rank() && i < in.rank(); ++i) {
      if (out.dimension(i) != in.dimension(static_cast<int>((*dims)[static_cast<size_t>(i)]))) {
        report(&inst, fmt::format("transpose of {} with dimensions={{{}}} gives {}, not {}", str(in),
                                  fmt::join(*dims, ","), permuted(in, *dims), str(out)));
        return;
      }
    }
  }

  static std::string permuted(const Shape& in, const std::vector<int64_t>& dims) {
    std::vector<int64_t> result;
    for (int64_t d : dims) result.push_back(in.dimension(static_cast<int>(d)));
    return Shape(in.elementType(), result).toString(false);
  }

  void reduce(const HloInstruction& inst) {
    int n = inst.operandCount() / 2;
    if (inst.operandCount() % 2 != 0 || n == 0) {
      report(&inst, fmt::format("reduce takes inputs and as many init values, has {} operand(s)", inst.operandCount()));
      return;
    }
    expectCalleeParams(inst, inst.toApply(), 2 * n, "to_apply");
    const auto& dims = inst.attributes().dimensions;
    if (!dims) {
      report(&inst, "reduce needs dimensions=");
      return;
    }
    const Shape& in = inst.operand(0)->shape();
    std::vector<int64_t> kept;
    for (int i = 0; i < in.rank(); ++i) {
      if (std::find(dims->begin(), dims->end(), i) == dims->end()) kept.push_back(in.dimension(i));
    }
    for (int64_t d : *dims) {
      if (d < 0 || d >= in.rank()) report(&inst, fmt::format("reduce dimension {} is out of range for {}", d, str(in)));
    }
    for (int i = n; i < 2 * n; ++i) {
      if (!inst.operand(i)->shape().isScalar()) report(&inst, fmt::format("reduce init value {} must be a scalar", i));
    }
    auto checkOne = [&](const Shape& out, int input) {
      const Shape& init = inst.operand(n + input)->shape();
      if (out.isArray() && init.isArray() && out.elementType() != init.elementType()) {
        report(&inst,
               fmt::format("reduce result {} has another element type than its init value {}", str(out), str(init)));
      }
      if (!out.isArray() || out.dimensions() != kept) {
        report(&inst, fmt::format("reduce of {} over dimensions={{{}}} gives {}, not {}",
                                  str(inst.operand(input)->shape()), fmt::join(*dims, ","),
                                  Shape(out.isArray() ? out.elementType() : in.elementType(), kept).toString(false),
                                  str(out)));
      }
    };
    if (n == 1) {
      checkOne(inst.shape(), 0);
    } else if (!inst.shape().isTuple() || inst.shape().tupleSize() != n) {
      report(&inst, fmt::format("variadic reduce of {} inputs must produce a {}-tuple", n, n));
    } else {
      for (int i = 0; i < n; ++i) checkOne(inst.shape().tupleElement(i), i);
    }
  }

  void dot(const HloInstruction& inst) {
    expectOperands(inst, 2);
    if (inst.operandCount() != 2) return;
    const Shape& lhs = inst.operand(0)->shape();
    const Shape& rhs = inst.operand(1)->shape();
    DotDimensionNumbers dnums = inst.attributes().dot.value_or(DotDimensionNumbers());
    if (dnums.lhsBatch.size() != dnums.rhsBatch.size() || dnums.lhsContracting.size() != dnums.rhsContracting.size()) {
      report(&inst, "dot has unequal numbers of lhs and rhs batch or contracting dimensions");
      return;
    }
    auto inRange = [&](const std::vector<int64_t>& dims, const Shape& s) {
      return std::all_of(dims.begin(), dims.end(), [&](int64_t d) { return d >= 0 && d < s.rank(); });
    };
    if (!inRange(dnums.lhsBatch, lhs) || !inRange(dnums.lhsContracting, lhs) || !inRange(dnums.rhsBatch, rhs) ||
        !inRange(dnums.rhsContracting, rhs)) {
      report(&inst, "dot dimension numbers are out of range for the operands");
      return;
    }
    for (size_t i = 0; i < dnums.lhsContracting.size(); ++i) {
      int64_t a = lhs.dimension(static_cast<int>(dnums.lhsContracting[i]));
      int64_t b = rhs.dimension(static_cast<int>(dnums.rhsContracting[i]));
      if (a != b) report(&inst, fmt::format("dot contracts lhs size {} with rhs size {}", a, b));
    }
    std::vector<int64_t> dims;
    for (size_t i = 0; i < dnums.lhsBatch.size(); ++i) {
      int64_t a = lhs.dimension(static_cast<int>(dnums.lhsBatch[i]));
      if (a != rhs.dimension(static_cast<int>(dnums.rhsBatch[i]))) report(&inst, "dot batch dimensions differ in size");
      dims.push_back(a);
    }
    auto free = [&](const Shape& s, const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting) {
      for (int i = 0; i < s.rank(); ++i) {
        if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
            std::find(contracting.begin(), contracting.end(), i) == contracting.end()) {
          dims.push_back(s.dimension(i));
        }
      }
    };
    free(lhs, dnums.lhsBatch, dnums.lhsContracting);
    free(rhs, dnums.rhsBatch, dnums.rhsContracting);
    if (!inst.shape().isArray() || inst.shape().dimensions() != dims) {
      report(&inst, fmt::format("dot of {} and {} gives {}, not {}", str(lhs), str(rhs),
                                Shape(inst.shape().elementType(), dims).toString(false), str(inst.shape())));
    }
  }

  void slice(const HloInstruction& inst) {
    expectOperands(inst, 1);
    if (inst.operandCount() != 1) return;
    const Shape& in = inst.operand(0)->shape();
    const auto& s = inst.attributes().slice;
    if (!s || static_cast<int>(s->size()) != in.rank()) {
      report(&inst, fmt::format("slice needs one [start:limit:stride] per dimension of {}", str(in)));
      return;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      const SliceDim& d = (*s)[static_cast<size_t>(i)];
      if (d.start < 0 || d.start > d.limit || d.limit > in.dimension(i) || d.stride < 1) {
        report(&inst, fmt::format("slice [{}:{}:{}] is out of bounds for dimension {} of size {}", d.start, d.limit,
                                  d.stride, i, in.dimension(i)));
        return;
      }
      dims.push_back((d.limit - d.start + d.stride - 1) / d.stride);
    }
    if (!inst.shape().isArray() || inst.shape().dimensions() != dims) {
      report(&inst, fmt::format("slice of {} gives {}, not {}", str(in), Shape(in.elementType(), dims).toString(false),
                                str(inst.shape())));
    }
  }

  void concatenate(const HloInstruction& inst) {
    const auto& dims = inst.attributes().dimensions;
    if (!dims || dims->size() != 1 || inst.operandCount() == 0) {
      report(&inst, "concatenate needs operands and dimensions={d}");
      return;
    }
    int64_t d = dims->front();
    const Shape& first = inst.operand(0)->shape();
    if (d < 0 || d >= first.rank()) {
      report(&inst, fmt::format("concatenate dimension {} is out of range for {}", d, str(first)));
      return;
    }
    std::vector<int64_t> result = first.dimensions();
    result[static_cast<size_t>(d)] = 0;
    for (int i = 0; i < inst.operandCount(); ++i) {
      const Shape& s = inst.operand(i)->shape();
      if (s.rank() != first.rank()) {
        report(&inst, fmt::format("concatenate operand {} has rank {}, expected {}", i, s.rank(), first.rank()));
        return;
      }
      for (int k = 0; k < s.rank(); ++k) {
        if (k != d && s.dimension(k) != first.dimension(k)) {
          report(&inst, fmt::format("concatenate operand {} is {}, which differs from {} outside dimension {}", i,
                                    str(s), str(first), d));
          return;
        }
      }
      result[static_cast<size_t>(d)] += s.dimension(static_cast<int>(d));
    }
    if (!inst.shape().isArray() || inst.shape().dimensions() != result) {
      report(&inst, fmt::format("concatenate gives {}, not {}", Shape(first.elementType(), result).toString(false),
                                str(inst.shape())));
    }
  }

  void getTupleElement(const HloInstruction& inst) {
    expectOperands(inst, 1);
    if (inst.operandCount() != 1) return;
    const Shape& in = inst.operand(0)->shape();
    const auto& index = inst.attributes().tupleIndex;
    if (!in.isTuple()) {
      report(&inst, fmt::format("get-tuple-element of a non-tuple {}", str(in)));
    } else if (!index || *index < 0 || *index >= in.tupleSize()) {
      report(&inst, fmt::format("get-tuple-element index {} is out of range for a {}-tuple",
                                index ? std::to_string(*index) : "(missing)", in.tupleSize()));
    } else if (!in.tupleElement(static_cast<int>(*index)).compatible(inst.shape())) {
      report(&inst, fmt::format("get-tuple-element {} of {} is {}, not {}", *index, str(in),
                                str(in.tupleElement(static_cast<int>(*index))), str(inst.shape())));
    }
  }

  std::vector<Problem>& m_problems;
  std::unordered_map<const HloComputation*, const HloInstruction*> m_fusionOf;  // fused body -> its fusion
  const HloComputation* m_comp = nullptr;
};

std::vector<Problem> findProblems(const HloModule& module) {
  std::vector<Problem> problems;
  Verifier verifier(problems);
  if (!module.entry()) problems.push_back({nullptr, "module has no ENTRY computation"});
  for (const auto& computation : module.computations()) verifier.computation(*computation);
  return problems;
}

}  // namespace

std::vector<std::string> verifyModuleProblems(const HloModule& module) {
  std::vector<std::string> texts;
  for (Problem& problem : findProblems(module)) texts.push_back(std::move(problem.text));
  return texts;
}

Status verifyModule(const HloModule& module) {
  std::vector<Problem> problems = findProblems(module);
  if (problems.empty()) return okStatus();
  const std::string source =
      module.sourceName().empty() ? fmt::format("module {}", shortenedForMessage(module.name())) : module.sourceName();
  std::string message;
  for (const Problem& p : problems) {
    if (!message.empty()) message += '\n';
    if (p.inst && p.inst->textLine() > 0) {
      message += fmt::format("{}:{}:{}: error: {}", source, p.inst->textLine(), p.inst->textColumn(), p.text);
    } else {
      message += fmt::format("{}: error: {}", source, p.text);
    }
  }
  if (problems.size() >= kMaxProblems) message += fmt::format("\n{}: (further problems not listed)", source);
  return Status::error(message);
}

}  // namespace fusionscope::core
