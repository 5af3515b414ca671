#pragma once

// dot: the CPU's register-blocked row dot and the generic loop nest of any dot (internal to core/codegen).
#include <algorithm>
#include <cstdint>

#include "core/codegen/element_types.h"
#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class DotEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  // Any dot at an output index: the loop nest over its contracting dimensions in increasing order (the evaluator's).
  llvm::Value* dot(const HloInstruction* instruction, const Index& index);

  // A 2-D dot [m,k] x [k,n] (either operand possibly transposed) as the CPU's outer loop over rows
  // [begin, end). Accumulation is in the dot's own precision as XLA's CPU backend does it: f64 dots in f64, every
  // other floating dot (f32, f16, bf16) in f32, with one rounding to the output type at the end; the k terms are
  // summed in chunks of kDotChunk (each in increasing k order into a fresh partial sum, then added to the total),
  // each term as a fused multiply-add where the CPU has one (llvm.fmuladd). The evaluator
  // sums in double, so an f32 dot differs from it by the f32 rounding of K partial sums (see docs/CODEGEN.md).
  // Loop structure (what LLVM vectorises): columns in tiles of up to vectorN(), each tile row's accumulators one
  // LLVM vector kept in registers across the k loop (broadcast the lhs element, load the rhs tile as a vector,
  // one vector FMA per row: on AVX-512 a vfmadd231ps with an embedded broadcast); rows register-blocked, up to 8
  // at a time sharing each rhs tile load, the remaining rows in blocks of halving size.
  // Batch dimensions (any positions) are allowed: rows are then (batch..., m) flattened, the output being
  // [batch..., m, n].
  static bool isRowDot(const HloInstruction* dot);
  // Rows a row dot's range covers: product of the batch dimensions times m.
  static int64_t rowDotRows(const HloInstruction* dot) {
    const int64_t n = dot->shape().dimension(dot->shape().rank() - 1);
    return n == 0 ? 0 : dot->shape().elementCount() / n;
  }
  // Vector registers one row of a row dot's column tile takes (its partial sums).
  static int64_t rowDotRegistersPerRow(const HloInstruction* dot, VectorUnit vectors) {
    const int64_t n = dot->shape().dimension(dot->shape().rank() - 1);
    const int64_t width = std::clamp<int64_t>(n, 1, vectorN(vectors));
    const int64_t bytes = elementByteSize(rowDotAccumulationType(dot->shape().elementType()));
    return (width * bytes + vectors.registerBytes - 1) / vectors.registerBytes;
  }
  // Rows per register block: enough independent FMA chains to hide FMA latency, few enough that a block's
  // partial sums stay in registers with room for the rhs tile and the broadcast lhs element: at most 12
  // accumulator registers, and no more than the register file minus four (AVX-512: 6 rows of 2 zmm; AVX2: the
  // classic 6x16 block of 12 ymm, the rhs tile's 2 and the broadcast making 15 of 16).
  static int64_t rowDotBlock(const HloInstruction* dot, VectorUnit vectors) {
    const int64_t budget = std::min<int64_t>(12, vectors.registers - 4);
    return std::clamp<int64_t>(budget / rowDotRegistersPerRow(dot, vectors), 1, 8);
  }
  // Terms summed into a fresh partial sum before it is added to the row's total: bounds the f32 rounding error
  // growth by about kDotChunk + K / kDotChunk roundings instead of K (blocked summation, as k-blocked BLAS
  // kernels get for free), at one vector add per row per chunk.
  static constexpr int64_t kDotChunk = 32;
  // The lhs rows a row dot keeps in the L2 cache while it walks the column tiles over them (see rowsRange).
  static constexpr int64_t kDotRowGroupBytes = 128 * 1024;
  // The largest rhs tile (k x padded columns) a row dot packs into a stack scratch (see rowsRange).
  static constexpr int64_t kDotPackedBytes = 256 * 1024;
  // The accumulation type of a dot producing `type`.
  static PrimitiveType dotAccumulationType(PrimitiveType type);
  // The row dot's: floating dots as dotAccumulationType, integer dots in their own type (s8 x s8 -> s32 sums in
  // s32, wrapping as XLA's do).
  static PrimitiveType rowDotAccumulationType(PrimitiveType type) {
    return isFloatingPoint(type) ? dotAccumulationType(type) : type;
  }
  // `root` is the dot itself or an elementwise epilogue over it (bias add, ReLU: a kOutput fusion): each output
  // row's dot sums are computed once and the epilogue reads them, bound in place of the dot.
  void rowDot(const HloInstruction* dot, const HloInstruction* root, llvm::Value* out, llvm::Value* begin,
              llvm::Value* end);
};

}  // namespace fusionscope::core
