#include "core/passes/fusion_merger.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
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

namespace fusionscope::core {
namespace {

constexpr std::string_view kPassName = "fusion-merger";
// A merge changes its users' contents and operands, which can turn an earlier refusal around; sweeps
// repeat until one merges nothing (a bound against pathological ping-pong, never reached in practice).
constexpr int kMaxSweeps = 8;
// Beyond this many users, recomputing the producer in each of them costs more than one store and loads.
constexpr size_t kMaxUsers = 4;

// How many times an instruction reads each element of operand `i`, per element it produces: a broadcast
// re-reads its input once per copy, a slice reads only part of it, a reduction's init value is read once
// per output element. Everything else reads each element once.
double operandReuse(const HloInstruction& inst, int i) {
  const double out =
      static_cast<double>(std::max<int64_t>(inst.shape().isArray() ? inst.shape().elementCount() : 1, 1));
  const double in = static_cast<double>(
      std::max<int64_t>(inst.operand(i)->shape().isArray() ? inst.operand(i)->shape().elementCount() : 1, 1));
  switch (inst.opcode()) {
    case HloOpcode::kBroadcast: return out / in;
    case HloOpcode::kSlice:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kGather: return i == 0 ? out / in : 1.0;
    case HloOpcode::kReduce: return i < inst.operandCount() / 2 ? 1.0 : out;
    case HloOpcode::kPad: return i == 0 ? 1.0 : out;
    default: return 1.0;
  }
}

// Reads of each element of the fusion's operand `operand`, summed over the fused parameters bound to it:
// how often a producer merged into `fusion` would be evaluated per element it produces. Propagated from
// the root (read once) down through the fused computation, as XLA's cost analysis does with "operand
// utilization".
double readsPerOutputElement(const HloInstruction& fusion, const HloInstruction* operand) {
  const HloComputation* body = fusion.fusedComputation();
  if (!body || !body->root()) return 1.0;
  StatusOr<std::vector<HloInstruction*>> post = body->postOrder();
  if (!post.ok()) return 1.0;
  std::unordered_map<const HloInstruction*, double> reads;
  reads[body->root()] = 1.0;
  for (auto it = post->rbegin(); it != post->rend(); ++it) {
    const HloInstruction* inst = *it;
    auto found = reads.find(inst);
    if (found == reads.end() || found->second == 0.0) continue;
    const double mine = found->second;
    for (int i = 0; i < inst->operandCount(); ++i) reads[inst->operand(i)] += mine * operandReuse(*inst, i);
  }
  double total = 0.0;
  for (const HloInstruction* param : body->parameters()) {
    if (!param) continue;
    int64_t n = param->parameterNumber();
    if (n >= 0 && n < fusion.operandCount() && fusion.operand(static_cast<int>(n)) == operand) {
      auto it = reads.find(param);
      if (it != reads.end()) total += it->second;
    }
  }
  return total;
}

// The first instruction of the producer that is costly to compute twice, or null.
const HloInstruction* expensiveInstruction(const HloInstruction& fusion, Backend backend) {
  for (const HloInstruction* inst : fusedInstructions(fusion)) {
    if (isExpensive(*inst, backend)) return inst;
  }
  return nullptr;
}

std::string reuseText(double reuse) {
  return reuse >= 10.0 ? fmt::format("{:.0f}", reuse) : fmt::format("{:.3g}", reuse);
}

class Merger {
 public:
  Merger(HloComputation& computation, const FusionConfig& config, PassContext& context)
      : m_computation(computation), m_config(config), m_context(context) {}

  // One sweep in post order (producers before consumers, so chains collapse downwards in one go).
  StatusOr<bool> sweep() {
    m_refusals.clear();
    StatusOr<std::vector<HloInstruction*>> post = m_computation.postOrder();
    if (!post.ok()) return post.status();
    bool changed = false;
    // A producer is deleted only when it is the instruction being visited; a plain user that a merge wraps into a
    // fusion is deleted too (it is later in the order), so those are remembered and skipped, never dereferenced.
    m_wrapped.clear();
    for (HloInstruction* producer : *post) {
      if (m_wrapped.count(producer) != 0) continue;
      if (!producer->isFusion() || producer->fusionKind() != FusionKind::kLoop || !producer->fusedComputation()) {
        continue;
      }
      StatusOr<bool> merged = consider(producer);
      if (!merged.ok()) return merged.status();
      changed = changed || *merged;
    }
    return changed;
  }
  std::vector<FusionDecision>& refusals() { return m_refusals; }

 private:
  StatusOr<bool> consider(HloInstruction* producer) {
    std::optional<std::string> why = refusal(*producer);
    if (why) {
      m_refusals.push_back(refusedDecision(kPassName, m_computation, producer->name(),
                                           producer->users().size() == 1 ? producer->users().front()->name() : "",
                                           m_lastBytesSaved, std::move(*why)));
      return false;
    }
    const int64_t saved = m_lastBytesSaved;
    const std::string producerName = producer->name();
    std::vector<HloInstruction*> users = producer->users();
    std::vector<std::string> userNames;
    for (const HloInstruction* user : users) userNames.push_back(user->name());
    const std::string reason =
        fmt::format("merged {} into {} ({}): saves {} of memory traffic", producerName,
                    users.size() == 1 ? "its only user" : fmt::format("all {} users", users.size()),
                    fmt::join(userNames, ", "), formatBytes(saved));
    // fuseProducer duplicates while other users remain and deletes the producer after the last one. A plain user
    // becomes a fusion of the kind the fusion pass would give it.
    for (HloInstruction*& user : users) {
      if (!user->isFusion()) {
        FusionKind kind = FusionKind::kLoop;
        (void)consumerRule(*user, m_config, kind);
        (void)pairRule(*producer, *user, m_config, kind);
        m_wrapped.insert(user);
        user = wrapInFusion(user, kind);
      }
      StatusOr<HloInstruction*> fused = fuseProducer(user, producer);
      if (!fused.ok()) return fused.status();
      user = *fused;
    }
    for (HloInstruction* user : users) {
      m_context.record(fusedDecision(kPassName, m_computation, producerName, user->name(), *user, saved, reason));
    }
    return true;
  }

  // Why `producer` must not merge into its users, or nullopt when it should. Sets m_lastBytesSaved.
  std::optional<std::string> refusal(const HloInstruction& producer) {
    m_lastBytesSaved = 0;
    const std::string& name = producer.name();
    const std::vector<HloInstruction*>& users = producer.users();
    if (isMultiOutputFusion(producer) || !producer.shape().isArray()) {
      return fmt::format("not merging {}: it is a multi-output fusion", name);
    }
    if (producer.isRoot())
      return fmt::format("not merging {}: its result is the output of {}", name, m_computation.name());
    if (users.empty()) return fmt::format("not merging {}: it has no users", name);
    if (!producer.controlPredecessors().empty() || !producer.controlSuccessors().empty()) {
      return fmt::format("not merging {}: it has control dependencies", name);
    }
    for (const HloInstruction* user : users) {
      if (!user->isFusion()) {
        // A plain user the fusion pass could make a fusion of takes the producer as its first fused operand (as
        // XLA's merger does); any other keeps the producer's result written.
        FusionKind kind = FusionKind::kLoop;
        if (FusionVerdict verdict = consumerRule(*user, m_config, kind); !verdict) {
          return fmt::format("not merging {}: its user {} is not a fusion and cannot become one, so its result must "
                             "be written anyway",
                             name, user->name());
        }
        if (FusionVerdict verdict = pairRule(producer, *user, m_config, kind); !verdict) {
          return fmt::format("not merging {} into {}: {}", name, user->name(), verdict.reason);
        }
        continue;
      }
      FusionKind kind = user->fusionKind();
      if (kind != FusionKind::kLoop && kind != FusionKind::kInput) {
        return fmt::format("not merging {} into {}: it is a {} fusion", name, user->name(), fusionKindName(kind));
      }
      // The producer-consumer rules of `fusion` hold here too: a merge may not build what fusion refuses
      // (a transpose into a reduction, an in-place operand, a dot's operand).
      if (FusionVerdict verdict = pairRule(producer, *user, m_config, kind); !verdict) {
        return fmt::format("not merging {} into {}: {}", name, user->name(), verdict.reason);
      }
    }

    const int64_t producerInstructions = static_cast<int64_t>(fusedInstructions(producer).size());
    const std::vector<HloInstruction*> inputs = distinctOperands(producer);
    int64_t inputBytes = 0;
    for (const HloInstruction* input : inputs) inputBytes += input->shape().byteSize();
    const int64_t outputBytes = producer.shape().byteSize();

    int64_t duplicatedBytes = 0;  // producer inputs each user must now read itself
    for (const HloInstruction* user : users) {
      std::vector<HloInstruction*> operands = distinctOperands(*user);
      int64_t operandCount = static_cast<int64_t>(operands.size()) - 1;
      for (const HloInstruction* input : inputs) {
        if (std::find(operands.begin(), operands.end(), input) != operands.end()) continue;
        ++operandCount;
        duplicatedBytes += input->shape().byteSize();
      }
      if (operandCount > m_config.maxOperands) {
        return fmt::format("not merging {} into {}: the merged fusion would have {} operands (limit {})", name,
                           user->name(), operandCount, m_config.maxOperands);
      }
      int64_t instructions = static_cast<int64_t>(fusedInstructions(*user).size()) + producerInstructions;
      if (instructions > m_config.maxFusedInstructions) {
        return fmt::format("not merging {} into {}: the merged fusion would have {} instructions (limit {})", name,
                           user->name(), instructions, m_config.maxFusedInstructions);
      }
    }
    // Today: the producer reads its inputs and writes its result once, each user reads the result.
    // Merged: each user reads whichever of the producer's inputs it did not read already.
    const int64_t users64 = static_cast<int64_t>(users.size());
    m_lastBytesSaved = inputBytes + outputBytes * (1 + users64) - duplicatedBytes;

    const HloInstruction* expensive = expensiveInstruction(producer, m_config.backend);
    if (expensive && users.size() > 1 && producer.shape().elementCount() > m_config.duplicateExpensiveMaxElements) {
      return fmt::format("not merging {}: it contains expensive {} and has {} users, each would recompute it", name,
                         expensive->name(), users.size());
    }
    if (users.size() > kMaxUsers) {
      return fmt::format("not merging {}: its output is reused by {} consumers", name, users.size());
    }
    for (const HloInstruction* user : users) {
      double reuse = readsPerOutputElement(*user, &producer);
      if (expensive && reuse > 1.0) {
        return fmt::format(
            "not merging {} into {}: {} reads each element of its output {} times, so {} would be recomputed for "
            "every read",
            name, user->name(), user->name(), reuseText(reuse), expensive->name());
      }
    }
    if (m_lastBytesSaved < 0) {
      return fmt::format("not merging {}: merging would increase memory traffic by {}", name,
                         formatBytes(-m_lastBytesSaved));
    }
    return std::nullopt;
  }

  HloComputation& m_computation;
  const FusionConfig& m_config;
  PassContext& m_context;
  std::vector<FusionDecision> m_refusals;
  int64_t m_lastBytesSaved = 0;
  std::unordered_set<const HloInstruction*> m_wrapped;  // plain users replaced by fusions during this sweep
};

}  // namespace

StatusOr<bool> FusionMerger::run(HloModule& module, PassContext& context) {
  const std::vector<HloComputation*> computations = computationsToFuseIn(module);

  bool changed = false;
  for (HloComputation* computation : computations) {
    Merger merger(*computation, context.fusionConfig(), context);
    bool computationChanged = false;
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      StatusOr<bool> merged = merger.sweep();
      if (!merged.ok()) return merged.status();
      if (!*merged || sweep + 1 == kMaxSweeps) {
        // Refusals from the last sweep only: earlier ones may have been overtaken by later merges.
        for (FusionDecision& decision : merger.refusals()) context.record(std::move(decision));
      }
      if (!*merged) break;
      computationChanged = true;
    }
    if (computationChanged) {
      changed = true;
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  return changed;
}

}  // namespace fusionscope::core
