#pragma once

#include <cstdint>
#include <string>

#include "core/ir/hlo_instruction.h"
#include "core/passes/fusion_config.h"

namespace fusionscope::core {

// The cost model of the fusion passes: memory traffic in bytes, the thing fusion exists to cut. A kernel
// reads each distinct operand once and writes its result once; fusing a producer into a consumer saves
// writing the producer's result and reading it back, minus whatever the fused kernel must now read twice.

// Bytes a separate kernel for `instruction` moves: its distinct operands read plus its result written.
int64_t kernelTraffic(const HloInstruction& instruction);

// Ops whose per-element cost is high enough that computing them twice (duplicating the producer into two
// consumers) is worse than storing the result: exp, log, divide, power, tanh, ... and any non-elementwise
// work (reductions, dots, convolutions).
bool isExpensive(const HloInstruction& instruction, Backend backend);

// "512 B", "400 KB", "12.5 MB": KB = 1000 bytes, as in the decision sentences.
std::string formatBytes(int64_t bytes);

}  // namespace fusionscope::core
