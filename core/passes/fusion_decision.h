#pragma once

// One fusion decision, taken or refused, with the sentence that explains it, and the builders every fusion pass
// makes its decisions with.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/ir/attributes.h"
#include "core/ir/hlo_computation.h"

namespace fusionscope::core {

// One fusion decision, taken or refused, with the sentence that explains it. Stored with the stage the
// pass produced, shown by the viewer and `fusionscope-cli explain`.
struct FusionDecision {
  std::string pass;         // "fusion", "multi-output-fusion", "fusion-merger"
  std::string computation;  // where the instructions live
  std::string producer;     // the instruction (or fusion) that would move
  std::string consumer;     // the instruction (or fusion) it would move into
  bool fused = false;
  std::string fusion;  // the resulting fusion instruction when fused
  std::optional<FusionKind> kind;
  int64_t bytesSaved = 0;  // cost-model estimate of memory traffic saved (negative: added)
  std::string reason;      // "fused exp.1 into reduce.3: saves 400 KB of reads"
};

// Every decision is made through these two, so each pass fills the same fields the same way. `computation` is
// where the instructions live; producer and consumer are names (an instruction may be gone by the time the
// decision is recorded).
FusionDecision fusedDecision(std::string_view pass, const HloComputation& computation, std::string producer,
                             std::string consumer, const HloInstruction& fusion, int64_t bytesSaved,
                             std::string reason);
FusionDecision refusedDecision(std::string_view pass, const HloComputation& computation, std::string producer,
                               std::string consumer, int64_t bytesSaved, std::string reason);

}  // namespace fusionscope::core
