#pragma once

#include <string_view>

#include "core/passes/hlo_pass.h"

namespace fusionscope::core {

// bf16 computed in f32, as XLA CPU's float normalization does (its CPU backend has no bf16 arithmetic): every op
// that reads or writes bf16 values, other than a convert, a parameter, a constant and the plumbing of tuples, reads
// its bf16 operands through converts to f32, computes in f32 and, where it wrote bf16, converts its result back.
// A reduction's or window's reducer is cloned in f32 (it accumulates in f32, as XLA's does). Each op's result is
// still rounded to bf16 where the program asked for bf16, so a chain of bf16 ops gives what it gave before, up to
// the reductions' accumulation in f32. Run by the cpu preset before fusion; its converts then fuse with their ops.
//
//   Before:  m = bf16[16,32] multiply(a, b)                                   a, b: bf16[16,32]
//   After:   m = bf16[16,32] convert(f32[16,32] multiply(convert(a), convert(b)))
class FloatNormalization final : public HloPass {
 public:
  std::string_view name() const override { return "bf16-normalization"; }
  StatusOr<bool> run(HloModule& module, PassContext& context) override;
};

}  // namespace fusionscope::core
