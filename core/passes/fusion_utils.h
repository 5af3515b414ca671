#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/ir/attributes.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

// IR surgery shared by the fusion passes. A fusion instruction `fusion.N` calls a fused computation
// `fused_computation.N` whose parameter i stands for the fusion's operand i; fused instructions keep the
// names they had outside, so a stage diff can tell which instruction went into which fusion. A multi-output
// fusion has a tuple root, and its users read it through get-tuple-element.
//
// None of these check whether fusing is a good idea or creates a cycle: the passes decide that (see
// TopologicalOrder::reaches, merge_tracking.h). They keep operands, users, parameter numbering and the module's fusion
// flags consistent, and leave the computation's text order for the pipeline to sort.

// Replaces `instruction` by a new fusion of `kind` that contains only a copy of it. Returns the fusion.
HloInstruction* wrapInFusion(HloInstruction* instruction, FusionKind kind);

// The computations every fusion pass works in: the entry and, transitively, the bodies of while, conditional
// and call, in that walk's order. Reducers (to_apply of reduce, scatter, sort, all-reduce, map, ...) and fusion
// bodies are left out, also when one of them is reached through a control-flow op as well.
std::vector<HloComputation*> computationsToFuseIn(const HloModule& module);

// Moves `producer` (an operand of `fusion`) into the fusion. A producer that is itself a (single-output)
// fusion has its fused instructions merged in. When the producer has users other than `fusion` it is
// duplicated (stays outside for them); otherwise it is removed (its fused computation too).
// Fails for tuple-shaped producers. Returns the fusion.
StatusOr<HloInstruction*> fuseProducer(HloInstruction* fusion, HloInstruction* producer);

// Like fuseProducer, but the producer's value also becomes an output of the fusion (the fused root turns
// into a tuple) and the producer's other users read it from there, so nothing is computed twice.
StatusOr<HloInstruction*> fuseProducerMultiOutput(HloInstruction* fusion, HloInstruction* producer);

// Merges fusion `other` into `fusion` (siblings: neither uses the other): the merged fusion computes both
// and returns all their outputs as a tuple; users of `other` are redirected. Returns `fusion`.
StatusOr<HloInstruction*> mergeSiblingFusion(HloInstruction* fusion, HloInstruction* other);

// The instructions inside a fusion other than its parameters (and other than a tuple root of a
// multi-output fusion), in post order.
std::vector<HloInstruction*> fusedInstructions(const HloInstruction& fusion);
// How many instructions fusing `instruction` brings along: fusedInstructions(...).size() for a fusion, else 1.
int64_t fusedInstructionCount(const HloInstruction& instruction);
// The operands of `instruction`, each once, in operand order.
std::vector<HloInstruction*> distinctOperands(const HloInstruction& instruction);
// The values a fusion produces: its fused root, or the operands of a tuple root.
std::vector<HloInstruction*> fusionOutputs(const HloInstruction& fusion);
bool isMultiOutputFusion(const HloInstruction& fusion);

}  // namespace fusionscope::core
