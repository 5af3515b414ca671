#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/ir/attributes.h"
#include "core/ir/hlo_instruction.h"
#include "core/passes/fusion_config.h"

namespace fusionscope::core {

struct FusionConfig;
class HloComputation;
class TopologicalOrder;

// The answer of one fusion rule: yes, or no with the reason a user reads. A reason is the clause after
// "not fusing X into Y: " ("exp.1 is expensive and has 3 users; duplicating it would recompute it").
// `record` is false for trivial non-candidates (parameters, tuples, ops with side effects) whose refusal
// would only clutter the decision log.
struct FusionVerdict {
  bool ok = true;
  bool record = true;
  std::string reason;

  static FusionVerdict yes() { return {}; }
  static FusionVerdict no(std::string reason, bool record = true) { return {false, record, std::move(reason)}; }
  explicit operator bool() const { return ok; }
};

// The rules of the producer->consumer fusion pass (`fusion`, InstructionFusion). Each one looks at a
// (producer, consumer) pair where the consumer is a plain instruction or a fusion that already holds
// instructions; the pass asks them in order and takes the first "no". None of them changes the IR.
//
// Fusion kinds, as XLA uses them: kLoop (elementwise and data movement, one loop over the output), kInput
// (a reduction, reduce-window or scatter is the hero: producers feed its input, an elementwise epilogue
// may follow a reduce), kOutput (a dot or convolution is the hero, an elementwise epilogue follows).

// The kind of fusion `instruction` leads when it is the hero: kInput for reduce/reduce-window/scatter,
// kOutput for dot/convolution, a fusion's own kind, else kLoop.
FusionKind heroKind(const HloInstruction& instruction);

// The instructions a kernel consists of: the instruction itself, or everything inside a fusion but its
// parameters.
std::vector<const HloInstruction*> kernelContents(const HloInstruction& instruction);

// (reader, operand index) for every place `consumer` reads `producer`: the consumer itself, or the users of the
// fusion parameters that stand for it.
std::vector<std::pair<const HloInstruction*, int>> readersOf(const HloInstruction& producer,
                                                             const HloInstruction& consumer);

// Whether `producer` may move into another kernel at all, whatever the consumer: parameters, tuples,
// side effects, control flow, custom calls, collectives, sort, rng and large constants may not.
FusionVerdict producerRule(const HloInstruction& producer, const FusionConfig& config);

// Whether `consumer` can take producers, and as which kind of fusion (`kind`). A silent "no" for
// instructions that never start a fusion (a bitcast is free; tuples, parameters, calls); a recorded one
// for backend limits (the cpu backend fuses only into reductions over the most minor dimension).
FusionVerdict consumerRule(const HloInstruction& consumer, const FusionConfig& config, FusionKind& kind);

// Whether the two fit in one kernel, and the kind of the result (`kind`): the in-place first operand of
// scatter and dynamic-update-slice stays outside; no transpose or layout-changing copy feeds a reduction;
// a dot's operands stay outside its kOutput fusion; a reduce or dot moves into a consumer only as the hero
// of an elementwise epilogue (when the config enables it), with at most one hero per fusion.
FusionVerdict pairRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config,
                       FusionKind& kind);

// A kernel that would share its loop with a reduction (fused into it, merged into it, or a sibling of it in a
// multi-output fusion) must not transpose or change a layout: the reduction would read memory out of order.
FusionVerdict reductionOrderRule(const HloInstruction& kernel);

// A producer with other users is duplicated (it stays for them). Never for an expensive one (exp, divide,
// reductions, ...) unless it has at most config.duplicateExpensiveMaxElements elements.
FusionVerdict duplicationRule(const HloInstruction& producer, const HloInstruction& consumer,
                              const FusionConfig& config);

// An expensive producer is not fused into a consumer that reads each of its elements several times
// (through a broadcast): the fused kernel would recompute it per read.
FusionVerdict reuseRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config);

// The fusion must stay within config.maxOperands inputs and config.maxFusedInstructions instructions.
FusionVerdict limitsRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config);

// Moving `producer` into `consumer` must not close a cycle: no other path of uses may lead from the
// producer to the consumer. A duplicated producer stays outside for its other users, so paths through them
// are harmless and `duplicate` skips the check.
FusionVerdict cycleRule(const TopologicalOrder& order, const HloInstruction& producer, const HloInstruction& consumer,
                        bool duplicate);

// Cost model: memory traffic saved by fusing `producer` into `consumer` (negative: added). Before, the
// consumer's kernel reads the producer's result and (when the producer is removed, i.e. has no other user)
// the producer's kernel reads its inputs and writes the result; after, one kernel reads the union of both
// input sets. Constants, bitcasts and parameters are no kernels of their own; a broadcast input is charged
// what it broadcasts from, since it will be fused into its reader anyway.
int64_t fusionBytesSaved(const HloInstruction& producer, const HloInstruction& consumer);

// A cheap producer with several users is duplicated into each; once the last one takes it, its own kernel
// is gone. The bytes that whole plan saves (each copy's extra reads included), or nullopt when some user
// could not take the producer (it would then stay, and each copy would only add reads).
std::optional<int64_t> fuseIntoAllUsersBytesSaved(const HloInstruction& producer, const FusionConfig& config);

// True when the producer will stay outside for other users (or as the computation's result).
bool fusionDuplicates(const HloInstruction& producer, const HloInstruction& consumer);

// Expensive in the sense of fusion_cost.h; a fusion is expensive when anything in it is.
bool isExpensiveProducer(const HloInstruction& producer, Backend backend);

// How many times `consumer` reads each element of `producer` (the largest broadcast expansion on a path
// from the producer to the consumer's result; 1 without broadcasts).
int64_t broadcastExpansion(const HloInstruction& producer, const HloInstruction& consumer);

// copy whose result layout differs from its operand's.
bool isLayoutChangingCopy(const HloInstruction& copy);

// XLA CPU's loop fusion (config.loopFusionOnly; cpu_fusion_rules.cpp). consumerRule and pairRule hand over to
// these; producerRule refuses fusions as producers (only plain instructions move into a consumer).
// Elementwise ops and the data movement a loop computes per element: bitcast, broadcast, concatenate,
// dynamic-slice, dynamic-update-slice, gather, iota, pad, reduce, reshape, reverse, slice, transpose.
bool isLoopFusible(const HloInstruction& instruction);
// A loop fusion or a loop-fusible instruction takes producers, always as kLoop.
FusionVerdict cpuConsumerRule(const HloInstruction& consumer, FusionKind& kind);
// A loop-fusible producer moves into a loop consumer; an unbatched matrix-vector dot into its one add (kOutput);
// no concatenation of more than config.maxConcatenateOperands operands or along the minor dimension; at most
// config.maxReductionsPerFusion reductions per fusion.
// At most one "large" operand: of the producer's true rank (dimensions of size 1 not counted) or more, broadcasts,
// iotas and scalar constants never large (XLA's EffectivelyAtMostUnary). Duplicating such a producer into another
// loop reads no more large inputs than reading its result would, so XLA CPU duplicates it whatever the bytes. A
// scalar of scalars (an index clamp: select(lt(i, 0), add(i, n), i)) is not: each of its scalar operands counts.
bool effectivelyAtMostUnary(const HloInstruction& producer);
FusionVerdict cpuPairRule(const HloInstruction& producer, const HloInstruction& consumer, const FusionConfig& config,
                          FusionKind& kind);
// XLA CPU's rule for copying a producer that stays for other users (its "globally unfusible" set), decided once on
// the computation before fusion, users before operands: a producer may be copied when it is effectively unary or
// reads no more elements than it writes; otherwise only when every user takes it on every path (each operand of
// the user that the producer reaches fuses into it too), since a copy in some users beside the result kept for the
// others reads its inputs twice. Returns the producers not to copy, each with the reason.
std::unordered_map<const HloInstruction*, std::string> cpuProducersNotToCopy(const HloComputation& computation,
                                                                              const FusionConfig& config);
// XLA CPU's estimate of code duplication inside a loop fusion (its FusionNodeIndexingEvaluation): per operand of
// `fusion`, how many times the fused loop computes that operand's value per output element. An op that keeps the
// index (same dimensions and layout, or a transpose) passes its users' count on; one that changes the shape
// (broadcast, reshape, slice, reduce...) computes a new index, and so a new copy of everything above it.
std::unordered_map<const HloInstruction*, int64_t> cpuEmittedCopies(const HloInstruction& fusion);
// Refuses moving `producer` into `fusion` when the loop would compute it more than 15 times per element (a
// broadcast excepted: it only re-reads its operand), or, for an op that starts new loops of its own (concatenate,
// dot, dynamic-update-slice, pad, reduce, reduce-window), more than once or for more than one reader.
FusionVerdict cpuCodeDuplicationRule(const HloInstruction& producer, const HloInstruction& fusion, int64_t emitted);

}  // namespace fusionscope::core
