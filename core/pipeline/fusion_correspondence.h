#pragma once

#include <map>
#include <string>
#include <vector>

namespace fusionscope::core {

class HloInstruction;
class HloModule;

// What one instruction computes, comparable across two compilations of one program (XLA with fusion on and with
// `--xla_disable_hlo_passes=fusion`): opcode, shape without layout, and the metadata XLA carries from the framework
// through every pass (op_name, source_file:source_line, and the rest verbatim, e.g. stack_frame_id; both runs of
// one program write the same stack-frame tables). Instruction names are not comparable: XLA renames instructions
// as fusion clones them (MNIST step: the multiply `mul.6` before fusion is `mul.3` inside
// multiply_subtract_fusion.1, and `mul.4` inside the unfused run's one-op fusion wrapped_multiply.2).
std::string opKey(const HloInstruction& inst);

// Which instructions of `unfused` each fusion of `fused` stands for: for every fusion instruction outside fusion
// computations (a kernel of the fused run), the instructions outside fusion computations of `unfused` (its
// kernels; XLA:CPU wraps each op in a `wrapped_<opcode>` fusion) that compute one of the fusion's ops (parameters
// and constants aside), by opKey, in the order the fusion's ops come. An unfused instruction is listed under every
// fusion XLA duplicated its op into; an op without metadata matches by opcode and shape alone.
//
//   fused:    %multiply_subtract_fusion.1 = fusion(%w, %dot), calls={mul.4 = broadcast(0.5), mul.3 = multiply,
//                                                                sub.9 = subtract}        (metadata jit(step)/mul ...)
//   unfused:  %wrapped_broadcast.4, %wrapped_multiply.2, %wrapped_subtract.1             (same metadata)
//   ->        multiply_subtract_fusion.1: [wrapped_broadcast.4, wrapped_multiply.2, wrapped_subtract.1]
std::map<std::string, std::vector<std::string>> replacedInstructions(const HloModule& fused, const HloModule& unfused);

}  // namespace fusionscope::core
