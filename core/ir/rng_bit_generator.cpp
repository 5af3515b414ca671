#include "core/ir/rng_bit_generator.h"

#include <fmt/format.h>

#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

int RngBitGeneratorSpec::threeFrySplitDimension() const {
  const std::vector<int64_t>& dims = output.dimensions();
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] % 2 == 0) return static_cast<int>(d);
  }
  int largest = 0;
  for (size_t d = 1; d < dims.size(); ++d) {
    if (dims[d] > dims[static_cast<size_t>(largest)]) largest = static_cast<int>(d);
  }
  return largest;
}

uint64_t RngBitGeneratorSpec::threeFryCounters() const {
  if (bits == 64) return static_cast<uint64_t>(elements);
  if (output.rank() == 0) return 1;
  const int split = threeFrySplitDimension();
  const int64_t extent = output.dimension(split);
  if (extent == 0) return 0;
  return static_cast<uint64_t>(elements / extent * ((extent + 1) / 2));
}

uint64_t RngBitGeneratorSpec::philoxCounters() const {
  const auto n = static_cast<uint64_t>(elements);
  return bits == 64 ? (n + 1) / 2 : (n + 3) / 4;
}

StatusOr<RngBitGeneratorSpec> rngBitGeneratorSpec(const HloInstruction& inst) {
  RngBitGeneratorSpec spec;
  const std::string* algorithm = inst.attributes().findRaw("algorithm");
  const std::string name = algorithm ? *algorithm : "rng_default";
  if (name == "rng_three_fry") {
    spec.algorithm = RngAlgorithm::kThreeFry;
  } else if (name == "rng_philox" || name == "rng_default") {
    spec.algorithm = RngAlgorithm::kPhilox;
  } else {
    return Status::error(
        fmt::format("unknown algorithm={} (rng_default, rng_three_fry and rng_philox are)", name));
  }
  if (inst.operandCount() != 1) return Status::error("rng-bit-generator takes one operand, the state");
  const Shape& state = inst.operand(0)->shape();
  const bool stateOk = state.isArray() && state.elementType() == PrimitiveType::kU64 && state.rank() == 1 &&
                       (state.dimension(0) == 2 || (state.dimension(0) == 3 && spec.algorithm == RngAlgorithm::kPhilox));
  if (!stateOk) {
    return Status::error(fmt::format("the state must be u64[2]{} for {}, not {}",
                                     spec.algorithm == RngAlgorithm::kPhilox ? " or u64[3]" : "", name,
                                     state.toString(false)));
  }
  spec.stateWords = static_cast<int>(state.dimension(0));
  const Shape& shape = inst.shape();
  if (!shape.isTuple() || shape.tupleSize() != 2 || shape.tupleElement(0).toString(false) != state.toString(false) ||
      !shape.tupleElement(1).isArray()) {
    return Status::error(fmt::format("must produce ({}, bits), not {}", state.toString(false), shape.toString(false)));
  }
  spec.output = shape.tupleElement(1);
  const PrimitiveType type = spec.output.elementType();
  spec.bits = primitiveTypeBitWidth(type);
  if (!isInteger(type) || spec.bits < 8 || spec.bits > 64) {
    return Status::error(fmt::format("generates integers of 8 to 64 bits, not {}", primitiveTypeName(type)));
  }
  spec.elements = spec.output.elementCount();
  return spec;
}

}  // namespace fusionscope::core
