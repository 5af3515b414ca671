#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/ir/attributes.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

// Padding, window and slice numbers beyond this are refused rather than computed with (no real program has them,
// and their sums would overflow).
inline constexpr int64_t kMaxDimension = int64_t{1} << 40;

// A convolution's dimension numbers (`dim_labels=b01f_01io->b01f`: where batch, feature and each spatial dimension
// sit in the input, kernel and result), its window and its groups.
struct ConvolutionDims {
  int64_t lhsBatch = -1, lhsFeature = -1;
  int64_t rhsInput = -1, rhsOutput = -1;
  int64_t outBatch = -1, outFeature = -1;
  std::vector<int64_t> lhsSpatial, rhsSpatial, outSpatial;
  Window window;  // the instruction's; without one, the kernel's size with stride 1 and no padding
  int64_t featureGroups = 1;
  int64_t batchGroups = 1;
};

// Shape rules of the ops whose dimension numbers are attributes (XLA's shape inference for them), shared by the
// verifier and the evaluator.

// Reads a convolution's dimension numbers and checks its operands and result against them as XLA's shape inference
// does: equal ranks of at least 2, consistent feature and batch groups, the result's batch and feature sizes, and
// each spatial size the window gives. The error says what does not match. The verifier and the evaluator both
// use it.
StatusOr<ConvolutionDims> convolutionDims(const HloInstruction& convolution);

// A gather's or scatter's index_vector_dim as written (`index_vector_dim=1` or braced), else the indices' rank
// (XLA's default); -1 when the text is not a number.
int64_t indexVectorDimOf(const InstructionAttributes& attributes, int indicesRank);

// A gather's result must be the indices' batch dimensions with, at offset_dims, the slice sizes of the operand
// dimensions that are neither collapsed nor batching; slice sizes within the operand; start_index_map as long as
// the index vector. OK, or what does not match.
Status checkGatherShape(const HloInstruction& gather);

// A scatter's dimension numbers against its operands, indices and updates as XLA's shape inference checks them: the
// window, inserted and batching dimensions partition the operand's; the updates' scatter dimensions are the
// indices' batch dimensions; scatter_dims_to_operand_dims as long as the index vector; windows within the operand.
// Codegen and the evaluator index by these, so a scatter that breaks them must never reach them.
Status checkScatterShape(const HloInstruction& scatter);

// bitcast-convert: equal widths keep the dimensions; a wider source gains a last dimension of the width ratio, a
// narrower one loses it.
Status checkBitcastConvertShape(const HloInstruction& bitcastConvert);
// pad: low + high + size + (size-1)·interior per dimension, interior ≥ 0, a scalar padding value.
Status checkPadShape(const HloInstruction& pad);
// dynamic-slice: integer scalar start indices, one per dimension (or one vector); dynamic_slice_sizes within the
// operand; the result has those sizes and the operand's type.
Status checkDynamicSliceShape(const HloInstruction& dynamicSlice);
// dynamic-update-slice: the result is the operand's shape; the update fits inside it; start indices as above.
Status checkDynamicUpdateSliceShape(const HloInstruction& dynamicUpdateSlice);

}  // namespace fusionscope::core
