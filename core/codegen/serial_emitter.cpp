// Ops whose output elements are not independent functions of their index: scatter (updates may land on the
// same element, and the combiner need not be commutative) and sort. Each is a whole-kernel loop in the
// evaluator's order (core/eval/data_movement.cpp evalScatter, core/eval/reduction.cpp evalSort).
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/codegen/element_emitter.h"

namespace fusionscope::core {

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

void SerialEmitter::scatterKernel(const HloInstruction* scatter, const std::vector<llvm::Value*>& outs) {
  // N operands, the indices, N updates; a tuple of N results when N > 1.
  const int n = (scatter->operandCount() - 1) / 2;
  const Shape& resultShape = scatter->shape();
  const std::vector<Shape> results =
      resultShape.isTuple() ? resultShape.tupleElements() : std::vector<Shape>{resultShape};
  if (n < 1 || scatter->operandCount() != 2 * n + 1 || static_cast<int>(results.size()) != n ||
      outs.size() != results.size()) {
    fail(scatter, "scatter needs N operands, indices, N updates and N results");
    return;
  }
  const HloComputation* combiner = scatter->toApply();
  if (combiner == nullptr) {
    fail(scatter, "scatter without to_apply");
    return;
  }
  const InstructionAttributes& attributes = scatter->attributes();
  const HloInstruction* operand = scatter->operand(0);
  const HloInstruction* indices = scatter->operand(n);
  const HloInstruction* updates = scatter->operand(n + 1);
  const std::vector<int64_t> windowDims = attributes.rawIntegers("update_window_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> inserted = attributes.rawIntegers("inserted_window_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indexMap =
      attributes.rawIntegers("scatter_dims_to_operand_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> operandBatch =
      attributes.rawIntegers("input_batching_dims").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indicesBatch =
      attributes.rawIntegers("scatter_indices_batching_dims").value_or(std::vector<int64_t>{});
  const int indicesRank = indices->shape().rank();
  int64_t indexVectorDim = indicesRank;
  if (const std::string* text = attributes.findRaw("index_vector_dim")) {
    // A malformed value leaves -1, refused below.
    if (std::from_chars(text->data(), text->data() + text->size(), indexVectorDim).ec != std::errc())
      indexVectorDim = -1;
  }
  const Shape& shape = results[0];
  const int rank = shape.rank();
  const std::vector<int64_t>& up = updates->shape().dimensions();
  std::vector<int64_t> windowOperandDims;
  for (int d = 0; d < rank; ++d) {
    if (!contains(inserted, d) && !contains(operandBatch, d)) windowOperandDims.push_back(d);
  }
  if (isFloatingPoint(indices->shape().elementType()) || indexVectorDim < 0 || indexVectorDim > indicesRank ||
      windowOperandDims.size() != windowDims.size() || operandBatch.size() != indicesBatch.size() ||
      operand->shape().dimensions() != shape.dimensions()) {
    fail(scatter, "malformed scatter dimension numbers");
    return;
  }
  for (int k = 0; k < n; ++k) {
    const Shape& result = results[static_cast<size_t>(k)];
    if (!result.isArray() || scatter->operand(k)->shape().dimensions() != shape.dimensions() ||
        result.dimensions() != shape.dimensions() ||
        scatter->operand(n + 1 + k)->shape().dimensions() != updates->shape().dimensions() ||
        scatter->operand(n + 1 + k)->shape().elementType() != result.elementType()) {
      fail(scatter, "scatter operands, updates and results must match");
      return;
    }
  }
  for (int64_t d : windowDims) {
    if (d < 0 || d >= static_cast<int64_t>(up.size())) {
      fail(scatter, "update_window_dims out of range");
      return;
    }
  }
  // Each output starts as its operand (a copy; the in-place case reads and writes the same element).
  loop(
      i64(0), i64(shape.elementCount()),
      [&](llvm::Value* i) {
        const Index at = delinearize(i, shape.dimensions());
        for (int k = 0; k < n; ++k) {
          store(outs[static_cast<size_t>(k)], results[static_cast<size_t>(k)].elementType(), i,
                generate(scatter->operand(k), at));
        }
      },
      "copy");
  std::vector<int64_t> extent(static_cast<size_t>(rank), 1);
  for (size_t j = 0; j < windowOperandDims.size(); ++j) {
    extent[static_cast<size_t>(windowOperandDims[j])] = up[static_cast<size_t>(windowDims[j])];
  }
  const PrimitiveType indexType = indices->shape().elementType();
  // Then each update element in row-major order, as evalScatter applies them.
  loop(
      i64(0), i64(updates->shape().elementCount()),
      [&](llvm::Value* u) {
        const Index at = delinearize(u, up);
        std::vector<llvm::Value*> batch;
        for (size_t d = 0; d < up.size(); ++d) {
          if (!contains(windowDims, static_cast<int64_t>(d))) batch.push_back(at.dims[d]);
        }
        std::vector<llvm::Value*> start(static_cast<size_t>(rank), i64(0));
        for (size_t k = 0; k < indexMap.size(); ++k) {
          Index indicesIndex;
          size_t b = 0;
          for (int d = 0; d < indicesRank; ++d) {
            indicesIndex.dims.push_back(d == indexVectorDim ? i64(static_cast<int64_t>(k)) : batch[b++]);
          }
          llvm::Value* v = generate(indices, indicesIndex);
          v = isSignedInteger(indexType) ? m_b.CreateSExtOrTrunc(v, m_b.getInt64Ty())
                                         : m_b.CreateZExtOrTrunc(v, m_b.getInt64Ty());
          start[static_cast<size_t>(indexMap[k])] = v;
        }
        for (size_t k = 0; k < operandBatch.size(); ++k) {
          const int64_t dim = indicesBatch[k];
          start[static_cast<size_t>(operandBatch[k])] =
              batch[static_cast<size_t>(dim > indexVectorDim ? dim - 1 : dim)];
        }
        // An update window that does not fit entirely is skipped, as XLA's CPU and GPU backends do.
        llvm::Value* fits = m_b.getTrue();
        std::vector<llvm::Value*> target(static_cast<size_t>(rank), nullptr);
        size_t window = 0;
        for (int d = 0; d < rank; ++d) {
          llvm::Value* s = start[static_cast<size_t>(d)];
          fits = m_b.CreateAnd(fits, m_b.CreateICmpSGE(s, i64(0)));
          fits = m_b.CreateAnd(fits, m_b.CreateICmpSLE(s, i64(shape.dimension(d) - extent[static_cast<size_t>(d)])));
          if (window < windowOperandDims.size() && windowOperandDims[window] == d) {
            s = m_b.CreateAdd(s, at.dims[static_cast<size_t>(windowDims[window++])]);
          }
          target[static_cast<size_t>(d)] = s;
        }
        ifThen(fits, [&]() {
          // The combiner takes the N current values, then the N updates.
          llvm::Value* linear = linearize(target, shape.dimensions());
          std::vector<llvm::Value*> arguments;
          for (int k = 0; k < n; ++k) {
            arguments.push_back(
                load(outs[static_cast<size_t>(k)], results[static_cast<size_t>(k)].elementType(), linear));
          }
          for (int k = 0; k < n; ++k) arguments.push_back(generate(scatter->operand(n + 1 + k), at));
          std::vector<llvm::Value*> combined = applyComputationValues(combiner, arguments, scatter);
          for (size_t k = 0; k < combined.size() && k < outs.size(); ++k) {
            store(outs[k], results[k].elementType(), linear, combined[k]);
          }
        });
      },
      "update");
}

int64_t SerialEmitter::sortSlices(const HloInstruction* sort) {
  const Shape& first = sort->operand(0)->shape();
  const std::vector<int64_t> dims = sort->attributes().dimensions.value_or(std::vector<int64_t>{});
  if (first.rank() == 0 || dims.size() != 1 || dims[0] < 0 || dims[0] >= first.rank()) return 1;
  const int64_t length = first.dimension(static_cast<int>(dims[0]));
  return length == 0 ? 0 : first.elementCount() / length;
}

void SerialEmitter::sortKernel(const HloInstruction* sort, const std::vector<llvm::Value*>& outs, llvm::Value* slice) {
  const HloComputation* comparator = sort->toApply();
  const int n = sort->operandCount();
  if (comparator == nullptr || n < 1 || static_cast<int>(outs.size()) != n) {
    fail(sort, "sort needs a comparator and one output per operand");
    return;
  }
  const std::vector<int64_t>& dims = sort->operand(0)->shape().dimensions();
  for (int k = 0; k < n; ++k) {
    if (sort->operand(k)->shape().dimensions() != dims) {
      fail(sort, "operands of different dimensions");
      return;
    }
  }
  const std::vector<int64_t> sortDims = sort->attributes().dimensions.value_or(std::vector<int64_t>{});
  const bool scalar = dims.empty();
  if (!scalar && (sortDims.size() != 1 || sortDims[0] < 0 || sortDims[0] >= static_cast<int64_t>(dims.size()))) {
    fail(sort, "dimensions= must name one dimension");
    return;
  }
  const size_t dim = scalar ? 0 : static_cast<size_t>(sortDims[0]);
  const int64_t length = scalar ? 1 : dims[dim];
  std::vector<int64_t> outer = dims;
  if (!scalar) outer[dim] = 1;
  const Index base = delinearize(slice, outer);
  auto linearAt = [&](llvm::Value* i) {
    if (scalar) return i64(0);
    std::vector<llvm::Value*> at = base.dims;
    at[dim] = i;
    return linearize(at, dims);
  };
  if (length >= 2 && length <= kMaxMergeSortLength) {
    mergeSortSlice(sort, outs, dims, length, linearAt);
    return;
  }
  // Copy the slice of every operand into its output, then sort the outputs in place.
  loop(
      i64(0), i64(length),
      [&](llvm::Value* i) {
        llvm::Value* linear = linearAt(i);
        for (int k = 0; k < n; ++k) {
          const HloInstruction* operand = sort->operand(k);
          store(outs[static_cast<size_t>(k)], operand->shape().elementType(), linear,
                generate(operand, delinearize(linear, dims)));
        }
      },
      "copy");
  if (length < 2) return;
  // Longer slices (their index scratch would not fit on the stack): insertion sort. Element i moves down while the
  // comparator says it is less than its predecessor. It only swaps strictly smaller elements past larger ones, so equal
  // keys keep their order (stable, as the evaluator's merge sort), and it stays in bounds whatever the comparator
  // answers.
  loop(
      i64(1), i64(length),
      [&](llvm::Value* i) {
        llvm::BasicBlock* pre = m_b.GetInsertBlock();
        llvm::BasicBlock* header = llvm::BasicBlock::Create(m_context, "sift.header", m_function);
        llvm::BasicBlock* compareBlock = llvm::BasicBlock::Create(m_context, "sift.compare", m_function);
        llvm::BasicBlock* swapBlock = llvm::BasicBlock::Create(m_context, "sift.swap", m_function);
        llvm::BasicBlock* exit = llvm::BasicBlock::Create(m_context, "sift.exit", m_function);
        m_b.CreateBr(header);
        m_b.SetInsertPoint(header);
        llvm::PHINode* j = m_b.CreatePHI(m_b.getInt64Ty(), 2, "j");
        j->addIncoming(i, pre);
        m_b.CreateCondBr(m_b.CreateICmpSGT(j, i64(0)), compareBlock, exit);
        m_b.SetInsertPoint(compareBlock);
        auto saved = saveCache();
        llvm::Value* here = linearAt(j);
        llvm::Value* before = linearAt(m_b.CreateSub(j, i64(1)));
        std::vector<llvm::Value*> args;
        std::vector<llvm::Value*> hereValues;
        std::vector<llvm::Value*> beforeValues;
        for (int k = 0; k < n; ++k) {
          const PrimitiveType type = sort->operand(k)->shape().elementType();
          hereValues.push_back(load(outs[static_cast<size_t>(k)], type, here));
          beforeValues.push_back(load(outs[static_cast<size_t>(k)], type, before));
          args.push_back(hereValues.back());
          args.push_back(beforeValues.back());
        }
        llvm::Value* less = applyComputation(comparator, args, sort);
        m_b.CreateCondBr(less, swapBlock, exit);
        m_b.SetInsertPoint(swapBlock);
        for (int k = 0; k < n; ++k) {
          const PrimitiveType type = sort->operand(k)->shape().elementType();
          store(outs[static_cast<size_t>(k)], type, here, beforeValues[static_cast<size_t>(k)]);
          store(outs[static_cast<size_t>(k)], type, before, hereValues[static_cast<size_t>(k)]);
        }
        j->addIncoming(m_b.CreateSub(j, i64(1)), m_b.GetInsertBlock());
        m_b.CreateBr(header);
        restoreCache(std::move(saved));
        m_b.SetInsertPoint(exit);
      },
      "insert");
}

void SerialEmitter::mergeSortSlice(const HloInstruction* sort, const std::vector<llvm::Value*>& outs,
                                   const std::vector<int64_t>& dims, int64_t length,
                                   const std::function<llvm::Value*(llvm::Value*)>& linearAt) {
  const int n = sort->operandCount();
  const HloComputation* comparator = sort->toApply();
  llvm::Type* i64Type = m_b.getInt64Ty();
  llvm::AllocaInst* order = nullptr;
  llvm::AllocaInst* merged = nullptr;
  {
    llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
    order = entry.CreateAlloca(llvm::ArrayType::get(i64Type, static_cast<uint64_t>(length)));
    merged = entry.CreateAlloca(llvm::ArrayType::get(i64Type, static_cast<uint64_t>(length)));
  }
  auto slot = [&](llvm::AllocaInst* array, llvm::Value* i) { return m_b.CreateInBoundsGEP(i64Type, array, i); };
  auto operandAtPosition = [&](int k, llvm::Value* position) {
    return generate(sort->operand(k), delinearize(linearAt(position), dims));
  };
  loop(
      i64(0), i64(length), [&](llvm::Value* i) { m_b.CreateStore(i, slot(order, i)); }, "order");
  // The evaluator's bottom-up merge sort step for step (core/eval/reduction.cpp mergeSort): runs of `width`
  // merged pairwise, taking from the right run only when the comparator says its head is less than the left
  // run's, so equal keys keep their order and the result is the evaluator's whatever the comparator answers.
  llvm::AllocaInst* left = entryAlloca(i64Type);
  llvm::AllocaInst* right = entryAlloca(i64Type);
  for (int64_t width = 1; width < length; width *= 2) {
    const int64_t pairs = (length + 2 * width - 1) / (2 * width);
    loop(
        i64(0), i64(pairs),
        [&](llvm::Value* pair) {
          llvm::Value* lo = m_b.CreateMul(pair, i64(2 * width));
          llvm::Value* mid = m_b.CreateAdd(lo, i64(width));
          mid = m_b.CreateSelect(m_b.CreateICmpSLT(mid, i64(length)), mid, i64(length));
          llvm::Value* hi = m_b.CreateAdd(lo, i64(2 * width));
          hi = m_b.CreateSelect(m_b.CreateICmpSLT(hi, i64(length)), hi, i64(length));
          m_b.CreateStore(lo, left);
          m_b.CreateStore(mid, right);
          loop(
              lo, hi,
              [&](llvm::Value* k) {
                llvm::Value* i = m_b.CreateLoad(i64Type, left);
                llvm::Value* j = m_b.CreateLoad(i64Type, right);
                llvm::Value* leftDone = m_b.CreateICmpSGE(i, mid);
                llvm::Value* rightDone = m_b.CreateICmpSGE(j, hi);
                llvm::Value* both = m_b.CreateNot(m_b.CreateOr(leftDone, rightDone));
                llvm::Value* less = branch(
                    both, m_b.getInt1Ty(),
                    [&]() {
                      llvm::Value* a = m_b.CreateLoad(i64Type, slot(order, j));
                      llvm::Value* b = m_b.CreateLoad(i64Type, slot(order, i));
                      std::vector<llvm::Value*> args;
                      for (int op = 0; op < n; ++op) {
                        args.push_back(operandAtPosition(op, a));
                        args.push_back(operandAtPosition(op, b));
                      }
                      return applyComputation(comparator, args, sort);
                    },
                    [&]() { return m_b.getFalse(); });
                llvm::Value* takeRight = m_b.CreateOr(leftDone, less);
                llvm::Value* taken = m_b.CreateSelect(takeRight, j, i);
                m_b.CreateStore(m_b.CreateLoad(i64Type, slot(order, taken)), slot(merged, k));
                m_b.CreateStore(m_b.CreateSelect(takeRight, m_b.CreateAdd(j, i64(1)), j), right);
                m_b.CreateStore(m_b.CreateSelect(takeRight, i, m_b.CreateAdd(i, i64(1))), left);
              },
              "merge");
        },
        "pair");
    loop(
        i64(0), i64(length),
        [&](llvm::Value* i) { m_b.CreateStore(m_b.CreateLoad(i64Type, slot(merged, i)), slot(order, i)); }, "back");
  }
  // Every operand's slice in that order.
  loop(
      i64(0), i64(length),
      [&](llvm::Value* i) {
        llvm::Value* from = m_b.CreateLoad(i64Type, slot(order, i));
        llvm::Value* linear = linearAt(i);
        for (int k = 0; k < n; ++k) {
          store(outs[static_cast<size_t>(k)], sort->operand(k)->shape().elementType(), linear,
                operandAtPosition(k, from));
        }
      },
      "gather");
}

}  // namespace fusionscope::core
