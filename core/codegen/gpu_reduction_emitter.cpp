#include <algorithm>
#include <functional>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "core/codegen/element_emitter.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

// Lane `lane` of a warp visits columns lane, lane + 32, ... of a dimension of `inner` >= 32 elements (so every lane
// has a first column: visit(j, true)).
void forLaneColumns(ElementEmitter& e, llvm::Value* lane, int64_t inner,
                    const std::function<void(llvm::Value*, bool)>& visit) {
  constexpr int64_t kWarp = WarpReductionEmitter::kWarp;
  llvm::IRBuilder<>& b = e.builder();
  visit(lane, true);
  e.loop(
      e.i64(1), e.i64(inner / kWarp),
      [&](llvm::Value* step) { visit(b.CreateAdd(b.CreateMul(step, e.i64(kWarp)), lane), false); }, "col");
  if (inner % kWarp != 0) {
    llvm::Value* j = b.CreateAdd(e.i64(inner / kWarp * kWarp), lane);
    e.ifThen(b.CreateICmpULT(j, e.i64(inner)), [&]() { visit(j, false); });
  }
}

}  // namespace

int WarpReductionEmitter::warpReducedDimension(const HloInstruction* reduce) {
  if (reduce->opcode() != HloOpcode::kReduce || reduce->operandCount() != 2 || !reduce->shape().isArray() ||
      reduce->toApply() == nullptr) {
    return -1;
  }
  const std::vector<int64_t> reduced = reduce->attributes().dimensions.value_or(std::vector<int64_t>{});
  const int rank = reduce->operand(0)->shape().rank();
  if (rank == 0 || reduced.size() != 1 || reduced[0] < 0 || reduced[0] >= rank) return -1;
  const int d = static_cast<int>(reduced[0]);
  if (reduce->operand(0)->shape().dimension(d) < kWarp) return -1;
  if (d != rank - 1 && reduce->shape().elementCount() > kMaxWarpColumnResults) return -1;
  return ReductionEmitter::reductionLanes(reduce->toApply(), reduce->shape().elementType()) > 0 ? d : -1;
}

void WarpReductionEmitter::warpRowReduce(const std::vector<const HloInstruction*>& reduces,
                                         const std::vector<RowOutput>& rowOutputs,
                                         const std::vector<RowOutput>& elementwise, llvm::Value* thread) {
  const std::vector<int64_t>& dims = reduces[0]->operand(0)->shape().dimensions();
  const size_t reducedDim = static_cast<size_t>(warpReducedDimension(reduces[0]));
  const bool innermost = reducedDim + 1 == dims.size();
  const int64_t inner = dims[reducedDim];
  const std::vector<int64_t>& outerDims = reduces[0]->shape().dimensions();
  const int64_t rows = reduces[0]->shape().elementCount();
  llvm::BasicBlock* work = llvm::BasicBlock::Create(m_context, "row_in_range", m_function);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(m_context, "row_done", m_function);
  m_b.CreateCondBr(m_b.CreateICmpULT(thread, i64(rows * kWarp)), work, done);
  m_b.SetInsertPoint(work);
  llvm::Value* row = m_b.CreateUDiv(thread, i64(kWarp));
  llvm::Value* lane = m_b.CreateURem(thread, i64(kWarp));
  llvm::Value* rowStart = innermost ? m_b.CreateMul(row, i64(inner)) : nullptr;
  const Index outer = delinearize(row, outerDims);
  std::vector<llvm::AllocaInst*> partial;
  for (const HloInstruction* r : reduces) partial.push_back(entryAlloca(computeType(r->shape().elementType())));
  // Column j of the row: stores the elementwise outputs, folds each reduce operand into its partial (or starts
  // the partial with it).
  auto visit = [&](llvm::Value* j, bool first) {
    Index index;
    index.dims = outer.dims;
    index.dims.insert(index.dims.begin() + static_cast<std::ptrdiff_t>(reducedDim), j);
    index.linear = innermost ? m_b.CreateAdd(rowStart, j) : linearize(index.dims, dims);
    auto saved = saveCache();
    for (const RowOutput& e : elementwise) {
      store(e.pointer, e.root->shape().elementType(), index.linear, generate(e.root, index));
    }
    for (size_t k = 0; k < reduces.size(); ++k) {
      const HloInstruction* reduce = reduces[k];
      llvm::Type* type = partial[k]->getAllocatedType();
      llvm::Value* element = generate(reduce->operand(0), index);
      m_b.CreateStore(
          first ? element : applyComputation(reduce->toApply(), {m_b.CreateLoad(type, partial[k]), element}, reduce),
          partial[k]);
    }
    restoreCache(std::move(saved));
  };
  forLaneColumns(m_e, lane, inner, visit);
  // Every lane of the warp reaches here (rows * 32 threads, blocks a multiple of 32): full-mask shuffles.
  for (size_t k = 0; k < reduces.size(); ++k) warpCombine(reduces[k], partial[k]);
  llvm::BasicBlock* write = llvm::BasicBlock::Create(m_context, "row_write", m_function);
  m_b.CreateCondBr(m_b.CreateICmpEQ(lane, i64(0)), write, done);
  m_b.SetInsertPoint(write);
  // The totals are bound to the reduces: every row output reads them at its own row (warpRowPlan checks that
  // the path from each row output to the reduces keeps the linear index).
  auto savedBound = m_bound;
  auto saved = saveCache();
  for (size_t k = 0; k < reduces.size(); ++k) {
    const HloInstruction* reduce = reduces[k];
    llvm::Type* type = partial[k]->getAllocatedType();
    llvm::Value* init = generate(reduce->operand(1), Index{});
    m_bound[reduce] = applyComputation(reduce->toApply(), {init, m_b.CreateLoad(type, partial[k])}, reduce);
  }
  for (const RowOutput& r : rowOutputs) {
    Index rowIndex = delinearize(row, r.root->shape().dimensions());
    rowIndex.linear = row;
    store(r.pointer, r.root->shape().elementType(), row, generate(r.root, rowIndex));
  }
  restoreCache(std::move(saved));
  m_bound = std::move(savedBound);
  m_b.CreateBr(done);
  m_b.SetInsertPoint(done);
}

void WarpReductionEmitter::warpNormalization(const std::vector<const HloInstruction*>& reductions,
                                             const std::vector<int64_t>& dims, const std::vector<RowOutput>& rowOutputs,
                                             const std::vector<RowOutput>& elementwise, llvm::Value* thread) {
  const int64_t inner = dims.back();
  const std::vector<int64_t> outerDims(dims.begin(), dims.end() - 1);
  int64_t rows = 1;
  for (int64_t d : outerDims) rows *= d;
  llvm::BasicBlock* work = llvm::BasicBlock::Create(m_context, "row_in_range", m_function);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(m_context, "row_done", m_function);
  m_b.CreateCondBr(m_b.CreateICmpULT(thread, i64(rows * kWarp)), work, done);
  m_b.SetInsertPoint(work);
  llvm::Value* row = m_b.CreateUDiv(thread, i64(kWarp));
  llvm::Value* lane = m_b.CreateURem(thread, i64(kWarp));
  llvm::Value* rowStart = m_b.CreateMul(row, i64(inner));
  Index outer = delinearize(row, outerDims);
  outer.linear = row;
  auto elementIndex = [&](llvm::Value* j) {
    Index index;
    index.dims = outer.dims;
    index.dims.push_back(j);
    index.linear = m_b.CreateAdd(rowStart, j);
    return index;
  };
  for (const HloInstruction* reduce : reductions) {
    llvm::AllocaInst* partial = entryAlloca(computeType(reduce->shape().elementType()));
    llvm::Type* type = partial->getAllocatedType();
    forLaneColumns(m_e, lane, inner, [&](llvm::Value* j, bool first) {
      auto saved = saveCache();
      llvm::Value* element = generate(reduce->operand(0), elementIndex(j));
      m_b.CreateStore(
          first ? element : applyComputation(reduce->toApply(), {m_b.CreateLoad(type, partial), element}, reduce),
          partial);
      restoreCache(std::move(saved));
    });
    // Every lane of the warp reaches the shuffles (blocks are whole warps); afterwards every lane has the total.
    warpCombine(reduce, partial);
    llvm::Value* init = generate(reduce->operand(1), Index{});
    m_cache[CacheKey{reduce, outer.dims}] =
        applyComputation(reduce->toApply(), {init, m_b.CreateLoad(type, partial)}, reduce);
  }
  forLaneColumns(m_e, lane, inner, [&](llvm::Value* j, bool) {
    auto saved = saveCache();
    const Index index = elementIndex(j);
    for (const RowOutput& e : elementwise) {
      store(e.pointer, e.root->shape().elementType(), index.linear, generate(e.root, index));
    }
    restoreCache(std::move(saved));
  });
  if (!rowOutputs.empty()) {
    ifThen(m_b.CreateICmpEQ(lane, i64(0)), [&]() {
      for (const RowOutput& r : rowOutputs)
        store(r.pointer, r.root->shape().elementType(), row, generate(r.root, outer));
    });
  }
  m_b.CreateBr(done);
  m_b.SetInsertPoint(done);
}

void WarpReductionEmitter::warpCombine(const HloInstruction* reduce, llvm::AllocaInst* partial) {
  llvm::Type* type = partial->getAllocatedType();
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    llvm::Value* mine = m_b.CreateLoad(type, partial);
    m_b.CreateStore(applyComputation(reduce->toApply(), {mine, shuffleXor(mine, offset)}, reduce), partial);
  }
}

llvm::Value* WarpReductionEmitter::shuffleXor(llvm::Value* value, int offset) {
  auto shuffle32 = [&](llvm::Value* v) {
    const bool isFloat = v->getType()->isFloatTy();
    llvm::Function* fn = llvm::Intrinsic::getDeclaration(
        &m_module, isFloat ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32);
    return m_b.CreateCall(
        fn, {m_b.getInt32(0xffffffffu), v, m_b.getInt32(static_cast<uint32_t>(offset)), m_b.getInt32(0x1f)});
  };
  llvm::Type* type = value->getType();
  if (type->isFloatTy() || type->isIntegerTy(32)) return shuffle32(value);
  if (type->isIntegerTy() && type->getIntegerBitWidth() < 32) {
    return m_b.CreateTrunc(shuffle32(m_b.CreateZExt(value, m_b.getInt32Ty())), type);
  }
  // 64-bit: two halves.
  llvm::Value* bits = type->isDoubleTy() ? m_b.CreateBitCast(value, m_b.getInt64Ty()) : value;
  llvm::Value* lo = shuffle32(m_b.CreateTrunc(bits, m_b.getInt32Ty()));
  llvm::Value* hi = shuffle32(m_b.CreateTrunc(m_b.CreateLShr(bits, 32), m_b.getInt32Ty()));
  llvm::Value* joined =
      m_b.CreateOr(m_b.CreateZExt(lo, m_b.getInt64Ty()), m_b.CreateShl(m_b.CreateZExt(hi, m_b.getInt64Ty()), 32));
  return type->isDoubleTy() ? m_b.CreateBitCast(joined, type) : joined;
}

std::optional<WarpRowPlan> warpRowPlan(const PlanKernel& kernel, const std::vector<const HloInstruction*>& roots,
                                       const std::vector<llvm::Value*>& args, size_t inputCount) {
  WarpRowPlan plan;
  if (kernel.instruction->opcode() == HloOpcode::kFusion) {
    for (const auto& instruction : kernel.instruction->fusedComputation()->instructions()) {
      if (instruction->opcode() == HloOpcode::kReduce) plan.reduces.push_back(instruction.get());
    }
  } else if (kernel.instruction->opcode() == HloOpcode::kReduce && roots.size() == 1 &&
             WarpReductionEmitter::warpReducedDimension(kernel.instruction) >= 0) {
    // Unfused: the operand is a buffer, whatever computed it.
    plan.reduces.push_back(kernel.instruction);
    plan.rowOutputs.push_back({kernel.instruction, args[inputCount]});
    return plan;
  }
  if (plan.reduces.empty()) return std::nullopt;
  const std::vector<int64_t>& rowDims = plan.reduces[0]->operand(0)->shape().dimensions();
  const int reducedDim = WarpReductionEmitter::warpReducedDimension(plan.reduces[0]);
  for (const HloInstruction* reduce : plan.reduces) {
    if (reducedDim < 0 || WarpReductionEmitter::warpReducedDimension(reduce) != reducedDim ||
        reduce->operand(0)->shape().dimensions() != rowDims) {
      return std::nullopt;
    }
  }
  // Whether `node` reads a reduce (memoised walk over the fused computation).
  std::unordered_map<const HloInstruction*, bool> readsReduce;
  std::function<bool(const HloInstruction*)> reads = [&](const HloInstruction* node) -> bool {
    if (auto it = readsReduce.find(node); it != readsReduce.end()) return it->second;
    bool result = false;
    for (const HloInstruction* operand : node->operands()) {
      result = result || operand->opcode() == HloOpcode::kReduce || reads(operand);
    }
    readsReduce[node] = result;
    return result;
  };
  for (const HloInstruction* reduce : plan.reduces) {
    if (reads(reduce->operand(0))) return std::nullopt;  // a reduce of a reduce: the row pass cannot know it yet
  }
  const int64_t rows = plan.reduces[0]->shape().elementCount();
  std::unordered_map<const HloInstruction*, bool> keeps;
  std::function<bool(const HloInstruction*)> keepsRowIndex = [&](const HloInstruction* node) -> bool {
    if (node->opcode() == HloOpcode::kReduce) return true;
    if (!reads(node)) return true;
    if (auto it = keeps.find(node); it != keeps.end()) return it->second;
    const HloOpcode op = node->opcode();
    bool result =
        node->shape().isArray() && node->shape().elementCount() == rows &&
        (isElementwise(op) || op == HloOpcode::kReshape || op == HloOpcode::kBitcast || op == HloOpcode::kCopy ||
         (op == HloOpcode::kBroadcast && node->operand(0)->shape().elementCount() == rows &&
          node->attributes().dimensions &&
          std::is_sorted(node->attributes().dimensions->begin(), node->attributes().dimensions->end())));
    for (const HloInstruction* operand : node->operands()) result = result && keepsRowIndex(operand);
    keeps[node] = result;
    return result;
  };
  for (size_t j = 0; j < roots.size(); ++j) {
    const HloInstruction* root = roots[j];
    if (!root->shape().isArray()) return std::nullopt;
    const WarpReductionEmitter::RowOutput output{root, args[inputCount + j]};
    if (root->opcode() == HloOpcode::kReduce || (reads(root) && keepsRowIndex(root))) {
      plan.rowOutputs.push_back(output);
    } else if (root->shape().dimensions() == rowDims && !reads(root)) {
      plan.elementwise.push_back(output);
    } else {
      return std::nullopt;
    }
  }
  return plan;
}

}  // namespace fusionscope::core
