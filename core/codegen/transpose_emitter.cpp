#include "core/codegen/element_emitter.h"

namespace fusionscope::core {

bool ElementEmitter::isStripTranspose(const HloInstruction* transpose) {
  if (transpose->opcode() != HloOpcode::kTranspose || !transpose->attributes().dimensions) return false;
  const std::vector<int64_t>& permutation = *transpose->attributes().dimensions;
  const int rank = transpose->shape().rank();
  if (rank < 2 || static_cast<int>(permutation.size()) != rank) return false;
  for (int dim = 0; dim + 2 < rank; ++dim) {
    if (permutation[static_cast<size_t>(dim)] != dim) return false;
  }
  return permutation[static_cast<size_t>(rank - 2)] == rank - 1 &&
         permutation[static_cast<size_t>(rank - 1)] == rank - 2 && hasRowMajorLayout(transpose->shape()) &&
         hasRowMajorLayout(transpose->operand(0)->shape()) &&
         transpose->shape().elementType() != PrimitiveType::kPred && transpose->shape().elementCount() > 0;
}

int64_t ElementEmitter::stripTransposeStrips(const HloInstruction* transpose) {
  const Shape& shape = transpose->shape();
  const int64_t rows = shape.dimension(shape.rank() - 2);
  const int64_t columns = shape.dimension(shape.rank() - 1);
  const int64_t batch = shape.elementCount() / (rows * columns);
  return batch * ((rows + kTransposeStrip - 1) / kTransposeStrip);
}

void ElementEmitter::stripTranspose(const HloInstruction* transpose, llvm::Value* in, llvm::Value* out,
                                    llvm::Value* begin, llvm::Value* end) {
  const Shape& shape = transpose->shape();
  const int64_t rows = shape.dimension(shape.rank() - 2);     // r: the input's innermost dimension
  const int64_t columns = shape.dimension(shape.rank() - 1);  // c: the input's rows
  const int64_t stripsPerBatch = (rows + kTransposeStrip - 1) / kTransposeStrip;
  llvm::Type* storage = storageType(shape.elementType());
  // Elements are moved as their storage bits: a transpose changes no value.
  auto move = [&](llvm::Value* base, llvm::Value* r, llvm::Value* c) {
    llvm::Value* from = m_b.CreateAdd(base, m_b.CreateAdd(m_b.CreateMul(c, i64(rows)), r));
    llvm::Value* to = m_b.CreateAdd(base, m_b.CreateAdd(m_b.CreateMul(r, i64(columns)), c));
    llvm::Value* value = m_b.CreateLoad(storage, m_b.CreateInBoundsGEP(storage, in, from));
    m_b.CreateStore(value, m_b.CreateInBoundsGEP(storage, out, to));
  };
  loop(
      begin, end,
      [&](llvm::Value* strip) {
        llvm::Value* base = m_b.CreateMul(m_b.CreateUDiv(strip, i64(stripsPerBatch)), i64(rows * columns));
        llvm::Value* r0 = m_b.CreateMul(m_b.CreateURem(strip, i64(stripsPerBatch)), i64(kTransposeStrip));
        llvm::Value* left = m_b.CreateSub(i64(rows), r0);
        llvm::Value* full = m_b.CreateICmpSGE(left, i64(kTransposeStrip));
        llvm::BasicBlock* fullBlock = llvm::BasicBlock::Create(m_context, "strip.full", m_function);
        llvm::BasicBlock* tailBlock = llvm::BasicBlock::Create(m_context, "strip.tail", m_function);
        llvm::BasicBlock* done = llvm::BasicBlock::Create(m_context, "strip.done", m_function);
        m_b.CreateCondBr(full, fullBlock, tailBlock);
        m_b.SetInsertPoint(fullBlock);
        loop(
            i64(0), i64(columns),
            [&](llvm::Value* c) {
              for (int64_t i = 0; i < kTransposeStrip; ++i) move(base, m_b.CreateAdd(r0, i64(i)), c);
            },
            "c");
        m_b.CreateBr(done);
        m_b.SetInsertPoint(tailBlock);
        loop(
            i64(0), i64(columns),
            [&](llvm::Value* c) {
              loop(
                  i64(0), left, [&](llvm::Value* i) { move(base, m_b.CreateAdd(r0, i), c); }, "i");
            },
            "c");
        m_b.CreateBr(done);
        m_b.SetInsertPoint(done);
      },
      "strip");
}

}  // namespace fusionscope::core
