#include "core/passes/instruction_fusion.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_cost.h"
#include "core/passes/fusion_rules.h"
#include "core/passes/fusion_utils.h"
#include "core/passes/merge_tracking.h"

namespace fusionscope::core {
namespace {

// How many times over duplication may copy a computation (see InstructionFusion::run).
constexpr int64_t kDuplicationFactor = 4;

constexpr std::string_view kPassName = "fusion";

// One producer of the consumer being grown, with the verdict of the rules and the cost model.
struct Candidate {
  HloInstruction* producer = nullptr;
  FusionVerdict verdict;
  FusionKind kind = FusionKind::kLoop;
  bool duplicate = false;
  int64_t bytesSaved = 0;
  // Set when this copy alone adds reads but duplicating into all users pays (fuseIntoAllUsersBytesSaved).
  std::optional<int64_t> planBytesSaved;
};

class ComputationFusion {
 public:
  // `copies`: how many more instruction copies duplication may still make in this computation (kept across sweeps).
  // `notToCopy`: producers never duplicated, with the reason (cpuProducersNotToCopy, decided before fusion).
  ComputationFusion(HloComputation& computation, PassContext& context, int64_t& copies,
                    const std::unordered_map<const HloInstruction*, std::string>& notToCopy)
      : m_computation(computation),
        m_context(context),
        m_config(context.fusionConfig()),
        m_copies(copies),
        m_notToCopy(notToCopy) {}

  // One sweep over the consumers from the root upward; returns whether anything was fused.
  StatusOr<bool> sweep() {
    StatusOr<std::vector<HloInstruction*>> order = m_computation.postOrder();
    if (!order.ok()) return order.status();
    // Fusion frees the instructions it replaces, and a new instruction may reuse the address of one, so
    // pending consumers are marked here (false once removed) rather than dereferenced when stale.
    m_alive.clear();
    for (HloInstruction* inst : *order) m_alive[inst] = true;
    bool changed = false;
    for (auto it = order->rbegin(); it != order->rend(); ++it) {
      if (!m_alive[*it]) continue;
      StatusOr<bool> fused = growConsumer(*it);
      if (!fused.ok()) return fused.status();
      changed |= *fused;
    }
    return changed;
  }

  // Refusals are kept per sweep and recorded only from the last one, which changed nothing: that sweep
  // sees the final module, so each refusal is logged once, under the names the result shows.
  void recordRefusals() {
    for (FusionDecision& decision : m_refusals) m_context.record(std::move(decision));
    m_refusals.clear();
  }

 private:
  Candidate evaluate(HloInstruction* producer, const HloInstruction& consumer) const {
    Candidate candidate;
    candidate.producer = producer;
    candidate.duplicate = fusionDuplicates(*producer, consumer);
    FusionVerdict verdict = producerRule(*producer, m_config);
    if (verdict) verdict = pairRule(*producer, consumer, m_config, candidate.kind);
    if (verdict) verdict = duplicationRule(*producer, consumer, m_config);
    if (verdict && candidate.duplicate) {
      if (auto reason = m_notToCopy.find(producer); reason != m_notToCopy.end()) {
        verdict = FusionVerdict::no(reason->second);
      }
    }
    if (verdict && candidate.duplicate && fusedInstructionCount(*producer) > m_copies) {
      verdict = FusionVerdict::no(fmt::format(
          "{} has {} users; fusion has already copied {} times as many instructions into several fusions as {} held, "
          "and copies no more (where every value has several users, duplication would grow the module without "
          "bound)",
          producer->name(), producer->users().size() + (producer->isRoot() ? 1 : 0), kDuplicationFactor,
          m_computation.name()));
    }
    if (verdict) verdict = reuseRule(*producer, consumer, m_config);
    if (verdict) verdict = limitsRule(*producer, consumer, m_config);
    if (verdict && m_emitted) {
      auto copies = m_emitted->find(producer);
      verdict = cpuCodeDuplicationRule(*producer, consumer, copies == m_emitted->end() ? 0 : copies->second);
    }
    if (verdict && !onlyFeeds(*producer, consumer))
      verdict = cycleRule(order(), *producer, consumer, candidate.duplicate);
    if (verdict) {
      candidate.bytesSaved = fusionBytesSaved(*producer, consumer);
      if (candidate.bytesSaved < 0 && candidate.duplicate) {
        candidate.planBytesSaved = fuseIntoAllUsersBytesSaved(*producer, m_config);
        if (candidate.planBytesSaved && *candidate.planBytesSaved < 0) candidate.planBytesSaved.reset();
      }
      // XLA CPU duplicates a cheap producer whatever the bytes (duplicationRule has refused the expensive ones):
      // what reads more than it writes is copied only when every user takes it, which notToCopy has decided.
      const bool cpuDuplicates = m_config.loopFusionOnly && candidate.duplicate;
      if (candidate.bytesSaved < 0 && !candidate.planBytesSaved && !cpuDuplicates) {
        verdict = FusionVerdict::no(
            fmt::format("{} has {} users; duplicating it would add {} of reads, since each copy reads its inputs again",
                        producer->name(), producer->users().size() + (producer->isRoot() ? 1 : 0),
                        formatBytes(-candidate.bytesSaved)));
      }
    }
    candidate.verdict = std::move(verdict);
    return candidate;
  }

  // Pulls producers into `consumer` (making it a fusion on the first one) until no rule allows more, then
  // records why the remaining candidates stayed outside.
  StatusOr<bool> growConsumer(HloInstruction* consumer) {
    FusionKind consumerKind = FusionKind::kLoop;
    FusionVerdict consumerVerdict = consumerRule(*consumer, m_config, consumerKind);
    if (!consumerVerdict) {
      if (!consumerVerdict.record) return false;
      for (HloInstruction* producer : distinctOperands(*consumer)) {
        if (producer->opcode() == HloOpcode::kConstant || !producerRule(*producer, m_config)) continue;
        recordRefusal(*producer, *consumer, consumerVerdict.reason, 0);
      }
      return false;
    }
    HloInstruction* current = consumer;
    bool changed = false;
    while (true) {
      // XLA CPU's code-duplication estimate for the fusion grown so far, shared by all its candidates.
      m_emitted.reset();
      if (m_config.loopFusionOnly && current->isFusion()) m_emitted = cpuEmittedCopies(*current);
      std::vector<Candidate> candidates;
      std::optional<size_t> best;
      for (HloInstruction* producer : distinctOperands(*current)) {
        candidates.push_back(evaluate(producer, *current));
        const Candidate& c = candidates.back();
        // A constant is folded into a consumer that is fused anyway; alone it would only turn a plain
        // instruction into a fusion without saving a kernel (XLA does the same).
        if (!c.verdict || (!current->isFusion() && producer->opcode() == HloOpcode::kConstant)) continue;
        if (!best || c.bytesSaved > candidates[*best].bytesSaved) best = candidates.size() - 1;
      }
      if (!best) {
        for (const Candidate& c : candidates) {
          if (c.verdict) {
            recordRefusal(*c.producer, *current,
                          fmt::format("a constant is only folded into a consumer that is fused anyway; on its own "
                                      "it saves nothing"),
                          0);
          } else if (c.verdict.record) {
            recordRefusal(*c.producer, *current, c.verdict.reason, c.bytesSaved);
          }
        }
        return changed;
      }
      const Candidate chosen = candidates[*best];
      StatusOr<HloInstruction*> fused = fuse(current, chosen);
      if (!fused.ok()) return fused.status();
      current = *fused;
      changed = true;
    }
  }

  StatusOr<HloInstruction*> fuse(HloInstruction* current, const Candidate& candidate) {
    HloInstruction* producer = candidate.producer;
    const std::string producerName = producer->name();
    const std::string consumerName = current->name();
    const size_t otherUsers = producer->users().size() - 1 + (producer->isRoot() ? 1 : 0);
    if (!current->isFusion()) {
      m_alive[current] = false;
      const int64_t id = current->id();
      current = wrapInFusion(current, candidate.kind);
      if (m_order) m_order->replace(id, current);
    }
    if (!candidate.duplicate) m_alive[producer] = false;
    if (candidate.duplicate) m_copies -= fusedInstructionCount(*producer);
    const int64_t producerId = producer->id();
    StatusOr<HloInstruction*> fused = fuseProducer(current, producer);
    if (!fused.ok()) return fused.status();
    if (m_order && !candidate.duplicate) m_order->forget(producerId);  // fused in and deleted
    (*fused)->mutableAttributes().fusionKind = candidate.kind;

    std::string reason = fmt::format("fused {} into {} ({}): saves {} of reads and writes", producerName, consumerName,
                                     fusionKindName(candidate.kind), formatBytes(candidate.bytesSaved));
    if (candidate.planBytesSaved) {
      reason = fmt::format(
          "fused {} into {} ({}): duplicated into each of its {} users, which together saves {} of reads and "
          "writes (this copy reads {} more)",
          producerName, consumerName, fusionKindName(candidate.kind), otherUsers + 1,
          formatBytes(*candidate.planBytesSaved), formatBytes(-candidate.bytesSaved));
    } else if (candidate.duplicate) {
      reason += fmt::format("; {} is duplicated and stays for its {} other user{}", producerName, otherUsers,
                            otherUsers == 1 ? "" : "s");
    }
    m_context.record(fusedDecision(kPassName, m_computation, producerName, consumerName, **fused, candidate.bytesSaved,
                                   std::move(reason)));
    return *fused;
  }

  void recordRefusal(const HloInstruction& producer, const HloInstruction& consumer, const std::string& reason,
                     int64_t bytesSaved) {
    m_refusals.push_back(
        refusedDecision(kPassName, m_computation, producer.name(), consumer.name(), bytesSaved,
                        fmt::format("not fusing {} into {}: {}", producer.name(), consumer.name(), reason)));
  }

  // A producer whose only use is the consumer cannot reach it along another path: no cycle check needed.
  static bool onlyFeeds(const HloInstruction& producer, const HloInstruction& consumer) {
    return producer.users().size() == 1 && producer.users().front() == &consumer && !producer.isRoot() &&
           producer.controlSuccessors().empty();
  }

  // Built on first use: most sweeps never need a cycle check (see onlyFeeds).
  const TopologicalOrder& order() const {
    if (!m_order) m_order.emplace(TopologicalOrder::of(m_computation));
    return *m_order;
  }

  HloComputation& m_computation;
  PassContext& m_context;
  const FusionConfig& m_config;
  mutable std::optional<TopologicalOrder> m_order;
  std::unordered_map<const HloInstruction*, bool> m_alive;
  std::vector<FusionDecision> m_refusals;
  int64_t& m_copies;
  const std::unordered_map<const HloInstruction*, std::string>& m_notToCopy;
  std::optional<std::unordered_map<const HloInstruction*, int64_t>> m_emitted;
};

}  // namespace

StatusOr<bool> InstructionFusion::run(HloModule& module, PassContext& context) {
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    // Duplication may at most multiply the computation's work by kDuplicationFactor: copies of producers made for
    // several consumers stop once they add up to that many times the instructions it held (fused ones included).
    int64_t copies = 0;
    for (const auto& inst : computation->instructions()) copies += fusedInstructionCount(*inst);
    copies *= kDuplicationFactor;
    // XLA decides which producers are never copied once, on the computation before fusion. Keyed by the plain
    // instructions of that graph: fusion frees some and allocates only fusions, which are never copied here.
    std::unordered_map<const HloInstruction*, std::string> notToCopy;
    if (context.fusionConfig().loopFusionOnly) notToCopy = cpuProducersNotToCopy(*computation, context.fusionConfig());
    // Fusing a consumer can make a producer fusible that was refused earlier in the sweep (its other users
    // were fused meanwhile), so sweep until nothing changes; usually one extra sweep.
    while (true) {
      ComputationFusion fusion(*computation, context, copies, notToCopy);
      StatusOr<bool> swept = fusion.sweep();
      if (!swept.ok()) return swept.status();
      if (!*swept) {
        fusion.recordRefusals();
        break;
      }
      changed = true;
    }
  }
  return changed;
}

}  // namespace fusionscope::core
