#include "core/passes/fusion_rules.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/passes/fusion_cost.h"
#include "core/passes/fusion_utils.h"
#include "core/passes/hlo_pass.h"
#include "core/passes/merge_tracking.h"

namespace fusionscope::core {
namespace {

// A tuple-shaped reduce of arrays, or a fusion whose root is one.
bool producesVariadicReduce(const HloInstruction& instruction) {
  const HloInstruction* reduce = &instruction;
  if (instruction.isFusion()) {
    const HloComputation* fused = instruction.fusedComputation();
    if (!fused || !fused->root()) return false;
    reduce = fused->root();
  }
  if (reduce->opcode() != HloOpcode::kReduce || !reduce->shape().isTuple()) return false;
  for (const Shape& element : reduce->shape().tupleElements()) {
    if (!element.isArray()) return false;
  }
  return true;
}

bool isReductionLike(HloOpcode opcode) {
  return opcode == HloOpcode::kReduce || opcode == HloOpcode::kReduceWindow || opcode == HloOpcode::kScatter;
}

// Instructions that do not run as kernels of their own: reading their value costs what their inputs cost.
bool launchesKernel(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kConstant:
    case HloOpcode::kParameter:
    case HloOpcode::kBitcast: return false;
    default: return true;
  }
}

std::vector<int64_t> minorToMajor(const Shape& shape) {
  if (shape.layout() && static_cast<int>(shape.layout()->minorToMajor.size()) == shape.rank()) {
    return shape.layout()->minorToMajor;
  }
  std::vector<int64_t> order;
  for (int i = shape.rank() - 1; i >= 0; --i) order.push_back(i);
  return order;
}

// Bytes a fused kernel reads for input `input`. A broadcast or iota input is charged what it expands from,
// since it is cheap and will be fused into the kernel that reads it (so a producer is not judged by the
// size of a broadcast that disappears anyway).
int64_t readBytes(const HloInstruction& input) {
  const HloInstruction* value = &input;
  while (value->opcode() == HloOpcode::kBroadcast && value->operandCount() == 1) value = value->operand(0);
  if (value->opcode() == HloOpcode::kIota) return 0;
  return value->shape().byteSize();
}

// The distinct inputs the fused kernel would read, and their bytes (readBytes).
struct FusedInputs {
  int count = 0;
  int64_t bytes = 0;
};
FusedInputs fusedInputs(const HloInstruction& producer, const HloInstruction& consumer, bool withConsumer = true,
                        bool withProducer = true) {
  std::vector<const HloInstruction*> inputs;
  inputs.reserve(consumer.operands().size() + producer.operands().size());
  if (withConsumer) {
    for (const HloInstruction* operand : consumer.operands()) {
      if (operand != &producer) inputs.push_back(operand);
    }
  }
  if (withProducer) {
    for (const HloInstruction* operand : producer.operands()) inputs.push_back(operand);
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  FusedInputs result;
  result.count = static_cast<int>(inputs.size());
  for (const HloInstruction* input : inputs) result.bytes += readBytes(*input);
  return result;
}

bool containsOpcode(const HloInstruction& instruction, HloOpcode opcode) {
  for (const HloInstruction* inst : kernelContents(instruction)) {
    if (inst->opcode() == opcode) return true;
  }
  return false;
}

// Ops allowed in the epilogue of a reduce or dot hero: elementwise work on the hero's result and on
// constants, plus shape-only ops.
bool isEpilogueOp(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kMap: return false;
    case HloOpcode::kBitcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBroadcast:
    case HloOpcode::kConstant:
    case HloOpcode::kIota: return true;
    default: return isElementwise(instruction.opcode()) && !instruction.hasSideEffect();
  }
}

// A value an epilogue may combine with the hero's result without reading another tensor.
bool isConstantLike(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kConstant:
    case HloOpcode::kIota: return true;
    case HloOpcode::kBroadcast:
    case HloOpcode::kConvert: return instruction.operandCount() == 1 && isConstantLike(*instruction.operand(0));
    default: return false;
  }
}

std::string usersPhrase(const HloInstruction& producer) {
  size_t users = producer.users().size();
  std::string phrase = fmt::format("{} user{}", users, users == 1 ? "" : "s");
  if (producer.isRoot()) phrase += " and is the computation's result";
  return phrase;
}

// Epilogue checks shared by reduction (kInput) and dot/convolution (kOutput) heroes moving into a consumer.
FusionVerdict epilogueRule(const HloInstruction& producer, const HloInstruction& consumer, std::string_view what) {
  if (producer.users().size() > 1 || producer.isRoot()) {
    return FusionVerdict::no(fmt::format("{} epilogue must be the only user of the {}; {} has {}", what,
                                         what == "a reduction's" ? "reduction" : "product", producer.name(),
                                         usersPhrase(producer)));
  }
  for (const HloInstruction* inst : kernelContents(consumer)) {
    if (!isEpilogueOp(*inst)) {
      return FusionVerdict::no(
          fmt::format("{} is not elementwise; {} epilogue may only contain elementwise ops", inst->name(), what));
    }
  }
  return FusionVerdict::yes();
}

}  // namespace

std::vector<const HloInstruction*> kernelContents(const HloInstruction& consumer) {
  std::vector<const HloInstruction*> result;
  if (const HloComputation* fused = consumer.fusedComputation()) {
    for (const auto& inst : fused->instructions()) {
      if (inst->opcode() != HloOpcode::kParameter) result.push_back(inst.get());
    }
  } else {
    result.push_back(&consumer);
  }
  return result;
}

std::vector<std::pair<const HloInstruction*, int>> readersOf(const HloInstruction& producer,
                                                             const HloInstruction& consumer) {
  std::vector<std::pair<const HloInstruction*, int>> readers;
  const HloComputation* fused = consumer.fusedComputation();
  if (!fused) {
    for (int i = 0; i < consumer.operandCount(); ++i) {
      if (consumer.operand(i) == &producer) readers.emplace_back(&consumer, i);
    }
    return readers;
  }
  std::vector<HloInstruction*> params = fused->parameters();
  for (int i = 0; i < consumer.operandCount() && static_cast<size_t>(i) < params.size(); ++i) {
    if (consumer.operand(i) != &producer || !params[static_cast<size_t>(i)]) continue;
    const HloInstruction* param = params[static_cast<size_t>(i)];
    for (const HloInstruction* user : param->users()) {
      for (int j = 0; j < user->operandCount(); ++j) {
        if (user->operand(j) == param) readers.emplace_back(user, j);
      }
    }
  }
  return readers;
}

FusionKind heroKind(const HloInstruction& instruction) {
  if (instruction.isFusion()) {
    // A fusion is what its hero makes it, whatever its kind says (XLA's fusion analysis): a reduction marked kLoop
    // is still a reduction fusion, and taking a slice as its "loop" epilogue would make it one that reduces per
    // output element.
    if (instruction.fusionKind() == FusionKind::kLoop && instruction.fusedComputation() != nullptr) {
      for (const auto& inst : instruction.fusedComputation()->instructions()) {
        if (isReductionLike(inst->opcode())) return FusionKind::kInput;
      }
    }
    return instruction.fusionKind();
  }
  if (isReductionLike(instruction.opcode())) return FusionKind::kInput;
  if (instruction.opcode() == HloOpcode::kDot || instruction.opcode() == HloOpcode::kConvolution) {
    return FusionKind::kOutput;
  }
  return FusionKind::kLoop;
}

FusionVerdict producerRule(const HloInstruction& producer, const FusionConfig& config) {
  const HloOpcode opcode = producer.opcode();
  if (opcode == HloOpcode::kParameter) return FusionVerdict::no("parameters are inputs", false);
  if (producer.shape().isTuple() || !producer.shape().isArray()) {
    return FusionVerdict::no(fmt::format("{} produces a tuple or token, which no kernel writes", producer.name()),
                             false);
  }
  if (producer.hasSideEffect()) {
    return FusionVerdict::no(fmt::format("{} has side effects and must run as written", producer.name()), false);
  }
  if (!producer.controlPredecessors().empty() || !producer.controlSuccessors().empty()) {
    return FusionVerdict::no(
        fmt::format("{} has control dependencies that order it against other instructions", producer.name()));
  }
  if (opcode == HloOpcode::kConstant) {
    const int64_t elements = producer.shape().elementCount();
    if (elements > config.smallConstantMaxElements) {
      return FusionVerdict::no(fmt::format(
          "{} has {} elements; constants with more than {} element{} stay outside as an input the kernel reads",
          producer.name(), elements, config.smallConstantMaxElements, config.smallConstantMaxElements == 1 ? "" : "s"));
    }
    return FusionVerdict::yes();
  }
  if (producer.isFusion()) {
    if (config.loopFusionOnly && producer.fusionKind() != FusionKind::kCustom) {
      return FusionVerdict::no(fmt::format(
          "{} is already a fusion; the cpu backend fuses only plain instructions into a consumer", producer.name()));
    }
    switch (producer.fusionKind()) {
      case FusionKind::kLoop:
      case FusionKind::kInput: return FusionVerdict::yes();
      case FusionKind::kOutput:
        return FusionVerdict::no(fmt::format(
            "{} already fuses a dot or convolution with its epilogue; a kOutput fusion is not fused into its users",
            producer.name()));
      case FusionKind::kCustom:
        return FusionVerdict::no(fmt::format("{} is a custom fusion and is kept as it is", producer.name()), false);
    }
  }
  if (opcode == HloOpcode::kBitcast &&
      primitiveTypeBitWidth(producer.shape().elementType()) !=
          primitiveTypeBitWidth(producer.operand(0)->shape().elementType())) {
    return FusionVerdict::no(fmt::format("{} reads {} as {}: a bitcast that changes the element width is not a "
                                         "renaming of elements, so it is not fused (as XLA)",
                                         producer.name(), primitiveTypeName(producer.operand(0)->shape().elementType()),
                                         primitiveTypeName(producer.shape().elementType())));
  }
  switch (opcode) {
    case HloOpcode::kMap:
      return FusionVerdict::no(fmt::format("{} calls a computation per element", producer.name()), false);
    case HloOpcode::kDynamicUpdateSlice:
      return FusionVerdict::no(
          fmt::format("{} updates its operand's buffer in place; its result is stored", producer.name()));
    case HloOpcode::kScatter:
      return FusionVerdict::no(
          fmt::format("{} updates its first operand in place; its result is stored, not fused", producer.name()));
    case HloOpcode::kReduceWindow:
      return FusionVerdict::no(
          fmt::format("only a reduce takes an epilogue; the result of reduce-window {} is stored", producer.name()));
    case HloOpcode::kCopyStart:
    case HloOpcode::kCopyDone:
    case HloOpcode::kDynamicReshape: return FusionVerdict::no(fmt::format("{} is not fusible", producer.name()), false);
    case HloOpcode::kReduce:
    case HloOpcode::kDot:
    case HloOpcode::kConvolution: return FusionVerdict::yes();  // as heroes of an epilogue, see pairRule
    default: break;
  }
  switch (producer.category()) {
    case OpCategory::kElementwise:
    case OpCategory::kDataMovement: return FusionVerdict::yes();
    case OpCategory::kCustomCall:
      return FusionVerdict::no(fmt::format("custom call {} is opaque to the compiler", producer.name()), false);
    case OpCategory::kCollective:
      return FusionVerdict::no(fmt::format("{} is a collective and talks to other devices", producer.name()), false);
    case OpCategory::kControlFlow:
      return FusionVerdict::no(fmt::format("{} runs other computations", producer.name()), false);
    case OpCategory::kRandom:
      return FusionVerdict::no(
          fmt::format("{} draws random numbers; duplicating it would change them", producer.name()), false);
    default: return FusionVerdict::no(fmt::format("{} is not fusible", producer.name()), false);
  }
}

FusionVerdict consumerRule(const HloInstruction& consumer, const FusionConfig& config, FusionKind& kind) {
  kind = FusionKind::kLoop;
  // A variadic reduce (argmax: values and their indices) is a tuple of arrays computed by one loop; XLA fuses
  // its inputs into it (`iota_reduce_fusion`), so it is a consumer like any reduce.
  const bool variadicReduce = producesVariadicReduce(consumer);
  if ((!consumer.shape().isArray() && !variadicReduce) || consumer.hasSideEffect()) {
    return FusionVerdict::no("not a consumer", false);
  }
  if (!consumer.controlPredecessors().empty() || !consumer.controlSuccessors().empty()) {
    return FusionVerdict::no("not a consumer", false);
  }
  if (consumer.isFusion() && (consumer.fusionKind() == FusionKind::kCustom || isMultiOutputFusion(consumer))) {
    return FusionVerdict::no("not a consumer", false);
  }
  if (config.loopFusionOnly) return cpuConsumerRule(consumer, kind);
  if (consumer.isFusion()) {
    kind = consumer.fusionKind();
    return FusionVerdict::yes();
  }
  switch (consumer.opcode()) {
    case HloOpcode::kReduce: {
      kind = FusionKind::kInput;
      if (!config.fuseIntoReductions) {
        return FusionVerdict::no(
            fmt::format("the {} backend does not fuse producers into reductions", backendName(config.backend)));
      }
      return FusionVerdict::yes();
    }
    case HloOpcode::kReduceWindow:
    case HloOpcode::kScatter:
      kind = FusionKind::kInput;
      if (!config.fuseIntoReductions) {
        return FusionVerdict::no(
            fmt::format("the {} backend does not fuse producers into reductions", backendName(config.backend)));
      }
      return FusionVerdict::yes();
    case HloOpcode::kMap:
    case HloOpcode::kBitcast:  // free: it renames a buffer and never starts a kernel of its own
    case HloOpcode::kCopyStart:
    case HloOpcode::kCopyDone:
    case HloOpcode::kDynamicReshape: return FusionVerdict::no("not a consumer", false);
    default: break;
  }
  if (consumer.category() == OpCategory::kElementwise || consumer.category() == OpCategory::kDataMovement) {
    return FusionVerdict::yes();
  }
  return FusionVerdict::no("not a consumer", false);
}

FusionVerdict reductionOrderRule(const HloInstruction& kernel) {
  // As XLA: a reduction takes the kernel unless it physically transposes most of the data it produces (transposes
  // and layout-changing copies of at least half its output's elements); a copy of a small part (one operand of a
  // concatenate) leaves the reduction's reads in order for the rest.
  const double outputElements = static_cast<double>(std::max<int64_t>(kernel.shape().elementCount(), 1));
  double transposed = 0;
  for (const HloInstruction* inst : kernelContents(kernel)) {
    const bool transposes = inst->opcode() == HloOpcode::kTranspose ||
                            (inst->opcode() == HloOpcode::kCopy && isLayoutChangingCopy(*inst));
    if (!transposes) continue;
    transposed += static_cast<double>(inst->shape().elementCount()) / outputElements;
    if (transposed < 0.5) continue;
    if (inst->opcode() == HloOpcode::kTranspose) {
      constexpr std::string_view kWhy = "a transpose feeding a reduction makes the reduction read memory out of order";
      if (inst == &kernel) return FusionVerdict::no(std::string(kWhy));
      return FusionVerdict::no(fmt::format("{} contains {}; {}", kernel.name(), inst->name(), kWhy));
    }
    return FusionVerdict::no(
        fmt::format("{} changes the layout ({} -> {}); a reduction reading through it would read memory out "
                    "of order",
                    inst->name(), dimensionListText(minorToMajor(inst->operand(0)->shape())),
                    dimensionListText(minorToMajor(inst->shape()))));
  }
  return FusionVerdict::yes();
}

FusionVerdict pairRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config,
                       FusionKind& kind) {
  if (config.loopFusionOnly) return cpuPairRule(producer, consumer, config, kind);
  const FusionKind consumerKind = heroKind(consumer);
  const FusionKind producerKind = heroKind(producer);
  kind = consumerKind;
  const auto readers = readersOf(producer, consumer);

  if (producerKind == FusionKind::kLoop) {
    for (const auto& [reader, index] : readers) {
      if (index == 0 &&
          (reader->opcode() == HloOpcode::kScatter || reader->opcode() == HloOpcode::kDynamicUpdateSlice)) {
        return FusionVerdict::no(
            fmt::format("{} updates its first operand in place, so that operand stays a buffer "
                        "of its own",
                        reader->name()));
      }
      if (reader->opcode() == HloOpcode::kDot || reader->opcode() == HloOpcode::kConvolution) {
        return FusionVerdict::no(fmt::format(
            "{} reads its operands straight from memory (a library call); only its epilogue is fused", reader->name()));
      }
    }
    if (consumerKind == FusionKind::kInput && containsOpcode(consumer, HloOpcode::kReduce)) {
      return reductionOrderRule(producer);
    }
    return FusionVerdict::yes();
  }

  if (producerKind == FusionKind::kInput) {
    kind = FusionKind::kInput;
    if (!containsOpcode(producer, HloOpcode::kReduce)) {
      return FusionVerdict::no(fmt::format("only a reduce takes an epilogue; {} has none", producer.name()));
    }
    if (!config.reductionEpilogues) {
      return FusionVerdict::no(
          fmt::format("the {} backend does not fuse consumers into a reduction (no reduction "
                      "epilogues)",
                      backendName(config.backend)));
    }
    if (consumerKind != FusionKind::kLoop) {
      return FusionVerdict::no(
          fmt::format("{} already has a reduction or dot as its hero; a fusion has one at most", consumer.name()));
    }
    if (FusionVerdict v = epilogueRule(producer, consumer, "a reduction's"); !v) return v;
    // XLA takes only single-operand epilogue ops; we also allow constants (divide by N for a mean), but never
    // a second tensor, which would turn a fast reduction kernel into one that also streams another input.
    for (const HloInstruction* operand : consumer.operands()) {
      if (operand != &producer && !isConstantLike(*operand)) {
        return FusionVerdict::no(
            fmt::format("the epilogue would also read {}; a reduction epilogue may only "
                        "combine the reduction's result with constants",
                        operand->name()));
      }
    }
    return FusionVerdict::yes();
  }

  if (producerKind == FusionKind::kOutput) {
    kind = FusionKind::kOutput;
    if (!config.outputFusion) {
      return FusionVerdict::no(
          fmt::format("the {} backend does not fuse epilogues into dots or convolutions", backendName(config.backend)));
    }
    if (consumerKind != FusionKind::kLoop) {
      return FusionVerdict::no(
          fmt::format("{} already has a reduction or dot as its hero; a fusion has one at most", consumer.name()));
    }
    return epilogueRule(producer, consumer, producer.opcode() == HloOpcode::kDot ? "a dot's" : "a convolution's");
  }
  return FusionVerdict::no(fmt::format("{} is a custom fusion", producer.name()), false);
}

bool fusionDuplicates(const HloInstruction& producer, const HloInstruction& consumer) {
  if (producer.isRoot()) return true;
  for (const HloInstruction* user : producer.users()) {
    if (user != &consumer) return true;
  }
  return false;
}

bool isExpensiveProducer(const HloInstruction& producer, Backend backend) {
  if (!producer.isFusion()) return isExpensive(producer, backend);
  for (const HloInstruction* inst : kernelContents(producer)) {
    if (isExpensive(*inst, backend)) return true;
  }
  return false;
}

FusionVerdict duplicationRule(const HloInstruction& producer, const HloInstruction& consumer,
                              const FusionConfig& config) {
  if (!fusionDuplicates(producer, consumer)) return FusionVerdict::yes();
  if (isExpensiveProducer(producer, config.backend) &&
      producer.shape().elementCount() > config.duplicateExpensiveMaxElements) {
    return FusionVerdict::no(fmt::format("{} is expensive and has {}; duplicating it would recompute it",
                                         producer.name(), usersPhrase(producer)));
  }
  return FusionVerdict::yes();
}

int64_t broadcastExpansion(const HloInstruction& producer, const HloInstruction& consumer) {
  auto localFactor = [](const HloInstruction& reader, const HloInstruction& value) -> int64_t {
    if (reader.opcode() != HloOpcode::kBroadcast) return 1;
    return reader.shape().elementCount() / std::max<int64_t>(1, value.shape().elementCount());
  };
  const HloComputation* fused = consumer.fusedComputation();
  if (!fused) return localFactor(consumer, producer);
  // Largest product of broadcast expansions from an instruction to the fused root, memoized per instruction.
  std::unordered_map<const HloInstruction*, int64_t> memo;
  auto toRoot = [&](auto& self, const HloInstruction* inst) -> int64_t {
    if (auto it = memo.find(inst); it != memo.end()) return it->second;
    int64_t best = inst == fused->root() ? 1 : 0;
    for (const HloInstruction* user : inst->users()) {
      best = std::max(best, localFactor(*user, *inst) * self(self, user));
    }
    memo[inst] = best;
    return best;
  };
  int64_t reuse = 1;
  std::vector<HloInstruction*> params = fused->parameters();
  for (int i = 0; i < consumer.operandCount() && static_cast<size_t>(i) < params.size(); ++i) {
    if (consumer.operand(i) == &producer && params[static_cast<size_t>(i)]) {
      reuse = std::max(reuse, toRoot(toRoot, params[static_cast<size_t>(i)]));
    }
  }
  return reuse;
}

FusionVerdict reuseRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config) {
  if (!isExpensiveProducer(producer, config.backend)) return FusionVerdict::yes();
  const int64_t reuse = broadcastExpansion(producer, consumer);
  if (reuse <= 1) return FusionVerdict::yes();
  return FusionVerdict::no(fmt::format(
      "{} reads each element of {} {} times (through a broadcast); the fused kernel would recompute an expensive "
      "op {} times instead of reading its result",
      consumer.name(), producer.name(), reuse, reuse));
}

FusionVerdict limitsRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config) {
  const FusedInputs inputs = fusedInputs(producer, consumer);
  if (inputs.count > config.maxOperands && inputs.count > consumer.operandCount()) {
    return FusionVerdict::no(fmt::format("the fusion would read {} inputs; the {} backend allows {} per kernel",
                                         inputs.count, backendName(config.backend), config.maxOperands));
  }
  const int64_t instructions = fusedInstructionCount(producer) + fusedInstructionCount(consumer);
  if (instructions > config.maxFusedInstructions) {
    return FusionVerdict::no(fmt::format("the fusion would hold {} instructions; the {} backend allows {}",
                                         instructions, backendName(config.backend), config.maxFusedInstructions));
  }
  return FusionVerdict::yes();
}

FusionVerdict cycleRule(const TopologicalOrder& order, const HloInstruction& producer, const HloInstruction& consumer,
                        bool duplicate) {
  if (duplicate) return FusionVerdict::yes();
  if (order.reaches(&producer, &consumer, /*skipDirect=*/true)) {
    return FusionVerdict::no(fmt::format("another path leads from {} to {}; fusing them would create a cycle",
                                         producer.name(), consumer.name()));
  }
  return FusionVerdict::yes();
}

int64_t fusionBytesSaved(const HloInstruction& producer, const HloInstruction& consumer) {
  const FusedInputs consumerOthers = fusedInputs(producer, consumer, true, false);
  int64_t before = consumer.shape().byteSize() + consumerOthers.bytes + producer.shape().byteSize();
  if (!fusionDuplicates(producer, consumer) && launchesKernel(producer)) {
    before += producer.shape().byteSize() + fusedInputs(producer, consumer, false, true).bytes;
  }
  const int64_t after = consumer.shape().byteSize() + fusedInputs(producer, consumer).bytes;
  return before - after;
}

std::optional<int64_t> fuseIntoAllUsersBytesSaved(const HloInstruction& producer, const FusionConfig& config) {
  // Beyond a handful of users the plan is not worth checking: every check would look at all of them.
  constexpr size_t kMaxPlanUsers = 16;
  if (producer.isRoot() || producer.users().size() < 2 || producer.users().size() > kMaxPlanUsers) return std::nullopt;
  if (isExpensiveProducer(producer, config.backend)) return std::nullopt;
  int64_t total =
      launchesKernel(producer) ? producer.shape().byteSize() + fusedInputs(producer, producer, false, true).bytes : 0;
  for (const HloInstruction* user : producer.users()) {
    FusionKind kind = FusionKind::kLoop;
    if (!consumerRule(*user, config, kind) || !pairRule(producer, *user, config, kind)) return std::nullopt;
    total += fusionBytesSaved(producer, *user);
  }
  return total;
}

bool isLayoutChangingCopy(const HloInstruction& copy) {
  if (copy.opcode() != HloOpcode::kCopy || copy.operandCount() != 1) return false;
  return minorToMajor(copy.shape()) != minorToMajor(copy.operand(0)->shape());
}

}  // namespace fusionscope::core
