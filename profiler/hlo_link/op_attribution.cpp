#include "profiler/hlo_link/op_attribution.h"

#include <optional>

#include "core/eval/evaluator.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/ir/stack_frames.h"
#include "profiler/trace/kernel_events.h"

namespace fusionscope::profiler {

OpAttribution opAttribution(const core::HloModule& module) {
  OpAttribution ops;
  auto describe = [&](const core::HloInstruction& member, const core::HloInstruction& kernel) {
    AttributedOp op;
    op.name = member.name();
    op.kernel = kernel.name();
    const std::optional<core::OpMetadata>& own = member.attributes().metadata;
    const std::optional<core::OpMetadata>& outer = kernel.attributes().metadata;
    const core::OpMetadata* metadata = own && !own->opName.empty() ? &*own : outer ? &*outer : nullptr;
    const std::string opName = metadata ? metadata->opName : "";
    const size_t slash = opName.rfind('/');
    op.scope = slash == std::string::npos ? "" : opName.substr(0, slash);
    op.op =
        opName.empty() ? std::string(member.opcodeString()) : opName.substr(slash == std::string::npos ? 0 : slash + 1);
    if (metadata) {
      if (std::optional<int64_t> frame = core::stackFrameId(*metadata)) {
        for (const core::SourceLocation& at : module.stackFrames().stack(*frame)) {
          op.stack.push_back({at.file, at.function, at.line});
        }
      }
      if (op.stack.empty() && !metadata->sourceFile.empty()) {
        op.stack.push_back({metadata->sourceFile, "", metadata->sourceLine.value_or(0)});
      }
    }
    op.weight = core::estimateInstructionWork(member);
    return op;
  };
  for (const auto& computation : module.computations()) {
    if (computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) {
      std::vector<AttributedOp> members;
      if (const core::HloComputation* fused = inst->fusedComputation()) {
        for (const auto& member : fused->instructions()) {
          const core::HloOpcode opcode = member->opcode();
          if (opcode == core::HloOpcode::kParameter || opcode == core::HloOpcode::kTuple ||
              opcode == core::HloOpcode::kGetTupleElement || opcode == core::HloOpcode::kBitcast) {
            continue;
          }
          members.push_back(describe(*member, *inst));
        }
      }
      if (members.empty()) members.push_back(describe(*inst, *inst));
      ops[normalizeKernelName(inst->name())] = std::move(members);
    }
  }
  // A fusion's member can run as a kernel of its own: codegen inlines library fusions (a dot XLA or our presets
  // wrap in a kCustom fusion runs as the dot). Members are found under their own name unless a kernel has it.
  for (const auto& computation : module.computations()) {
    if (!computation->isFusionComputation()) continue;
    for (const auto& inst : computation->instructions()) {
      if (inst->opcode() == core::HloOpcode::kParameter) continue;
      ops.emplace(normalizeKernelName(inst->name()), std::vector<AttributedOp>{describe(*inst, *inst)});
    }
  }
  return ops;
}

}  // namespace fusionscope::profiler
