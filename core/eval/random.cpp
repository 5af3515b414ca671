// rng-bit-generator: XLA's ThreeFry-2x32 and Philox-4x32 generators written out in scalar C++, element by
// element from the definitions (see core/ir/rng_bit_generator.h for what feeds them). The expander pass builds
// the same numbers out of HLO ops; tests hold both to the numbers XLA itself returned.
#include <array>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/ir/rng_bit_generator.h"

namespace fusionscope::core::eval {
namespace {

uint32_t rotateLeft(uint32_t v, int distance) {
  return (v << distance) | (v >> (32 - distance));
}

// ThreeFry-2x32, 20 rounds: a key schedule injection after every four rounds.
std::array<uint32_t, 2> threeFry2x32(std::array<uint32_t, 2> x, std::array<uint32_t, 2> key) {
  const std::array<uint32_t, 3> schedule = {key[0], key[1], kThreeFryParity ^ key[0] ^ key[1]};
  x[0] += schedule[0];
  x[1] += schedule[1];
  for (uint32_t group = 1; group <= 5; ++group) {
    const int* rotations = kThreeFryRotations + ((group - 1) % 2) * 4;
    for (int r = 0; r < 4; ++r) {
      x[0] += x[1];
      x[1] = rotateLeft(x[1], rotations[r]) ^ x[0];
    }
    x[0] += schedule[group % 3];
    x[1] += schedule[(group + 1) % 3] + group;
  }
  return x;
}

// Philox-4x32, 10 rounds.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> x, std::array<uint32_t, 2> key) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    const uint64_t p0 = uint64_t{x[0]} * kPhiloxMultiplierA;
    const uint64_t p1 = uint64_t{x[2]} * kPhiloxMultiplierB;
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kPhiloxKeyStepA;
    key[1] += kPhiloxKeyStepB;
  }
  return x;
}

std::array<uint32_t, 2> words(uint64_t v) {
  return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
}

uint64_t join(uint32_t low, uint32_t high) {
  return uint64_t{low} | (uint64_t{high} << 32);
}

void threeFry(const RngBitGeneratorSpec& spec, std::vector<uint64_t>& state, std::vector<int64_t>& bits) {
  const std::array<uint32_t, 2> key = words(state[0]);
  const uint64_t counter = state[1];
  if (spec.bits == 64) {
    for (size_t i = 0; i < bits.size(); ++i) {
      const std::array<uint32_t, 2> out = threeFry2x32(words(counter + i), key);
      bits[i] = static_cast<int64_t>(join(out[0], out[1]));
    }
  } else if (!bits.empty()) {
    // The split dimension's index i reads number i % 2 of the counter at (index with i / 2) in the halved shape.
    std::vector<int64_t> dims = spec.output.dimensions();
    const int split = spec.output.rank() == 0 ? -1 : spec.threeFrySplitDimension();
    std::vector<int64_t> halved = dims;
    if (split >= 0) halved[static_cast<size_t>(split)] = (dims[static_cast<size_t>(split)] + 1) / 2;
    std::vector<int64_t> strides(dims.size(), 1);
    for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
      strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * halved[static_cast<size_t>(d) + 1];
    }
    size_t linear = 0;
    forEachIndex(dims, [&](const std::vector<int64_t>& index) {
      uint64_t offset = 0;
      int which = 0;
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t i = index[d];
        if (static_cast<int>(d) == split) {
          which = static_cast<int>(i % 2);
          i /= 2;
        }
        offset += static_cast<uint64_t>(i * strides[d]);
      }
      bits[linear++] = threeFry2x32(words(counter + offset), key)[static_cast<size_t>(which)];
    });
  }
  state[1] = counter + spec.threeFryCounters();
}

void philox(const RngBitGeneratorSpec& spec, std::vector<uint64_t>& state, std::vector<int64_t>& bits) {
  const std::array<uint32_t, 2> key = words(state[0]);
  const uint64_t low = state[1];
  const uint64_t high = spec.stateWords == 3 ? state[2] : state[0];
  // 128-bit counter + v, carrying out of the low word.
  auto counterPlus = [&](uint64_t v) -> std::array<uint32_t, 4> {
    const uint64_t sumLow = low + v;
    const uint64_t sumHigh = high + (sumLow < low ? 1 : 0);
    return {static_cast<uint32_t>(sumLow), static_cast<uint32_t>(sumLow >> 32), static_cast<uint32_t>(sumHigh),
            static_cast<uint32_t>(sumHigh >> 32)};
  };
  const size_t perCounter = spec.bits == 64 ? 2 : 4;
  for (size_t first = 0; first < bits.size(); first += perCounter) {
    const std::array<uint32_t, 4> out = philox4x32(counterPlus(first / perCounter), key);
    for (size_t k = 0; k < perCounter && first + k < bits.size(); ++k) {
      bits[first + k] =
          spec.bits == 64 ? static_cast<int64_t>(join(out[2 * k], out[2 * k + 1])) : static_cast<int64_t>(out[k]);
    }
  }
  const std::array<uint32_t, 4> next = counterPlus(spec.philoxCounters());
  state[1] = join(next[0], next[1]);
  // A two-word state keeps the key: the counter's high word (the key) does not carry into it.
  if (spec.stateWords == 3) state[2] = join(next[2], next[3]);
}

}  // namespace

StatusOr<Value> evalRngBitGenerator(const HloInstruction& inst, Operands operands) {
  StatusOr<RngBitGeneratorSpec> spec = rngBitGeneratorSpec(inst);
  if (!spec.ok()) return spec.status();
  if (operands.size() != 1 || !operands[0]->isArray()) return Status::error("takes one array operand, the state");
  std::vector<uint64_t> state;
  for (int64_t word : operands[0]->intData()) state.push_back(static_cast<uint64_t>(word));
  if (static_cast<int>(state.size()) != spec->stateWords) return Status::error("the state has the wrong size");
  std::vector<int64_t> bits(static_cast<size_t>(spec->elements));
  if (spec->algorithm == RngAlgorithm::kThreeFry) {
    threeFry(*spec, state, bits);
  } else {
    philox(*spec, state, bits);
  }
  std::vector<int64_t> stateOut(state.begin(), state.end());
  return Value::tuple({Value::integers(operands[0]->shape(), std::move(stateOut)),
                       Value::integers(spec->output, std::move(bits))});
}

}  // namespace fusionscope::core::eval
