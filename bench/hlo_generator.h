#pragma once

#include <cstdint>
#include <string>

namespace fusionscope::bench {

struct GeneratedHlo {
  std::string text;
  // Instructions written, counted over every computation (reducers, fused computations, ENTRY); equals
  // HloModule::instructionCount() of the parsed module.
  int64_t instructionCount = 0;
  int64_t computationCount = 0;
  int64_t fusionCount = 0;
};

// Writes a large, realistic HLO module as XLA prints it: scalar reducer computations, one kLoop fused
// computation per fusion instruction (callees before callers), and an ENTRY whose parameters feed
// repeated "layers" of broadcast / multiply / add / exponential|tanh|logistic / reduce / divide / dot /
// transpose / reshape / compare / select / tuple / get-tuple-element / fusion, with occasional residual
// (skip) connections. Operands carry their shapes (`f32[128,256]{1,0} %name`), most instructions carry
// `metadata={op_type=... op_name=... source_file=... source_line=N}`.
//
// Deterministic: the same (targetInstructions, seed) gives the same bytes on every platform (own PRNG,
// no std distributions). The result has at least `targetInstructions` instructions (a block of about 30
// more at most). It parses and passes core::verifyModule.
GeneratedHlo generateHloModule(int64_t targetInstructions, uint64_t seed = 0x5EEDF00Dull);

}  // namespace fusionscope::bench
