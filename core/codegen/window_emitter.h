#pragma once

// reduce-window, convolution (and the CPU's per-pixel row convolution), select-and-scatter, gather (internal to
// core/codegen).
#include <cstdint>
#include <utility>
#include <vector>

#include "core/codegen/family_emitter.h"

namespace fusionscope::core {

class WindowEmitter : public FamilyEmitter {
 public:
  using FamilyEmitter::FamilyEmitter;

  // A convolution the CPU computes per output pixel (rowConvolution): floating point, the output feature the
  // innermost result dimension and the kernel's output feature its innermost dimension (JAX's b01f_01io->b01f,
  // TF's NHWC / HWIO), no feature or batch groups.
  static bool isRowConvolution(const HloInstruction* convolution);
  // Output pixels (the range of a row convolution): result elements / output features.
  static int64_t rowConvolutionRows(const HloInstruction* convolution) {
    const int64_t features = convolution->shape().dimensions().back();
    return features == 0 ? 0 : convolution->shape().elementCount() / features;
  }
  // Output pixels [begin, end) of `convolution`, written through `root` (the convolution or an elementwise
  // epilogue of it, as rowDot's): per pixel and tile of up to vectorN() output features, one vector accumulator;
  // per kernel position inside the input and per input feature, the input element broadcast times the kernel's
  // contiguous row of output features (one vector load when the kernel is an f32 argument buffer) in one vector
  // llvm.fmuladd. The terms are summed in the elemental order (kernel positions row-major, input features
  // innermost), so the sums are the elemental emitter's.
  void rowConvolution(const HloInstruction* convolution, const HloInstruction* root, llvm::Value* out,
                      llvm::Value* begin, llvm::Value* end);

  // Windowed and indexed ops, each computed per output element.
  llvm::Value* reduceWindow(const HloInstruction* instruction, const Index& index);
  llvm::Value* convolution(const HloInstruction* instruction, const Index& index);
  llvm::Value* selectAndScatter(const HloInstruction* instruction, const Index& index);
  llvm::Value* gather(const HloInstruction* instruction, const Index& index);
  // The N results of a reduce-window of N inputs (N = 1: the plain one) at `index`; empty after a failure. A
  // variadic one is tuple-shaped, so never fused: its kernel stores these to its N outputs.
  std::vector<llvm::Value*> reduceWindowValues(const HloInstruction* instruction, const Index& index);

 private:
  // The operand coordinate a window position reads in one dimension: (out * stride + k * dilation - padLow) /
  // baseDilation, and whether it is a real element (not padding nor a base-dilation hole).
  std::pair<llvm::Value*, llvm::Value*> windowCoordinate(llvm::Value* out, llvm::Value* k, const WindowDim& w,
                                                         int64_t size);
};

}  // namespace fusionscope::core
