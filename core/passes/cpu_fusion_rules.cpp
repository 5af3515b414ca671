// The cpu backend's fusion rules, after XLA CPU's CpuInstructionFusion: every fusion is a loop over the output
// (kLoop), with one exception, a matrix-vector dot taking its add (kOutput). docs/PIPELINES.md has the table of
// XLA's conditions and these rules.
#include <algorithm>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/ir/hlo_computation.h"
#include "core/passes/fusion_config.h"
#include "core/passes/fusion_rules.h"
#include "core/passes/fusion_utils.h"
#include "core/passes/merge_tracking.h"

namespace fusionscope::core {
namespace {

int64_t minorDimension(const Shape& shape) {
  if (shape.layout() && !shape.layout()->minorToMajor.empty()) return shape.layout()->minorToMajor.front();
  return shape.rank() - 1;
}

// A concatenation a plain copy loop does better than a fused kernel: many operands (the fused loop picks the
// operand per element through a tree of branches), or along the most minor dimension over 128 elements or more, where
// a loop of its own moves whole rows (XLA CPU as of jaxlib 0.10; later XLA measures bytes per row and in all instead).
// Below that the rows are too short to vectorize anyway, and fusing costs nothing.
constexpr int64_t kMinorConcatenateMinElements = 128;

std::optional<std::string> inefficientConcatenate(const HloInstruction& concat, const FusionConfig& config) {
  if (concat.opcode() != HloOpcode::kConcatenate) return std::nullopt;
  if (concat.operandCount() > config.maxConcatenateOperands) {
    return fmt::format("{} concatenates {} operands; a fused loop would choose among them per element (at most {})",
                       concat.name(), concat.operandCount(), config.maxConcatenateOperands);
  }
  const Shape& shape = concat.shape();
  const auto& dims = concat.attributes().dimensions;
  if (shape.rank() <= 1 || !dims || dims->empty()) return std::nullopt;
  const int64_t dim = dims->front();
  const int64_t rowElements = shape.dimension(static_cast<int>(dim));
  if (dim == minorDimension(shape) && rowElements >= kMinorConcatenateMinElements) {
    return fmt::format(
        "{} concatenates along the most minor dimension ({} elements per row, {} or more); it runs "
        "faster as a copy loop of its own",
        concat.name(), rowElements, kMinorConcatenateMinElements);
  }
  return std::nullopt;
}

// dot without batch dimensions whose result has at most one dimension: the loop XLA CPU emits itself, which
// can take an add; larger products go to a GEMM library call.
bool isUnbatchedMatrixVectorDot(const HloInstruction& dot) {
  if (dot.opcode() != HloOpcode::kDot || dot.shape().rank() > 1) return false;
  const DotDimensionNumbers dims = dot.attributes().dot.value_or(DotDimensionNumbers{});
  return dims.lhsBatch.empty() && dims.rhsBatch.empty();
}

// XLA CPU's dot loop for a matrix-vector product reads each element of the matrix once, so the matrix's producer
// can be computed inside it (kOutput), as long as the vector stays small (it is re-read for every row).
constexpr int64_t kMatrixVectorFusionMaxVectorBytes = 16 * 1024;

FusionVerdict matrixVectorOperandRule(const HloInstruction& producer, const HloInstruction& dot, FusionKind& kind) {
  if (!isUnbatchedMatrixVectorDot(dot) || dot.operandCount() != 2) {
    return FusionVerdict::no(fmt::format("{} is a matrix product (a library call on the cpu backend); only a "
                                         "matrix-vector dot computes its operands in its own loop",
                                         dot.name()));
  }
  const int index = dot.operand(0) == &producer ? 0 : 1;
  const HloInstruction& other = *dot.operand(1 - index);
  if (dot.operand(index) != &producer || other.shape().rank() != 1) {
    return FusionVerdict::no(fmt::format("{} is the vector of {}; only the matrix operand is fused (the vector is "
                                         "read once per row)",
                                         producer.name(), dot.name()));
  }
  if (other.shape().byteSize() >= kMatrixVectorFusionMaxVectorBytes) {
    return FusionVerdict::no(fmt::format("the vector {} of {} has {} bytes; the cpu backend fuses into a "
                                         "matrix-vector dot only with vectors under {} bytes (as XLA CPU)",
                                         other.name(), dot.name(), other.shape().byteSize(),
                                         kMatrixVectorFusionMaxVectorBytes));
  }
  kind = FusionKind::kOutput;
  return FusionVerdict::yes();
}

// XLA's budget of copies of one value in a fused loop (kAllowedCodeDuplication).
constexpr int64_t kAllowedCodeDuplication = 15;

bool startsLoopsOfItsOwn(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kConcatenate:
    case HloOpcode::kDot:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kPad:
    case HloOpcode::kReduce:
    case HloOpcode::kReduceWindow: return true;
    default: return false;
  }
}

std::vector<int64_t> layoutOrder(const Shape& shape) {
  if (shape.layout() && static_cast<int>(shape.layout()->minorToMajor.size()) == shape.rank()) {
    return shape.layout()->minorToMajor;
  }
  std::vector<int64_t> order;
  for (int i = shape.rank() - 1; i >= 0; --i) order.push_back(i);
  return order;
}

// Whether an element's index in `a` is its index in `b` (same dimensions and layout; element types may differ).
bool sameIndexSpace(const Shape& a, const Shape& b) {
  return a.isArray() && b.isArray() && a.dimensions() == b.dimensions() && layoutOrder(a) == layoutOrder(b);
}

bool usedOnceBy(const HloInstruction& producer, const HloInstruction& consumer) {
  if (producer.isRoot() || producer.users().size() != 1 || producer.users().front() != &consumer) return false;
  return std::count(consumer.operands().begin(), consumer.operands().end(), &producer) == 1;
}

}  // namespace

bool isLoopFusible(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kBitcast:
    case HloOpcode::kBroadcast:
    case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kGather:
    case HloOpcode::kIota:
    case HloOpcode::kPad:
    case HloOpcode::kReduce:
    case HloOpcode::kReshape:
    case HloOpcode::kReverse:
    case HloOpcode::kSlice:
    case HloOpcode::kTranspose:
    case HloOpcode::kCopy:
    case HloOpcode::kConstant: return true;
    case HloOpcode::kMap: return false;
    default: return isElementwise(instruction.opcode());
  }
}

bool effectivelyAtMostUnary(const HloInstruction& producer) {
  // "Large" is judged by true rank (dimensions of size 1 not counted): an operand of the output's true rank or more.
  auto trueRank = [](const Shape& shape) {
    return shape.isArray() ? static_cast<int>(std::count_if(shape.dimensions().begin(), shape.dimensions().end(),
                                                            [](int64_t size) { return size != 1; }))
                           : 0;
  };
  int outputRank = 0;
  const std::vector<Shape> outputs =
      producer.shape().isTuple() ? producer.shape().tupleElements() : std::vector<Shape>{producer.shape()};
  for (const Shape& output : outputs) outputRank = std::max(outputRank, trueRank(output));
  int large = 0;
  for (const HloInstruction* operand : producer.operands()) {
    if (operand->opcode() == HloOpcode::kBroadcast || operand->opcode() == HloOpcode::kIota) continue;
    if (operand->opcode() == HloOpcode::kConstant && trueRank(operand->shape()) == 0 && operand->shape().isArray()) {
      continue;  // a scalar constant
    }
    large += trueRank(operand->shape()) >= outputRank;
  }
  return large <= 1;
}

FusionVerdict cpuConsumerRule(const HloInstruction& consumer, FusionKind& kind) {
  kind = FusionKind::kLoop;
  if (consumer.isFusion()) {
    if (consumer.fusionKind() != FusionKind::kLoop) {
      return FusionVerdict::no(fmt::format("the cpu backend grows only loop fusions; {} is a {} fusion",
                                           consumer.name(), fusionKindName(consumer.fusionKind())),
                               consumer.fusionKind() != FusionKind::kCustom);
    }
    return FusionVerdict::yes();
  }
  if (consumer.opcode() == HloOpcode::kBitcast || consumer.opcode() == HloOpcode::kConstant) {
    return FusionVerdict::no("not a consumer", false);
  }
  // The matrix-vector dot + add case is decided per pair (pairRule): the add is the consumer there. So is a
  // matrix-vector dot taking the producer of its matrix.
  if (isLoopFusible(consumer) || isUnbatchedMatrixVectorDot(consumer)) return FusionVerdict::yes();
  switch (consumer.opcode()) {
    case HloOpcode::kReduceWindow:
    case HloOpcode::kScatter:
    case HloOpcode::kSelectAndScatter:
      return FusionVerdict::no(
          fmt::format("the cpu backend fuses only into loop-fusible instructions; {} is emitted as a kernel of its own",
                      consumer.name()));
    default: return FusionVerdict::no("not a consumer", false);
  }
}

FusionVerdict cpuPairRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config,
                          FusionKind& kind) {
  kind = FusionKind::kLoop;
  if (producer.opcode() == HloOpcode::kDot || producer.opcode() == HloOpcode::kConvolution) {
    if (!isUnbatchedMatrixVectorDot(producer)) {
      return FusionVerdict::no(
          fmt::format("the cpu backend output-fuses only an unbatched matrix-vector dot into an add; {} is a "
                      "library call that cannot take an epilogue",
                      producer.name()));
    }
    if (consumer.isFusion() || consumer.opcode() != HloOpcode::kAdd) {
      return FusionVerdict::no(fmt::format(
          "the cpu backend output-fuses a matrix-vector dot only into an add; {} is not a plain add", consumer.name()));
    }
    if (!usedOnceBy(producer, consumer)) {
      return FusionVerdict::no(
          fmt::format("the cpu backend output-fuses a dot only into its one use; {} has other uses", producer.name()));
    }
    kind = FusionKind::kOutput;
    return FusionVerdict::yes();
  }
  if (!isLoopFusible(producer)) {
    return FusionVerdict::no(
        fmt::format("{} is not loop-fusible; the cpu backend emits it as a kernel of its own", producer.name()));
  }
  if (consumer.opcode() == HloOpcode::kDot && !consumer.isFusion()) return matrixVectorOperandRule(producer, consumer, kind);
  // An add that a matrix-vector dot operand could output-fuse into stays free for that dot.
  if (consumer.opcode() == HloOpcode::kAdd && !consumer.isFusion()) {
    for (const HloInstruction* operand : consumer.operands()) {
      if (operand != &producer && isUnbatchedMatrixVectorDot(*operand) && usedOnceBy(*operand, consumer)) {
        return FusionVerdict::no(fmt::format("{} is kept for the output fusion of the matrix-vector dot {}",
                                             consumer.name(), operand->name()));
      }
    }
  }
  if (auto why = inefficientConcatenate(producer, config)) return FusionVerdict::no(*why);
  for (const HloInstruction* inst : kernelContents(consumer)) {
    if (auto why = inefficientConcatenate(*inst, config)) return FusionVerdict::no(*why);
  }
  for (const auto& [reader, index] : readersOf(producer, consumer)) {
    if (index == 0 && (reader->opcode() == HloOpcode::kScatter || reader->opcode() == HloOpcode::kDynamicUpdateSlice)) {
      return FusionVerdict::no(fmt::format(
          "{} updates its first operand in place, so that operand stays a buffer of its own", reader->name()));
    }
  }
  if (producer.opcode() == HloOpcode::kReduce) {
    int64_t reductions = 0;
    for (const HloInstruction* inst : kernelContents(consumer)) reductions += inst->opcode() == HloOpcode::kReduce;
    if (reductions > config.maxReductionsPerFusion) {
      return FusionVerdict::no(fmt::format(
          "{} already holds {} reductions; the cpu backend allows {} per fusion (each unrolls into a large loop)",
          consumer.name(), reductions, config.maxReductionsPerFusion));
    }
  }
  return FusionVerdict::yes();
}

namespace {

// Where XLA's layout assignment would put a value, as far as LAPACK's column-major operands care: `free` values take
// any layout (iotas, broadcasts, constants, elementwise ops of such), `column` ones are a LAPACK result in its
// column-major layout or elementwise ops of such and of free values (the layout flows through them), the rest keep
// the default row-major layout.
class LapackLayouts {
 public:
  // A LAPACK call reading `producer` as a matrix: XLA lays the producer out column-major itself when it is a column
  // value (a mask over a Cholesky factor); else the operand gets a copy into that layout, and the copy is a loop
  // fusion that takes the producer like any other user. Whether `user` reads `producer` through such a copy.
  bool readsThroughCopy(const HloInstruction& user, const HloInstruction& producer) {
    if (user.opcode() != HloOpcode::kCustomCall || !user.attributes().customCallTarget ||
        !user.attributes().customCallTarget->starts_with("lapack_") || !producer.shape().isArray() ||
        producer.shape().rank() < 2) {
      return false;
    }
    return kind(producer) == Kind::kRow;
  }

 private:
  enum class Kind { kFree, kColumn, kRow };

  Kind kind(const HloInstruction& inst) {
    if (auto found = m_kinds.find(&inst); found != m_kinds.end()) return found->second;
    Kind result = Kind::kRow;
    const Shape& shape = inst.shape();
    const HloOpcode op = inst.opcode();
    if (op == HloOpcode::kIota || op == HloOpcode::kBroadcast || op == HloOpcode::kConstant) {
      result = Kind::kFree;
    } else if (op == HloOpcode::kGetTupleElement && inst.operand(0)->opcode() == HloOpcode::kCustomCall &&
               inst.operand(0)->attributes().customCallTarget &&
               inst.operand(0)->attributes().customCallTarget->starts_with("lapack_") && shape.isArray() &&
               shape.rank() >= 2 && shape.layout() && !shape.layout()->minorToMajor.empty() &&
               shape.layout()->minorToMajor[0] == shape.rank() - 2) {
      result = Kind::kColumn;
    } else if (isElementwise(op) && inst.operandCount() > 0) {
      bool column = false;
      bool row = false;
      for (const HloInstruction* operand : inst.operands()) {
        const Kind k = kind(*operand);
        column = column || k == Kind::kColumn;
        row = row || k == Kind::kRow;
      }
      result = row ? Kind::kRow : column ? Kind::kColumn : Kind::kFree;
    }
    m_kinds[&inst] = result;
    return result;
  }

  std::unordered_map<const HloInstruction*, Kind> m_kinds;
};

}  // namespace

std::unordered_map<const HloInstruction*, std::string> cpuProducersNotToCopy(const HloComputation& computation,
                                                                              const FusionConfig& config) {
  std::unordered_map<const HloInstruction*, std::string> notToCopy;
  StatusOr<std::vector<HloInstruction*>> postOrder = computation.postOrder();
  if (!postOrder.ok()) return notToCopy;
  const TopologicalOrder order = TopologicalOrder::of(computation);
  LapackLayouts layouts;
  // Users before operands, as XLA walks: a producer marked here blocks the paths of the ones above it.
  for (auto it = postOrder->rbegin(); it != postOrder->rend(); ++it) {
    const HloInstruction& producer = **it;
    if (producer.users().size() < 2 && !producer.isRoot()) continue;  // nothing to copy it for
    if (effectivelyAtMostUnary(producer) || !producer.shape().isArray()) continue;
    int64_t readElements = 0;
    for (const HloInstruction* operand : distinctOperands(producer)) {
      if (operand->shape().isArray()) readElements += operand->shape().elementCount();
    }
    if (readElements <= producer.shape().elementCount()) continue;
    // XLA's "fusible on all paths": a consumer takes the producer only if it also takes every operand through
    // which the producer reaches it (else the producer's value arrives through that operand, computed outside).
    std::unordered_map<const HloInstruction*, bool> known;
    const HloInstruction* blocked = nullptr;
    std::function<bool(const HloInstruction*)> onAllPaths = [&](const HloInstruction* consumer) -> bool {
      if (consumer == &producer) return true;
      if (auto found = known.find(consumer); found != known.end()) return found->second;
      FusionKind kind = FusionKind::kLoop;
      bool ok = static_cast<bool>(consumerRule(*consumer, config, kind));
      if (!ok && !blocked) blocked = consumer;
      for (const HloInstruction* operand : distinctOperands(*consumer)) {
        if (!ok) break;
        if (operand != &producer && !order.reaches(&producer, operand)) continue;
        FusionKind pairKind = kind;
        FusionVerdict verdict = FusionVerdict::yes();
        if (operand != &producer && notToCopy.count(operand)) verdict = FusionVerdict::no("");
        if (verdict) verdict = producerRule(*operand, config);
        if (verdict) verdict = pairRule(*operand, *consumer, config, pairKind);
        if (verdict) verdict = reuseRule(*operand, *consumer, config);
        if (!verdict && !blocked) blocked = operand;
        ok = verdict && onAllPaths(operand);
      }
      known[consumer] = ok;
      return ok;
    };
    bool everyUser = static_cast<bool>(producerRule(producer, config));
    const HloInstruction* failedUser = nullptr;
    for (const HloInstruction* user : producer.users()) {
      if (!everyUser) break;
      if (layouts.readsThroughCopy(*user, producer)) continue;
      everyUser = onAllPaths(user);
      if (!everyUser) failedUser = user;
    }
    if (everyUser) continue;
    notToCopy[&producer] = fmt::format(
        "{} reads {} elements to write {}, and not every user takes it on every path{}; the cpu backend copies such "
        "a producer into its users only when all of them take it (else each copy reads its inputs again beside the "
        "result kept for the others)",
        producer.name(), readElements, producer.shape().elementCount(),
        failedUser && blocked ? fmt::format(" ({} cannot fuse {})", failedUser->name(),
                                            blocked == failedUser ? std::string("anything") : blocked->name())
                              : std::string());
  }
  return notToCopy;
}

std::unordered_map<const HloInstruction*, int64_t> cpuEmittedCopies(const HloInstruction& fusion) {
  std::unordered_map<const HloInstruction*, int64_t> emitted;
  const HloComputation* fused = fusion.fusedComputation();
  if (!fused) return emitted;
  StatusOr<std::vector<HloInstruction*>> order = fused->postOrder();
  if (!order.ok()) return emitted;
  // indexers[x]: the instructions that compute an index for x (their own count of copies is each one's); the
  // fusion itself indexes the root once.
  std::unordered_map<const HloInstruction*, std::unordered_set<const HloInstruction*>> indexers;
  std::unordered_map<const HloInstruction*, int64_t> copies;
  copies[&fusion] = 1;
  indexers[fused->root()].insert(&fusion);
  for (auto it = order->rbegin(); it != order->rend(); ++it) {
    const HloInstruction* inst = *it;
    if (inst->opcode() == HloOpcode::kParameter) continue;
    int64_t count = 0;
    for (const HloInstruction* indexer : indexers[inst]) count += copies[indexer];
    copies[inst] = count;
    const bool keepsIndex = inst->opcode() == HloOpcode::kTranspose;
    for (const HloInstruction* operand : inst->operands()) {
      const HloInstruction* key = operand;
      if (operand->opcode() == HloOpcode::kParameter) {
        const int64_t number = operand->parameterNumber();
        if (number < 0 || number >= fusion.operandCount()) continue;
        key = fusion.operand(static_cast<int>(number));
      }
      if (keepsIndex || sameIndexSpace(operand->shape(), inst->shape())) {
        const std::unordered_set<const HloInstruction*>& mine = indexers[inst];
        indexers[key].insert(mine.begin(), mine.end());
      } else {
        indexers[key].insert(inst);
      }
    }
  }
  for (const HloInstruction* operand : fusion.operands()) {
    int64_t count = 0;
    for (const HloInstruction* indexer : indexers[operand]) count += copies[indexer];
    emitted[operand] = count;
  }
  return emitted;
}

FusionVerdict cpuCodeDuplicationRule(const HloInstruction& producer, const HloInstruction& fusion, int64_t emitted) {
  if (producer.opcode() == HloOpcode::kBroadcast) return FusionVerdict::yes();
  if (emitted > kAllowedCodeDuplication) {
    return FusionVerdict::no(fmt::format(
        "{} would be computed {} times per element of {} (each reshape, broadcast or slice on the way indexes it "
        "anew); the cpu backend allows {} copies of one value in a fused loop",
        producer.name(), emitted, fusion.name(), kAllowedCodeDuplication));
  }
  if (!startsLoopsOfItsOwn(producer.opcode())) return FusionVerdict::yes();
  int64_t readers = 0;
  for (const HloInstruction* user : producer.users()) {
    const HloComputation* fused = user->fusedComputation();
    if (!user->isFusion() || !fused) {
      ++readers;
      continue;
    }
    const std::vector<HloInstruction*> parameters = fused->parameters();
    for (size_t i = 0; i < parameters.size() && i < static_cast<size_t>(user->operandCount()); ++i) {
      if (user->operand(static_cast<int>(i)) == &producer && parameters[i]) {
        readers += static_cast<int64_t>(parameters[i]->users().size());
      }
    }
  }
  if (emitted > 1 || readers > 1) {
    return FusionVerdict::no(fmt::format(
        "{} runs loops of its own ({}); the cpu backend moves it into a loop only where it is computed once "
        "for one reader, and {} would compute it {} time{} per element for {} reader{}",
        producer.name(), producer.opcodeString(), fusion.name(), emitted, emitted == 1 ? "" : "s", readers,
        readers == 1 ? "" : "s"));
  }
  return FusionVerdict::yes();
}

}  // namespace fusionscope::core
