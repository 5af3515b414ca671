// Windowed and indexed ops of the elemental emitter: reduce-window, convolution, select-and-scatter and gather,
// each computed per output element in the evaluator's order (core/eval/reduction.cpp, contraction.cpp,
// data_movement.cpp), so that everything but the f32 accumulation of convolutions matches it exactly.
#include <algorithm>
#include <charconv>
#include <functional>

#include <fmt/format.h>

#include "core/codegen/element_emitter.h"
#include "core/ir/shape_rules.h"

namespace fusionscope::core {

std::pair<llvm::Value*, llvm::Value*> WindowEmitter::windowCoordinate(llvm::Value* out, llvm::Value* k,
                                                                      const WindowDim& w, int64_t size) {
  llvm::Value* pos = m_b.CreateMul(out, i64(w.stride));
  pos = m_b.CreateAdd(pos, w.windowDilation == 1 ? k : m_b.CreateMul(k, i64(w.windowDilation)));
  if (w.padLow != 0) pos = m_b.CreateSub(pos, i64(w.padLow));
  llvm::Value* inside = m_b.CreateICmpSGE(pos, i64(0));
  if (w.baseDilation != 1) {
    inside = m_b.CreateAnd(inside, m_b.CreateICmpEQ(m_b.CreateSRem(pos, i64(w.baseDilation)), i64(0)));
    pos = m_b.CreateSDiv(pos, i64(w.baseDilation));
  }
  inside = m_b.CreateAnd(inside, m_b.CreateICmpSLT(pos, i64(size)));
  return {pos, inside};
}

namespace {

// Checks a reduce-window or select-and-scatter window against the operand and the windowed result (the
// evaluator's checkWindow); "" when it fits.
std::string windowMismatch(const std::optional<Window>& window, const Shape& operand, const Shape& windowed) {
  if (!window) return "no window={...} attribute";
  if (static_cast<int>(window->dims.size()) != operand.rank() || windowed.rank() != operand.rank()) {
    return "window rank differs from the operand's";
  }
  for (int d = 0; d < operand.rank(); ++d) {
    const WindowDim& w = window->dims[static_cast<size_t>(d)];
    if (w.size < 1 || w.stride < 1 || w.windowDilation < 1 || w.baseDilation < 1 ||
        windowOutputSize(operand.dimension(d), w) != windowed.dimension(d)) {
      return fmt::format("window does not fit dimension {}", d);
    }
  }
  return "";
}

}  // namespace

llvm::Value* WindowEmitter::reduceWindow(const HloInstruction* instruction, const Index& index) {
  if (instruction->shape().isTuple()) return fail(instruction, "variadic reduce-window inside a fusion");
  std::vector<llvm::Value*> values = reduceWindowValues(instruction, index);
  return values.empty() ? nullptr : values[0];
}

std::vector<llvm::Value*> WindowEmitter::reduceWindowValues(const HloInstruction* instruction, const Index& index) {
  // N inputs, then N init values; a tuple of N results when N > 1 (all of the first input's dimensions).
  const int n = instruction->operandCount() / 2;
  const std::vector<Shape> results = ReductionEmitter::variadicResults(*instruction);
  if (results.empty()) {
    fail(instruction, "reduce-window needs N inputs of one shape, N init values and N results");
    return {};
  }
  const HloComputation* reducer = instruction->toApply();
  if (reducer == nullptr) {
    fail(instruction, "reduce-window without to_apply");
    return {};
  }
  const HloInstruction* operand = instruction->operand(0);
  const std::optional<Window>& window = instruction->attributes().window;
  if (std::string why = windowMismatch(window, operand->shape(), results[0]); !why.empty()) {
    fail(instruction, why);
    return {};
  }
  const int rank = operand->shape().rank();
  std::vector<llvm::Type*> types;
  std::vector<llvm::AllocaInst*> accumulators;
  for (int k = 0; k < n; ++k) {
    types.push_back(computeType(results[static_cast<size_t>(k)].elementType()));
    accumulators.push_back(entryAlloca(types.back()));
    m_b.CreateStore(generate(instruction->operand(n + k), Index{}), accumulators.back());
  }
  // Window positions in row-major order, skipping padding and base-dilation holes: the evaluator's order, so
  // any reducer (not only associative ones) gives its result.
  std::vector<llvm::Value*> at(static_cast<size_t>(rank), nullptr);
  std::vector<llvm::Value*> inside(static_cast<size_t>(rank), nullptr);
  std::function<void(int)> nest = [&](int d) {
    if (d == rank) {
      llvm::Value* all = m_b.getTrue();
      for (llvm::Value* v : inside) all = m_b.CreateAnd(all, v);
      ifThen(all, [&]() {
        // The reducer takes the N accumulators, then the N elements.
        std::vector<llvm::Value*> arguments;
        for (int k = 0; k < n; ++k) {
          arguments.push_back(m_b.CreateLoad(types[static_cast<size_t>(k)], accumulators[static_cast<size_t>(k)]));
        }
        for (int k = 0; k < n; ++k) arguments.push_back(generate(instruction->operand(k), Index{at, nullptr}));
        std::vector<llvm::Value*> reduced = applyComputationValues(reducer, arguments, instruction);
        for (size_t k = 0; k < reduced.size() && k < accumulators.size(); ++k) {
          m_b.CreateStore(reduced[k], accumulators[k]);
        }
      });
      return;
    }
    const WindowDim& w = window->dims[static_cast<size_t>(d)];
    auto visit = [&](llvm::Value* k) {
      auto [pos, in] = windowCoordinate(index.dims[static_cast<size_t>(d)], k, w, operand->shape().dimension(d));
      at[static_cast<size_t>(d)] = pos;
      inside[static_cast<size_t>(d)] = in;
      nest(d + 1);
    };
    if (w.size == 1) {
      visit(i64(0));
    } else {
      loop(i64(0), i64(w.size), visit, "w");
    }
  };
  nest(0);
  std::vector<llvm::Value*> values;
  for (int k = 0; k < n; ++k) {
    values.push_back(m_b.CreateLoad(types[static_cast<size_t>(k)], accumulators[static_cast<size_t>(k)]));
  }
  return values;
}

llvm::Value* WindowEmitter::convolution(const HloInstruction* instruction, const Index& index) {
  StatusOr<ConvolutionDims> labels = convolutionDims(*instruction);
  if (!labels.ok()) return fail(instruction, labels.message());
  const HloInstruction* lhs = instruction->operand(0);
  const HloInstruction* rhs = instruction->operand(1);
  const PrimitiveType type = instruction->shape().elementType();
  const PrimitiveType lhsType = lhs->shape().elementType();
  const PrimitiveType rhsType = rhs->shape().elementType();
  if (type == PrimitiveType::kPred || lhsType != type || rhsType != type) {
    return fail(instruction, "convolution of pred or of mixed element types");
  }
  const int rank = lhs->shape().rank();
  const size_t spatialCount = static_cast<size_t>(rank) - 2;
  const int64_t kernelIn = rhs->shape().dimension(static_cast<int>(labels->rhsInput));
  const int64_t outFeatures = rhs->shape().dimension(static_cast<int>(labels->rhsOutput));
  const int64_t outFeaturesPerGroup = outFeatures / labels->featureGroups;
  const int64_t outFeaturesPerBatchGroup = outFeatures / labels->batchGroups;
  const int64_t batchPerGroup = lhs->shape().dimension(static_cast<int>(labels->lhsBatch)) / labels->batchGroups;
  llvm::Value* ob = index.dims[static_cast<size_t>(labels->outBatch)];
  llvm::Value* of = index.dims[static_cast<size_t>(labels->outFeature)];
  // Feature group k pairs output features [k*O/g, (k+1)*O/g) with input features [k*Ci, (k+1)*Ci); batch group
  // k pairs output features [k*O/bg, ...) with input batches [k*B/bg, ...) (the evaluator's rule).
  llvm::Value* firstFeature =
      labels->featureGroups == 1 ? i64(0) : m_b.CreateMul(m_b.CreateUDiv(of, i64(outFeaturesPerGroup)), i64(kernelIn));
  llvm::Value* ib =
      labels->batchGroups == 1
          ? ob
          : m_b.CreateAdd(m_b.CreateMul(m_b.CreateUDiv(of, i64(outFeaturesPerBatchGroup)), i64(batchPerGroup)), ob);
  // Accumulation as the dot's (docs/CODEGEN.md "Dot accumulation"): f64 in f64, f32/f16/bf16 in f32 with one
  // rounding at the end, integers in int64 (wrapping, as the evaluator's uint64 sum).
  const bool isFloat = isFloatingPoint(type);
  const PrimitiveType floatAcc = DotEmitter::dotAccumulationType(type);
  llvm::Type* accType = isFloat ? computeType(floatAcc) : m_b.getInt64Ty();
  llvm::AllocaInst* accumulator = entryAlloca(accType);
  m_b.CreateStore(isFloat ? llvm::ConstantFP::get(accType, 0.0) : i64(0), accumulator);
  auto widen = [&](PrimitiveType from, llvm::Value* v) -> llvm::Value* {
    if (isFloat) return convert(from, floatAcc, v);
    return isSignedInteger(from) ? m_b.CreateSExtOrTrunc(v, accType) : m_b.CreateZExtOrTrunc(v, accType);
  };
  // CPU, f32/f64 argument buffers with the input feature innermost in both (XLA's b01f_01oi, TF's NCHW
  // gradients): the input features go `lanes` at a time into a vector of partial sums, added up in lane order
  // after the scalar sum of the remainder. The order differs from the evaluator's sequential sum only as the
  // dot's blocked summation does (covered by compareWithReference's normwise check), and it vectorises a loop
  // that otherwise cannot (a sequential float sum must not be reassociated).
  const auto lhsLeaf = m_leaves.find(lhs);
  const auto rhsLeaf = m_leaves.find(rhs);
  const int64_t lanes = m_target == KernelTarget::kCpu && isFloat && type == floatAcc && lhsLeaf != m_leaves.end() &&
                                rhsLeaf != m_leaves.end() && labels->lhsFeature == rank - 1 &&
                                labels->rhsInput == rank - 1 && kernelIn >= 64 / elementByteSize(type)
                            ? 64 / elementByteSize(type)
                            : 0;
  llvm::Type* laneVector = lanes == 0 ? nullptr : llvm::FixedVectorType::get(accType, static_cast<unsigned>(lanes));
  llvm::AllocaInst* partial = lanes == 0 ? nullptr : entryAlloca(laneVector);
  if (partial != nullptr) m_b.CreateStore(llvm::ConstantFP::get(laneVector, 0.0), partial);
  Index lhsIndex;
  Index rhsIndex;
  lhsIndex.dims.assign(static_cast<size_t>(rank), nullptr);
  rhsIndex.dims.assign(static_cast<size_t>(rank), nullptr);
  lhsIndex.dims[static_cast<size_t>(labels->lhsBatch)] = ib;
  rhsIndex.dims[static_cast<size_t>(labels->rhsOutput)] = of;
  std::vector<llvm::Value*> inside(spatialCount, nullptr);
  // Kernel positions in row-major order, then the input features of the group innermost (the evaluator's
  // order): for NHWC / HWIO (JAX's b01f_01io) that loop reads the input contiguously.
  std::function<void(size_t)> nest = [&](size_t s) {
    if (s == spatialCount) {
      llvm::Value* all = m_b.getTrue();
      for (llvm::Value* v : inside) all = m_b.CreateAnd(all, v);
      ifThen(all, [&]() {
        llvm::Value* scalarFrom = i64(0);
        if (lanes != 0) {
          // Whole vectors of `lanes` input features: contiguous in both buffers.
          loop(
              i64(0), i64(kernelIn / lanes),
              [&](llvm::Value* block) {
                llvm::Value* c = m_b.CreateMul(block, i64(lanes));
                lhsIndex.dims[static_cast<size_t>(labels->lhsFeature)] =
                    labels->featureGroups == 1 ? c : m_b.CreateAdd(firstFeature, c);
                rhsIndex.dims[static_cast<size_t>(labels->rhsInput)] = c;
                llvm::Value* a =
                    m_b.CreateAlignedLoad(laneVector,
                                          m_b.CreateInBoundsGEP(accType, lhsLeaf->second,
                                                                linearize(lhsIndex.dims, lhs->shape().dimensions())),
                                          llvm::Align(elementByteSize(floatAcc)));
                llvm::Value* b =
                    m_b.CreateAlignedLoad(laneVector,
                                          m_b.CreateInBoundsGEP(accType, rhsLeaf->second,
                                                                linearize(rhsIndex.dims, rhs->shape().dimensions())),
                                          llvm::Align(elementByteSize(floatAcc)));
                m_b.CreateStore(intrinsic(llvm::Intrinsic::fmuladd, {a, b, m_b.CreateLoad(laneVector, partial)}),
                                partial);
              },
              "cv");
          scalarFrom = i64(kernelIn / lanes * lanes);
        }
        loop(
            scalarFrom, i64(kernelIn),
            [&](llvm::Value* c) {
              lhsIndex.dims[static_cast<size_t>(labels->lhsFeature)] =
                  labels->featureGroups == 1 ? c : m_b.CreateAdd(firstFeature, c);
              rhsIndex.dims[static_cast<size_t>(labels->rhsInput)] = c;
              llvm::Value* a = widen(lhsType, generate(lhs, lhsIndex));
              llvm::Value* b = widen(rhsType, generate(rhs, rhsIndex));
              llvm::Value* acc = m_b.CreateLoad(accType, accumulator);
              m_b.CreateStore(
                  isFloat ? intrinsic(llvm::Intrinsic::fmuladd, {a, b, acc}) : m_b.CreateAdd(acc, m_b.CreateMul(a, b)),
                  accumulator);
            },
            "c");
      });
      return;
    }
    const WindowDim& w = labels->window.dims[s];
    const auto lhsDim = static_cast<size_t>(labels->lhsSpatial[s]);
    auto visit = [&](llvm::Value* k) {
      auto [pos, in] = windowCoordinate(index.dims[static_cast<size_t>(labels->outSpatial[s])], k, w,
                                        lhs->shape().dimension(static_cast<int>(lhsDim)));
      lhsIndex.dims[lhsDim] = pos;
      inside[s] = in;
      rhsIndex.dims[static_cast<size_t>(labels->rhsSpatial[s])] = w.reversal ? m_b.CreateSub(i64(w.size - 1), k) : k;
      nest(s + 1);
    };
    if (w.size == 1) {
      visit(i64(0));
    } else {
      loop(i64(0), i64(w.size), visit, "kw");
    }
  };
  nest(0);
  llvm::Value* sum = m_b.CreateLoad(accType, accumulator);
  if (partial != nullptr) {
    llvm::Value* vector = m_b.CreateLoad(laneVector, partial);
    for (int64_t l = 0; l < lanes; ++l) sum = m_b.CreateFAdd(sum, m_b.CreateExtractElement(vector, i64(l)));
  }
  if (isFloat) return convert(floatAcc, type, sum);
  return m_b.CreateTrunc(sum, computeType(type));
}

llvm::Value* WindowEmitter::selectAndScatter(const HloInstruction* instruction, const Index& index) {
  if (instruction->operandCount() != 3) return fail(instruction, "select-and-scatter takes operand, source and init");
  const HloInstruction* operand = instruction->operand(0);
  const HloInstruction* source = instruction->operand(1);
  const std::optional<Window>& window = instruction->attributes().window;
  if (std::string why = windowMismatch(window, operand->shape(), source->shape()); !why.empty()) {
    return fail(instruction, why);
  }
  const HloComputation* select = instruction->calledComputation("select");
  const HloComputation* scatter = instruction->calledComputation("scatter");
  if (select == nullptr || scatter == nullptr) return fail(instruction, "needs select= and scatter= computations");
  const int rank = operand->shape().rank();
  const PrimitiveType type = instruction->shape().elementType();
  llvm::Type* valueType = computeType(type);
  llvm::AllocaInst* result = entryAlloca(valueType);
  llvm::AllocaInst* found = entryAlloca(m_b.getInt1Ty());
  llvm::AllocaInst* chosenValue = entryAlloca(valueType);
  llvm::AllocaInst* chosen = entryAlloca(m_b.getInt64Ty());
  m_b.CreateStore(generate(instruction->operand(2), Index{}), result);
  llvm::Value* self = linearOf(index, operand->shape());
  // This element's value is init combined, in the evaluator's order (source positions row-major), with every
  // source element whose window selects it. Only windows covering it can: per dimension, source positions
  // o with o*stride <= x*baseDilation + padLow < o*stride + (size-1)*dilation + 1.
  std::vector<llvm::Value*> sourceAt(static_cast<size_t>(rank), nullptr);
  std::function<void(int)> overSources = [&](int d) {
    if (d == rank) {
      // The window at sourceAt: its selected element (the first real one, replaced by each later one the
      // select computation does not prefer the current choice over), as evalSelectAndScatter walks it.
      // Reset to defined values: the select computation also runs (its result ignored) before anything is
      // chosen, and must not see uninitialised (poison) operands.
      m_b.CreateStore(m_b.getFalse(), found);
      m_b.CreateStore(llvm::Constant::getNullValue(valueType), chosenValue);
      m_b.CreateStore(i64(-1), chosen);
      std::vector<llvm::Value*> at(static_cast<size_t>(rank), nullptr);
      std::vector<llvm::Value*> inside(static_cast<size_t>(rank), nullptr);
      std::function<void(int)> overWindow = [&](int e) {
        if (e == rank) {
          llvm::Value* all = m_b.getTrue();
          for (llvm::Value* v : inside) all = m_b.CreateAnd(all, v);
          ifThen(all, [&]() {
            llvm::Value* candidate = generate(operand, Index{at, nullptr});
            llvm::Value* current = m_b.CreateLoad(valueType, chosenValue);
            llvm::Value* keep = applyComputation(select, {current, candidate}, instruction);
            keep = m_b.CreateSelect(m_b.CreateLoad(m_b.getInt1Ty(), found), keep, m_b.getFalse());
            m_b.CreateStore(m_b.CreateSelect(keep, current, candidate), chosenValue);
            m_b.CreateStore(m_b.CreateSelect(keep, m_b.CreateLoad(m_b.getInt64Ty(), chosen),
                                             linearize(at, operand->shape().dimensions())),
                            chosen);
            m_b.CreateStore(m_b.getTrue(), found);
          });
          return;
        }
        const WindowDim& w = window->dims[static_cast<size_t>(e)];
        auto visit = [&](llvm::Value* k) {
          auto [pos, in] = windowCoordinate(sourceAt[static_cast<size_t>(e)], k, w, operand->shape().dimension(e));
          at[static_cast<size_t>(e)] = pos;
          inside[static_cast<size_t>(e)] = in;
          overWindow(e + 1);
        };
        if (w.size == 1) {
          visit(i64(0));
        } else {
          loop(i64(0), i64(w.size), visit, "w");
        }
      };
      overWindow(0);
      llvm::Value* mine = m_b.CreateICmpEQ(m_b.CreateLoad(m_b.getInt64Ty(), chosen), self);
      ifThen(mine, [&]() {
        llvm::Value* update = generate(source, Index{sourceAt, nullptr});
        llvm::Value* acc = m_b.CreateLoad(valueType, result);
        m_b.CreateStore(applyComputation(scatter, {acc, update}, instruction), result);
      });
      return;
    }
    const WindowDim& w = window->dims[static_cast<size_t>(d)];
    // Padded-and-dilated coordinate of this element; windows starting in (p - extent, p] cover it.
    llvm::Value* p =
        m_b.CreateAdd(m_b.CreateMul(index.dims[static_cast<size_t>(d)], i64(w.baseDilation)), i64(w.padLow));
    const int64_t extent = (w.size - 1) * w.windowDilation + 1;
    // lo = max(0, ceil((p - extent + 1) / stride)), hi = min(sourceSize, floor(p / stride) + 1); p >= 0.
    llvm::Value* first = m_b.CreateSub(p, i64(extent - 1));
    llvm::Value* lo = m_b.CreateSelect(m_b.CreateICmpSLE(first, i64(0)), i64(0),
                                       m_b.CreateSDiv(m_b.CreateAdd(first, i64(w.stride - 1)), i64(w.stride)));
    llvm::Value* hi = m_b.CreateAdd(m_b.CreateSDiv(p, i64(w.stride)), i64(1));
    hi = m_b.CreateSelect(m_b.CreateICmpSLT(hi, i64(source->shape().dimension(d))), hi,
                          i64(source->shape().dimension(d)));
    loop(
        lo, hi,
        [&](llvm::Value* o) {
          sourceAt[static_cast<size_t>(d)] = o;
          overSources(d + 1);
        },
        "s");
  };
  overSources(0);
  return m_b.CreateLoad(valueType, result);
}

llvm::Value* WindowEmitter::gather(const HloInstruction* instruction, const Index& index) {
  if (instruction->operandCount() != 2) return fail(instruction, "gather takes an operand and indices");
  if (Status shape = checkGatherShape(*instruction); !shape.ok()) return fail(instruction, shape.message());
  const InstructionAttributes& attributes = instruction->attributes();
  const HloInstruction* operand = instruction->operand(0);
  const HloInstruction* indices = instruction->operand(1);
  const std::vector<int64_t> offsetDims = attributes.rawIntegers("offset_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> collapsed =
      attributes.rawIntegers("collapsed_slice_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indexMap = attributes.rawIntegers("start_index_map").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> sliceSizes = attributes.rawIntegers("slice_sizes").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> operandBatch =
      attributes.rawIntegers("operand_batching_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indicesBatch =
      attributes.rawIntegers("start_indices_batching_dims").value_or(std::vector<int64_t>{});
  int64_t indexVectorDim = indices->shape().rank();
  if (const std::string* text = attributes.findRaw("index_vector_dim")) {
    // A malformed value leaves -1, refused below.
    if (std::from_chars(text->data(), text->data() + text->size(), indexVectorDim).ec != std::errc())
      indexVectorDim = -1;
  }
  const int rank = operand->shape().rank();
  const int indicesRank = indices->shape().rank();
  if (isFloatingPoint(indices->shape().elementType()) || indexVectorDim < 0 || indexVectorDim > indicesRank ||
      static_cast<int>(sliceSizes.size()) != rank || operandBatch.size() != indicesBatch.size()) {
    return fail(instruction, "malformed gather dimension numbers");
  }
  auto contains = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  // Batch coordinates: the result dimensions that are not offset dimensions, in order; they index the indices
  // with index_vector_dim skipped.
  std::vector<llvm::Value*> batch;
  for (int d = 0; d < instruction->shape().rank(); ++d) {
    if (!contains(offsetDims, d)) batch.push_back(index.dims[static_cast<size_t>(d)]);
  }
  auto indicesIndex = [&](int64_t k) {
    Index at;
    size_t b = 0;
    for (int d = 0; d < indicesRank; ++d) {
      at.dims.push_back(d == indexVectorDim ? i64(k) : batch[b++]);
    }
    return at;
  };
  std::vector<llvm::Value*> start(static_cast<size_t>(rank), i64(0));
  const PrimitiveType indexType = indices->shape().elementType();
  for (size_t k = 0; k < indexMap.size(); ++k) {
    llvm::Value* v = generate(indices, indicesIndex(static_cast<int64_t>(k)));
    v = isSignedInteger(indexType) ? m_b.CreateSExtOrTrunc(v, m_b.getInt64Ty())
                                   : m_b.CreateZExtOrTrunc(v, m_b.getInt64Ty());
    start[static_cast<size_t>(indexMap[k])] = v;
  }
  for (size_t k = 0; k < operandBatch.size(); ++k) {
    const int64_t dim = indicesBatch[k];
    start[static_cast<size_t>(operandBatch[k])] = batch[static_cast<size_t>(dim > indexVectorDim ? dim - 1 : dim)];
  }
  // XLA clamps the start so the whole slice is in bounds; offsets pair with the uncollapsed, non-batching
  // operand dimensions in order.
  Index operandIndex;
  size_t window = 0;
  for (int d = 0; d < rank; ++d) {
    const int64_t maxStart = operand->shape().dimension(d) - sliceSizes[static_cast<size_t>(d)];
    llvm::Value* s = start[static_cast<size_t>(d)];
    s = m_b.CreateSelect(m_b.CreateICmpSLT(s, i64(0)), i64(0), s);
    s = m_b.CreateSelect(m_b.CreateICmpSGT(s, i64(maxStart)), i64(maxStart), s);
    if (!contains(collapsed, d) && !contains(operandBatch, d)) {
      if (window >= offsetDims.size()) return fail(instruction, "offset_dims do not match the operand");
      s = m_b.CreateAdd(s, index.dims[static_cast<size_t>(offsetDims[window++])]);
    }
    operandIndex.dims.push_back(s);
  }
  return generate(operand, operandIndex);
}

}  // namespace fusionscope::core

namespace fusionscope::core {

bool WindowEmitter::isRowConvolution(const HloInstruction* convolution) {
  if (convolution->opcode() != HloOpcode::kConvolution || !convolution->shape().isArray()) return false;
  StatusOr<ConvolutionDims> labels = convolutionDims(*convolution);
  if (!labels.ok()) return false;
  const int rank = convolution->shape().rank();
  const PrimitiveType type = convolution->shape().elementType();
  return isFloatingPoint(type) && convolution->operand(0)->shape().elementType() == type &&
         convolution->operand(1)->shape().elementType() == type && labels->outFeature == rank - 1 &&
         labels->rhsOutput == rank - 1 && labels->featureGroups == 1 && labels->batchGroups == 1;
}

void WindowEmitter::rowConvolution(const HloInstruction* convolution, const HloInstruction* root, llvm::Value* out,
                                   llvm::Value* begin, llvm::Value* end) {
  StatusOr<ConvolutionDims> labels = convolutionDims(*convolution);
  if (!labels.ok()) {
    fail(convolution, labels.message());
    return;
  }
  const HloInstruction* lhs = convolution->operand(0);
  const HloInstruction* rhs = convolution->operand(1);
  const PrimitiveType type = convolution->shape().elementType();
  const PrimitiveType accType = DotEmitter::dotAccumulationType(type);
  llvm::Type* acc = computeType(accType);
  const std::vector<int64_t>& outDims = convolution->shape().dimensions();
  const int rank = static_cast<int>(outDims.size());
  const size_t spatialCount = static_cast<size_t>(rank) - 2;
  const int64_t features = outDims.back();
  const int64_t kernelIn = rhs->shape().dimension(static_cast<int>(labels->rhsInput));
  if (features == 0) return;
  const std::vector<int64_t> pixelDims(outDims.begin(), outDims.end() - 1);
  const int64_t width = std::min(features, vectorN());
  const int64_t fullTiles = features / width;
  const int64_t tailWidth = features % width;
  std::map<int64_t, llvm::AllocaInst*> accumulators;
  llvm::AllocaInst* sums = nullptr;
  {
    llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
    for (int64_t w : {width, tailWidth}) {
      if (w == 0 || accumulators.count(w) != 0) continue;
      accumulators[w] = entry.CreateAlloca(llvm::FixedVectorType::get(acc, static_cast<unsigned>(w)));
      accumulators[w]->setAlignment(llvm::Align(64));
    }
    sums = entry.CreateAlloca(llvm::ArrayType::get(acc, static_cast<uint64_t>(width)));
    sums->setAlignment(llvm::Align(64));
  }
  const auto rhsLeaf = m_leaves.find(rhs);
  const bool rhsContiguous = rhsLeaf != m_leaves.end() && rhs->shape().elementType() == accType;
  loop(
      begin, end,
      [&](llvm::Value* pixel) {
        const Index at = delinearize(pixel, pixelDims);
        Index lhsIndex;
        Index rhsIndex;
        lhsIndex.dims.assign(static_cast<size_t>(rank), nullptr);
        rhsIndex.dims.assign(static_cast<size_t>(rank), nullptr);
        lhsIndex.dims[static_cast<size_t>(labels->lhsBatch)] = at.dims[static_cast<size_t>(labels->outBatch)];
        auto tile = [&](llvm::Value* j0, int64_t w) {
          llvm::Type* vector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(w));
          llvm::AllocaInst* accumulator = accumulators[w];
          m_b.CreateStore(llvm::ConstantFP::get(vector, 0.0), accumulator);
          std::vector<llvm::Value*> inside(spatialCount, nullptr);
          std::function<void(size_t)> nest = [&](size_t s) {
            if (s == spatialCount) {
              llvm::Value* all = m_b.getTrue();
              for (llvm::Value* v : inside) all = m_b.CreateAnd(all, v);
              ifThen(all, [&]() {
                loop(
                    i64(0), i64(kernelIn),
                    [&](llvm::Value* c) {
                      lhsIndex.dims[static_cast<size_t>(labels->lhsFeature)] = c;
                      rhsIndex.dims[static_cast<size_t>(labels->rhsInput)] = c;
                      rhsIndex.dims[static_cast<size_t>(labels->rhsOutput)] = j0;
                      llvm::Value* a = convert(lhs->shape().elementType(), accType, generate(lhs, lhsIndex));
                      llvm::Value* row = nullptr;
                      if (rhsContiguous) {
                        llvm::Value* pointer = m_b.CreateInBoundsGEP(
                            acc, rhsLeaf->second, linearize(rhsIndex.dims, rhs->shape().dimensions()));
                        row = m_b.CreateAlignedLoad(vector, pointer, llvm::Align(elementByteSize(accType)));
                      } else {
                        row = llvm::PoisonValue::get(vector);
                        for (int64_t j = 0; j < w; ++j) {
                          Index element = rhsIndex;
                          element.dims[static_cast<size_t>(labels->rhsOutput)] = m_b.CreateAdd(j0, i64(j));
                          row = m_b.CreateInsertElement(
                              row, convert(rhs->shape().elementType(), accType, generate(rhs, element)), i64(j));
                        }
                      }
                      llvm::Value* broadcast = m_b.CreateVectorSplat(static_cast<unsigned>(w), a);
                      m_b.CreateStore(
                          intrinsic(llvm::Intrinsic::fmuladd, {broadcast, row, m_b.CreateLoad(vector, accumulator)}),
                          accumulator);
                    },
                    "c");
              });
              return;
            }
            const WindowDim& wd = labels->window.dims[s];
            const auto lhsDim = static_cast<size_t>(labels->lhsSpatial[s]);
            auto visit = [&](llvm::Value* k) {
              auto [pos, in] = windowCoordinate(at.dims[static_cast<size_t>(labels->outSpatial[s])], k, wd,
                                                lhs->shape().dimension(static_cast<int>(lhsDim)));
              lhsIndex.dims[lhsDim] = pos;
              inside[s] = in;
              rhsIndex.dims[static_cast<size_t>(labels->rhsSpatial[s])] =
                  wd.reversal ? m_b.CreateSub(i64(wd.size - 1), k) : k;
              nest(s + 1);
            };
            if (wd.size == 1) {
              visit(i64(0));
            } else {
              loop(i64(0), i64(wd.size), visit, "kw");
            }
          };
          nest(0);
          m_b.CreateStore(m_b.CreateLoad(vector, accumulator), sums);
          // The tile's sums out through the epilogue, as rowDot writes a row.
          loop(
              i64(0), i64(w),
              [&](llvm::Value* jj) {
                llvm::Value* value = convert(accType, type, m_b.CreateLoad(acc, m_b.CreateInBoundsGEP(acc, sums, jj)));
                llvm::Value* j = m_b.CreateAdd(j0, jj);
                llvm::Value* linear = m_b.CreateAdd(m_b.CreateMul(pixel, i64(features)), j);
                if (root != convolution) {
                  std::vector<llvm::Value*> dims = at.dims;
                  dims.push_back(j);
                  m_bound[convolution] = value;
                  value = generate(root, Index{dims, linear});
                  m_bound.erase(convolution);
                }
                store(out, root->shape().elementType(), linear, value);
              },
              "w");
        };
        loop(
            i64(0), i64(fullTiles), [&](llvm::Value* t) { tile(m_b.CreateMul(t, i64(width)), width); }, "tile");
        if (tailWidth != 0) tile(i64(fullTiles * width), tailWidth);
      },
      "pixel");
}

}  // namespace fusionscope::core
