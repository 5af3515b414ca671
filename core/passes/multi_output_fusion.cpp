#include "core/passes/multi_output_fusion.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_cost.h"
#include "core/passes/fusion_rules.h"
#include "core/passes/fusion_utils.h"
#include "core/passes/merge_tracking.h"

namespace fusionscope::core {
namespace {

// A merge can enable another (a loop fusion merged into a reduction becomes a reduction consumer);
// candidates are rebuilt and the sweep repeated until one changes nothing, so a second run is a no-op.
constexpr int kMaxRounds = 8;
constexpr std::string_view kPassName = "multi-output-fusion";

// What one kernel iterates over. Kernels can share a multi-output fusion only when they walk the same
// index space: loops over equal shapes, reductions of equal inputs over the same dimensions, a loop over the
// shape a reduction reads, transposes of equal inputs by the same permutation, or a loop over the shape a
// transpose reads (XLA: a transpose kernel walks its input in tiles; its "loop shape" is its operand's).
// It points into the instructions it describes (no copies: the pass asks for one per instruction); the cache
// forgets an instruction's entry before a merge changes or deletes it.
struct IterationSpace {
  bool reduction = false;
  const Shape* shape = nullptr;  // loop: the output shape; reduction and transpose: the hero's input shape
  const std::vector<int64_t>* dimensions = nullptr;  // reduced dimensions; a transpose's permutation
  bool transpose = false;
};

const std::vector<int64_t> kNoDimensions;

IterationSpace reduceSpace(const HloInstruction& reduce) {
  const std::optional<std::vector<int64_t>>& dims = reduce.attributes().dimensions;
  return IterationSpace{true, &reduce.operand(0)->shape(), dims ? &*dims : &kNoDimensions};
}

// A transpose that moves data (not a bitcast: its non-unit dimensions change order).
bool isPhysicalTranspose(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kTranspose || inst.operandCount() != 1 || !inst.shape().isArray()) return false;
  const std::optional<std::vector<int64_t>>& perm = inst.attributes().dimensions;
  if (!perm) return false;
  const Shape& in = inst.operand(0)->shape();
  int64_t last = -1;
  for (int64_t d : *perm) {
    if (d < 0 || d >= in.rank()) return false;
    if (in.dimension(static_cast<int>(d)) == 1) continue;
    if (d < last) return true;
    last = d;
  }
  return false;
}

IterationSpace transposeSpace(const HloInstruction& transpose) {
  return IterationSpace{false, &transpose.operand(0)->shape(), &*transpose.attributes().dimensions, true};
}

// The transpose a kInput fusion without a reduction is built around: its output, seen through bitcasts and
// reshapes after it (XLA's real hero for multi-output fusion), or null.
const HloInstruction* transposeHero(const HloInstruction& fusion) {
  for (const HloInstruction* output : fusionOutputs(fusion)) {
    while ((output->opcode() == HloOpcode::kBitcast || output->opcode() == HloOpcode::kReshape) &&
           output->operandCount() == 1)
      output = output->operand(0);
    if (isPhysicalTranspose(*output)) return output;
  }
  return nullptr;
}

const HloInstruction* reductionHero(const HloInstruction& fusion) {
  for (const HloInstruction* output : fusionOutputs(fusion)) {
    if (output->opcode() == HloOpcode::kReduce && output->operandCount() > 0) return output;
  }
  for (const HloInstruction* inst : fusedInstructions(fusion)) {
    if (inst->opcode() == HloOpcode::kReduce && inst->operandCount() > 0) return inst;
  }
  return nullptr;
}

bool hasControlEdges(const HloInstruction& inst) {
  return !inst.controlPredecessors().empty() || !inst.controlSuccessors().empty();
}

// Elementwise instructions worth a kernel of their own (effective scalars are not).
bool isFusibleElementwise(const HloInstruction& inst) {
  return !inst.isFusion() && isElementwise(inst.opcode()) && inst.shape().isArray() &&
         inst.shape().elementCount() > 1 && !inst.hasSideEffect();
}

// The iteration space of a kernel that may become part of a multi-output fusion: a kLoop fusion, a
// kInput fusion with a reduce hero, or a reduce / elementwise instruction still outside any fusion.
std::optional<IterationSpace> iterationSpace(const HloInstruction& inst) {
  if (hasControlEdges(inst)) return std::nullopt;
  if (inst.isFusion()) {
    if (!inst.fusedComputation()) return std::nullopt;
    if (inst.fusionKind() == FusionKind::kLoop) {
      std::vector<HloInstruction*> outputs = fusionOutputs(inst);
      if (outputs.empty() || !outputs.front()->shape().isArray()) return std::nullopt;
      return IterationSpace{false, &outputs.front()->shape(), &kNoDimensions};
    }
    if (inst.fusionKind() == FusionKind::kInput) {
      if (const HloInstruction* hero = reductionHero(inst)) return reduceSpace(*hero);
      if (const HloInstruction* hero = transposeHero(inst)) return transposeSpace(*hero);
    }
    return std::nullopt;
  }
  if (isPhysicalTranspose(inst) && !inst.hasSideEffect()) return transposeSpace(inst);
  if (inst.opcode() == HloOpcode::kReduce && inst.operandCount() > 0 && inst.shape().isArray() &&
      !inst.hasSideEffect()) {
    return reduceSpace(inst);
  }
  if (isFusibleElementwise(inst)) return IterationSpace{false, &inst.shape(), &kNoDimensions};
  return std::nullopt;
}

// Equal dimensions, whatever the element types: one loop (or one reduction walk) can produce an f16 and an f32
// output together (XLA compares shapes ignoring element types here).
bool sameDimensions(const Shape& a, const Shape& b) {
  return a.isArray() && b.isArray() && a.dimensions() == b.dimensions();
}

// The same loop for sibling pairing: dimensions and which of them are dynamic, whatever the element types (XLA
// compares the shapes ignoring them: one loop can write an f16 and an f32 output).
bool sameLoopShape(const Shape& a, const Shape& b) {
  if (!sameDimensions(a, b)) return false;
  if (!a.hasDynamicDimension() && !b.hasDynamicDimension()) return true;
  for (int i = 0; i < a.rank(); ++i) {
    if (a.isDynamicDimension(i) != b.isDynamicDimension(i)) return false;
  }
  return true;
}

// Why two kernels cannot share one loop, or nullopt when they can.
std::optional<std::string> incompatibility(const HloInstruction& a, const IterationSpace& sa, const HloInstruction& b,
                                           const IterationSpace& sb) {
  // A variadic reduce (an argmax's value and index) is a tuple-shaped output; a kernel runs one alone or as its
  // fusion's only root (XLA flattens it into the root tuple, which our kernels do not take beside other outputs).
  for (const HloInstruction* side : {&a, &b}) {
    for (const HloInstruction* output : side->isFusion() ? fusionOutputs(*side) : std::vector<HloInstruction*>{}) {
      if (output->shape().isTuple()) {
        return fmt::format("{} produces a tuple ({} is a variadic {}); a kernel takes it only as its one output",
                           side->name(), output->name(), output->opcodeString());
      }
    }
    if (side->shape().isTuple() && !side->isFusion()) {
      return fmt::format("{} produces a tuple (a variadic {}); a kernel takes it only as its one output", side->name(),
                         side->opcodeString());
    }
  }
  if (sa.transpose || sb.transpose) {
    if ((sa.transpose && sb.reduction) || (sb.transpose && sa.reduction)) {
      return fmt::format("{} is built around a transpose and {} around a reduction; they walk memory in different "
                         "orders",
                         sa.transpose ? a.name() : b.name(), sa.transpose ? b.name() : a.name());
    }
    if (sa.transpose && sb.transpose) {
      if (sameDimensions(*sa.shape, *sb.shape) && *sa.dimensions == *sb.dimensions) return std::nullopt;
      return fmt::format("their transposes differ ({} by {} and {} by {}); one kernel tiles one transpose",
                         sa.shape->toString(false), dimensionListText(*sa.dimensions), sb.shape->toString(false),
                         dimensionListText(*sb.dimensions));
    }
    // A loop beside a transpose: over the shape the transpose reads.
    const IterationSpace& t = sa.transpose ? sa : sb;
    const IterationSpace& loop = sa.transpose ? sb : sa;
    if (sameDimensions(*loop.shape, *t.shape)) return std::nullopt;
    return fmt::format("{}'s output shape {} is not the shape {} that {} transposes", (sa.transpose ? b : a).name(),
                       loop.shape->toString(false), t.shape->toString(false), (sa.transpose ? a : b).name());
  }
  if (!sa.reduction && !sb.reduction) {
    if (sameDimensions(*sa.shape, *sb.shape)) return std::nullopt;
    return fmt::format("output shapes {} and {} are not the same loop", sa.shape->toString(false),
                       sb.shape->toString(false));
  }
  if (sa.reduction && sb.reduction) {
    if (!sameDimensions(*sa.shape, *sb.shape)) {
      return fmt::format("they reduce different shapes ({} and {})", sa.shape->toString(false),
                         sb.shape->toString(false));
    }
    if (*sa.dimensions != *sb.dimensions) {
      return fmt::format("they reduce {} over different dimensions ({} and {})", sa.shape->toString(false),
                         dimensionListText(*sa.dimensions), dimensionListText(*sb.dimensions));
    }
    return std::nullopt;
  }
  const HloInstruction& loop = sa.reduction ? b : a;
  const IterationSpace& loopSpace = sa.reduction ? sb : sa;
  const HloInstruction& reduction = sa.reduction ? a : b;
  const IterationSpace& reduceSpaceOf = sa.reduction ? sa : sb;
  if (sameDimensions(*loopSpace.shape, *reduceSpaceOf.shape)) return std::nullopt;
  return fmt::format("{}'s output shape {} is not the shape {} that {} reduces", loop.name(),
                     loopSpace.shape->toString(false), reduceSpaceOf.shape->toString(false), reduction.name());
}

// Candidates are taken by bytes saved, largest first.
struct Candidate {
  int64_t bytes = 0;
  int64_t sequence = 0;
  bool sibling = true;
  int first = 0;   // sibling: one kernel; producer-consumer: the producer
  int second = 0;  // sibling: the other kernel; producer-consumer: the consumer
};
struct ByBytes {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    // On a tie producer-consumer first: it saves as much and also removes the producer's kernel.
    if (a.sibling != b.sibling) return a.sibling;
    return a.sequence > b.sequence;  // earlier found first among equals: deterministic
  }
};

struct SharedOperands {
  int64_t bytes = 0;
  std::vector<const HloInstruction*> operands;
};
SharedOperands sharedOperands(const HloInstruction& a, const HloInstruction& b) {
  SharedOperands shared;
  std::vector<HloInstruction*> fromA = distinctOperands(a);
  for (HloInstruction* operand : distinctOperands(b)) {
    if (std::find(fromA.begin(), fromA.end(), operand) == fromA.end()) continue;
    shared.bytes += operand->shape().byteSize();
    shared.operands.push_back(operand);
  }
  return shared;
}

std::string operandList(const SharedOperands& shared) {
  std::vector<std::string> names;
  for (const HloInstruction* operand : shared.operands) {
    if (names.size() == 3) {
      names.push_back(fmt::format("{} more", shared.operands.size() - 3));
      break;
    }
    names.push_back(operand->name());
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// One round of candidate collection and merging over one computation.
class Round {
 public:
  // `dependent`: pairs of instructions (idPair) found to depend on each other in earlier rounds. A merge never
  // removes a path (the instruction that stays takes over the other's operands and users; a fusion that wraps
  // one takes its place), and ids are never reused, so such a pair still depends: later rounds refuse it
  // without walking the graph again.
  Round(HloComputation& computation, const FusionConfig& config, PassContext& context,
        std::unordered_set<uint64_t>& dependent)
      : m_computation(computation), m_config(config), m_context(context), m_dependent(dependent) {}

  // Whether anything merged; refusals() holds the refused candidates of this round.
  StatusOr<bool> run() {
    StatusOr<std::vector<HloInstruction*>> post = m_computation.postOrder();
    if (!post.ok()) return post.status();
    m_order.emplace(*post, m_computation.idBound());
    // Collect every candidate of the computation, then take them largest first.
    collectSiblings(*post);
    collectProducerConsumers(*post);
    bool changed = false;
    while (!m_queue.empty()) {
      Candidate candidate = m_queue.top();
      m_queue.pop();
      StatusOr<bool> merged = candidate.sibling ? trySiblings(candidate) : tryProducerConsumer(candidate);
      if (!merged.ok()) return merged.status();
      changed = changed || *merged;
    }
    return changed;
  }
  // Refusals found while collecting (in the order found), then those of the merge loop.
  std::vector<FusionDecision> refusals() {
    std::vector<FusionDecision> all = std::move(m_collectRefusals);
    all.insert(all.end(), std::make_move_iterator(m_refusals.begin()), std::make_move_iterator(m_refusals.end()));
    return all;
  }

 private:
  // One 64-bit key per ordered pair of instructions, by their ids (unique in the computation, never reused).
  static uint64_t idPair(const HloInstruction& a, const HloInstruction& b) {
    return static_cast<uint64_t>(a.id()) << 32 | static_cast<uint32_t>(b.id());
  }

  // One 64-bit key per unordered pair of candidate ids and kind.
  static uint64_t pairKey(bool sibling, int a, int b) {
    const uint64_t low = static_cast<uint32_t>(std::min(a, b));
    const uint64_t high = static_cast<uint32_t>(std::max(a, b));
    return ((low << 31 | high) << 1) | (sibling ? 1u : 0u);
  }

  void push(bool sibling, HloInstruction* first, HloInstruction* second, int64_t bytes) {
    int a = m_ids.id(first);
    int b = m_ids.id(second);
    if (!m_seenPairs.insert(pairKey(sibling, a, b)).second) return;
    m_queue.push(Candidate{bytes, m_sequence++, sibling, a, b});
  }

  // Siblings: for every operand worth sharing, its users that can be multi-output kernels, in
  // topological order; each one pairs with the previous user of the same iteration shape (pairing only
  // neighbours keeps this linear; merged kernels carry the pairing on).
  void collectSiblings(std::span<HloInstruction* const> operands) {
    for (size_t i = 0; i < operands.size(); ++i) {
      HloInstruction* operand = operands[i];
      // Cheapest first: most instructions have one user, and the element count reads the shape's dimensions.
      if (operand->users().size() < 2 || operand->opcode() == HloOpcode::kConstant || !operand->shape().isArray() ||
          operand->shape().elementCount() <= 1) {
        continue;
      }
      std::vector<std::pair<HloInstruction*, IterationSpace>> users;
      for (HloInstruction* user : operand->users()) {
        if (const std::optional<IterationSpace>& space = iterationSpace(*user)) users.emplace_back(user, *space);
      }
      if (users.size() < 2) continue;
      std::sort(users.begin(), users.end(),
                [&](const auto& x, const auto& y) { return m_order->position(x.first) < m_order->position(y.first); });
      // The last user seen per distinct loop shape: a handful per operand, so a linear search beats hashing
      // a printed shape for every user.
      std::vector<std::pair<const Shape*, HloInstruction*>> lastOfShape;
      for (size_t i = 0; i < users.size(); ++i) {
        auto& [user, space] = users[i];
        auto it = std::find_if(lastOfShape.begin(), lastOfShape.end(),
                               [&](const auto& entry) { return sameLoopShape(*entry.first, *space.shape); });
        if (it != lastOfShape.end()) {
          push(true, it->second, user, sharedOperands(*it->second, *user).bytes);
          it->second = user;
        } else {
          lastOfShape.emplace_back(space.shape, user);
        }
        if (i == 0) continue;
        // Neighbours that walk different shapes are the refusals a reader would ask about.
        const auto& [previous, previousSpace] = users[i - 1];
        if (sameLoopShape(*previousSpace.shape, *space.shape)) continue;
        if (std::optional<std::string> why = incompatibility(*previous, previousSpace, *user, space)) {
          int a = m_ids.id(previous);
          int b = m_ids.id(user);
          if (m_seenPairs.insert(pairKey(true, a, b)).second) {
            m_collectRefusals.push_back(refusal(
                *previous, *user, fmt::format("not merging {} and {}: {}", previous->name(), user->name(), *why)));
          }
        }
      }
    }
  }

  // Producer-consumer: an elementwise instruction or single-output kLoop fusion read by a reduction and
  // by something else.
  void collectProducerConsumers(std::span<HloInstruction* const> consumers) {
    for (HloInstruction* consumer : consumers) {
      const std::optional<IterationSpace>& space = iterationSpace(*consumer);
      if (!space || !space->reduction) continue;
      for (HloInstruction* producer : distinctOperands(*consumer)) {
        if (!isProducerCandidate(*producer)) continue;
        if (producer->users().size() < 2 && !producer->isRoot()) continue;  // plain fusion's business
        push(false, producer, consumer, producer->shape().byteSize());
      }
    }
  }

  static bool isProducerCandidate(const HloInstruction& producer) {
    if (hasControlEdges(producer)) return false;
    if (producer.isFusion()) {
      return producer.fusionKind() == FusionKind::kLoop && producer.fusedComputation() &&
             !isMultiOutputFusion(producer) && producer.shape().isArray();
    }
    return isFusibleElementwise(producer);
  }

  std::optional<std::string> exceedsLimits(const HloInstruction& a, const HloInstruction& b,
                                           const HloInstruction* dropOperand) const {
    std::vector<HloInstruction*> operands = distinctOperands(a);
    for (HloInstruction* operand : distinctOperands(b)) {
      if (std::find(operands.begin(), operands.end(), operand) == operands.end()) operands.push_back(operand);
    }
    int64_t operandCount = static_cast<int64_t>(operands.size());
    if (dropOperand && std::find(operands.begin(), operands.end(), dropOperand) != operands.end()) --operandCount;
    if (operandCount > m_config.maxOperands) {
      return fmt::format("the merged fusion would have {} operands (limit {})", operandCount, m_config.maxOperands);
    }
    int64_t instructions = fusedInstructionCount(a) + fusedInstructionCount(b);
    if (instructions > m_config.maxFusedInstructions) {
      return fmt::format("the merged fusion would have {} instructions (limit {})", instructions,
                         m_config.maxFusedInstructions);
    }
    return std::nullopt;
  }

  StatusOr<bool> trySiblings(const Candidate& candidate) {
    HloInstruction* a = m_ids.instruction(candidate.first);
    HloInstruction* b = m_ids.instruction(candidate.second);
    if (!a || !b || a == b) return false;
    if (m_order->position(a) > m_order->position(b)) std::swap(a, b);
    const std::optional<IterationSpace> sa = iterationSpace(*a);
    const std::optional<IterationSpace> sb = iterationSpace(*b);
    if (!sa || !sb) return false;
    SharedOperands shared = sharedOperands(*a, *b);
    if (shared.bytes <= 0) return false;
    if (shared.bytes != candidate.bytes) {  // operands changed since it was queued: requeue at its worth
      m_queue.push(Candidate{shared.bytes, candidate.sequence, true, candidate.first, candidate.second});
      return false;
    }
    auto prefix = [&] { return fmt::format("not merging {} and {}", a->name(), b->name()); };
    if (std::optional<std::string> why = incompatibility(*a, *sa, *b, *sb)) {
      refuseOnce(*a, *b, fmt::format("{}: {}", prefix(), *why), shared.bytes);
      return false;
    }
    const uint64_t pair = idPair(*a, *b);
    if (m_dependent.contains(pair) || m_order->reaches(a, b, /*skipDirect=*/false)) {
      m_dependent.insert(pair);
      refuseOnce(*a, *b, fmt::format("{}: {} depends on {}", prefix(), b->name(), a->name()), shared.bytes);
      return false;
    }
    if (std::optional<std::string> why = exceedsLimits(*a, *b, nullptr)) {
      refuseOnce(*a, *b, fmt::format("{}: {}", prefix(), *why), shared.bytes);
      return false;
    }
    // A loop sharing a reduction's loop follows the reduction's read order, as a producer fused into it would.
    if (sa->reduction != sb->reduction) {
      if (FusionVerdict verdict = reductionOrderRule(sa->reduction ? *b : *a); !verdict) {
        refuseOnce(*a, *b, fmt::format("{}: {}", prefix(), verdict.reason), shared.bytes);
        return false;
      }
    }

    const std::string nameA = a->name();
    const std::string nameB = b->name();
    const bool reduction = sa->reduction || sb->reduction;
    const std::string sharedText = operandList(shared);
    TopologicalOrder::MergePlan plan = m_order->planMerge(a, b);
    // Neither a nor b may be read after this: ensureFusion replaces an unfused one, the merge deletes b.
    HloInstruction* fusionA = ensureFusion(a, sa->reduction);
    HloInstruction* fusionB = ensureFusion(b, sb->reduction);
    int idA = m_ids.id(fusionA);
    int idB = m_ids.id(fusionB);
    const int64_t fusionBId = fusionB->id();
    StatusOr<HloInstruction*> merged = mergeSiblingFusion(fusionA, fusionB);
    if (!merged.ok()) return merged.status();
    m_order->forget(fusionBId);
    m_ids.mergeInto(idB, idA);
    fusionA->mutableAttributes().fusionKind = reduction ? FusionKind::kInput : FusionKind::kLoop;
    m_order->applyMerge(plan, fusionA);

    m_context.record(
        fusedDecision(kPassName, m_computation, nameB, nameA, *fusionA, shared.bytes,
                      fmt::format("merged {} and {} into one multi-output fusion {}: they share {} ({} read once)",
                                  nameA, nameB, fusionA->name(), sharedText, formatBytes(shared.bytes))));
    return true;
  }

  StatusOr<bool> tryProducerConsumer(const Candidate& candidate) {
    if (m_ids.forwarded(candidate.first)) return false;  // the producer already merged somewhere
    HloInstruction* producer = m_ids.instruction(candidate.first);
    HloInstruction* consumer = m_ids.instruction(candidate.second);
    if (!producer || !consumer || producer == consumer || !isProducerCandidate(*producer)) return false;
    if (std::find(consumer->operands().begin(), consumer->operands().end(), producer) == consumer->operands().end()) {
      return false;
    }
    if (producer->users().size() < 2 && !producer->isRoot()) return false;
    const std::optional<IterationSpace>& consumerSpace = iterationSpace(*consumer);
    if (!consumerSpace || !consumerSpace->reduction) return false;
    int64_t bytes = producer->shape().byteSize();
    auto prefix = [&] { return fmt::format("not fusing {} into {}", producer->name(), consumer->name()); };
    const std::optional<IterationSpace>& producerSpace = iterationSpace(*producer);
    if (!producerSpace) return false;
    if (std::optional<std::string> why = incompatibility(*producer, *producerSpace, *consumer, *consumerSpace)) {
      refuseOnce(*producer, *consumer, fmt::format("{}: {}", prefix(), *why), bytes);
      return false;
    }
    if (m_order->reaches(producer, consumer, /*skipDirect=*/true)) {
      refuseOnce(*producer, *consumer,
                 fmt::format("{}: {} also depends on {} through another path (fusing would create a cycle)", prefix(),
                             consumer->name(), producer->name()),
                 bytes);
      return false;
    }
    if (std::optional<std::string> why = exceedsLimits(*consumer, *producer, producer)) {
      refuseOnce(*producer, *consumer, fmt::format("{}: {}", prefix(), *why), bytes);
      return false;
    }
    // The producer-consumer rules of `fusion` hold here too: this pass may not build what fusion refuses.
    FusionKind kind = FusionKind::kInput;
    if (FusionVerdict verdict = pairRule(*producer, *consumer, m_config, kind); !verdict) {
      refuseOnce(*producer, *consumer, fmt::format("{}: {}", prefix(), verdict.reason), bytes);
      return false;
    }

    const std::string producerName = producer->name();
    const std::string consumerName = consumer->name();
    TopologicalOrder::MergePlan plan = m_order->planMerge(producer, consumer);
    const int64_t producerId = producer->id();
    HloInstruction* fusion = ensureFusion(consumer, true);  // consumer may be gone after this
    int consumerId = m_ids.id(fusion);
    StatusOr<HloInstruction*> fused = fuseProducerMultiOutput(fusion, producer);
    if (!fused.ok()) return fused.status();
    m_order->forget(producerId);
    m_ids.mergeInto(candidate.first, consumerId);
    fusion->mutableAttributes().fusionKind = FusionKind::kInput;
    m_order->applyMerge(plan, fusion);

    m_context.record(fusedDecision(
        kPassName, m_computation, producerName, consumerName, *fusion, bytes,
        fmt::format("fused {} into {} as an extra output of multi-output fusion {}: {} is computed once and its {} "
                    "result is not read back",
                    producerName, consumerName, fusion->name(), producerName, formatBytes(bytes))));
    return true;
  }

  // A reduce or elementwise instruction becomes a fusion of its own before merging; the fusion keeps its
  // place in the order and its candidate id.
  HloInstruction* ensureFusion(HloInstruction* inst, bool reduction) {
    if (inst->isFusion()) return inst;
    int id = m_ids.id(inst);
    const int64_t instId = inst->id();
    HloInstruction* fusion = wrapInFusion(inst, reduction ? FusionKind::kInput : FusionKind::kLoop);
    m_order->replace(instId, fusion);
    m_ids.replace(id, fusion);
    return fusion;
  }

  FusionDecision refusal(const HloInstruction& moving, const HloInstruction& into, std::string reason,
                         int64_t bytes = 0) const {
    return refusedDecision(kPassName, m_computation, moving.name(), into.name(), bytes, std::move(reason));
  }
  // A pair can come back through forwarding (its kernels merged with others); say no once.
  void refuseOnce(const HloInstruction& a, const HloInstruction& b, std::string reason, int64_t bytes) {
    if (!m_refusedPairs.insert(idPair(a, b)).second) return;
    m_refusals.push_back(refusal(a, b, std::move(reason), bytes));
  }

  HloComputation& m_computation;
  const FusionConfig& m_config;
  PassContext& m_context;
  std::optional<TopologicalOrder> m_order;
  CandidateIds m_ids;
  std::priority_queue<Candidate, std::vector<Candidate>, ByBytes> m_queue;
  std::unordered_set<uint64_t> m_seenPairs;
  std::unordered_set<uint64_t>& m_dependent;
  std::unordered_set<uint64_t> m_refusedPairs;
  std::vector<FusionDecision> m_refusals;
  // Discovery order: ByBytes compares sequences only between candidates of the same kind.
  int64_t m_sequence = 0;
  std::vector<FusionDecision> m_collectRefusals;
};

}  // namespace

StatusOr<bool> MultiOutputFusion::run(HloModule& module, PassContext& context) {
  const FusionConfig& config = context.fusionConfig();
  if (!config.multiOutputFusion) return false;

  const std::vector<HloComputation*> computations = computationsToFuseIn(module);
  bool changed = false;
  for (HloComputation* computation : computations) {
    std::unordered_set<uint64_t> dependent;
    for (int round = 0; round < kMaxRounds; ++round) {
      Round sweep(*computation, config, context, dependent);
      StatusOr<bool> merged = sweep.run();
      if (!merged.ok()) return merged.status();
      if (!*merged || round + 1 == kMaxRounds) {
        // Refusals are recorded from the last round only: earlier ones may have been overtaken by merges.
        for (FusionDecision& decision : sweep.refusals()) context.record(std::move(decision));
      }
      if (!*merged) break;
      changed = true;
      // Sorted now rather than once at the end, so each round starts from a computation in text order.
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  return changed;
}

}  // namespace fusionscope::core
