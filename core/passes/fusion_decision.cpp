#include "core/passes/fusion_decision.h"

#include <utility>

namespace fusionscope::core {

FusionDecision refusedDecision(std::string_view pass, const HloComputation& computation, std::string producer,
                               std::string consumer, int64_t bytesSaved, std::string reason) {
  FusionDecision decision;
  decision.pass = std::string(pass);
  decision.computation = computation.name();
  decision.producer = std::move(producer);
  decision.consumer = std::move(consumer);
  decision.bytesSaved = bytesSaved;
  decision.reason = std::move(reason);
  return decision;
}

FusionDecision fusedDecision(std::string_view pass, const HloComputation& computation, std::string producer,
                             std::string consumer, const HloInstruction& fusion, int64_t bytesSaved,
                             std::string reason) {
  FusionDecision decision =
      refusedDecision(pass, computation, std::move(producer), std::move(consumer), bytesSaved, std::move(reason));
  decision.fused = true;
  decision.fusion = fusion.name();
  decision.kind = fusion.fusionKind();
  return decision;
}

}  // namespace fusionscope::core
