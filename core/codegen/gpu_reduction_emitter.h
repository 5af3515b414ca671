#pragma once

// NVPTX only: reductions and normalizations computed a warp per row (internal to core/codegen).
#include <cstdint>
#include <optional>
#include <vector>

#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class WarpReductionEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  static constexpr int64_t kWarp = 32;

  // A column reduction (reduced dimension not the innermost) with more results than this keeps one thread per
  // result: neighbouring threads then read neighbouring addresses, and there are threads enough to fill the GPU.
  static constexpr int64_t kMaxWarpColumnResults = 8192;

  // NVPTX: whether `reduce` can be a warp reduction: one reduced dimension of at least a warp's width (the
  // innermost, or another when the results are few), and a reducer whose order HLO leaves free (reductionLanes)
  // in a type a warp shuffle carries. Returns the reduced dimension, or -1.
  static int warpReducedDimension(const HloInstruction* reduce);

  // NVPTX warp reduction, one warp per result ("row"; XLA GPU's row-reduction schedule): lane l of the warp for
  // result r visits elements l, l + 32, ... of the reduced dimension (for a row reduction neighbouring lanes read
  // neighbouring addresses; for a column reduction with few results the lanes at least read in parallel instead
  // of one thread walking the column), keeps a partial result per reduce,
  // the warp combines the partials with butterfly shuffles, every lane applies the init value, and lane 0 computes
  // and stores the `rowOutputs` (the reduces themselves or elementwise epilogues of them, of the reduce's output
  // dimensions) from those totals. Outputs of the reduce operand's dimensions (`elementwise`, a multi-output
  // fusion's loop outputs) are computed and stored in the same pass over the row. All `reduces` share operand
  // dimensions and the reduced dimension. `thread` is the global thread index; threads past rows * 32 do nothing.
  struct RowOutput {
    const HloInstruction* root = nullptr;
    llvm::Value* pointer = nullptr;
  };
  void warpRowReduce(const std::vector<const HloInstruction*>& reduces, const std::vector<RowOutput>& rowOutputs,
                     const std::vector<RowOutput>& elementwise, llvm::Value* thread);

  // NVPTX normalization (a softmax, a layer norm: row reductions read again by the row's elements, possibly
  // reductions of expressions of earlier reductions), one warp per row of `dims` (XLA GPU's row schedule for its
  // softmax fusions): for each of `reductions` (operands before users, each reducing the innermost dimension of
  // an operand of dimensions `dims`) the lanes stride the row, combine their partials with butterfly shuffles and
  // keep the total in the value cache at the row's index, so later reductions and the elements read it instead of
  // reducing again; then the lanes stride the row once more storing `elementwise` (roots of dimensions `dims`),
  // and lane 0 stores `rowOutputs` (roots of the outer dimensions). Threads past rows * 32 do nothing.
  void warpNormalization(const std::vector<const HloInstruction*>& reductions, const std::vector<int64_t>& dims,
                         const std::vector<RowOutput>& rowOutputs, const std::vector<RowOutput>& elementwise,
                         llvm::Value* thread);

  // Combines every lane's partial result of `reduce` in `partial` with butterfly shuffles: afterwards every lane
  // holds the warp's total. Every lane of the warp must reach it.
  void warpCombine(const HloInstruction* reduce, llvm::AllocaInst* partial);
  // shfl.sync.bfly over the full warp; wider or narrower scalars travel as 32-bit pieces.
  llvm::Value* shuffleXor(llvm::Value* value, int offset);
};

// A kernel the NVPTX backend runs as warp reductions (WarpReductionEmitter::warpRowReduce): every reduce in it reduces
// the same dimension (warpReducedDimension) of the same operand dimensions and reads no other reduce; each root either
// has the reduce operand's dimensions and reads no reduce (computed in the pass over the row), or is a reduce or an
// epilogue of the reduces that reads them at its own linear index (elementwise ops, reshapes, bitcasts, copies and
// broadcasts that only add dimensions of size 1 between it and the reduces), computed from the row totals.
struct WarpRowPlan {
  std::vector<const HloInstruction*> reduces;
  std::vector<WarpReductionEmitter::RowOutput> rowOutputs;
  std::vector<WarpReductionEmitter::RowOutput> elementwise;
};
std::optional<WarpRowPlan> warpRowPlan(const PlanKernel& kernel, const std::vector<const HloInstruction*>& roots,
                                       const std::vector<llvm::Value*>& args, size_t inputCount);

}  // namespace fusionscope::core
