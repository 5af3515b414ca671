#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// rng-bit-generator expansion (`rng-bit-generator-expander`, in the cpu and gpu presets after the batch-norm
// expander), as XLA's RngBitGeneratorExpander: each generator becomes the elementwise HLO that computes its
// numbers (ThreeFry-2x32 or Philox-4x32 rounds of adds, multiplies, shifts and xors over u32 and u64 arrays
// indexed by iotas) plus the few scalar ops of the new state, so fusion fuses the generator into its consumers
// and codegen (CPU and nvptx) needs no random-number kernels. The numbers are XLA's bit for bit (see
// core/ir/rng_bit_generator.h). Where XLA concatenates the four Philox words of a counter, the expansion
// selects an element's word by its index, so the whole generator is one loop over the output. A generator
// becomes a `tuple` of the new state and the bits, so its get-tuple-elements keep working (`tuple-simplify`
// then removes the tuple).
//
//   Before:  r = (u64[2], u32[8]) rng-bit-generator(s), algorithm=rng_philox
//   After:   i = u64[8] iota(), iota_dimension=0     counter = broadcast(s[1]) + (i >> 2), carried into s[0]
//            x0..x3 = 32-bit words of the counter    10 rounds: x = (hi(x2·B) ^ x1 ^ k0, lo(x2·B), hi(x0·A) ^ x3 ^ k1, lo(x0·A))
//            bits = select(i & 3 == 0, x0, select(i & 3 == 1, x1, ...))      state = {s[0], s[1] + 2}
//            r = tuple(state, bits)
class RngBitGeneratorExpander final : public HloPass {
 public:
  std::string_view name() const override { return "rng-bit-generator-expander"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
