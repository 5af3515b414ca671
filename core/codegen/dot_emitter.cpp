#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "core/codegen/element_emitter.h"
#include "core/passes/dot_rhs_transpose.h"

namespace fusionscope::core {

bool DotEmitter::isRowDot(const HloInstruction* dot) {
  if (dot->opcode() != HloOpcode::kDot || !dot->attributes().dot) return false;
  const DotDimensionNumbers& d = *dot->attributes().dot;
  const int batch = static_cast<int>(d.lhsBatch.size());
  return dot->shape().rank() == batch + 2 && d.rhsBatch.size() == d.lhsBatch.size() && d.lhsContracting.size() == 1 &&
         d.rhsContracting.size() == 1 && dot->operand(0)->shape().rank() == batch + 2 &&
         dot->operand(1)->shape().rank() == batch + 2 &&
         (isFloatingPoint(dot->shape().elementType()) ||
          (isInteger(dot->shape().elementType()) && elementByteSize(dot->shape().elementType()) >= 4)) &&
         dot->shape().dimension(batch + 1) <= 8192;
}

PrimitiveType DotEmitter::dotAccumulationType(PrimitiveType type) {
  return type == PrimitiveType::kF64 ? PrimitiveType::kF64 : PrimitiveType::kF32;
}

void DotEmitter::rowDot(const HloInstruction* dot, const HloInstruction* root, llvm::Value* out, llvm::Value* begin,
                        llvm::Value* end) {
  const DotDimensionNumbers& d = *dot->attributes().dot;
  const HloInstruction* lhs = dot->operand(0);
  const HloInstruction* rhs = dot->operand(1);
  const PrimitiveType type = dot->shape().elementType();
  const PrimitiveType accType = rowDotAccumulationType(type);
  const bool floatAcc = isFloatingPoint(accType);
  // a * b + c and a + b in the accumulation type: fused multiply-adds for floats, wrapping integer ops otherwise.
  auto mulAdd = [&](llvm::Value* a, llvm::Value* b, llvm::Value* c) -> llvm::Value* {
    return floatAcc ? intrinsic(llvm::Intrinsic::fmuladd, {a, b, c}) : m_b.CreateAdd(m_b.CreateMul(a, b), c);
  };
  auto add = [&](llvm::Value* a, llvm::Value* b) -> llvm::Value* {
    return floatAcc ? m_b.CreateFAdd(a, b) : m_b.CreateAdd(a, b);
  };
  const int batchRank = static_cast<int>(d.lhsBatch.size());
  const int64_t m = dot->shape().dimension(batchRank);
  const int64_t n = dot->shape().dimension(batchRank + 1);
  const int64_t k = lhs->shape().dimension(static_cast<int>(d.lhsContracting[0]));
  if (n == 0) return;
  const std::vector<int64_t> batchDims(dot->shape().dimensions().begin(),
                                       dot->shape().dimensions().begin() + batchRank);
  llvm::Type* acc = computeType(accType);
  // Columns are computed in tiles of `width` (all n when n <= vectorN()): a tile row's accumulators are one
  // vector. Rows per block: enough independent FMA chains to hide FMA latency, few enough that a block's
  // partial sums stay in the vector registers with room for the rhs row (rowDotBlock).
  const int64_t width = std::min(n, vectorN());
  const int64_t rowBlock = rowDotBlock(dot, m_vectors);
  const int64_t fullTiles = n / width;
  const int64_t tailWidth = n % width;
  // A tile of w columns is computed in vectors of padded(w) lanes, whole vector registers (MNIST's 10 columns as 16
  // lanes): an odd-sized vector (<10 x float>) is split by LLVM into pieces that do not stay in registers on AVX2
  // (its 100x10x784 dot took 230 us, Eigen 45). The extra lanes compute zeros and are never written.
  const int64_t accBytes = elementByteSize(accType);
  const int64_t lanes = std::max<int64_t>(1, m_vectors.registerBytes / accBytes);
  auto padded = [&](int64_t w) { return (w + lanes - 1) / lanes * lanes; };
  // Per row of a block and tile width: its total and its partial sums (vectors), and a stack row of `width`
  // the epilogue reads the sums from.
  std::map<int64_t, std::vector<llvm::AllocaInst*>> totals;
  std::map<int64_t, std::vector<llvm::AllocaInst*>> partials;
  llvm::AllocaInst* sums = nullptr;
  {
    llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
    auto slot = [&](llvm::Type* t) {
      llvm::AllocaInst* a = entry.CreateAlloca(t);
      a->setAlignment(llvm::Align(64));
      return a;
    };
    for (int64_t w : {width, tailWidth}) {
      if (w == 0 || totals.count(w) != 0) continue;
      llvm::Type* vector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(padded(w)));
      for (int64_t r = 0; r < rowBlock; ++r) {
        totals[w].push_back(slot(vector));
        partials[w].push_back(slot(vector));
      }
    }
    sums = slot(llvm::ArrayType::get(acc, static_cast<uint64_t>(padded(width))));
  }
  auto toAcc = [&](PrimitiveType from, llvm::Value* v) -> llvm::Value* { return convert(from, accType, v); };
  // An operand's index: batch dimension `batch[b]` takes batch coordinate b, the contracting dimension `kk`,
  // the remaining one `free`.
  auto operandIndex = [](int rank, const std::vector<int64_t>& batch, int64_t contracting,
                         const std::vector<llvm::Value*>& batchIndex, llvm::Value* kk, llvm::Value* free) {
    Index index;
    index.dims.assign(static_cast<size_t>(rank), free);
    for (size_t b = 0; b < batch.size(); ++b) index.dims[static_cast<size_t>(batch[b])] = batchIndex[b];
    index.dims[static_cast<size_t>(contracting)] = kk;
    return index;
  };
  // When the rhs free dimension is the innermost one (unit stride) and rhs is an argument buffer of the
  // accumulation type, a tile of an rhs row is one contiguous vector load.
  const int rhsFree = [&] {
    for (int dim = 0; dim < rhs->shape().rank(); ++dim) {
      if (dim != d.rhsContracting[0] && std::find(d.rhsBatch.begin(), d.rhsBatch.end(), dim) == d.rhsBatch.end()) {
        return dim;
      }
    }
    return -1;
  }();
  const auto rhsLeaf = m_leaves.find(rhs);
  const bool rhsContiguous =
      rhsLeaf != m_leaves.end() && rhsFree == rhs->shape().rank() - 1 && rhs->shape().elementType() == accType;
  // A narrow integer rhs (s8, u8, s16) of an integer dot, free dimension innermost: a tile of a row is one load of
  // the narrow values, widened as a vector (loadColumns).
  auto narrowInteger = [](PrimitiveType t) {
    return t == PrimitiveType::kS8 || t == PrimitiveType::kU8 || t == PrimitiveType::kS16;
  };
  const bool rhsNarrowContiguous = !floatAcc && rhsLeaf != m_leaves.end() && rhsFree == rhs->shape().rank() - 1 &&
                                   narrowInteger(rhs->shape().elementType()) &&
                                   physicalStrides(rhs->shape()) == rowMajorStrides(rhs->shape().dimensions());
  // Narrow integer dots (s8, u8, s16 operands summed in s32) on x86: two k terms per lane at once. The lhs pair
  // (a[2p], a[2p+1]) is broadcast as 16-bit pairs, rhs rows 2p and 2p+1 are interleaved lane by lane, and pmaddwd
  // multiplies the pairs and adds each pair's two products into one s32 lane (vpdpwssd with the accumulator where
  // the CPU has VNNI). Exact: a product of two 16-bit values and the sum of two wrap in s32 as XLA's s32 sums do.
  // The s32 multiply it replaces is a two-micro-op vpmulld per 16 terms, and it took 3.7x XLA's time on an int8 MLP.
  const bool pairs = m_vectors.int16Pairs && m_target == KernelTarget::kCpu &&
                     (accType == PrimitiveType::kS32 || accType == PrimitiveType::kU32) &&
                     narrowInteger(lhs->shape().elementType()) && narrowInteger(rhs->shape().elementType());
  llvm::Type* i16 = m_b.getInt16Ty();
  const int64_t registerLanes = m_vectors.registerBytes / 4;  // s32 lanes of one vector register
  // The pairwise products of a and b (vectors of 2 * lanes32 i16) summed per pair: lanes32 i32, one pmaddwd per
  // vector register.
  auto pairProducts = [&](llvm::Value* a, llvm::Value* b, int64_t lanes32) -> llvm::Value* {
    const llvm::Intrinsic::ID pmadd = m_vectors.registerBytes == 64   ? llvm::Intrinsic::x86_avx512_pmaddw_d_512
                                      : m_vectors.registerBytes == 32 ? llvm::Intrinsic::x86_avx2_pmadd_wd
                                                                      : llvm::Intrinsic::x86_sse2_pmadd_wd;
    std::vector<llvm::Value*> parts;
    for (int64_t first = 0; first < 2 * lanes32; first += 2 * registerLanes) {
      std::vector<int> mask;
      for (int64_t j = 0; j < 2 * registerLanes; ++j) mask.push_back(static_cast<int>(first + j));
      parts.push_back(m_b.CreateIntrinsic(pmadd, {}, {m_b.CreateShuffleVector(a, mask), m_b.CreateShuffleVector(b, mask)}));
    }
    return llvm::concatenateVectors(m_b, parts);
  };
  // (a0, a1) as lanes32 copies of the 16-bit pair.
  auto lhsPair = [&](llvm::Value* a0, llvm::Value* a1, int64_t lanes32) -> llvm::Value* {
    llvm::Value* pair = llvm::PoisonValue::get(llvm::FixedVectorType::get(i16, 2));
    pair = m_b.CreateInsertElement(pair, m_b.CreateTrunc(a0, i16), i64(0));
    pair = m_b.CreateInsertElement(pair, m_b.CreateTrunc(a1, i16), i64(1));
    llvm::Value* word = m_b.CreateBitCast(pair, m_b.getInt32Ty());
    return m_b.CreateBitCast(m_b.CreateVectorSplat(static_cast<unsigned>(lanes32), word),
                             llvm::FixedVectorType::get(i16, static_cast<unsigned>(2 * lanes32)));
  };
  // Two tiles of lanes32 s32 values (rows 2p and 2p+1) as 16-bit pairs, interleaved: t0[0], t1[0], t0[1], ...
  auto interleave = [&](llvm::Value* t0, llvm::Value* t1, int64_t lanes32) -> llvm::Value* {
    llvm::Type* half = llvm::FixedVectorType::get(i16, static_cast<unsigned>(lanes32));
    std::vector<int> mask;
    for (int64_t j = 0; j < lanes32; ++j) {
      mask.push_back(static_cast<int>(j));
      mask.push_back(static_cast<int>(lanes32 + j));
    }
    return m_b.CreateShuffleVector(m_b.CreateTrunc(t0, half), m_b.CreateTrunc(t1, half), mask);
  };
  struct RowCoordinates {
    std::vector<llvm::Value*> batchIndex;
    llvm::Value* row = nullptr;
    llvm::Value* linearRow = nullptr;
  };
  auto coordinates = [&](llvm::Value* i) {
    RowCoordinates c;
    c.linearRow = i;
    c.row = i;
    if (batchRank > 0) {
      c.batchIndex = delinearize(m_b.CreateUDiv(i, i64(m)), batchDims).dims;
      c.row = m_b.CreateURem(i, i64(m));
    }
    return c;
  };
  // In transposed-rhs mode (below): the current batch's rhs as [k][n], in the accumulation type.
  llvm::Value* rhsScratch = nullptr;
  // While the rows walked are all of one batch (always without batch dimensions; with them, when the range is walked
  // batch by batch, below): that batch's index, so a block's rows share each rhs tile load.
  bool rowsShareBatch = batchRank == 0;
  std::vector<llvm::Value*> sharedBatch;
  // While a packed tile is current (below): its k rows of padded(w) values, contiguous.
  llvm::Value* rhsPacked = nullptr;
  // w contiguous values of type `stored` at `pointer` as a vector of padded(w) accumulation-type lanes, the extra
  // lanes zero (a masked load: no access past the w values); narrow integers widened (u8 by zeros, s8 and s16 by
  // sign).
  auto loadColumns = [&](llvm::Value* pointer, int64_t w, PrimitiveType stored) -> llvm::Value* {
    llvm::Type* vector = llvm::FixedVectorType::get(storageType(stored), static_cast<unsigned>(padded(w)));
    const llvm::Align align(static_cast<uint64_t>(elementByteSize(stored)));
    llvm::Value* loaded = nullptr;
    if (padded(w) == w) {
      loaded = m_b.CreateAlignedLoad(vector, pointer, align);
    } else {
      std::vector<llvm::Constant*> mask;
      for (int64_t j = 0; j < padded(w); ++j) mask.push_back(m_b.getInt1(j < w));
      loaded = m_b.CreateMaskedLoad(vector, pointer, align, llvm::ConstantVector::get(mask),
                                    llvm::Constant::getNullValue(vector));
    }
    if (stored == accType) return loaded;
    llvm::Type* wide = llvm::FixedVectorType::get(acc, static_cast<unsigned>(padded(w)));
    return stored == PrimitiveType::kU8 ? m_b.CreateZExt(loaded, wide) : m_b.CreateSExt(loaded, wide);
  };
  // Columns [j0, j0 + w) of rhs row kk of the batch `batchIndex`, as one vector of padded(w) accumulation-type
  // values.
  auto rhsTile = [&](const std::vector<llvm::Value*>& batchIndex, llvm::Value* kk, llvm::Value* j0,
                     int64_t w) -> llvm::Value* {
    llvm::Type* vector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(padded(w)));
    if (rhsPacked != nullptr) {
      llvm::Value* pointer = m_b.CreateInBoundsGEP(acc, rhsPacked, m_b.CreateMul(kk, i64(padded(w))));
      return m_b.CreateAlignedLoad(vector, pointer, llvm::Align(accBytes));
    }
    if (rhsScratch != nullptr) {  // the current batch's rhs, transposed to [k][n]
      return loadColumns(m_b.CreateInBoundsGEP(acc, rhsScratch, m_b.CreateAdd(m_b.CreateMul(kk, i64(n)), j0)), w,
                         accType);
    }
    if (rhsContiguous || rhsNarrowContiguous) {
      const PrimitiveType stored = rhs->shape().elementType();
      const Index first = operandIndex(rhs->shape().rank(), d.rhsBatch, d.rhsContracting[0], batchIndex, kk, j0);
      return loadColumns(m_b.CreateInBoundsGEP(storageType(stored), rhsLeaf->second,
                                               linearize(first.dims, rhs->shape().dimensions())),
                         w, stored);
    }
    llvm::Value* tile = llvm::Constant::getNullValue(vector);
    for (int64_t j = 0; j < w; ++j) {
      const Index index =
          operandIndex(rhs->shape().rank(), d.rhsBatch, d.rhsContracting[0], batchIndex, kk, m_b.CreateAdd(j0, i64(j)));
      tile = m_b.CreateInsertElement(tile, toAcc(rhs->shape().elementType(), generate(rhs, index)), i64(j));
    }
    return tile;
  };
  // fn(p, single) for each pair p of the k terms (2p and 2p+1), the last term alone (`single`) when k is odd.
  auto forEachPair = [&](const std::function<void(llvm::Value*, bool)>& fn, const char* name) {
    loop(i64(0), i64(k / 2), [&](llvm::Value* p) { fn(p, false); }, name);
    if (k % 2 != 0) fn(i64(k / 2), true);
  };
  // While a packed pair tile is current (pairs, below): its ceil(k/2) rows of 2 * padded(w) interleaved i16.
  llvm::Value* rhsPairsPacked = nullptr;
  // Columns [j0, j0 + w) of rhs rows 2p and 2p+1 (row 2p alone, the other lanes zero, when `single`: the last of
  // an odd k) as interleaved 16-bit pairs.
  auto pairTile = [&](const std::vector<llvm::Value*>& batchIndex, llvm::Value* p, int64_t w,
                      llvm::Value* j0, bool single) -> llvm::Value* {
    if (rhsPairsPacked != nullptr) {
      llvm::Type* vector = llvm::FixedVectorType::get(i16, static_cast<unsigned>(2 * padded(w)));
      llvm::Value* pointer = m_b.CreateInBoundsGEP(i16, rhsPairsPacked, m_b.CreateMul(p, i64(2 * padded(w))));
      return m_b.CreateAlignedLoad(vector, pointer, llvm::Align(2));
    }
    llvm::Value* kk = m_b.CreateMul(p, i64(2));
    llvm::Value* t0 = rhsTile(batchIndex, kk, j0, w);
    llvm::Value* t1 = single ? llvm::Constant::getNullValue(t0->getType())
                             : rhsTile(batchIndex, m_b.CreateAdd(kk, i64(1)), j0, w);
    return interleave(t0, t1, padded(w));
  };
  // Writes columns [j0, j0 + w) of row `c` from the sums in `sums`, through the epilogue.
  auto writeRow = [&](const RowCoordinates& c, llvm::Value* j0, int64_t w) {
    loop(
        i64(0), i64(w),
        [&](llvm::Value* jj) {
          llvm::Value* sum = m_b.CreateLoad(acc, m_b.CreateInBoundsGEP(acc, sums, jj));
          llvm::Value* value = convert(accType, type, sum);
          llvm::Value* j = m_b.CreateAdd(j0, jj);
          llvm::Value* linear = m_b.CreateAdd(m_b.CreateMul(c.linearRow, i64(n)), j);
          if (root != dot) {
            std::vector<llvm::Value*> dims = c.batchIndex;
            dims.push_back(c.row);
            dims.push_back(j);
            m_bound[dot] = value;
            value = generate(root, Index{dims, linear});
            m_bound.erase(dot);
          }
          store(out, root->shape().elementType(), linear, value);
        },
        "w");
  };
  // The rhs contracted on its innermost dimension (attention's q.k^T: rhs [.., n, k]): a tile of an rhs "row" would
  // be w loads k apart. Both operands' rows are contiguous along k instead, so each output is one inner product:
  // vector FMAs over k (kInnerLanes at a time into one partial vector, chunked as the other path), a horizontal
  // sum, the scalar tail.
  // At most 16K elements (64 KB of f32) of rhs per batch go through the stack scratch; the cpu preset transposes a
  // larger one in a kernel of its own before the dot (`dot-rhs-transpose`), so inner products remain for a larger
  // rhs only without that pass (`--pipeline=none`, the gpu preset run on the CPU).
  constexpr int64_t kMaxTransposedRhs = DotRhsTranspose::kMinRhsElements;
  const bool transposeRhs = !rhsContiguous && rhsLeaf != m_leaves.end() &&
                            d.rhsContracting[0] == rhs->shape().rank() - 1 && rhsFree == rhs->shape().rank() - 2 &&
                            rhs->shape().elementType() == accType && k * n <= kMaxTransposedRhs &&
                            physicalStrides(rhs->shape()) == rowMajorStrides(rhs->shape().dimensions());
  const auto lhsLeaf = m_leaves.find(lhs);
  const bool innerProducts = !transposeRhs && !rhsContiguous && rhsLeaf != m_leaves.end() &&
                             lhsLeaf != m_leaves.end() && d.rhsContracting[0] == rhs->shape().rank() - 1 &&
                             d.lhsContracting[0] == lhs->shape().rank() - 1 && rhs->shape().elementType() == accType &&
                             lhs->shape().elementType() == accType &&
                             physicalStrides(rhs->shape()) == rowMajorStrides(rhs->shape().dimensions()) &&
                             physicalStrides(lhs->shape()) == rowMajorStrides(lhs->shape().dimensions());
  if (innerProducts) {
    const int64_t lanes = m_vectors.registerBytes / elementByteSize(accType);  // one vector register
    llvm::Type* laneVector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(lanes));
    llvm::AllocaInst* partial = entryAlloca(laneVector);
    llvm::AllocaInst* total = entryAlloca(acc);
    llvm::Type* storage = storageType(accType);
    llvm::Value* zero = llvm::Constant::getNullValue(acc);
    loop(
        begin, end,
        [&](llvm::Value* i) {
          const RowCoordinates c = coordinates(i);
          const Index lhsFirst =
              operandIndex(lhs->shape().rank(), d.lhsBatch, d.lhsContracting[0], c.batchIndex, i64(0), c.row);
          llvm::Value* lhsRow =
              m_b.CreateInBoundsGEP(storage, lhsLeaf->second, linearize(lhsFirst.dims, lhs->shape().dimensions()));
          auto tile = [&](llvm::Value* j0, int64_t w) {
            loop(
                i64(0), i64(w),
                [&](llvm::Value* jj) {
                  const Index rhsFirst = operandIndex(rhs->shape().rank(), d.rhsBatch, d.rhsContracting[0],
                                                      c.batchIndex, i64(0), m_b.CreateAdd(j0, jj));
                  llvm::Value* rhsRow = m_b.CreateInBoundsGEP(storage, rhsLeaf->second,
                                                              linearize(rhsFirst.dims, rhs->shape().dimensions()));
                  m_b.CreateStore(zero, total);
                  auto vectorChunk = [&](llvm::Value* lo, llvm::Value* hi) {  // [lo, hi) in whole vectors
                    m_b.CreateStore(llvm::Constant::getNullValue(laneVector), partial);
                    loop(
                        lo, hi,
                        [&](llvm::Value* v) {
                          llvm::Value* offset = m_b.CreateMul(v, i64(lanes));
                          llvm::Value* a = m_b.CreateAlignedLoad(
                              laneVector, m_b.CreateInBoundsGEP(storage, lhsRow, offset), llvm::Align(4));
                          llvm::Value* b = m_b.CreateAlignedLoad(
                              laneVector, m_b.CreateInBoundsGEP(storage, rhsRow, offset), llvm::Align(4));
                          m_b.CreateStore(mulAdd(a, b, m_b.CreateLoad(laneVector, partial)), partial);
                        },
                        "kv");
                    // The chunk's lanes summed pairwise (a tree: reassociation only within this vector).
                    llvm::Value* sum = nullptr;
                    if (floatAcc) {
                      llvm::CallInst* reduced = m_b.CreateFAddReduce(zero, m_b.CreateLoad(laneVector, partial));
                      reduced->setHasAllowReassoc(true);
                      sum = reduced;
                    } else {
                      sum = m_b.CreateAddReduce(m_b.CreateLoad(laneVector, partial));
                    }
                    m_b.CreateStore(add(m_b.CreateLoad(acc, total), sum), total);
                  };
                  const int64_t vectors = k / lanes;
                  const int64_t perChunk = std::max<int64_t>(1, kDotChunk / lanes);
                  for (int64_t lo = 0; lo < vectors; lo += perChunk) {
                    vectorChunk(i64(lo), i64(std::min(vectors, lo + perChunk)));
                  }
                  loop(
                      i64(vectors * lanes), i64(k),
                      [&](llvm::Value* kk) {
                        llvm::Value* a = m_b.CreateLoad(acc, m_b.CreateInBoundsGEP(storage, lhsRow, kk));
                        llvm::Value* b = m_b.CreateLoad(acc, m_b.CreateInBoundsGEP(storage, rhsRow, kk));
                        m_b.CreateStore(mulAdd(a, b, m_b.CreateLoad(acc, total)), total);
                      },
                      "ktail");
                  m_b.CreateStore(m_b.CreateLoad(acc, total), m_b.CreateInBoundsGEP(acc, sums, jj));
                },
                "j");
            writeRow(c, j0, w);
          };
          loop(
              i64(0), i64(fullTiles), [&](llvm::Value* t) { tile(m_b.CreateMul(t, i64(width)), width); }, "tile");
          if (tailWidth != 0) tile(i64(fullTiles * width), tailWidth);
        },
        "row");
    return;
  }
  // Rows first .. first + rows - 1, columns [j0, j0 + w): each rhs tile load is shared by the rows when they
  // share a batch (rowsShareBatch; otherwise each row loads its own batch's rhs tile).
  auto block = [&](llvm::Value* first, int64_t rows, llvm::Value* j0, int64_t w) {
    llvm::Type* vector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(padded(w)));
    const std::vector<llvm::AllocaInst*>& total = totals[w];
    const std::vector<llvm::AllocaInst*>& partial = partials[w];
    std::vector<RowCoordinates> rowCoordinates;
    for (int64_t r = 0; r < rows; ++r) rowCoordinates.push_back(coordinates(m_b.CreateAdd(first, i64(r))));
    if (pairs) {  // exact integer sums: one pass over k in pairs, no chunks
      for (int64_t r = 0; r < rows; ++r) {
        m_b.CreateStore(llvm::Constant::getNullValue(vector), total[static_cast<size_t>(r)]);
      }
      auto step = [&](llvm::Value* p, bool single) {
        llvm::Value* kk = m_b.CreateMul(p, i64(2));
        llvm::Value* shared = rowsShareBatch ? pairTile(sharedBatch, p, w, j0, single) : nullptr;
        for (int64_t r = 0; r < rows; ++r) {
          const RowCoordinates& c = rowCoordinates[static_cast<size_t>(r)];
          auto lhsAt = [&](llvm::Value* at) {
            const Index index = operandIndex(lhs->shape().rank(), d.lhsBatch, d.lhsContracting[0], c.batchIndex, at,
                                             c.row);
            return toAcc(lhs->shape().elementType(), generate(lhs, index));
          };
          llvm::Value* a0 = lhsAt(kk);
          llvm::Value* a1 = single ? llvm::Constant::getNullValue(acc) : lhsAt(m_b.CreateAdd(kk, i64(1)));
          llvm::Value* tile = shared != nullptr ? shared : pairTile(c.batchIndex, p, w, j0, single);
          llvm::AllocaInst* slot = total[static_cast<size_t>(r)];
          m_b.CreateStore(
              m_b.CreateAdd(m_b.CreateLoad(vector, slot), pairProducts(lhsPair(a0, a1, padded(w)), tile, padded(w))),
              slot);
        }
      };
      forEachPair(step, "kpair");
      for (int64_t r = 0; r < rows; ++r) {
        m_b.CreateStore(m_b.CreateLoad(vector, total[static_cast<size_t>(r)]), sums);
        writeRow(rowCoordinates[static_cast<size_t>(r)], j0, w);
      }
      return;
    }
    // Terms [lo, hi) of every row's sums into its partial sums, then added to its totals.
    auto chunk = [&](llvm::Value* lo, llvm::Value* hi) {
      for (int64_t r = 0; r < rows; ++r) {
        m_b.CreateStore(llvm::Constant::getNullValue(vector), partial[static_cast<size_t>(r)]);
      }
      loop(
          lo, hi,
          [&](llvm::Value* kk) {
            llvm::Value* shared = rowsShareBatch ? rhsTile(sharedBatch, kk, j0, w) : nullptr;
            for (int64_t r = 0; r < rows; ++r) {
              const RowCoordinates& c = rowCoordinates[static_cast<size_t>(r)];
              const Index lhsIndex =
                  operandIndex(lhs->shape().rank(), d.lhsBatch, d.lhsContracting[0], c.batchIndex, kk, c.row);
              llvm::Value* a = toAcc(lhs->shape().elementType(), generate(lhs, lhsIndex));
              llvm::Value* tile = shared != nullptr ? shared : rhsTile(c.batchIndex, kk, j0, w);
              llvm::AllocaInst* slot = partial[static_cast<size_t>(r)];
              llvm::Value* broadcast = m_b.CreateVectorSplat(static_cast<unsigned>(padded(w)), a);
              m_b.CreateStore(mulAdd(broadcast, tile, m_b.CreateLoad(vector, slot)), slot);
            }
          },
          "k");
      for (int64_t r = 0; r < rows; ++r) {
        llvm::AllocaInst* t = total[static_cast<size_t>(r)];
        llvm::AllocaInst* p = partial[static_cast<size_t>(r)];
        m_b.CreateStore(add(m_b.CreateLoad(vector, t), m_b.CreateLoad(vector, p)), t);
      }
    };
    for (int64_t r = 0; r < rows; ++r) {
      m_b.CreateStore(llvm::Constant::getNullValue(vector), total[static_cast<size_t>(r)]);
    }
    const int64_t fullChunks = k / kDotChunk;
    if (fullChunks > 0) {
      loop(
          i64(0), i64(fullChunks),
          [&](llvm::Value* c) {
            llvm::Value* lo = m_b.CreateMul(c, i64(kDotChunk));
            chunk(lo, m_b.CreateAdd(lo, i64(kDotChunk)));
          },
          "kchunk");
    }
    if (k % kDotChunk != 0) chunk(i64(fullChunks * kDotChunk), i64(k));
    for (int64_t r = 0; r < rows; ++r) {
      m_b.CreateStore(m_b.CreateLoad(vector, total[static_cast<size_t>(r)]), sums);
      writeRow(rowCoordinates[static_cast<size_t>(r)], j0, w);
    }
  };
  // Rows [lo, hi) of the column tile [j0, j0 + w): whole blocks of rowBlock rows, then what remains in blocks of
  // halving size (4 + 2 + 1 for 7 rows left, not 7 single-row FMA chains bound by FMA latency); the last size, 1,
  // takes every row still left.
  auto rowsOfTile = [&](llvm::Value* lo, llvm::Value* hi, llvm::Value* j0, int64_t w) {
    llvm::Value* blocks = m_b.CreateUDiv(m_b.CreateSub(hi, lo), i64(rowBlock));
    loop(
        i64(0), blocks,
        [&](llvm::Value* b) { block(m_b.CreateAdd(lo, m_b.CreateMul(b, i64(rowBlock))), rowBlock, j0, w); },
        "rowblock");
    llvm::Value* next = m_b.CreateAdd(lo, m_b.CreateMul(blocks, i64(rowBlock)));
    for (int64_t size = rowBlock / 2; size >= 1; size /= 2) {
      llvm::Value* count = m_b.CreateUDiv(m_b.CreateSub(hi, next), i64(size));
      llvm::Value* first = next;
      loop(
          i64(0), count, [&](llvm::Value* b) { block(m_b.CreateAdd(first, m_b.CreateMul(b, i64(size))), size, j0, w); },
          "rowtail");
      next = m_b.CreateAdd(next, m_b.CreateMul(count, i64(size)));
    }
  };
  // The range's rows in groups whose lhs rows stay in the L2 cache (kDotRowGroupBytes); per group, each column
  // tile over all the group's rows. When the rows of a block share their rhs tile (no batch dimensions, or the
  // transposed scratch of one batch) and the dot has more rows than one block, the tile's k rows of w columns are
  // first packed into a contiguous stack scratch of k x padded(w) (BLAS's packing of B): the row blocks then
  // stream it from L1/L2 at unit stride, where the rhs rows themselves lie n elements apart and, for n a multiple
  // of 1024 f32, all fall into the same few cache sets (256x1024x1024: the tile thrashed even L2). Packing costs
  // one pass over the tile per group; a single-block dot (a matrix-vector product) reads the rhs directly.
  const int64_t groupRows =
      std::max<int64_t>(rowBlock, kDotRowGroupBytes / std::max<int64_t>(1, k * accBytes) / rowBlock * rowBlock);
  const bool pack = m > rowBlock && k * padded(width) * accBytes <= kDotPackedBytes;
  llvm::AllocaInst* packed = nullptr;
  if (pack) {
    llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
    packed = entry.CreateAlloca(llvm::ArrayType::get(acc, static_cast<uint64_t>(k * padded(width))));
    packed->setAlignment(llvm::Align(64));
  }
  // Rows [lo, hi) of the tile [j0, j0 + w), packed first when `pack`.
  auto tileRows = [&](llvm::Value* lo, llvm::Value* hi, llvm::Value* j0, int64_t w) {
    if (!pack || !rowsShareBatch) {
      rowsOfTile(lo, hi, j0, w);
      return;
    }
    if (pairs) {  // the tile's rows as interleaved pairs (rows 2p and 2p+1 side by side, lane by lane)
      forEachPair(
          [&](llvm::Value* p, bool single) {
            m_b.CreateAlignedStore(pairTile(sharedBatch, p, w, j0, single),
                                   m_b.CreateInBoundsGEP(i16, packed, m_b.CreateMul(p, i64(2 * padded(w)))),
                                   llvm::Align(2));
          },
          "packpairs");
      rhsPairsPacked = packed;
      rowsOfTile(lo, hi, j0, w);
      rhsPairsPacked = nullptr;
      return;
    }
    loop(
        i64(0), i64(k),
        [&](llvm::Value* kk) {
          m_b.CreateAlignedStore(rhsTile(sharedBatch, kk, j0, w),
                                 m_b.CreateInBoundsGEP(acc, packed, m_b.CreateMul(kk, i64(padded(w)))),
                                 llvm::Align(accBytes));
        },
        "pack");
    rhsPacked = packed;
    rowsOfTile(lo, hi, j0, w);
    rhsPacked = nullptr;
  };
  auto rowsRange = [&](llvm::Value* lo, llvm::Value* hi) {
    llvm::Value* groups = m_b.CreateUDiv(m_b.CreateAdd(m_b.CreateSub(hi, lo), i64(groupRows - 1)), i64(groupRows));
    loop(
        i64(0), groups,
        [&](llvm::Value* g) {
          llvm::Value* groupLo = m_b.CreateAdd(lo, m_b.CreateMul(g, i64(groupRows)));
          llvm::Value* groupEnd = m_b.CreateAdd(groupLo, i64(groupRows));
          llvm::Value* groupHi = m_b.CreateSelect(m_b.CreateICmpSLT(groupEnd, hi), groupEnd, hi);
          loop(
              i64(0), i64(fullTiles),
              [&](llvm::Value* t) { tileRows(groupLo, groupHi, m_b.CreateMul(t, i64(width)), width); }, "tile");
          if (tailWidth != 0) tileRows(groupLo, groupHi, i64(fullTiles * width), tailWidth);
        },
        "rowgroup");
  };
  // With batch dimensions and at least a block of rows per batch, the range is walked batch by batch, so the rows
  // of a block share each rhs tile load (and the tile can be packed) as they do without batch dimensions: a
  // batched 8x64x32x64 dot walked row by row across batches loaded an rhs tile per row, 96 us against 8 x 6 for the
  // same dot unbatched. Fewer rows per batch (a batched matrix-vector product) keep blocks across batches: one row
  // alone would be a single FMA chain, bound by its latency.
  // The rhs contracted on its innermost dimension and small enough (a transposed weight, attention's k) is walked
  // batch by batch too: per batch the range touches, its [n][k] matrix is copied once into a stack scratch as
  // [k][n], and the rows read their tiles from there as contiguous vectors.
  if (transposeRhs || (batchRank > 0 && m >= rowBlock)) {
    llvm::AllocaInst* scratch = nullptr;
    if (transposeRhs) {
      llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
      scratch = entry.CreateAlloca(llvm::ArrayType::get(acc, static_cast<uint64_t>(k * n)));
      scratch->setAlignment(llvm::Align(64));
    }
    llvm::Type* storage = storageType(rhs->shape().elementType());
    loop(
        m_b.CreateUDiv(begin, i64(m)), m_b.CreateUDiv(m_b.CreateAdd(end, i64(m - 1)), i64(m)),
        [&](llvm::Value* batch) {
          llvm::Value* batchFirst = m_b.CreateMul(batch, i64(m));
          llvm::Value* lo = m_b.CreateSelect(m_b.CreateICmpSGT(begin, batchFirst), begin, batchFirst);
          llvm::Value* batchEnd = m_b.CreateAdd(batchFirst, i64(m));
          llvm::Value* hi = m_b.CreateSelect(m_b.CreateICmpSLT(end, batchEnd), end, batchEnd);
          const std::vector<llvm::Value*> batchIndex =
              batchRank > 0 ? delinearize(batch, batchDims).dims : std::vector<llvm::Value*>{};
          if (transposeRhs) {
            const Index origin =
                operandIndex(rhs->shape().rank(), d.rhsBatch, d.rhsContracting[0], batchIndex, i64(0), i64(0));
            llvm::Value* base =
                m_b.CreateInBoundsGEP(storage, rhsLeaf->second, linearize(origin.dims, rhs->shape().dimensions()));
            // In register blocks: LLVM vectorised the plain loop nest with gathers, 1.2 ns an element here.
            m_e.transposes().transposeMatrix(base, scratch, n, k, acc);
            rhsScratch = scratch;
          }
          rowsShareBatch = true;
          sharedBatch = batchIndex;
          rowsRange(lo, hi);
          rowsShareBatch = batchRank == 0;
          sharedBatch.clear();
          rhsScratch = nullptr;
        },
        "batch");
    return;
  }
  rowsRange(begin, end);
}

llvm::Value* DotEmitter::dot(const HloInstruction* instruction, const Index& index) {
  if (!instruction->attributes().dot) return fail(instruction, "dot without dimension numbers");
  const DotDimensionNumbers& dnums = *instruction->attributes().dot;
  const HloInstruction* lhs = instruction->operand(0);
  const HloInstruction* rhs = instruction->operand(1);
  const PrimitiveType type = instruction->shape().elementType();
  const int lhsRank = lhs->shape().rank();
  const int rhsRank = rhs->shape().rank();
  std::vector<llvm::Value*> lhsIndex(static_cast<size_t>(lhsRank), nullptr);
  std::vector<llvm::Value*> rhsIndex(static_cast<size_t>(rhsRank), nullptr);
  size_t out = 0;
  for (size_t i = 0; i < dnums.lhsBatch.size(); ++i) {
    lhsIndex[static_cast<size_t>(dnums.lhsBatch[i])] = index.dims[out];
    rhsIndex[static_cast<size_t>(dnums.rhsBatch[i])] = index.dims[out];
    ++out;
  }
  auto isIn = [](const std::vector<int64_t>& v, int64_t d) { return std::find(v.begin(), v.end(), d) != v.end(); };
  for (int d = 0; d < lhsRank; ++d) {
    if (!isIn(dnums.lhsBatch, d) && !isIn(dnums.lhsContracting, d))
      lhsIndex[static_cast<size_t>(d)] = index.dims[out++];
  }
  for (int d = 0; d < rhsRank; ++d) {
    if (!isIn(dnums.rhsBatch, d) && !isIn(dnums.rhsContracting, d))
      rhsIndex[static_cast<size_t>(d)] = index.dims[out++];
  }
  if (out != index.dims.size() || dnums.lhsContracting.size() != dnums.rhsContracting.size()) {
    return fail(instruction, "dimension numbers do not match the shapes");
  }
  // The loop nest over the contracting dimensions, k increasing (the evaluator's order); `step` runs at each k.
  auto contract = [&](const std::function<void()>& step) {
    std::function<void(size_t)> nest = [&](size_t level) {
      if (level == dnums.lhsContracting.size()) {
        step();
        return;
      }
      const int64_t ld = dnums.lhsContracting[level];
      const int64_t rd = dnums.rhsContracting[level];
      loop(
          i64(0), i64(lhs->shape().dimension(static_cast<int>(ld))),
          [&](llvm::Value* k) {
            lhsIndex[static_cast<size_t>(ld)] = k;
            rhsIndex[static_cast<size_t>(rd)] = k;
            nest(level + 1);
          },
          "k");
    };
    nest(0);
  };
  if (isComplex(type)) {
    // Complex dots: products and sums in the element type.
    llvm::Type* complexType = computeType(type);
    llvm::AllocaInst* accumulator = entryAlloca(complexType);
    m_b.CreateStore(llvm::Constant::getNullValue(complexType), accumulator);
    contract([&] {
      llvm::Value* a = generate(lhs, Index{lhsIndex, nullptr});
      llvm::Value* c = generate(rhs, Index{rhsIndex, nullptr});
      llvm::Value* product = m_e.complex().complexBinary(HloOpcode::kMultiply, type, a, c);
      m_b.CreateStore(
          m_e.complex().complexBinary(HloOpcode::kAdd, type, m_b.CreateLoad(complexType, accumulator), product),
          accumulator);
    });
    return m_b.CreateLoad(complexType, accumulator);
  }
  // Floating dots accumulate as rowDot's do (XLA's semantics): f64 in f64, f32 / f16 / bf16 in f32, rounded
  // once at the end; integers in int64.
  const bool isFloat = isFloatingPoint(type);
  const PrimitiveType floatAcc = dotAccumulationType(type);
  llvm::Type* accType = isFloat ? computeType(floatAcc) : m_b.getInt64Ty();
  llvm::AllocaInst* accumulator = entryAlloca(accType);
  m_b.CreateStore(isFloat ? llvm::ConstantFP::get(accType, 0.0) : i64(0), accumulator);
  const PrimitiveType lhsType = lhs->shape().elementType();
  const PrimitiveType rhsType = rhs->shape().elementType();
  auto widen = [&](PrimitiveType from, llvm::Value* v) -> llvm::Value* {
    if (isFloat) return convert(from, floatAcc, v);
    return isSignedInteger(from) ? m_b.CreateSExtOrTrunc(v, accType) : m_b.CreateZExtOrTrunc(v, accType);
  };
  contract([&] {
    llvm::Value* a = widen(lhsType, generate(lhs, Index{lhsIndex, nullptr}));
    llvm::Value* c = widen(rhsType, generate(rhs, Index{rhsIndex, nullptr}));
    llvm::Value* acc = m_b.CreateLoad(accType, accumulator);
    m_b.CreateStore(
        isFloat ? intrinsic(llvm::Intrinsic::fmuladd, {a, c, acc}) : m_b.CreateAdd(acc, m_b.CreateMul(a, c)),
        accumulator);
  });
  llvm::Value* sum = m_b.CreateLoad(accType, accumulator);
  if (isFloat) return convert(floatAcc, type, sum);
  return m_b.CreateTrunc(sum, computeType(type));
}

}  // namespace fusionscope::core
