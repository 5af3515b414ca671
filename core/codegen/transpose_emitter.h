#pragma once

// The CPU's transposes: the strip transpose of an unfused transpose of the two innermost dimensions, and
// blocks transposed in vector registers (the row dot's packing uses them too) (internal to core/codegen).
#include <cstdint>
#include <vector>

#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class TransposeEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  // An unfused transpose of the two innermost dimensions ([.., c, r] -> [.., r, c], both row-major), as
  // `dot-rhs-transpose` makes: the CPU computes it in strips of kTransposeStrip output rows. Per input row c, the
  // strip's kTransposeStrip contiguous elements are read at once and written one to each output row, so reads are
  // whole cache lines and writes kTransposeStrip sequential streams, where the element loop reads one element per
  // cache line. The range is the strips: batch × ceil(r / kTransposeStrip).
  static constexpr int64_t kTransposeStrip = 16;
  // An L x L block held as L vectors of L lanes (row r = rows[r]; L a power of two) transposed: its columns, by
  // log2(L) rounds of two-input shuffles (rows i and i + s exchange their odd and even lane blocks of s).
  std::vector<llvm::Value*> transposeInRegisters(std::vector<llvm::Value*> rows);
  // Copies the lanes x lanes block at `from` (its rows `fromStride` elements apart) transposed to `to` (rows
  // `toStride` apart): lanes vector loads, transposeInRegisters, lanes vector stores.
  void transposeBlock(llvm::Value* from, int64_t fromStride, llvm::Value* to, int64_t toStride, int64_t lanes,
                      llvm::Type* type);
  // Copies the row-major [rows][columns] matrix at `from` (elements of `type`) transposed to the row-major
  // [columns][rows] matrix at `to`: whole L x L blocks (one vector register's lanes) loaded as rows, transposed in
  // registers and stored as rows, the edges element by element.
  void transposeMatrix(llvm::Value* from, llvm::Value* to, int64_t rows, int64_t columns, llvm::Type* type);
  static bool isStripTranspose(const HloInstruction* transpose);
  static int64_t stripTransposeStrips(const HloInstruction* transpose);
  void stripTranspose(const HloInstruction* transpose, llvm::Value* in, llvm::Value* out, llvm::Value* begin,
                      llvm::Value* end);
};

}  // namespace fusionscope::core
