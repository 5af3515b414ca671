#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "core/codegen/element_emitter.h"

namespace fusionscope::core {

bool ReductionEmitter::usesScratchRow(const HloInstruction* reduce, KernelTarget target) {
  if (target != KernelTarget::kCpu || reduce->opcode() != HloOpcode::kReduce || reduce->operandCount() != 2 ||
      !reduce->shape().isArray()) {
    return false;
  }
  const std::vector<int64_t> reduced = reduce->attributes().dimensions.value_or(std::vector<int64_t>{});
  const int rank = reduce->operand(0)->shape().rank();
  if (rank == 0 || reduced.size() != 1 || reduced[0] != rank - 1) return false;
  const int64_t inner = reduce->operand(0)->shape().dimension(rank - 1);
  return inner >= 8 && inner <= 16384;
}

llvm::Value* ReductionEmitter::reduce(const HloInstruction* instruction, const Index& index) {
  if (instruction->operandCount() != 2 || instruction->shape().isTuple()) {
    return fail(instruction, "variadic reduce");
  }
  const HloComputation* reducer = instruction->toApply();
  if (reducer == nullptr) return fail(instruction, "reduce without to_apply");
  const HloInstruction* operand = instruction->operand(0);
  const std::vector<int64_t> reduced = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
  const int rank = operand->shape().rank();
  std::vector<bool> isReduced(static_cast<size_t>(rank), false);
  for (int64_t d : reduced) isReduced[static_cast<size_t>(d)] = true;
  llvm::Type* type = computeType(instruction->shape().elementType());
  llvm::AllocaInst* accumulator = entryAlloca(type);
  m_b.CreateStore(generate(instruction->operand(1), Index{}), accumulator);
  std::vector<llvm::Value*> full(static_cast<size_t>(rank), nullptr);
  size_t kept = 0;
  for (int d = 0; d < rank; ++d) {
    if (!isReduced[static_cast<size_t>(d)]) full[static_cast<size_t>(d)] = index.dims[kept++];
  }
  // A reduction over the innermost dimension: first the row's elements into a scratch row (a loop without a
  // carried dependency, so exp/log/... in it vectorise), then the reducer over the row in order (the
  // evaluator's order, so results match exactly).
  const int64_t inner = rank > 0 ? operand->shape().dimension(rank - 1) : 0;
  if (usesScratchRow(instruction, m_target)) {
    llvm::AllocaInst* row = nullptr;
    {
      llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
      row = entry.CreateAlloca(llvm::ArrayType::get(type, static_cast<uint64_t>(inner)));
      row->setAlignment(llvm::Align(64));
    }
    const bool side = m_sideOutput.reduce == instruction;
    loop(
        i64(0), i64(inner),
        [&](llvm::Value* j) {
          full[static_cast<size_t>(rank - 1)] = j;
          llvm::Value* element = generate(operand, Index{full, nullptr});
          m_b.CreateStore(element, m_b.CreateInBoundsGEP(type, row, j));
          if (side) {
            store(m_sideOutput.pointer, operand->shape().elementType(), m_b.CreateAdd(m_sideOutput.base, j), element);
          }
        },
        "fill");
    auto reduceFrom = [&](int64_t first) {
      loop(
          i64(first), i64(inner),
          [&](llvm::Value* j) {
            llvm::Value* element = m_b.CreateLoad(type, m_b.CreateInBoundsGEP(type, row, j));
            llvm::Value* acc = m_b.CreateLoad(type, accumulator);
            m_b.CreateStore(applyComputation(reducer, {acc, element}, instruction), accumulator);
          },
          "r");
    };
    // pred rows are i1 arrays, one byte per element, which a vector of i1 would read as bits: in order.
    int64_t lanes = instruction->shape().elementType() == PrimitiveType::kPred
                        ? 0
                        : reductionLanes(reducer, instruction->shape().elementType());
    while (lanes > 4 && inner < 2 * lanes) lanes /= 2;  // a short row (attention's 64) still fills vectors
    if (lanes == 0 || inner < 2 * lanes) {
      reduceFrom(0);
      return m_b.CreateLoad(type, accumulator);
    }
    // An associative, commutative reducer (HLO leaves the order of a reduction unspecified): `lanes`
    // independent partial results over strided elements, kept as one LLVM vector and combined by the reducer's
    // own op on whole vectors, then halved in a tree (lanes / 2, / 4, ... 1), combined with the init value, then
    // the tail. Floating-point sums round differently from a sequential loop (within the evaluator's tolerance;
    // the tree is the more accurate order); max/min/and/or and integer sums are exact. Written as scalar lanes
    // for the SLP vectoriser, a NaN-propagating maximum stayed scalar, and the lane-order combine cost as much
    // as the row (attention's max over rows of 64: 25 us).
    const HloOpcode op = reducer->root()->opcode();
    llvm::Type* vector = llvm::FixedVectorType::get(type, static_cast<unsigned>(lanes));
    llvm::AllocaInst* partial = entryAlloca(vector);
    const PrimitiveType elementType = instruction->shape().elementType();
    auto step = [&](llvm::Value* x, llvm::Value* y) { return m_e.reductionStep(op, elementType, x, y); };
    auto rowVector = [&](llvm::Value* at) {
      return m_b.CreateAlignedLoad(vector, m_b.CreateInBoundsGEP(type, row, at),
                                   llvm::Align(elementByteSize(elementType)));
    };
    m_b.CreateStore(rowVector(i64(0)), partial);
    const int64_t blocks = inner / lanes;
    loop(
        i64(1), i64(blocks),
        [&](llvm::Value* block) {
          llvm::Value* element = rowVector(m_b.CreateMul(block, i64(lanes)));
          m_b.CreateStore(step(m_b.CreateLoad(vector, partial), element), partial);
        },
        "block");
    llvm::Value* combined = m_b.CreateLoad(vector, partial);
    for (int64_t half = lanes / 2; half >= 1; half /= 2) {
      std::vector<int> low;
      std::vector<int> high;
      for (int64_t l = 0; l < half; ++l) {
        low.push_back(static_cast<int>(l));
        high.push_back(static_cast<int>(l + half));
      }
      combined = step(m_b.CreateShuffleVector(combined, low), m_b.CreateShuffleVector(combined, high));
    }
    llvm::Value* total = m_b.CreateExtractElement(combined, i64(0));
    m_b.CreateStore(step(m_b.CreateLoad(type, accumulator), total), accumulator);
    reduceFrom(blocks * lanes);
    return m_b.CreateLoad(type, accumulator);
  }
  // Loop nest over the reduced dimensions in increasing order: row-major, the evaluator's order.
  std::function<void(size_t)> nest = [&](size_t level) {
    if (level == reduced.size()) {
      llvm::Value* element = generate(operand, Index{full, nullptr});
      llvm::Value* acc = m_b.CreateLoad(type, accumulator);
      m_b.CreateStore(applyComputation(reducer, {acc, element}, instruction), accumulator);
      return;
    }
    std::vector<int64_t> sorted = reduced;
    std::sort(sorted.begin(), sorted.end());
    const int64_t d = sorted[level];
    loop(
        i64(0), i64(operand->shape().dimension(static_cast<int>(d))),
        [&](llvm::Value* i) {
          full[static_cast<size_t>(d)] = i;
          nest(level + 1);
        },
        "r");
  };
  nest(0);
  return m_b.CreateLoad(type, accumulator);
}

std::vector<Shape> ReductionEmitter::variadicResults(const HloInstruction& instruction) {
  const int n = instruction.operandCount() / 2;
  const Shape& shape = instruction.shape();
  std::vector<Shape> results = shape.isTuple() ? shape.tupleElements() : std::vector<Shape>{shape};
  bool wellFormed = n >= 1 && instruction.operandCount() == 2 * n && static_cast<int>(results.size()) == n;
  for (int k = 0; wellFormed && k < n; ++k) {
    wellFormed = results[static_cast<size_t>(k)].isArray() &&
                 results[static_cast<size_t>(k)].dimensions() == results[0].dimensions() &&
                 instruction.operand(k)->shape().dimensions() == instruction.operand(0)->shape().dimensions();
  }
  return wellFormed ? results : std::vector<Shape>{};
}

std::vector<llvm::Value*> ReductionEmitter::variadicReduceValues(const HloInstruction* instruction,
                                                                 const Index& index) {
  const int n = instruction->operandCount() / 2;
  const std::vector<Shape> results = variadicResults(*instruction);
  const HloComputation* reducer = instruction->toApply();
  if (results.empty() || reducer == nullptr) {
    fail(instruction, "reduce needs N inputs of one shape, N init values, N results and to_apply");
    return {};
  }
  const HloInstruction* operand = instruction->operand(0);
  std::vector<int64_t> reduced = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
  std::sort(reduced.begin(), reduced.end());
  const int rank = operand->shape().rank();
  std::vector<bool> isReduced(static_cast<size_t>(rank), false);
  for (int64_t d : reduced) {
    if (d < 0 || d >= rank) {
      fail(instruction, "reduced dimension out of range");
      return {};
    }
    isReduced[static_cast<size_t>(d)] = true;
  }
  std::vector<llvm::Type*> types;
  std::vector<llvm::AllocaInst*> accumulators;
  for (int k = 0; k < n; ++k) {
    types.push_back(computeType(results[static_cast<size_t>(k)].elementType()));
    accumulators.push_back(entryAlloca(types.back()));
    m_b.CreateStore(generate(instruction->operand(n + k), Index{}), accumulators.back());
  }
  std::vector<llvm::Value*> full(static_cast<size_t>(rank), nullptr);
  size_t kept = 0;
  for (int d = 0; d < rank; ++d) {
    if (!isReduced[static_cast<size_t>(d)]) full[static_cast<size_t>(d)] = index.dims[kept++];
  }
  std::function<void(size_t)> nest = [&](size_t level) {
    if (level == reduced.size()) {
      // The reducer takes the N accumulators, then the N elements.
      std::vector<llvm::Value*> arguments;
      for (int k = 0; k < n; ++k) {
        arguments.push_back(m_b.CreateLoad(types[static_cast<size_t>(k)], accumulators[static_cast<size_t>(k)]));
      }
      for (int k = 0; k < n; ++k) arguments.push_back(generate(instruction->operand(k), Index{full, nullptr}));
      std::vector<llvm::Value*> next = applyComputationValues(reducer, arguments, instruction);
      for (size_t k = 0; k < next.size() && k < accumulators.size(); ++k) m_b.CreateStore(next[k], accumulators[k]);
      return;
    }
    const int64_t d = reduced[level];
    loop(
        i64(0), i64(operand->shape().dimension(static_cast<int>(d))),
        [&](llvm::Value* i) {
          full[static_cast<size_t>(d)] = i;
          nest(level + 1);
        },
        "r");
  };
  nest(0);
  std::vector<llvm::Value*> values;
  for (int k = 0; k < n; ++k) {
    values.push_back(m_b.CreateLoad(types[static_cast<size_t>(k)], accumulators[static_cast<size_t>(k)]));
  }
  return values;
}

}  // namespace fusionscope::core
