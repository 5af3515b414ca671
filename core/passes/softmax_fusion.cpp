#include "core/passes/softmax_fusion.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_cost.h"
#include "core/passes/fusion_decision.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

constexpr std::string_view kPassName = "softmax-fusion";

bool isNormalizationType(PrimitiveType type) {
  return type == PrimitiveType::kF16 || type == PrimitiveType::kBF16 || type == PrimitiveType::kF32 ||
         type == PrimitiveType::kF64;
}

// The element types Triton, which emits XLA GPU's normalization fusions, supports for them (no f64).
bool isTritonType(PrimitiveType type) {
  return type == PrimitiveType::kF16 || type == PrimitiveType::kBF16 || type == PrimitiveType::kF32;
}

// Elementwise ops Triton emits (XLA's triton_support lists): what a reducer may compute.
bool isTritonElementwise(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAdd: case HloOpcode::kSubtract: case HloOpcode::kMultiply: case HloOpcode::kDivide:
    case HloOpcode::kMaximum: case HloOpcode::kMinimum: case HloOpcode::kCompare: case HloOpcode::kSelect:
    case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor: case HloOpcode::kNot:
    case HloOpcode::kNegate: case HloOpcode::kAbs: case HloOpcode::kExp: case HloOpcode::kExpm1:
    case HloOpcode::kLog: case HloOpcode::kLog1p: case HloOpcode::kSqrt: case HloOpcode::kRsqrt:
    case HloOpcode::kCbrt: case HloOpcode::kSin: case HloOpcode::kCos: case HloOpcode::kTan:
    case HloOpcode::kTanh: case HloOpcode::kErf: case HloOpcode::kFloor: case HloOpcode::kCeil:
    case HloOpcode::kPower: case HloOpcode::kAtan2: case HloOpcode::kConvert:
      return true;
    default:
      return false;
  }
}

// Why Triton cannot emit the reducer of `reduce` (an instruction it has no lowering for, or an element type it
// does not support); nullopt when it can.
std::optional<std::string> unsupportedReducer(const HloInstruction& reduce) {
  const HloComputation* reducer = reduce.toApply();
  if (reducer == nullptr) return fmt::format("{} has no reducer", reduce.name());
  for (const auto& inst : reducer->instructions()) {
    const HloOpcode opcode = inst->opcode();
    if (opcode == HloOpcode::kParameter || opcode == HloOpcode::kConstant) continue;
    const bool typeOk = inst->shape().isArray() && (isTritonType(inst->shape().elementType()) ||
                                                    inst->shape().elementType() == PrimitiveType::kPred);
    if (!isTritonElementwise(opcode) || !typeOk) {
      return fmt::format("its reducer {} computes {} ({}), which Triton cannot emit", reducer->name(), inst->name(),
                         inst->opcodeString());
    }
  }
  return std::nullopt;
}

bool hasControlEdges(const HloInstruction& inst) {
  return !inst.controlPredecessors().empty() || !inst.controlSuccessors().empty();
}

bool isScalarConstant(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::kConstant && inst.shape().isArray() && inst.shape().elementCount() == 1;
}

// The same value along a row: a broadcast of a scalar constant or of a parameter (a layer norm's scale).
bool isSplat(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kBroadcast || inst.operandCount() != 1) return false;
  const HloInstruction& operand = *inst.operand(0);
  return operand.opcode() == HloOpcode::kParameter || isScalarConstant(operand);
}

std::vector<int64_t> nonUnitDimensions(const Shape& shape) {
  std::vector<int64_t> dims;
  for (int64_t d : shape.dimensions()) {
    if (d != 1) dims.push_back(d);
  }
  return dims;
}

// A reshape or bitcast that only adds or drops dimensions of size 1.
bool isUnitReshape(const HloInstruction& inst) {
  if ((inst.opcode() != HloOpcode::kReshape && inst.opcode() != HloOpcode::kBitcast) || inst.operandCount() != 1) {
    return false;
  }
  const Shape& from = inst.operand(0)->shape();
  return from.isArray() && inst.shape().isArray() && from.elementType() == inst.shape().elementType() &&
         nonUnitDimensions(from) == nonUnitDimensions(inst.shape());
}

// XLA's "trivially fusible": adds no memory traffic to a row kernel and keeps rows as rows.
bool isTrivial(const HloInstruction& inst, size_t allowedUsers) {
  if (!inst.shape().isArray() || inst.isRoot() || inst.users().size() > allowedUsers ||
      !hasRowMajorLayout(inst.shape()) || hasControlEdges(inst) || inst.isFusion()) {
    return false;
  }
  if (isUnitReshape(inst)) return true;
  if (!isElementwise(inst.opcode()) || !isNormalizationType(inst.shape().elementType())) return false;
  if (inst.operandCount() == 1) return true;
  if (inst.operandCount() != 2) return false;
  if (inst.operand(0) == inst.operand(1)) return true;
  return isSplat(*inst.operand(0)) != isSplat(*inst.operand(1));
}

// The operand a trivial op carries the row through (not its splat).
HloInstruction* carried(const HloInstruction& inst) {
  if (inst.operandCount() == 2 && isSplat(*inst.operand(0))) return inst.operand(1);
  return inst.operand(0);
}

// Trivial ops from `start` down to the first instruction with `opcode` (returned; null when a non-trivial op
// comes first). The ops passed are appended to `path`.
HloInstruction* walkTo(HloInstruction* start, HloOpcode opcode, std::vector<HloInstruction*>& path) {
  HloInstruction* inst = start;
  while (inst->opcode() != opcode) {
    if (!isTrivial(*inst, 1)) return nullptr;
    path.push_back(inst);
    inst = carried(*inst);
  }
  return inst;
}

// A reduce over the last dimension of P, broadcast back and combined with P by `root`.
struct Diamond {
  HloInstruction* root = nullptr;
  HloInstruction* producer = nullptr;  // P: stays outside
  HloInstruction* reduce = nullptr;
  std::vector<HloInstruction*> members;  // everything else, root included
};

// Whether the broadcast's operand varies along the output's last dimension (it then broadcasts along another).
bool variesAlongLastDimension(const HloInstruction& broadcast) {
  const std::vector<int64_t> dims = broadcast.attributes().dimensions.value_or(std::vector<int64_t>{});
  const int last = broadcast.shape().rank() - 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == last && broadcast.operand(0)->shape().dimension(static_cast<int>(i)) != 1) return true;
  }
  return false;
}

class ComputationSoftmaxFusion {
 public:
  ComputationSoftmaxFusion(HloComputation& computation, PassContext& context)
      : m_computation(computation), m_context(context) {}

  StatusOr<bool> run() {
    StatusOr<std::vector<HloInstruction*>> order = m_computation.postOrder();
    if (!order.ok()) return order.status();
    std::vector<Diamond> diamonds;
    for (HloInstruction* inst : *order) {
      if (std::optional<Diamond> diamond = match(*inst)) diamonds.push_back(std::move(*diamond));
    }
    if (diamonds.empty()) return false;
    std::vector<Group> groups = chain(diamonds);
    // Every group is settled (members, closure, the sentence a user reads) before any is built: building one
    // replaces its root by a fusion, and a later group may have that root as its producer.
    std::vector<Group> accepted;
    for (Group& group : groups) {
      absorbConsumers(group);
      if (std::optional<std::string> why = notClosed(group)) {
        refuse(*group.reduces.front(), *group.root, *why);
        continue;
      }
      completeMembers(group);
      group.reason = reasonFor(group);
      group.rootName = group.root->name();
      accepted.push_back(std::move(group));
    }
    for (Group& group : accepted) FS_RETURN_IF_ERROR(materialize(group));
    return !accepted.empty();
  }

 private:
  struct Group {
    HloInstruction* root = nullptr;
    HloInstruction* producer = nullptr;  // not dereferenced once any group is built (it may be another's root)
    std::vector<HloInstruction*> reduces;
    std::vector<HloInstruction*> members;
    int64_t saved = 0;
    std::string reason;
    std::string rootName;
  };

  void refuse(const HloInstruction& reduce, const HloInstruction& root, const std::string& why) {
    m_context.record(
        refusedDecision(kPassName, m_computation, reduce.name(), root.name(), 0,
                        fmt::format("not fusing the row normalization of {} into one kernel: {}", root.name(), why)));
  }

  // The diamond rooted at `root`, or nullopt. Silent for instructions that are no diamond at all; once a reduce
  // is found broadcast into the root, a failed condition is recorded as a refusal.
  std::optional<Diamond> match(HloInstruction& root) {
    if (!isElementwise(root.opcode()) || root.operandCount() != 2 || !root.shape().isArray() ||
        root.shape().rank() == 0 || !isNormalizationType(root.shape().elementType()) ||
        !hasRowMajorLayout(root.shape()) || hasControlEdges(root)) {
      return std::nullopt;
    }
    for (int side : {1, 0}) {  // XLA looks for the broadcast in operand 1; a commutative op may have it first
      if (side == 0 && !isCommutativeBinary(root.opcode())) break;
      std::vector<HloInstruction*> path;
      HloInstruction* broadcast = walkTo(root.operand(side), HloOpcode::kBroadcast, path);
      if (broadcast == nullptr || broadcast->operandCount() != 1) continue;
      HloInstruction* reduce = walkTo(broadcast->operand(0), HloOpcode::kReduce, path);
      if (reduce == nullptr) continue;
      const std::vector<int64_t> reduced = reduce->attributes().dimensions.value_or(std::vector<int64_t>{});
      if (reduce->operandCount() != 2 || !reduce->shape().isArray()) {
        refuse(*reduce, root, fmt::format("{} is a variadic reduce", reduce->name()));
        return std::nullopt;
      }
      if (!isTritonType(root.shape().elementType()) || !isTritonType(reduce->shape().elementType())) {
        refuse(*reduce, root,
               fmt::format("its rows are {}, an element type Triton (which emits these kernels) does not support",
                           primitiveTypeName(root.shape().elementType())));
        return std::nullopt;
      }
      if (std::optional<std::string> why = unsupportedReducer(*reduce)) {
        refuse(*reduce, root, *why);
        return std::nullopt;
      }
      const Shape& rowShape = reduce->operand(0)->shape();
      if (reduced.size() != 1 || reduced[0] != rowShape.rank() - 1) {
        refuse(*reduce, root,
               fmt::format("{} does not reduce only the last dimension of its operand; a row kernel reduces rows",
                           reduce->name()));
        return std::nullopt;
      }
      const HloInstruction* init = reduce->operand(1);
      if (!isScalarConstant(*init) && !(init->opcode() == HloOpcode::kConvert && isScalarConstant(*init->operand(0)))) {
        refuse(*reduce, root, fmt::format("the init value of {} is not a constant", reduce->name()));
        return std::nullopt;
      }
      if (reduce->users().size() != 1 || broadcast->users().size() != 1) {
        const HloInstruction& shared = reduce->users().size() != 1 ? *reduce : *broadcast;
        refuse(*reduce, root,
               fmt::format("{} has {} users; its result would have to be written for the others", shared.name(),
                           shared.users().size()));
        return std::nullopt;
      }
      if (variesAlongLastDimension(*broadcast)) {
        refuse(*reduce, root,
               fmt::format("{} broadcasts along the reduced dimension, not back over the rows", broadcast->name()));
        return std::nullopt;
      }
      if (!hasRowMajorLayout(rowShape) || !hasRowMajorLayout(reduce->shape()) ||
          !hasRowMajorLayout(broadcast->shape())) {
        refuse(*reduce, root, "the rows are not contiguous (a layout other than row-major)");
        return std::nullopt;
      }
      HloInstruction* producer = reduce->operand(0);
      std::vector<HloInstruction*> producerPath;
      while (isTrivial(*producer, 1)) {
        producerPath.push_back(producer);
        producer = carried(*producer);
      }
      std::vector<HloInstruction*> otherPath;
      HloInstruction* other = root.operand(1 - side);
      while (other != producer && isTrivial(*other, 1)) {
        otherPath.push_back(other);
        other = carried(*other);
      }
      if (other != producer) {
        refuse(*reduce, root,
               fmt::format("{} combines the broadcast result with {}, which does not lead back to {} (the value "
                           "{} reduces) through elementwise ops",
                           root.name(), root.operand(1 - side)->name(), producer->name(), reduce->name()));
        return std::nullopt;
      }
      Diamond diamond;
      diamond.root = &root;
      diamond.producer = producer;
      diamond.reduce = reduce;
      diamond.members = {&root, broadcast, reduce};
      for (auto* list : {&path, &producerPath, &otherPath}) {
        diamond.members.insert(diamond.members.end(), list->begin(), list->end());
      }
      return diamond;
    }
    return std::nullopt;
  }

  // Diamonds in post order, as XLA's rewriter chains them. From a diamond's producer a walk goes up through
  // trivial ops: the first may have two users (the exp a softmax's sum reduces and divides by), the others one.
  // When the walk reaches the root of an earlier group that has no other user (or two users when it is itself
  // this diamond's producer), the diamond joins that group; otherwise it starts a group of its own, which takes the
  // ops walked through (the exp after a bitcast that changed the rows, or after a root the program also outputs).
  std::vector<Group> chain(const std::vector<Diamond>& diamonds) {
    std::vector<Group> groups;
    std::unordered_map<const HloInstruction*, size_t> groupOfRoot;
    std::unordered_set<const HloInstruction*> taken;
    for (const Diamond& diamond : diamonds) {
      if (std::any_of(diamond.members.begin(), diamond.members.end(),
                      [&](const HloInstruction* m) { return taken.count(m) > 0; })) {
        continue;
      }
      std::vector<HloInstruction*> link;
      HloInstruction* inst = diamond.producer;
      // An op applied to a dot's or convolution's result (a bias add) is not walked through: XLA's GEMM rewriter,
      // which runs before its softmax rewriter, has made it the library call's epilogue.
      auto epilogueOfLibraryCall = [](const HloInstruction& op) {
        const HloOpcode from = carried(op)->opcode();
        return from == HloOpcode::kDot || from == HloOpcode::kConvolution;
      };
      while (!groupOfRoot.count(inst) && isTrivial(*inst, link.empty() ? 2 : 1) && !taken.count(inst) &&
             !epilogueOfLibraryCall(*inst)) {
        link.push_back(inst);
        inst = carried(*inst);
      }
      size_t index = groups.size();
      auto it = groupOfRoot.find(inst);
      const bool joins = it != groupOfRoot.end() &&
                         (inst->users().size() == 1 || (inst->users().size() == 2 && inst == diamond.producer));
      if (joins) {
        index = it->second;
        groupOfRoot.erase(it);
      } else {
        // A new group takes the ops walked through only while each is used inside it alone (it would otherwise
        // be written out too).
        std::unordered_set<const HloInstruction*> inside(diamond.members.begin(), diamond.members.end());
        size_t kept = 0;
        for (; kept < link.size(); ++kept) {
          const auto& users = link[kept]->users();
          if (!std::all_of(users.begin(), users.end(), [&](const HloInstruction* u) { return inside.count(u) > 0; }))
            break;
          inside.insert(link[kept]);
        }
        link.resize(kept);
        groups.push_back(Group{});
        groups[index].producer = link.empty() ? diamond.producer : carried(*link.back());
      }
      groups[index].members.insert(groups[index].members.end(), link.begin(), link.end());
      for (const HloInstruction* l : link) taken.insert(l);
      Group& group = groups[index];
      group.root = diamond.root;
      group.reduces.push_back(diamond.reduce);
      group.members.insert(group.members.end(), diamond.members.begin(), diamond.members.end());
      for (const HloInstruction* m : diamond.members) taken.insert(m);
      groupOfRoot[diamond.root] = index;
    }
    m_taken = std::move(taken);
    return groups;
  }

  // Elementwise consumers of the root whose other operands are splats (a layer norm's scale and shift) join.
  void absorbConsumers(Group& group) {
    while (group.root->users().size() == 1 && !group.root->isRoot()) {
      HloInstruction* user = group.root->users().front();
      if (m_taken.count(user) || !isElementwise(user->opcode()) || !user->shape().isArray() ||
          user->shape().dimensions() != group.root->shape().dimensions() ||
          !isNormalizationType(user->shape().elementType()) || !hasRowMajorLayout(user->shape()) ||
          hasControlEdges(*user)) {
        return;
      }
      const bool othersAreSplats = std::all_of(user->operands().begin(), user->operands().end(),
                                               [&](const HloInstruction* o) { return o == group.root || isSplat(*o); });
      if (!othersAreSplats) return;
      for (HloInstruction* operand : user->operands()) {
        if (operand != group.root && !m_taken.count(operand)) group.members.push_back(operand);
      }
      group.members.push_back(user);
      m_taken.insert(user);
      group.root = user;
    }
  }

  // Every member but the root must be used only inside the group; otherwise the kernel would also have to
  // write it out.
  std::optional<std::string> notClosed(const Group& group) const {
    std::unordered_set<const HloInstruction*> in(group.members.begin(), group.members.end());
    for (const HloInstruction* member : group.members) {
      if (member == group.root || isSplat(*member) || isScalarConstant(*member)) continue;  // duplicated if shared
      if (member->isRoot()) return fmt::format("{} is also an output of {}", member->name(), m_computation.name());
      for (const HloInstruction* user : member->users()) {
        if (!in.count(user)) {
          return fmt::format("{} is also used by {} outside the rows' kernel; it would have to be written too",
                             member->name(), user->name());
        }
      }
    }
    return std::nullopt;
  }

  // Splat operands of the members come along (duplicated when used elsewhere too), with their scalar constant;
  // a parameter stays an input. So does a reduce's init constant.
  void completeMembers(Group& group) {
    std::unordered_set<const HloInstruction*> in(group.members.begin(), group.members.end());
    for (HloInstruction* member : std::vector<HloInstruction*>(group.members)) {
      for (HloInstruction* operand : member->operands()) {
        if (isSplat(*operand) && in.insert(operand).second) group.members.push_back(operand);
      }
    }
    for (HloInstruction* member : std::vector<HloInstruction*>(group.members)) {
      if (isSplat(*member) && isScalarConstant(*member->operand(0)) && in.insert(member->operand(0)).second) {
        group.members.push_back(member->operand(0));
      }
      if (member->opcode() == HloOpcode::kReduce && isScalarConstant(*member->operand(1)) &&
          in.insert(member->operand(1)).second) {
        group.members.push_back(member->operand(1));
      }
      if (member->opcode() == HloOpcode::kReduce && member->operand(1)->opcode() == HloOpcode::kConvert &&
          in.insert(member->operand(1)).second) {
        group.members.push_back(member->operand(1));
        if (in.insert(member->operand(1)->operand(0)).second) group.members.push_back(member->operand(1)->operand(0));
      }
    }
  }

  std::string reasonFor(Group& group) const {
    group.saved = 0;  // intermediate rows no longer written and read back
    for (const HloInstruction* member : group.members) {
      if (member != group.root && member->shape().isArray() && member->shape().elementCount() > 1 &&
          member->opcode() != HloOpcode::kBroadcast && !isUnitReshape(*member)) {
        group.saved += 2 * member->shape().byteSize();
      }
    }
    std::vector<std::string> reduceNames;
    for (const HloInstruction* reduce : group.reduces) reduceNames.push_back(reduce->name());
    return fmt::format(
        "one row-normalization kernel (kCustom, as XLA GPU's Triton softmax fusion) reads each row of {} once and "
        "computes {} reduction{} over it ({}) with everything between; saves {} of memory traffic",
        group.producer->name(), group.reduces.size(), group.reduces.size() == 1 ? "" : "s",
        fmt::join(reduceNames, ", "), formatBytes(group.saved));
  }

  Status materialize(Group& group) {
    std::unordered_set<const HloInstruction*> in(group.members.begin(), group.members.end());
    in.erase(group.root);  // replaced (and freed) by the fusion that wraps it
    HloInstruction* fusion = wrapInFusion(group.root, FusionKind::kCustom);
    fusion->mutableAttributes().backendConfig = std::string(kTritonFusionBackendConfig);
    StatusOr<std::vector<HloInstruction*>> order = m_computation.postOrder();
    if (!order.ok()) return order.status();
    // Users before operands, so every member is an operand of the fusion when its turn comes.
    for (auto it = order->rbegin(); it != order->rend(); ++it) {
      HloInstruction* producer = *it;
      if (producer == fusion || !in.count(producer)) continue;
      const std::string name = producer->name();
      StatusOr<HloInstruction*> fused = fuseProducer(fusion, producer);
      if (!fused.ok()) return fused.status();
      fusion = *fused;
      m_context.record(fusedDecision(kPassName, m_computation, name, group.rootName, *fusion, group.saved,
                                     fmt::format("fused {} into {}: {}", name, group.rootName, group.reason)));
    }
    return okStatus();
  }

  HloComputation& m_computation;
  PassContext& m_context;
  std::unordered_set<const HloInstruction*> m_taken;
};

}  // namespace

bool isNormalizationFusion(const HloInstruction& instruction) {
  if (!instruction.isFusion() || instruction.fusionKind() != FusionKind::kCustom) return false;
  const std::optional<std::string>& config = instruction.attributes().backendConfig;
  // XLA writes "kind":"__triton" for generic Triton fusions (softmax, normalizations); "__triton_gemm" and
  // others are library-like fusions.
  return config && config->find(R"("kind":"__triton")") != std::string::npos;
}

StatusOr<bool> SoftmaxFusion::run(HloModule& module, PassContext& context) {
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    ComputationSoftmaxFusion fusion(*computation, context);
    StatusOr<bool> result = fusion.run();
    if (!result.ok()) return result.status();
    changed |= *result;
  }
  return changed;
}

}  // namespace fusionscope::core
