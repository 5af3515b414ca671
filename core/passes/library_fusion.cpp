#include "core/passes/library_fusion.h"

#include <algorithm>
#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "core/ir/shape_rules.h"
#include "core/passes/fusion_decision.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

constexpr std::string_view kPassName = "library-fusion";
// Below this many elements in the result and every operand the library's call overhead outweighs its kernel.
constexpr int64_t kPreferredElements = 4096;

bool isLibraryType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kBF16:
    case PrimitiveType::kS8:
    case PrimitiveType::kU8: return true;
    default: return false;
  }
}

bool preferred(const HloInstruction& instruction) {
  if (instruction.shape().isArray() && instruction.shape().elementCount() >= kPreferredElements) return true;
  return std::any_of(instruction.operands().begin(), instruction.operands().end(), [](const HloInstruction* o) {
    return o->shape().isArray() && o->shape().elementCount() >= kPreferredElements;
  });
}

bool libraryUnary(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAbs:
    case HloOpcode::kCeil:
    case HloOpcode::kConvert:
    case HloOpcode::kCos:
    case HloOpcode::kErf:
    case HloOpcode::kExp:
    case HloOpcode::kExpm1:
    case HloOpcode::kFloor:
    case HloOpcode::kLog:
    case HloOpcode::kLog1p:
    case HloOpcode::kLogistic:
    case HloOpcode::kNegate:
    case HloOpcode::kRoundNearestEven:
    case HloOpcode::kRsqrt:
    case HloOpcode::kSign:
    case HloOpcode::kSin:
    case HloOpcode::kSqrt:
    case HloOpcode::kTanh:
    case HloOpcode::kTan: return true;
    default: return false;
  }
}

bool libraryBinary(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd:
    case HloOpcode::kDivide:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kMultiply:
    case HloOpcode::kPower:
    case HloOpcode::kSubtract: return true;
    default: return false;
  }
}

bool libraryElementwise(const HloInstruction& inst) {
  if (!isLibraryType(inst.shape().elementType())) return false;
  for (const HloInstruction* operand : inst.operands()) {
    if (!isLibraryType(operand->shape().elementType())) return false;
  }
  if (inst.operandCount() == 1) return libraryUnary(inst.opcode());
  if (inst.operandCount() == 2) return libraryBinary(inst.opcode());
  return false;
}

// The reducer is exactly `p0 op p1` with op add, maximum or minimum.
bool libraryReducer(const HloInstruction& reduce) {
  const HloComputation* reducer = reduce.toApply();
  if (!reducer || reducer->instructions().size() != 3 || !reducer->root()) return false;
  const HloInstruction* root = reducer->root();
  if (root->opcode() != HloOpcode::kAdd && root->opcode() != HloOpcode::kMaximum &&
      root->opcode() != HloOpcode::kMinimum) {
    return false;
  }
  return root->operandCount() == 2 && root->operand(0)->opcode() == HloOpcode::kParameter &&
         root->operand(1)->opcode() == HloOpcode::kParameter;
}

bool libraryReduce(const HloInstruction& inst) {
  if (inst.operandCount() != 2 || !inst.shape().isArray()) return false;
  const Shape& input = inst.operand(0)->shape();
  if (inst.shape().elementType() != PrimitiveType::kF32 || input.elementType() != PrimitiveType::kF32) return false;
  if (!hasRowMajorLayout(inst.shape()) || !hasRowMajorLayout(input) || !libraryReducer(inst)) return false;
  if (inst.opcode() == HloOpcode::kReduce) {
    return inst.attributes().dimensions && !inst.attributes().dimensions->empty();
  }
  if (!inst.attributes().window) return false;
  int reducedAxes = 0;
  for (const WindowDim& dim : inst.attributes().window->dims) {
    if (dim.size <= 1 && dim.stride <= 1) continue;
    if (dim.size > 1 && dim.stride != dim.size) return false;  // overlapping or skipping windows
    if (dim.baseDilation != 1 || dim.windowDilation != 1 || dim.reversal) return false;
    ++reducedAxes;
  }
  return reducedAxes > 0;
}

// A dot the library's GEMM takes: f32, a contraction over the last dimension of the left operand, and no side
// a vector or tiny.
bool libraryDot(const HloInstruction& dot) {
  if (dot.operandCount() != 2 || !dot.attributes().dot) return false;
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  if (lhs.elementType() != PrimitiveType::kF32 || rhs.elementType() != PrimitiveType::kF32 ||
      dot.shape().elementType() != PrimitiveType::kF32) {
    return false;
  }
  if (!hasRowMajorLayout(lhs) || !hasRowMajorLayout(rhs) || !hasRowMajorLayout(dot.shape())) return false;
  const DotDimensionNumbers& dims = *dot.attributes().dot;
  if (dims.lhsContracting.size() != 1 || dims.lhsContracting[0] != lhs.rank() - 1) return false;
  auto freeElements = [](const Shape& shape, const std::vector<int64_t>& batch,
                         const std::vector<int64_t>& contracting) {
    int64_t n = 1;
    for (int i = 0; i < shape.rank(); ++i) {
      if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), i) == contracting.end()) {
        n *= shape.dimension(i);
      }
    }
    return n;
  };
  const int64_t m = freeElements(lhs, dims.lhsBatch, dims.lhsContracting);
  const int64_t n = freeElements(rhs, dims.rhsBatch, dims.rhsContracting);
  const int64_t k = lhs.dimension(static_cast<int>(dims.lhsContracting[0]));
  return m > 1 && n > 1 && std::max({m, n, k}) >= 8;
}

// A 2-D convolution in NHWC / HWIO with more than 16 input or output features and no dilation of the input.
bool libraryConvolution(const HloInstruction& conv) {
  StatusOr<ConvolutionDims> dims = convolutionDims(conv);
  if (!dims.ok() || dims->batchGroups != 1 || dims->lhsSpatial.size() != 2) return false;
  if (conv.shape().elementType() != PrimitiveType::kF32) return false;
  if (dims->lhsFeature != 3 || dims->outFeature != 3 || dims->rhsInput != 2 || dims->rhsOutput != 3) return false;
  if (dims->lhsSpatial != std::vector<int64_t>{1, 2} || dims->rhsSpatial != std::vector<int64_t>{0, 1}) return false;
  const Shape& lhs = conv.operand(0)->shape();
  if (std::max(lhs.dimension(3), conv.shape().dimension(3)) <= 16) return false;
  for (const WindowDim& w : dims->window.dims) {
    if (w.baseDilation != 1 || w.reversal) return false;
  }
  return true;
}

}  // namespace

bool isLibraryOp(const HloInstruction& inst) {
  if (!inst.shape().isArray()) return false;
  switch (inst.opcode()) {
    case HloOpcode::kConstant: return isLibraryType(inst.shape().elementType());
    case HloOpcode::kIota:
      return (inst.shape().elementType() == PrimitiveType::kF32 || inst.shape().elementType() == PrimitiveType::kS32) &&
             hasRowMajorLayout(inst.shape());
    case HloOpcode::kBitcast:
    case HloOpcode::kReshape:
    case HloOpcode::kTranspose:
      return isLibraryType(inst.shape().elementType()) && hasRowMajorLayout(inst.shape()) &&
             hasRowMajorLayout(inst.operand(0)->shape());
    case HloOpcode::kBroadcast: {
      if (!isLibraryType(inst.shape().elementType()) || !hasRowMajorLayout(inst.shape())) return false;
      const std::vector<int64_t> dims = inst.attributes().dimensions.value_or(std::vector<int64_t>{});
      return std::is_sorted(dims.begin(), dims.end()) && std::adjacent_find(dims.begin(), dims.end()) == dims.end();
    }
    case HloOpcode::kPad: {
      if (!isLibraryType(inst.shape().elementType()) || !inst.attributes().padding) return false;
      return std::all_of(inst.attributes().padding->begin(), inst.attributes().padding->end(),
                         [](const PaddingDim& d) { return d.interior == 0; });
    }
    case HloOpcode::kDot: return libraryDot(inst);
    case HloOpcode::kConvolution: return libraryConvolution(inst);
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow: return preferred(inst) && libraryReduce(inst);
    default: return isElementwise(inst.opcode()) && preferred(inst) && libraryElementwise(inst);
  }
}

namespace {

class ComputationLibraryFusion {
 public:
  ComputationLibraryFusion(HloComputation& computation, PassContext& context)
      : m_computation(computation), m_context(context) {}

  StatusOr<bool> run() {
    StatusOr<std::vector<HloInstruction*>> order = m_computation.postOrder();
    if (!order.ok()) return order.status();
    bool changed = false;
    for (auto it = order->rbegin(); it != order->rend(); ++it) {
      HloInstruction* start = *it;
      if (m_taken.count(start) || !startsFusion(*start)) continue;
      std::vector<HloInstruction*> members = grow(start);
      FS_RETURN_IF_ERROR(materialize(start, members));
      changed = true;
    }
    return changed;
  }

 private:
  static bool startsFusion(const HloInstruction& inst) {
    switch (inst.opcode()) {
      case HloOpcode::kDot:
      case HloOpcode::kConvolution:
      case HloOpcode::kReduce:
      case HloOpcode::kReduceWindow: return isLibraryOp(inst);
      default: return false;
    }
  }

  // The members, breadth first from the start: operands whose users are all members, the single user of a
  // member. Dots and convolutions stay alone; a reduction grows.
  std::vector<HloInstruction*> grow(HloInstruction* start) {
    std::vector<HloInstruction*> members{start};
    std::unordered_set<const HloInstruction*> in{start};
    m_taken.insert(start);
    if (start->opcode() == HloOpcode::kDot || start->opcode() == HloOpcode::kConvolution) return members;
    bool changed = true;
    while (changed) {
      changed = false;
      std::deque<HloInstruction*> frontier(members.begin(), members.end());
      while (!frontier.empty()) {
        HloInstruction* member = frontier.front();
        frontier.pop_front();
        std::vector<HloInstruction*> candidates;
        for (HloInstruction* operand : member->operands()) {
          const auto& users = operand->users();
          if (!operand->isRoot() &&
              std::all_of(users.begin(), users.end(), [&](const HloInstruction* u) { return in.count(u) > 0; })) {
            candidates.push_back(operand);
          }
        }
        if (member->users().size() == 1 && !member->isRoot()) candidates.push_back(member->users().front());
        for (HloInstruction* candidate : candidates) {
          if (in.count(candidate) || m_taken.count(candidate) || candidate->opcode() == HloOpcode::kParameter) continue;
          if (!candidate->controlPredecessors().empty() || !candidate->controlSuccessors().empty()) continue;
          if (!isLibraryOp(*candidate)) {
            if (m_refused.insert(candidate).second && isElementwise(candidate->opcode())) refuse(*candidate, *start);
            continue;
          }
          // A user joins only when all its operands' paths stay acyclic: each of its other operands must not
          // depend on a member (else the fusion would feed itself through the outside).
          if (!isOperandOfMember(*candidate, in) && reachesFromMembers(*candidate, in)) continue;
          in.insert(candidate);
          m_taken.insert(candidate);
          members.push_back(candidate);
          frontier.push_back(candidate);
          changed = true;
        }
      }
    }
    return members;
  }

  static bool isOperandOfMember(const HloInstruction& candidate, const std::unordered_set<const HloInstruction*>& in) {
    return std::any_of(candidate.users().begin(), candidate.users().end(),
                       [&](const HloInstruction* u) { return in.count(u) > 0; });
  }

  // Whether an operand of `user` that is not a member depends on a member.
  static bool reachesFromMembers(const HloInstruction& user, const std::unordered_set<const HloInstruction*>& in) {
    std::vector<const HloInstruction*> stack;
    std::unordered_set<const HloInstruction*> seen;
    for (const HloInstruction* operand : user.operands()) {
      if (!in.count(operand)) stack.push_back(operand);
    }
    while (!stack.empty()) {
      const HloInstruction* inst = stack.back();
      stack.pop_back();
      if (!seen.insert(inst).second) continue;
      for (const HloInstruction* operand : inst->operands()) {
        if (in.count(operand)) return true;
        stack.push_back(operand);
      }
    }
    return false;
  }

  void refuse(const HloInstruction& candidate, const HloInstruction& start) {
    const std::string why =
        preferred(candidate)
            ? fmt::format("the library has no kernel for {} on these types", candidate.opcodeString())
            : fmt::format("{} has fewer than {} elements; the library takes elementwise ops only on larger tensors",
                          candidate.name(), kPreferredElements);
    m_context.record(refusedDecision(
        kPassName, m_computation, candidate.name(), start.name(), 0,
        fmt::format("not fusing {} into the library fusion of {}: {}", candidate.name(), start.name(), why)));
  }

  // Wraps the member that is used outside (the last one reached downward, else the start) and moves the others
  // in, users before operands, so every member is used only inside when it moves.
  Status materialize(HloInstruction* start, const std::vector<HloInstruction*>& members) {
    std::unordered_set<const HloInstruction*> in(members.begin(), members.end());
    HloInstruction* root = start;
    for (HloInstruction* m : members) {
      const bool usedOutside = m->isRoot() || std::any_of(m->users().begin(), m->users().end(),
                                                          [&](const HloInstruction* u) { return in.count(u) == 0; });
      if (usedOutside) root = m;
    }
    const std::string startName = start->name();
    const std::string rootName = root->name();
    HloInstruction* fusion = wrapInFusion(root, FusionKind::kCustom);
    StatusOr<std::vector<HloInstruction*>> order = m_computation.postOrder();
    if (!order.ok()) return order.status();
    for (auto it = order->rbegin(); it != order->rend(); ++it) {
      HloInstruction* producer = *it;
      if (producer == root || !in.count(producer)) continue;
      const std::string producerName = producer->name();
      StatusOr<HloInstruction*> fused = fuseProducer(fusion, producer);
      if (!fused.ok()) return fused.status();
      fusion = *fused;
      m_context.record(fusedDecision(
          kPassName, m_computation, producerName, rootName, *fusion, 0,
          fmt::format("fused {} into {} (kCustom): a library fusion grown from {}, run by one library call",
                      producerName, rootName, startName)));
    }
    if (members.size() == 1) {
      m_context.record(fusedDecision(
          kPassName, m_computation, rootName, rootName, *fusion, 0,
          fmt::format("{} becomes a library fusion (kCustom): the library runs it faster than a generated loop",
                      rootName)));
    }
    return okStatus();
  }

  HloComputation& m_computation;
  PassContext& m_context;
  std::unordered_set<const HloInstruction*> m_taken;
  std::unordered_set<const HloInstruction*> m_refused;
};

}  // namespace

StatusOr<bool> LibraryFusion::run(HloModule& module, PassContext& context) {
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    ComputationLibraryFusion fusion(*computation, context);
    StatusOr<bool> result = fusion.run();
    if (!result.ok()) return result.status();
    changed |= *result;
  }
  return changed;
}

}  // namespace fusionscope::core
