#include "core/codegen/codegen_preparation.h"

#include <functional>
#include <optional>
#include <set>

#include "core/codegen/execution_plan.h"
#include "core/ir/hlo_clone.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/batch_norm_expander.h"
#include "core/passes/call_inliner.h"
#include "core/passes/fusion_config.h"
#include "core/passes/instruction_fusion.h"
#include "core/passes/rng_bit_generator_expander.h"
#include "core/passes/softmax_fusion.h"
#include "core/passes/topk_decomposer.h"

namespace fusionscope::core {
namespace {

bool hasExpandedOp(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      const HloOpcode opcode = inst->opcode();
      if (opcode == HloOpcode::kBatchNormTraining || opcode == HloOpcode::kBatchNormInference ||
          opcode == HloOpcode::kBatchNormGrad || opcode == HloOpcode::kRngBitGenerator || isTopK(*inst)) {
        return true;
      }
    }
  }
  return false;
}

// A copy with every batch norm, random-number generator and top-k expanded, or null when `module` has none.
StatusOr<std::unique_ptr<HloModule>> expandOps(const HloModule& module) {
  if (!hasExpandedOp(module)) return std::unique_ptr<HloModule>();
  std::unique_ptr<HloModule> expanded = cloneModule(module);
  PassContext context;
  if (StatusOr<bool> changed = BatchNormExpander().run(*expanded, context); !changed.ok()) return changed.status();
  if (StatusOr<bool> changed = RngBitGeneratorExpander().run(*expanded, context); !changed.ok()) {
    return changed.status();
  }
  if (StatusOr<bool> changed = TopKDecomposer().run(*expanded, context); !changed.ok()) return changed.status();
  return expanded;
}

// `x[B,S,K] . W[K,N]` (no batch dimensions, the contraction over x's innermost dimension): the same dot of
// x viewed as [B*S, K], whose result viewed as [B,S,N] is the original's (row-major, so both views are the data as it
// lies). The row-dot kernel takes the 2-D form; the rank-3 one went element by element, 76x slower (a transformer's
// projections: 369 ms against 4.8 ms for 8x128x512 . 512x512).
bool flattensToRowDot(const HloInstruction& dot) {
  if (dot.opcode() != HloOpcode::kDot || !dot.attributes().dot || dot.operandCount() != 2) return false;
  const DotDimensionNumbers& d = *dot.attributes().dot;
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  if (!d.lhsBatch.empty() || !d.rhsBatch.empty() || d.lhsContracting.size() != 1 || d.rhsContracting.size() != 1) {
    return false;
  }
  if (!lhs.isArray() || !rhs.isArray() || lhs.rank() < 3 || rhs.rank() != 2) return false;
  if (d.lhsContracting[0] != lhs.rank() - 1) return false;
  // Row-major layouts only (none given means row-major): then a reshape is the data as it lies.
  auto rowMajor = [](const Shape& s) {
    if (!s.layout()) return true;
    const std::vector<int64_t>& order = s.layout()->minorToMajor;
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] != static_cast<int64_t>(order.size() - 1 - i)) return false;
    }
    return true;
  };
  return rowMajor(lhs) && rowMajor(dot.shape());
}

// A copy with every such dot outside fusions flattened, or null when there is none.
std::unique_ptr<HloModule> flattenRankedDots(const HloModule& module) {
  bool any = false;
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) any = any || flattensToRowDot(*inst);
  }
  if (!any) return nullptr;
  std::unique_ptr<HloModule> copy = cloneModule(module);
  for (const auto& computation : copy->computations()) {
    if (computation->isFusionComputation()) continue;
    std::vector<HloInstruction*> dots;
    for (const auto& inst : computation->instructions()) {
      if (flattensToRowDot(*inst)) dots.push_back(inst.get());
    }
    for (HloInstruction* dot : dots) {
      HloInstruction* lhs = dot->operand(0);
      const int64_t k = lhs->shape().dimension(lhs->shape().rank() - 1);
      const int64_t m = k > 0 ? lhs->shape().elementCount() / k : 0;
      const int64_t n = dot->shape().dimension(dot->shape().rank() - 1);
      HloInstruction* rows = computation->addInstruction(dot->name() + ".rows", HloOpcode::kReshape,
                                                         Shape(lhs->shape().elementType(), {m, k}), {lhs});
      HloInstruction* flat = computation->addInstruction(
          dot->name() + ".flat", HloOpcode::kDot, Shape(dot->shape().elementType(), {m, n}), {rows, dot->operand(1)});
      flat->mutableAttributes() = dot->attributes();
      flat->mutableAttributes().dot->lhsContracting = {1};
      Shape original = dot->shape();
      original.clearLayout();
      HloInstruction* back =
          computation->addInstruction(dot->name() + ".unflat", HloOpcode::kReshape, original, {flat});
      const bool root = computation->root() == dot;
      const std::string name = dot->name();
      dot->replaceAllUsesWith(back);
      if (root) computation->setRoot(back);
      (void)computation->removeInstruction(dot);
      // The kernel keeps the dot's name: traces and the viewer find it under the name the stages show.
      (void)computation->renameInstruction(flat, name);
    }
    (void)computation->sortInPostOrder();
  }
  return copy;
}

}  // namespace

namespace {

// A library fusion that is one of our own fusion kernels' shapes: elementwise work and data movement, with at most one
// reduction, at the root (a loop over the output, or a reduction over computed elements: what the fusion pass makes
// as kLoop or kInput). Then it compiles as one kernel, as XLA runs it as one library call; run as its instructions it
// was a kernel and a round trip through memory per op (a GP's pairwise distances: five kernels, 67 us, for one
// reduction). Dots and convolutions (whose fast kernels read their operands from memory), several reductions (an
// inner one would be recomputed for each element of the outer) and anything else: nullopt, and it is inlined.
std::optional<FusionKind> kernelKindForLibraryFusion(const HloComputation& computation) {
  const HloInstruction* root = computation.root();
  if (root == nullptr || root->shape().isTuple()) return std::nullopt;
  for (const auto& inst : computation.instructions()) {
    const HloOpcode opcode = inst->opcode();
    const bool reduction = opcode == HloOpcode::kReduce || opcode == HloOpcode::kReduceWindow;
    if (reduction && inst.get() != root) return std::nullopt;
    if (reduction || isElementwise(opcode)) continue;
    switch (opcode) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kIota:
      case HloOpcode::kBroadcast:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
      case HloOpcode::kTranspose:
      case HloOpcode::kSlice:
      case HloOpcode::kPad:
      case HloOpcode::kConcatenate:
      case HloOpcode::kReverse: continue;
      default: return std::nullopt;
    }
  }
  return root->opcode() == HloOpcode::kReduce || root->opcode() == HloOpcode::kReduceWindow ? FusionKind::kInput
                                                                                            : FusionKind::kLoop;
}

// The instructions of a library fusion that is not one of our kernel shapes (a dot with its softmax, a
// normalization's two reductions), fused by the cpu preset's producer-consumer rules, as a library runs them fused:
// a copy of `computation` in `module`, fused while it is the module's entry (so that nothing else is touched).
// Run one kernel per op, an attention's library fusion (dot, scale, max, subtract, exp) cost five round trips
// through memory.
StatusOr<HloComputation*> fusedByOurRules(const HloComputation& computation, HloModule& module) {
  HloComputation* body = cloneComputation(computation, module, computation.name() + ".unfused");
  body->setIsFusionComputation(false);
  HloComputation* entry = module.entry();
  module.setEntry(body);
  PassContext context(fusionConfigFor(Backend::kCpu));
  StatusOr<bool> fused = InstructionFusion().run(module, context);
  module.setEntry(entry);
  if (!fused.ok()) return fused.status();
  return body;
}

}  // namespace

StatusOr<std::unique_ptr<HloModule>> inlineLibraryFusions(const HloModule& module) {
  auto isLibraryFusion = [](const HloInstruction* inst) {
    return inst->isFusion() && inst->fusionKind() == FusionKind::kCustom && inst->fusedComputation() &&
           !isNormalizationFusion(*inst);
  };
  // Computations that run as programs: the entry and what while / conditional call, transitively (not fused
  // computations or reducers, which are emitted inside kernels).
  auto programs = [](const HloModule& m) {
    std::vector<HloComputation*> found;
    std::set<const HloComputation*> seen;
    std::function<void(HloComputation*)> visit = [&](HloComputation* computation) {
      if (computation == nullptr || !seen.insert(computation).second) return;
      found.push_back(computation);
      for (const auto& inst : computation->instructions()) {
        const HloOpcode opcode = inst->opcode();
        if (opcode == HloOpcode::kWhile || opcode == HloOpcode::kConditional || opcode == HloOpcode::kCall) {
          for (HloComputation* called : inst->calledComputations()) visit(called);
        }
      }
    };
    visit(m.entry());
    return found;
  };
  bool needed = false;
  for (const HloComputation* computation : programs(module)) {
    for (const auto& inst : computation->instructions()) {
      needed = needed || isLibraryFusion(inst.get()) || inst->opcode() == HloOpcode::kCall;
    }
  }
  if (!needed) return std::unique_ptr<HloModule>();
  std::unique_ptr<HloModule> copy = cloneModule(module);
  PassContext context;
  if (StatusOr<bool> inlined = CallInliner().run(*copy, context); !inlined.ok()) return inlined.status();
  std::vector<HloInstruction*> fusions;
  for (HloComputation* computation : programs(*copy)) {
    for (const auto& inst : computation->instructions()) {
      if (isLibraryFusion(inst.get())) fusions.push_back(inst.get());
    }
  }
  std::vector<HloComputation*> bodies;
  for (HloInstruction* fusion : fusions) {
    if (std::optional<FusionKind> kind = kernelKindForLibraryFusion(*fusion->fusedComputation())) {
      fusion->mutableAttributes().fusionKind = *kind;
      continue;
    }
    StatusOr<HloComputation*> body = fusedByOurRules(*fusion->fusedComputation(), *copy);
    if (!body.ok()) return body.status();
    bodies.push_back(*body);
    FS_RETURN_IF_ERROR(inlineBody(fusion, **body, *copy));
  }
  for (HloComputation* body : bodies) FS_RETURN_IF_ERROR(copy->removeComputation(body));
  return copy;
}

StatusOr<std::unique_ptr<HloModule>> prepareForCodegen(const HloModule& module) {
  StatusOr<std::unique_ptr<HloModule>> expandedOr = expandOps(module);
  if (!expandedOr.ok()) return expandedOr.status();
  std::unique_ptr<HloModule> expanded = std::move(*expandedOr);
  const HloModule& source = expanded ? *expanded : module;
  StatusOr<std::unique_ptr<HloModule>> inlinedOr = inlineLibraryFusions(source);
  if (!inlinedOr.ok()) return inlinedOr.status();
  std::unique_ptr<HloModule> inlined = std::move(*inlinedOr);
  const HloModule& current = inlined ? *inlined : source;
  if (std::unique_ptr<HloModule> flattened = flattenRankedDots(current)) return flattened;
  if (inlined) return inlined;
  return expanded;
}

}  // namespace fusionscope::core
