#pragma once

#include <cstdint>

#include "core/base/status.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

class HloInstruction;

// What an `rng-bit-generator` computes, read and checked once for the evaluator and the expander pass, which
// both follow XLA's generators (xla/hlo/builder/lib/prng.cc behind RngBitGeneratorExpander) bit for bit:
//
//   (u64[S], T[dims]) rng-bit-generator(u64[S] state), algorithm=rng_default|rng_three_fry|rng_philox
//
// state[0] is the key and stays as it is. ThreeFry-2x32 (20 rounds) takes state[1] as a 64-bit counter;
// Philox-4x32 (10 rounds) takes a 128-bit counter: state[1] low and state[2] high for S = 3, state[1] low and
// the key high for S = 2 (XLA reverses the two words). `rng_default` is Philox, as XLA's CPU and GPU compilers
// choose. T is an integer type of 8 to 64 bits: narrower types take the low bits of 32-bit numbers.
enum class RngAlgorithm { kThreeFry, kPhilox };

struct RngBitGeneratorSpec {
  RngAlgorithm algorithm = RngAlgorithm::kPhilox;
  int stateWords = 2;  // 2, or 3 for Philox
  Shape output;        // the bits' array shape
  int bits = 32;       // the output element type's width
  int64_t elements = 0;

  // The 32-bit generators' split: ThreeFry-2x32 makes two numbers per counter value, and XLA pairs them along
  // one dimension of the output: the first even one, else the largest (the first of equals); 0 for a scalar.
  // Element i of that dimension takes number i % 2 of counter (index with i / 2) in the halved shape.
  int threeFrySplitDimension() const;
  // The counters one ThreeFry call consumes: elements for 64-bit outputs, else those of the halved shape.
  uint64_t threeFryCounters() const;
  // The 128-bit counters one Philox call consumes: 4 32-bit or 2 64-bit numbers each.
  uint64_t philoxCounters() const;
};

// The spec of an rng-bit-generator instruction, or an error naming what does not fit (an unknown algorithm,
// a state that is not u64[2] (u64[3] for Philox), an output that is not a (state, integer array) tuple).
StatusOr<RngBitGeneratorSpec> rngBitGeneratorSpec(const HloInstruction& inst);

// The algorithms' constants (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).
inline constexpr uint32_t kThreeFryParity = 0x1BD11BDA;
inline constexpr int kThreeFryRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
inline constexpr uint32_t kPhiloxMultiplierA = 0xD2511F53;
inline constexpr uint32_t kPhiloxMultiplierB = 0xCD9E8D57;
inline constexpr uint32_t kPhiloxKeyStepA = 0x9E3779B9;
inline constexpr uint32_t kPhiloxKeyStepB = 0xBB67AE85;
inline constexpr int kPhiloxRounds = 10;

}  // namespace fusionscope::core
