#include "core/eval/evaluator.h"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/eval/rounding_noise.h"
#include "core/eval/scalar_ops.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "core/linalg/linalg_call.h"

namespace fusionscope::core {
namespace {

using eval::ElementFunction;
using eval::Operands;
using eval::Scalar;

using ValueMap = std::unordered_map<std::string, Value>;

// Nested calls deeper than this are taken for recursion (HLO forbids it) rather than overflowing the stack.
constexpr int kMaxCallDepth = 256;

// Every array in `v` has as many elements as its shape says (a guard against a kernel bug turning into an
// out-of-bounds read later).
bool holdsAllElements(const Value& v) {
  if (v.isTuple()) {
    return std::all_of(v.tupleElements().begin(), v.tupleElements().end(), holdsAllElements);
  }
  return !v.isArray() || v.elementCount() == v.shape().elementCount();
}

// A computation prepared for repeated evaluation: instructions in post order with operands as positions,
// and for each step the values whose last use it is, so they can be freed early.
struct Plan {
  std::vector<const HloInstruction*> order;
  std::vector<std::vector<int>> operands;
  std::vector<std::vector<int>> release;
  std::vector<double> work;  // estimateInstructionWork per instruction
  int root = -1;
};

class Evaluator {
 public:
  explicit Evaluator(const EvalOptions& options) : m_options(options), m_noise(options.roundingNoiseSeed) {}

  // One instruction on given operand values (evaluateInstruction).
  StatusOr<Value> evaluateOne(const HloInstruction& inst, Operands operands) {
    return evaluate(inst, operands, nullptr);
  }

  // Evaluates `computation` on `args`. `record` receives every instruction's value; fusions inside record
  // their fused instructions into `fusedRecord`.
  StatusOr<Value> run(const HloComputation& computation, const std::vector<Value>& args, ValueMap* record,
                      ValueMap* fusedRecord) {
    if (m_depth >= kMaxCallDepth) {
      return Status::error(
          fmt::format("calls nested deeper than {} (recursive computation {}?)", kMaxCallDepth, computation.name()));
    }
    ++m_depth;
    StatusOr<Value> result = runPlan(computation, args, record, fusedRecord);
    --m_depth;
    return result;
  }

 private:
  StatusOr<const Plan*> planFor(const HloComputation& computation) {
    auto it = m_plans.find(&computation);
    if (it != m_plans.end()) return it->second.get();
    StatusOr<std::vector<HloInstruction*>> order = computation.postOrder();
    if (!order.ok()) return order.status();
    if (!computation.root()) return Status::error(fmt::format("computation {} has no root", computation.name()));
    auto plan = std::make_unique<Plan>();
    std::unordered_map<const HloInstruction*, int> position;
    for (const HloInstruction* inst : *order) {
      position[inst] = static_cast<int>(plan->order.size());
      plan->order.push_back(inst);
    }
    size_t n = plan->order.size();
    plan->operands.resize(n);
    plan->release.resize(n);
    plan->work.resize(n);
    for (size_t i = 0; i < n; ++i) plan->work[i] = estimateInstructionWork(*plan->order[i]) + kInstructionOverheadWork;
    std::vector<int> lastUse(n);
    for (size_t i = 0; i < n; ++i) {
      lastUse[i] = static_cast<int>(i);
      for (const HloInstruction* operand : plan->order[i]->operands()) {
        auto p = position.find(operand);
        if (p == position.end()) {
          return Status::error(fmt::format("{}: operand {} is not in computation {}", plan->order[i]->name(),
                                           operand->name(), computation.name()));
        }
        plan->operands[i].push_back(p->second);
        lastUse[static_cast<size_t>(p->second)] = static_cast<int>(i);
      }
    }
    auto root = position.find(computation.root());
    if (root == position.end()) return Status::error(fmt::format("root of {} is not in it", computation.name()));
    plan->root = root->second;
    for (size_t j = 0; j < n; ++j) {
      if (static_cast<int>(j) != plan->root)
        plan->release[static_cast<size_t>(lastUse[j])].push_back(static_cast<int>(j));
    }
    const Plan* result = plan.get();
    m_plans.emplace(&computation, std::move(plan));
    return result;
  }

  StatusOr<Value> runPlan(const HloComputation& computation, const std::vector<Value>& args, ValueMap* record,
                          ValueMap* fusedRecord) {
    StatusOr<const Plan*> planOr = planFor(computation);
    if (!planOr.ok()) return planOr.status();
    const Plan& plan = **planOr;
    std::vector<Value> values(plan.order.size());
    std::vector<const Value*> operands;
    for (size_t i = 0; i < plan.order.size(); ++i) {
      const HloInstruction& inst = *plan.order[i];
      if (inst.opcode() == HloOpcode::kParameter) {
        int64_t number = inst.parameterNumber();
        if (number < 0 || number >= static_cast<int64_t>(args.size())) {
          return Status::error(fmt::format("{}: parameter({}) but computation {} got {} argument(s)", inst.name(),
                                           number, computation.name(), args.size()));
        }
        const Value& arg = args[static_cast<size_t>(number)];
        if (!arg.shape().compatible(inst.shape()) || !holdsAllElements(arg)) {
          return Status::error(fmt::format("{}: argument {} is {}, the parameter is {}", inst.name(), number,
                                           arg.shape().toString(false), inst.shape().toString(false)));
        }
        values[i] = arg;
      } else {
        // Scalar computations run element by element are already counted in the work of the op that calls them.
        if (m_scalarDepth == 0) {
          m_work += plan.work[i];
          if (m_work > m_options.maxWork) {
            return Status::badInput(fmt::format(
                "evaluation stopped after {:.1e} operations, over its budget of {:.1e} (a loop that does not end, "
                "or more work than an interpreter should do; raise the budget with --max-work)",
                m_work, m_options.maxWork));
          }
        }
        operands.clear();
        for (int p : plan.operands[i]) operands.push_back(&values[static_cast<size_t>(p)]);
        StatusOr<Value> v = evaluate(inst, operands, record ? fusedRecord : nullptr);
        if (!v.ok()) return v.status().withMessage(fmt::format("{}: {}", inst.name(), v.message()));
        if (!v->shape().compatible(inst.shape()) || !holdsAllElements(*v)) {
          return Status::error(fmt::format("{}: evaluated to shape {}, the instruction has {}", inst.name(),
                                           v->shape().toString(false), inst.shape().toString(false)));
        }
        values[i] = std::move(*v);
        if (m_options.roundingNoiseSeed != 0 && m_scalarDepth == 0) {
          Status noisy = eval::addRoundingNoise(inst, operands, values[i], m_noise,
                                                [&](Operands others) { return evaluate(inst, others, nullptr); });
          if (!noisy.ok()) return Status::error(fmt::format("{}: {}", inst.name(), noisy.message()));
        }
      }
      if (record) (*record)[inst.name()] = values[i];
      for (int j : plan.release[i]) values[static_cast<size_t>(j)] = Value();
    }
    return std::move(values[static_cast<size_t>(plan.root)]);
  }

  // A call of `computation` once per element, compiled when it is all scalar operations.
  StatusOr<ElementFunction> elementFunction(const HloComputation* computation) {
    if (!computation) return Status::error("missing called computation");
    ElementFunction::Fallback fallback = [this, computation](const Scalar* args, Scalar* results) -> Status {
      std::vector<Value> values;
      for (const HloInstruction* p : computation->parameters()) {
        PrimitiveType type = p->shape().elementType();
        Shape shape = Shape::scalar(type);
        const Scalar& s = args[values.size()];
        if (isComplex(type)) {
          values.push_back(Value::complex(shape, {s.f}, {s.im}));
        } else {
          values.push_back(isFloatingPoint(type) ? Value::floats(shape, {s.f}) : Value::integers(shape, {s.i}));
        }
      }
      ++m_scalarDepth;  // a reducer's or comparator's scalar steps: the noise model covers the op that calls it
      StatusOr<Value> result = run(*computation, values, nullptr, nullptr);
      --m_scalarDepth;
      if (!result.ok()) return result.status();
      if (result->isTuple()) {
        for (int i = 0; i < result->tupleSize(); ++i) results[i] = eval::scalarAt(result->tupleElement(i), 0);
      } else {
        results[0] = eval::scalarAt(*result, 0);
      }
      return okStatus();
    };
    return ElementFunction::create(*computation, std::move(fallback));
  }

  StatusOr<Value> callComputation(const HloComputation* computation, Operands operands, ValueMap* record) {
    if (!computation) return Status::error("missing called computation");
    std::vector<Value> args;
    args.reserve(operands.size());
    for (const Value* v : operands) args.push_back(*v);
    return run(*computation, args, record, record);
  }

  StatusOr<Value> evalWhile(const HloInstruction& inst, Operands operands) {
    const HloComputation* condition = inst.calledComputation("condition");
    const HloComputation* body = inst.calledComputation("body");
    if (!condition || !body) return Status::error("while needs condition= and body=");
    if (operands.size() != 1) return Status::error("while takes one operand");
    std::vector<Value> state{*operands[0]};
    for (int64_t iteration = 0;; ++iteration) {
      StatusOr<Value> keepGoing = run(*condition, state, nullptr, nullptr);
      if (!keepGoing.ok()) return keepGoing.status();
      if (!keepGoing->isArray() || keepGoing->elementType() != PrimitiveType::kPred || keepGoing->elementCount() != 1) {
        return Status::error(fmt::format("condition {} must return pred[]", condition->name()));
      }
      if (keepGoing->intData()[0] == 0) return std::move(state[0]);
      if (iteration >= m_options.maxWhileIterations) {
        return Status::error(fmt::format("while loop exceeded {} iterations (EvalOptions::maxWhileIterations)",
                                         m_options.maxWhileIterations));
      }
      StatusOr<Value> next = run(*body, state, nullptr, nullptr);
      if (!next.ok()) return next.status();
      state[0] = std::move(*next);
    }
  }

  StatusOr<Value> evalConditional(const HloInstruction& inst, Operands operands) {
    if (operands.empty()) return Status::error("conditional without a branch index");
    const Value& selector = *operands[0];
    if (!selector.isArray() || selector.elementCount() != 1 || selector.holdsFloats()) {
      return Status::error("branch selector must be a pred or integer scalar");
    }
    const std::vector<HloComputation*> branches = inst.branchComputations();
    if (branches.empty() || std::find(branches.begin(), branches.end(), nullptr) != branches.end()) {
      return Status::error("conditional needs true_computation/false_computation or branch_computations");
    }
    int64_t index = 0;
    if (selector.elementType() == PrimitiveType::kPred) {
      // Branch 0 is the true computation.
      index = selector.intData()[0] ? 0 : 1;
    } else {
      index = selector.int64At(0);
      if (selector.elementType() == PrimitiveType::kU64 && index < 0) index = -1;
      // XLA runs the last branch for an index out of range.
      if (index < 0 || index >= static_cast<int64_t>(branches.size()))
        index = static_cast<int64_t>(branches.size()) - 1;
    }
    if (index >= static_cast<int64_t>(branches.size())) return Status::error("pred conditional needs two branches");
    // Branch k receives operand k + 1.
    if (operands.size() != branches.size() + 1) {
      return Status::error(
          fmt::format("conditional has {} branch(es) but {} branch operand(s)", branches.size(), operands.size() - 1));
    }
    const HloComputation* branch = branches[static_cast<size_t>(index)];
    return callComputation(branch, operands.subspan(static_cast<size_t>(index) + 1, 1), nullptr);
  }

  StatusOr<Value> evaluate(const HloInstruction& inst, Operands operands, ValueMap* fusedRecord) {
    auto need = [&](size_t count) -> Status {
      if (operands.size() == count) return okStatus();
      return Status::error(fmt::format("{} takes {} operand(s), got {}", inst.opcodeString(), count, operands.size()));
    };
    HloOpcode op = inst.opcode();
    switch (eval::complexSupport(inst)) {
      case eval::ComplexSupport::kComplexKernel: return eval::evalComplex(inst, operands);
      case eval::ComplexSupport::kUnsupported:
        return Status::error(
            fmt::format("{} of complex values is not supported by the evaluator", inst.opcodeString()));
      default: break;
    }
    switch (op) {
      case HloOpcode::kConstant: {
        auto it = m_constants.find(&inst);
        if (it != m_constants.end()) return it->second;
        if (!inst.literal()) return Status::error("constant without a literal");
        StatusOr<Value> v = Value::fromLiteral(*inst.literal());
        if (!v.ok()) return v.status();
        m_constants.emplace(&inst, *v);
        return v;
      }
      case HloOpcode::kTuple: {
        std::vector<Value> elements;
        elements.reserve(operands.size());
        for (const Value* v : operands) elements.push_back(*v);
        return Value::tuple(std::move(elements));
      }
      case HloOpcode::kGetTupleElement: {
        FS_RETURN_IF_ERROR(need(1));
        int64_t index = inst.attributes().tupleIndex.value_or(-1);
        if (!operands[0]->isTuple() || index < 0 || index >= operands[0]->tupleSize()) {
          return Status::error(
              fmt::format("index={} is not an element of {}", index, operands[0]->shape().toString(false)));
        }
        return operands[0]->tupleElement(static_cast<int>(index));
      }
      case HloOpcode::kCopy:
      case HloOpcode::kOptimizationBarrier:
      case HloOpcode::kDomain: FS_RETURN_IF_ERROR(need(1)); return *operands[0];
      case HloOpcode::kAddDependency: FS_RETURN_IF_ERROR(need(2)); return *operands[0];
      case HloOpcode::kAfterAll: return Value::token();
      case HloOpcode::kReplicaId:
      case HloOpcode::kPartitionId:
        // A single-device run: the only replica and partition is 0.
        if (!inst.shape().isScalar() || isFloatingPoint(inst.shape().elementType())) {
          return Status::error("must produce an integer scalar");
        }
        return Value::integers(inst.shape(), {0});
      case HloOpcode::kGetDimensionSize: {
        FS_RETURN_IF_ERROR(need(1));
        std::vector<int64_t> dims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
        if (dims.size() != 1 || dims[0] < 0 || dims[0] >= operands[0]->shape().rank()) {
          return Status::error("dimensions= must name one dimension of the operand");
        }
        if (!inst.shape().isScalar() || isFloatingPoint(inst.shape().elementType())) {
          return Status::error("must produce an integer scalar");
        }
        return Value::integers(inst.shape(), {operands[0]->shape().dimension(static_cast<int>(dims[0]))});
      }
      case HloOpcode::kCall: return callComputation(inst.toApply(), operands, nullptr);
      case HloOpcode::kFusion: return callComputation(inst.fusedComputation(), operands, fusedRecord);
      case HloOpcode::kWhile: return evalWhile(inst, operands);
      case HloOpcode::kConditional: return evalConditional(inst, operands);
      case HloOpcode::kMap:
      case HloOpcode::kReduce:
      case HloOpcode::kReduceWindow:
      case HloOpcode::kScatter:
      case HloOpcode::kSort: {
        StatusOr<ElementFunction> fn = elementFunction(inst.toApply());
        if (!fn.ok()) return fn.status();
        if (op == HloOpcode::kMap) return eval::evalMap(inst, operands, *fn);
        if (op == HloOpcode::kReduce) return eval::evalReduce(inst, operands, *fn);
        if (op == HloOpcode::kReduceWindow) return eval::evalReduceWindow(inst, operands, *fn);
        if (op == HloOpcode::kScatter) return eval::evalScatter(inst, operands, *fn);
        return eval::evalSort(inst, operands, *fn);
      }
      case HloOpcode::kSelectAndScatter: {
        StatusOr<ElementFunction> select = elementFunction(inst.calledComputation("select"));
        if (!select.ok()) return select.status();
        StatusOr<ElementFunction> scatter = elementFunction(inst.calledComputation("scatter"));
        if (!scatter.ok()) return scatter.status();
        return eval::evalSelectAndScatter(inst, operands, *select, *scatter);
      }
      case HloOpcode::kConvert: FS_RETURN_IF_ERROR(need(1)); return eval::evalConvert(inst, *operands[0]);
      case HloOpcode::kBitcastConvert: FS_RETURN_IF_ERROR(need(1)); return eval::evalBitcastConvert(inst, *operands[0]);
      case HloOpcode::kReducePrecision:
        FS_RETURN_IF_ERROR(need(1));
        return eval::evalReducePrecision(inst, *operands[0]);
      case HloOpcode::kBroadcast: FS_RETURN_IF_ERROR(need(1)); return eval::evalBroadcast(inst, *operands[0]);
      case HloOpcode::kReshape: FS_RETURN_IF_ERROR(need(1)); return eval::evalReshape(inst, *operands[0]);
      case HloOpcode::kBitcast: FS_RETURN_IF_ERROR(need(1)); return eval::evalBitcast(inst, *operands[0]);
      case HloOpcode::kTranspose: FS_RETURN_IF_ERROR(need(1)); return eval::evalTranspose(inst, *operands[0]);
      case HloOpcode::kReverse: FS_RETURN_IF_ERROR(need(1)); return eval::evalReverse(inst, *operands[0]);
      case HloOpcode::kSlice: FS_RETURN_IF_ERROR(need(1)); return eval::evalSlice(inst, *operands[0]);
      case HloOpcode::kDynamicSlice: return eval::evalDynamicSlice(inst, operands);
      case HloOpcode::kDynamicUpdateSlice: return eval::evalDynamicUpdateSlice(inst, operands);
      case HloOpcode::kConcatenate: return eval::evalConcatenate(inst, operands);
      case HloOpcode::kPad: FS_RETURN_IF_ERROR(need(2)); return eval::evalPad(inst, *operands[0], *operands[1]);
      case HloOpcode::kIota: return eval::evalIota(inst);
      case HloOpcode::kGather: FS_RETURN_IF_ERROR(need(2)); return eval::evalGather(inst, *operands[0], *operands[1]);
      case HloOpcode::kDot: FS_RETURN_IF_ERROR(need(2)); return eval::evalDot(inst, *operands[0], *operands[1]);
      case HloOpcode::kConvolution:
        FS_RETURN_IF_ERROR(need(2));
        return eval::evalConvolution(inst, *operands[0], *operands[1]);
      case HloOpcode::kBatchNormTraining: return eval::evalBatchNormTraining(inst, operands);
      case HloOpcode::kBatchNormInference: return eval::evalBatchNormInference(inst, operands);
      case HloOpcode::kBatchNormGrad: return eval::evalBatchNormGrad(inst, operands);
      case HloOpcode::kRngBitGenerator: return eval::evalRngBitGenerator(inst, operands);
      default: break;
    }
    if (eval::isEvaluableOpcode(op) && isElementwise(op)) return eval::evalElementwise(inst, operands);
    if (op == HloOpcode::kCustomCall && eval::isShardingAnnotation(inst)) {
      FS_RETURN_IF_ERROR(need(1));
      return *operands[0];
    }
    if (op == HloOpcode::kTopK) return eval::evalTopK(inst, operands, nullptr);
    if (eval::isTopKCustomCall(inst)) {
      const std::vector<HloComputation*> called = inst.calledComputations();
      if (called.size() != 1) return Status::error("a TopK custom-call needs one comparator");
      StatusOr<ElementFunction> fn = elementFunction(called[0]);
      if (!fn.ok()) return fn.status();
      return eval::evalTopK(inst, operands, &*fn);
    }
    if (linalg::isLapackCustomCall(inst)) return eval::evalLinalg(inst, operands);
    if (op == HloOpcode::kCustomCall) {
      return Status::error(
          fmt::format("unsupported opcode custom-call {}", inst.attributes().customCallTarget.value_or("")));
    }
    return Status::error(fmt::format("unsupported opcode {}", inst.opcodeString()));
  }

  const EvalOptions& m_options;
  int m_depth = 0;
  double m_work = 0;          // scalar operations done so far (see EvalOptions::maxWork)
  int m_scalarDepth = 0;      // > 0 inside a scalar computation run element by element
  eval::NoiseStream m_noise;  // EvalOptions::roundingNoiseSeed
  std::unordered_map<const HloComputation*, std::unique_ptr<Plan>> m_plans;
  std::unordered_map<const HloInstruction*, Value> m_constants;
};

}  // namespace

StatusOr<Value> evaluateInstruction(const HloInstruction& inst, const std::vector<Value>& operands) {
  Evaluator evaluator{EvalOptions{}};
  std::vector<const Value*> pointers;
  pointers.reserve(operands.size());
  for (const Value& operand : operands) pointers.push_back(&operand);
  return evaluator.evaluateOne(inst, Operands(pointers.data(), pointers.size()));
}

StatusOr<EvalResult> evaluateModule(const HloModule& module, const std::vector<Value>& arguments,
                                    const EvalOptions& options) {
  FS_RETURN_IF_ERROR(checkEvaluable(module));
  const HloComputation* entry = module.entry();
  if (static_cast<int64_t>(arguments.size()) != entry->parameterCount()) {
    return Status::error(fmt::format("entry computation {} takes {} argument(s), got {}", entry->name(),
                                     entry->parameterCount(), arguments.size()));
  }
  Evaluator evaluator(options);
  EvalResult result;
  ValueMap fused;
  ValueMap* record = options.recordValues ? &result.values : nullptr;
  StatusOr<Value> value = evaluator.run(*entry, arguments, record, options.recordValues ? &fused : nullptr);
  if (!value.ok()) return value.status();
  result.result = std::move(*value);
  for (auto& [name, v] : fused) result.values.try_emplace(name, std::move(v));
  return result;
}

}  // namespace fusionscope::core
