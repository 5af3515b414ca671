#include "core/passes/fusion_cost.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

namespace fusionscope::core {

int64_t kernelTraffic(const HloInstruction& instruction) {
  std::vector<const HloInstruction*> seen;
  int64_t bytes = instruction.shape().byteSize();
  for (const HloInstruction* operand : instruction.operands()) {
    if (std::find(seen.begin(), seen.end(), operand) != seen.end()) continue;
    seen.push_back(operand);
    bytes += operand->shape().byteSize();
  }
  return bytes;
}

bool isExpensive(const HloInstruction& instruction, Backend backend) {
  // On a GPU, f32 and f16 division and square roots are a few fast instructions (XLA GPU's instruction fusion
  // exceptions), so a producer made of them may be recomputed in several consumers; integer division stays
  // expensive. (That pass also counted exp as cheap; priority fusion, which replaced it, keeps an exp's result
  // from being recomputed, and so do we.)
  if (backend == Backend::kGpu) {
    const PrimitiveType type = instruction.shape().elementType();
    const bool shortFloat = type == PrimitiveType::kF32 || type == PrimitiveType::kF16;
    switch (instruction.opcode()) {
      case HloOpcode::kDivide:
      case HloOpcode::kSqrt:
      case HloOpcode::kRsqrt:
        if (shortFloat) return false;
        break;
      default: break;
    }
  }
  if (backend == Backend::kCpu) {
    // XLA CPU's list (CpuInstructionFusion::IsExpensive): a gather is expensive (each element an indexed load),
    // so is narrowing f32 to bf16 (rounding with NaN checks); integer division by a constant is multiplies and
    // shifts, cheap; abs, sign, sin, cos and tan are cheap when their result is real (a polynomial in vector
    // code), expensive when it is complex. XLA asks the result's type, not the operand's: abs of a complex number
    // (real, a scaled square root) counts as cheap, sign of one (complex, a division by that) as expensive.
    const bool complex = instruction.shape().isArray() && isComplex(instruction.shape().elementType());
    switch (instruction.opcode()) {
      case HloOpcode::kGather: return true;
      case HloOpcode::kSin:
      case HloOpcode::kCos:
      case HloOpcode::kTan:
      case HloOpcode::kAbs:
      case HloOpcode::kSign: return complex;
      case HloOpcode::kConvert:
        return instruction.shape().elementType() == PrimitiveType::kBF16 && instruction.operandCount() == 1 &&
               instruction.operand(0)->shape().elementType() == PrimitiveType::kF32;
      case HloOpcode::kDivide:
      case HloOpcode::kRemainder: {
        if (!isInteger(instruction.shape().elementType()) || instruction.operandCount() != 2) return true;
        const HloInstruction* divisor = instruction.operand(1);
        while (divisor->opcode() == HloOpcode::kBroadcast && divisor->operandCount() == 1) {
          divisor = divisor->operand(0);
        }
        return !(divisor->opcode() == HloOpcode::kConstant && divisor->shape().elementCount() == 1);
      }
      default: break;
    }
  }
  if (isTranscendental(instruction.opcode())) return true;
  switch (instruction.opcode()) {
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kPower:
    case HloOpcode::kAtan2: return true;
    default: break;
  }
  if (isElementwise(instruction.opcode())) return false;
  switch (instruction.category()) {
    case OpCategory::kDataMovement:
    case OpCategory::kConstant:
    case OpCategory::kParameter:
    case OpCategory::kTuple: return false;
    default: return true;  // reductions, contractions, calls, custom calls, ...
  }
}

std::string formatBytes(int64_t bytes) {
  const int64_t magnitude = std::llabs(bytes);
  if (magnitude < 1000) return fmt::format("{} B", bytes);
  if (magnitude < 1000 * 1000) return fmt::format("{:.3g} KB", static_cast<double>(bytes) / 1e3);
  if (magnitude < 1000LL * 1000 * 1000) return fmt::format("{:.3g} MB", static_cast<double>(bytes) / 1e6);
  return fmt::format("{:.3g} GB", static_cast<double>(bytes) / 1e9);
}

}  // namespace fusionscope::core
