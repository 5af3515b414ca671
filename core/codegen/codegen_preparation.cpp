#include "core/codegen/codegen_preparation.h"

#include "core/codegen/execution_plan.h"
#include "core/ir/hlo_clone.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/batch_norm_expander.h"
#include "core/passes/rng_bit_generator_expander.h"

namespace fusionscope::core {
namespace {

bool hasExpandedOp(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& inst : computation->instructions()) {
      const HloOpcode opcode = inst->opcode();
      if (opcode == HloOpcode::kBatchNormTraining || opcode == HloOpcode::kBatchNormInference ||
          opcode == HloOpcode::kBatchNormGrad || opcode == HloOpcode::kRngBitGenerator) {
        return true;
      }
    }
  }
  return false;
}

// A copy with every batch norm and random-number generator expanded, or null when `module` has none.
StatusOr<std::unique_ptr<HloModule>> expandOps(const HloModule& module) {
  if (!hasExpandedOp(module)) return std::unique_ptr<HloModule>();
  std::unique_ptr<HloModule> expanded = cloneModule(module);
  PassContext context;
  if (StatusOr<bool> changed = BatchNormExpander().run(*expanded, context); !changed.ok()) return changed.status();
  if (StatusOr<bool> changed = RngBitGeneratorExpander().run(*expanded, context); !changed.ok()) {
    return changed.status();
  }
  return expanded;
}

}  // namespace

StatusOr<std::unique_ptr<HloModule>> prepareForCodegen(const HloModule& module) {
  StatusOr<std::unique_ptr<HloModule>> expandedOr = expandOps(module);
  if (!expandedOr.ok()) return expandedOr.status();
  std::unique_ptr<HloModule> expanded = std::move(*expandedOr);
  const HloModule& source = expanded ? *expanded : module;
  StatusOr<std::unique_ptr<HloModule>> inlined = inlineLibraryFusions(source);
  if (!inlined.ok()) return inlined.status();
  if (*inlined) return std::move(*inlined);
  return expanded;
}

}  // namespace fusionscope::core
