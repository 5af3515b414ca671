#pragma once

#include <cstdint>
#include <string_view>

namespace fusionscope::core {

// Every opcode XLA's HLO text can name. The list is an X-macro so the enum, the spelling and the category
// (which drives DOT colours and fusion rules) cannot drift apart. Opcodes missing here still load: they
// become kUnknown and the instruction keeps its spelling.
#define FS_HLO_OPCODE_LIST(V)                                         \
  V(kAbs, "abs", kElementwise)                                        \
  V(kAdd, "add", kElementwise)                                        \
  V(kAddDependency, "add-dependency", kOther)                         \
  V(kAfterAll, "after-all", kOther)                                   \
  V(kAllGather, "all-gather", kCollective)                            \
  V(kAllGatherStart, "all-gather-start", kCollective)                 \
  V(kAllGatherDone, "all-gather-done", kCollective)                   \
  V(kAllReduce, "all-reduce", kCollective)                            \
  V(kAllReduceStart, "all-reduce-start", kCollective)                 \
  V(kAllReduceDone, "all-reduce-done", kCollective)                   \
  V(kAllToAll, "all-to-all", kCollective)                             \
  V(kAnd, "and", kElementwise)                                        \
  V(kAsyncStart, "async-start", kControlFlow)                         \
  V(kAsyncUpdate, "async-update", kControlFlow)                       \
  V(kAsyncDone, "async-done", kControlFlow)                           \
  V(kAtan2, "atan2", kElementwise)                                    \
  V(kBatchNormGrad, "batch-norm-grad", kNormalization)                \
  V(kBatchNormInference, "batch-norm-inference", kNormalization)      \
  V(kBatchNormTraining, "batch-norm-training", kNormalization)        \
  V(kBitcast, "bitcast", kDataMovement)                               \
  V(kBitcastConvert, "bitcast-convert", kElementwise)                 \
  V(kBroadcast, "broadcast", kDataMovement)                           \
  V(kCall, "call", kControlFlow)                                      \
  V(kCbrt, "cbrt", kElementwise)                                      \
  V(kCeil, "ceil", kElementwise)                                      \
  V(kCholesky, "cholesky", kContraction)                              \
  V(kClamp, "clamp", kElementwise)                                    \
  V(kClz, "count-leading-zeros", kElementwise)                        \
  V(kCollectiveBroadcast, "collective-broadcast", kCollective)        \
  V(kCollectivePermute, "collective-permute", kCollective)            \
  V(kCollectivePermuteStart, "collective-permute-start", kCollective) \
  V(kCollectivePermuteDone, "collective-permute-done", kCollective)   \
  V(kCompare, "compare", kElementwise)                                \
  V(kComplex, "complex", kElementwise)                                \
  V(kConcatenate, "concatenate", kDataMovement)                       \
  V(kConditional, "conditional", kControlFlow)                        \
  V(kConstant, "constant", kConstant)                                 \
  V(kConvert, "convert", kElementwise)                                \
  V(kConvolution, "convolution", kContraction)                        \
  V(kCopy, "copy", kDataMovement)                                     \
  V(kCopyStart, "copy-start", kDataMovement)                          \
  V(kCopyDone, "copy-done", kDataMovement)                            \
  V(kCos, "cosine", kElementwise)                                     \
  V(kCustomCall, "custom-call", kCustomCall)                          \
  V(kDivide, "divide", kElementwise)                                  \
  V(kDomain, "domain", kOther)                                        \
  V(kDot, "dot", kContraction)                                        \
  V(kDynamicReshape, "dynamic-reshape", kDataMovement)                \
  V(kDynamicSlice, "dynamic-slice", kDataMovement)                    \
  V(kDynamicUpdateSlice, "dynamic-update-slice", kDataMovement)       \
  V(kErf, "erf", kElementwise)                                        \
  V(kExp, "exponential", kElementwise)                                \
  V(kExpm1, "exponential-minus-one", kElementwise)                    \
  V(kFft, "fft", kContraction)                                        \
  V(kFloor, "floor", kElementwise)                                    \
  V(kFusion, "fusion", kFusion)                                       \
  V(kGather, "gather", kDataMovement)                                 \
  V(kGetDimensionSize, "get-dimension-size", kOther)                  \
  V(kGetTupleElement, "get-tuple-element", kTuple)                    \
  V(kImag, "imag", kElementwise)                                      \
  V(kInfeed, "infeed", kOther)                                        \
  V(kIota, "iota", kDataMovement)                                     \
  V(kIsFinite, "is-finite", kElementwise)                             \
  V(kLog, "log", kElementwise)                                        \
  V(kLog1p, "log-plus-one", kElementwise)                             \
  V(kLogistic, "logistic", kElementwise)                              \
  V(kMap, "map", kElementwise)                                        \
  V(kMaximum, "maximum", kElementwise)                                \
  V(kMinimum, "minimum", kElementwise)                                \
  V(kMultiply, "multiply", kElementwise)                              \
  V(kNegate, "negate", kElementwise)                                  \
  V(kNot, "not", kElementwise)                                        \
  V(kOptimizationBarrier, "opt-barrier", kOther)                      \
  V(kOr, "or", kElementwise)                                          \
  V(kOutfeed, "outfeed", kOther)                                      \
  V(kPad, "pad", kDataMovement)                                       \
  V(kParameter, "parameter", kParameter)                              \
  V(kPartitionId, "partition-id", kOther)                             \
  V(kPopulationCount, "popcnt", kElementwise)                         \
  V(kPower, "power", kElementwise)                                    \
  V(kReal, "real", kElementwise)                                      \
  V(kRecv, "recv", kCollective)                                       \
  V(kRecvDone, "recv-done", kCollective)                              \
  V(kReduce, "reduce", kReduction)                                    \
  V(kReducePrecision, "reduce-precision", kElementwise)               \
  V(kReduceScatter, "reduce-scatter", kCollective)                    \
  V(kReduceWindow, "reduce-window", kReduction)                       \
  V(kRemainder, "remainder", kElementwise)                            \
  V(kReplicaId, "replica-id", kOther)                                 \
  V(kReshape, "reshape", kDataMovement)                               \
  V(kReverse, "reverse", kDataMovement)                               \
  V(kRng, "rng", kRandom)                                             \
  V(kRngBitGenerator, "rng-bit-generator", kRandom)                   \
  V(kRngGetAndUpdateState, "rng-get-and-update-state", kRandom)       \
  V(kRoundNearestAfz, "round-nearest-afz", kElementwise)              \
  V(kRoundNearestEven, "round-nearest-even", kElementwise)            \
  V(kRsqrt, "rsqrt", kElementwise)                                    \
  V(kScatter, "scatter", kDataMovement)                               \
  V(kSelect, "select", kElementwise)                                  \
  V(kSelectAndScatter, "select-and-scatter", kReduction)              \
  V(kSend, "send", kCollective)                                       \
  V(kSendDone, "send-done", kCollective)                              \
  V(kSetDimensionSize, "set-dimension-size", kOther)                  \
  V(kShiftLeft, "shift-left", kElementwise)                           \
  V(kShiftRightArithmetic, "shift-right-arithmetic", kElementwise)    \
  V(kShiftRightLogical, "shift-right-logical", kElementwise)          \
  V(kSign, "sign", kElementwise)                                      \
  V(kSin, "sine", kElementwise)                                       \
  V(kSlice, "slice", kDataMovement)                                   \
  V(kSort, "sort", kOther)                                            \
  V(kSqrt, "sqrt", kElementwise)                                      \
  V(kStochasticConvert, "stochastic-convert", kElementwise)           \
  V(kSubtract, "subtract", kElementwise)                              \
  V(kTan, "tan", kElementwise)                                        \
  V(kTanh, "tanh", kElementwise)                                      \
  V(kTopK, "topk", kOther)                                            \
  V(kTranspose, "transpose", kDataMovement)                           \
  V(kTriangularSolve, "triangular-solve", kContraction)               \
  V(kTuple, "tuple", kTuple)                                          \
  V(kWhile, "while", kControlFlow)                                    \
  V(kXor, "xor", kElementwise)

// What kind of work an opcode does; the DOT writer colours nodes by it, the fusion passes use it.
enum class OpCategory : uint8_t {
  kElementwise,
  kDataMovement,
  kReduction,
  kContraction,  // dot, convolution and other matrix-unit work
  kNormalization,
  kParameter,
  kConstant,
  kControlFlow,
  kFusion,
  kCollective,
  kCustomCall,
  kRandom,
  kTuple,
  kOther,
};

enum class HloOpcode : uint16_t {
#define FS_OPCODE_ENUM(e, s, c) e,
  FS_HLO_OPCODE_LIST(FS_OPCODE_ENUM)
#undef FS_OPCODE_ENUM
      kUnknown,
};

// XLA's spelling ("get-tuple-element"); "unknown" for kUnknown (instructions keep their own spelling).
std::string_view opcodeName(HloOpcode opcode);
// kUnknown when the spelling is not an opcode we know.
HloOpcode parseOpcode(std::string_view name);
OpCategory opcodeCategory(HloOpcode opcode);
std::string_view categoryName(OpCategory category);

// Elementwise in the XLA sense: output element i depends only on operand elements i.
inline bool isElementwise(HloOpcode opcode) {
  return opcodeCategory(opcode) == OpCategory::kElementwise;
}

// Binary ops whose operands may be swapped without changing a bit of the result: add, multiply (IEEE addition and
// multiplication are commutative), maximum, minimum (NaN propagates from either side), and, or, xor.
inline bool isCommutativeBinary(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAdd:
    case HloOpcode::kMultiply:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor: return true;
    default: return false;
  }
}

// Floating-point functions computed by a libm-class routine (exp, log, tanh, erf, ...): many instructions per
// element, so fusion prices duplicating them, and they apply only to floating-point types.
inline bool isTranscendental(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kExp:
    case HloOpcode::kExpm1:
    case HloOpcode::kLog:
    case HloOpcode::kLog1p:
    case HloOpcode::kLogistic:
    case HloOpcode::kSqrt:
    case HloOpcode::kRsqrt:
    case HloOpcode::kCbrt:
    case HloOpcode::kTanh:
    case HloOpcode::kTan:
    case HloOpcode::kSin:
    case HloOpcode::kCos:
    case HloOpcode::kErf: return true;
    default: return false;
  }
}

}  // namespace fusionscope::core
