#include "core/passes/batch_norm_expander.h"

#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/literal.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

bool isBatchNorm(HloOpcode opcode) {
  return opcode == HloOpcode::kBatchNormTraining || opcode == HloOpcode::kBatchNormInference ||
         opcode == HloOpcode::kBatchNormGrad;
}

template <typename T>
StatusOr<T> numberAttribute(const HloInstruction& inst, std::string_view key) {
  const std::string* text = inst.attributes().findRaw(key);
  if (text == nullptr) return Status::error(fmt::format("{}: missing {}", inst.name(), key));
  T value{};
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size()) {
    return Status::error(fmt::format("{}: invalid {}={}", inst.name(), key, *text));
  }
  return value;
}

// Builds the expansion of one batch-norm instruction next to it. Every instruction it adds carries the batch
// norm's metadata, so the viewer's scope groups and `explain` still attribute the work to it.
class Expansion {
 public:
  Expansion(HloInstruction* batchNorm, HloComputation* addReducer, int64_t featureIndex, double epsilon)
      : m_batchNorm(batchNorm),
        m_computation(*batchNorm->parent()),
        m_x(batchNorm->operand(0)->shape()),
        m_feature(batchNorm->operand(1)->shape()),
        m_featureIndex(featureIndex),
        m_epsilon(epsilon),
        m_addReducer(addReducer) {}

  HloInstruction* training() {
    HloInstruction* x = m_batchNorm->operand(0);
    HloInstruction* sum = reduceSum(x);
    HloInstruction* sumOfSquares = reduceSum(binary(HloOpcode::kMultiply, m_x, x, x));
    HloInstruction* mean = perElement(sum);
    // Var[x] = E[x²] − E[x]²: one pass over x, XLA's choice (the two reductions read x together).
    HloInstruction* var = binary(HloOpcode::kSubtract, m_feature, perElement(sumOfSquares),
                                 binary(HloOpcode::kMultiply, m_feature, mean, mean));
    HloInstruction* rsqrtVar =
        unary(HloOpcode::kRsqrt, binary(HloOpcode::kAdd, m_x, spread(var), fill(m_x, m_epsilon)));
    HloInstruction* normalized =
        binary(HloOpcode::kMultiply, m_x, binary(HloOpcode::kSubtract, m_x, x, spread(mean)), rsqrtVar);
    HloInstruction* scaled = binary(HloOpcode::kMultiply, m_x, normalized, spread(m_batchNorm->operand(1)));
    HloInstruction* out = binary(HloOpcode::kAdd, m_x, scaled, spread(m_batchNorm->operand(2)));
    return tuple({out, mean, var});
  }

  // y = x * s + (offset − mean * s) with s = scale * rsqrt(var + ε): the per-feature work is done once.
  HloInstruction* inference() {
    HloInstruction* x = m_batchNorm->operand(0);
    HloInstruction* varPlusEpsilon =
        binary(HloOpcode::kAdd, m_feature, m_batchNorm->operand(4), fill(m_feature, m_epsilon));
    HloInstruction* trueScale =
        binary(HloOpcode::kMultiply, m_feature, m_batchNorm->operand(1), unary(HloOpcode::kRsqrt, varPlusEpsilon));
    HloInstruction* trueShift = binary(HloOpcode::kSubtract, m_feature, m_batchNorm->operand(2),
                                       binary(HloOpcode::kMultiply, m_feature, m_batchNorm->operand(3), trueScale));
    return binary(HloOpcode::kAdd, m_x, binary(HloOpcode::kMultiply, m_x, x, spread(trueScale)), spread(trueShift));
  }

  // With xc = x − mean, r = rsqrt(var + ε) and N the elements per feature:
  //   grad_offset = Σ dy;  grad_scale = Σ(dy · xc) · r;
  //   grad_x = scale · r / N · (N · dy − Σ dy − xc · Σ(dy · xc) / (var + ε)).
  HloInstruction* grad() {
    HloInstruction* x = m_batchNorm->operand(0);
    HloInstruction* scale = m_batchNorm->operand(1);
    HloInstruction* mean = m_batchNorm->operand(2);
    HloInstruction* var = m_batchNorm->operand(3);
    HloInstruction* dy = m_batchNorm->operand(4);
    HloInstruction* varPlusEpsilon = binary(HloOpcode::kAdd, m_x, spread(var), fill(m_x, m_epsilon));
    HloInstruction* xc = binary(HloOpcode::kSubtract, m_x, x, spread(mean));
    HloInstruction* sumDyXc = reduceSum(binary(HloOpcode::kMultiply, m_x, dy, xc));
    HloInstruction* gradOffset = reduceSum(dy);
    HloInstruction* gradScale =
        binary(HloOpcode::kMultiply, m_feature, sumDyXc,
               unary(HloOpcode::kRsqrt, binary(HloOpcode::kAdd, m_feature, var, fill(m_feature, m_epsilon))));
    HloInstruction* centred =
        binary(HloOpcode::kDivide, m_x, binary(HloOpcode::kMultiply, m_x, spread(sumDyXc), xc), varPlusEpsilon);
    HloInstruction* scaledDy = binary(HloOpcode::kMultiply, m_x, dy, fill(m_x, elementsPerFeature()));
    HloInstruction* bracket =
        binary(HloOpcode::kSubtract, m_x, binary(HloOpcode::kSubtract, m_x, scaledDy, spread(gradOffset)), centred);
    HloInstruction* factor =
        binary(HloOpcode::kDivide, m_x,
               binary(HloOpcode::kMultiply, m_x, spread(scale), unary(HloOpcode::kRsqrt, varPlusEpsilon)),
               fill(m_x, elementsPerFeature()));
    HloInstruction* gradX = binary(HloOpcode::kMultiply, m_x, factor, bracket);
    return tuple({gradX, gradScale, gradOffset});
  }

 private:
  HloInstruction* add(std::string_view name, HloOpcode opcode, const Shape& shape,
                      const std::vector<HloInstruction*>& operands) {
    HloInstruction* inst = m_computation.addInstruction(name, opcode, shape, operands);
    if (const OpMetadata* metadata = m_batchNorm->metadata()) inst->mutableAttributes().metadata = *metadata;
    return inst;
  }

  HloInstruction* unary(HloOpcode opcode, HloInstruction* a) {
    return add(opcodeName(opcode), opcode, a->shape(), {a});
  }

  HloInstruction* binary(HloOpcode opcode, const Shape& shape, HloInstruction* a, HloInstruction* b) {
    return add(opcodeName(opcode), opcode, shape, {a, b});
  }

  HloInstruction* scalar(double value) {
    const Shape shape = Shape::scalar(m_x.elementType());
    HloInstruction* constant = add("constant", HloOpcode::kConstant, shape, {});
    constant->setLiteral(Literal::floats(shape, {value}));
    return constant;
  }

  // `value` in every element of `shape`.
  HloInstruction* fill(const Shape& shape, double value) {
    HloInstruction* broadcast = add("broadcast", HloOpcode::kBroadcast, shape, {scalar(value)});
    broadcast->mutableAttributes().dimensions = std::vector<int64_t>{};
    return broadcast;
  }

  // A per-feature vector along feature_index of the operand's shape.
  HloInstruction* spread(HloInstruction* perFeature) {
    HloInstruction* broadcast = add("broadcast", HloOpcode::kBroadcast, m_x, {perFeature});
    broadcast->mutableAttributes().dimensions = std::vector<int64_t>{m_featureIndex};
    return broadcast;
  }

  HloInstruction* reduceSum(HloInstruction* operand) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < m_x.rank(); ++d) {
      if (d != m_featureIndex) dims.push_back(d);
    }
    HloInstruction* reduce = add("reduce", HloOpcode::kReduce, m_feature, {operand, scalar(0.0)});
    reduce->mutableAttributes().dimensions = std::move(dims);
    reduce->mutableCalledComputationRefs().push_back({"to_apply", {m_addReducer}, false});
    return reduce;
  }

  double elementsPerFeature() const {
    const int64_t features = m_x.dimension(static_cast<int>(m_featureIndex));
    return features == 0 ? 0.0 : static_cast<double>(m_x.elementCount() / features);
  }

  // A per-feature sum divided by the elements per feature.
  HloInstruction* perElement(HloInstruction* sum) {
    return binary(HloOpcode::kDivide, m_feature, sum, fill(m_feature, elementsPerFeature()));
  }

  HloInstruction* tuple(const std::vector<HloInstruction*>& elements) {
    return add("tuple", HloOpcode::kTuple, m_batchNorm->shape(), elements);
  }

  HloInstruction* m_batchNorm;
  HloComputation& m_computation;
  Shape m_x;
  Shape m_feature;
  int64_t m_featureIndex;
  double m_epsilon;
  HloComputation* m_addReducer;
};

Status checkExpandable(const HloInstruction& inst, int64_t featureIndex) {
  const int operands = inst.opcode() == HloOpcode::kBatchNormTraining ? 3 : 5;
  if (inst.operandCount() != operands) {
    return Status::error(fmt::format("{}: {} takes {} operands", inst.name(), inst.opcodeString(), operands));
  }
  const Shape& x = inst.operand(0)->shape();
  if (!x.isArray() || !isFloatingPoint(x.elementType()) || featureIndex < 0 || featureIndex >= x.rank()) {
    return Status::error(fmt::format("{}: needs a floating-point operand with feature_index={} among its dimensions",
                                     inst.name(), featureIndex));
  }
  const int64_t features = x.dimension(static_cast<int>(featureIndex));
  for (int i = 1; i < inst.operandCount(); ++i) {
    const Shape& s = inst.operand(i)->shape();
    const bool perFeature = s.isArray() && s.rank() == 1 && s.dimension(0) == features;
    const bool likeX = inst.opcode() == HloOpcode::kBatchNormGrad && i == 4 && s.compatible(x);
    if (!(perFeature || likeX) || s.elementType() != x.elementType()) {
      return Status::error(fmt::format("{}: operand {} has shape {}", inst.name(), i, s.toString()));
    }
  }
  return okStatus();
}

}  // namespace

StatusOr<bool> BatchNormExpander::run(HloModule& module, PassContext&) {
  std::map<PrimitiveType, HloComputation*> reducers;
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    std::vector<HloInstruction*> batchNorms;
    for (const auto& inst : computation->instructions()) {
      if (isBatchNorm(inst->opcode())) batchNorms.push_back(inst.get());
    }
    for (HloInstruction* batchNorm : batchNorms) {
      StatusOr<int64_t> featureIndex = numberAttribute<int64_t>(*batchNorm, "feature_index");
      if (!featureIndex.ok()) return featureIndex.status();
      StatusOr<double> epsilon = numberAttribute<double>(*batchNorm, "epsilon");
      if (!epsilon.ok()) return epsilon.status();
      FS_RETURN_IF_ERROR(checkExpandable(*batchNorm, *featureIndex));
      const PrimitiveType type = batchNorm->operand(0)->shape().elementType();
      HloComputation*& reducer = reducers[type];
      if (reducer == nullptr) reducer = addScalarAddComputation(module, type);
      // epsilon is an f32 attribute in XLA: round it as XLA (and the evaluator) do.
      Expansion expansion(batchNorm, reducer, *featureIndex, static_cast<float>(*epsilon));
      HloInstruction* replacement = nullptr;
      switch (batchNorm->opcode()) {
        case HloOpcode::kBatchNormTraining: replacement = expansion.training(); break;
        case HloOpcode::kBatchNormInference: replacement = expansion.inference(); break;
        default: replacement = expansion.grad(); break;
      }
      for (HloInstruction* pred : batchNorm->controlPredecessors()) pred->addControlDependencyTo(replacement);
      for (HloInstruction* succ : batchNorm->controlSuccessors()) replacement->addControlDependencyTo(succ);
      batchNorm->dropAllControlDependencies();
      batchNorm->replaceAllUsesWith(replacement);
      FS_RETURN_IF_ERROR(computation->removeInstruction(batchNorm));
    }
    if (!batchNorms.empty()) {
      changed = true;
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  if (changed) module.sortComputationsInPostOrder();
  return changed;
}

}  // namespace fusionscope::core
