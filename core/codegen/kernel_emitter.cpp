#include "core/codegen/kernel_emitter.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include "core/codegen/element_types.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/literal.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {

int64_t kernelRange(const PlanKernel& kernel) {
  int64_t range = 0;
  for (const Shape& shape : kernel.outputShapes) range = std::max(range, shape.elementCount());
  return range;
}

namespace {

// A multi-dimensional index into the shape of the instruction being generated; `linear` is its row-major
// linear index when already known (saves recomputing it for loads of same-shaped buffers).
struct Index {
  std::vector<llvm::Value*> dims;
  llvm::Value* linear = nullptr;
};

// Generates the value of an instruction at an index from the values of its operands (XLA's elemental IR
// emitter): leaves (fusion parameters, operands of an unfused kernel) are loads from argument buffers, reducer
// parameters are bound scalars, and everything else is computed from operands at derived indices.
class ElementEmitter {
 public:
  ElementEmitter(llvm::Module& module, KernelTarget target)
      : m_module(module), m_context(module.getContext()), m_b(m_context), m_target(target) {}

  Status status() const { return m_status; }
  llvm::IRBuilder<>& builder() { return m_b; }
  llvm::LLVMContext& context() { return m_context; }

  void beginFunction(llvm::Function* function) {
    m_function = function;
    m_leaves.clear();
    m_bound.clear();
    m_cache.clear();
    m_sideOutput = {};
  }
  void setLeaf(const HloInstruction* instruction, llvm::Value* pointer) { m_leaves[instruction] = pointer; }

  llvm::Value* i64(int64_t v) { return llvm::ConstantInt::get(m_b.getInt64Ty(), static_cast<uint64_t>(v), true); }

  llvm::Type* computeType(PrimitiveType type) {
    switch (type) {
      case PrimitiveType::kPred: return m_b.getInt1Ty();
      case PrimitiveType::kF16:
      case PrimitiveType::kBF16:
      case PrimitiveType::kF32: return m_b.getFloatTy();
      case PrimitiveType::kF64: return m_b.getDoubleTy();
      default: return m_b.getIntNTy(static_cast<unsigned>(8 * elementByteSize(type)));
    }
  }
  llvm::Type* storageType(PrimitiveType type) {
    switch (type) {
      case PrimitiveType::kPred: return m_b.getInt8Ty();
      case PrimitiveType::kF16: return m_b.getHalfTy();
      case PrimitiveType::kBF16: return m_b.getInt16Ty();
      default: return computeType(type);
    }
  }

  llvm::Value* linearize(const std::vector<llvm::Value*>& dims, const std::vector<int64_t>& shape) {
    llvm::Value* linear = i64(0);
    int64_t stride = 1;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      if (shape[static_cast<size_t>(i)] != 1) {
        linear = m_b.CreateAdd(linear, m_b.CreateMul(dims[static_cast<size_t>(i)], i64(stride)));
      }
      stride *= shape[static_cast<size_t>(i)];
    }
    return linear;
  }
  Index delinearize(llvm::Value* linear, const std::vector<int64_t>& shape) {
    Index index;
    index.linear = linear;
    index.dims.resize(shape.size());
    int64_t stride = 1;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      const int64_t size = shape[static_cast<size_t>(i)];
      llvm::Value* dim = stride == 1 ? linear : m_b.CreateUDiv(linear, i64(stride));
      if (i > 0 && size != 1) dim = m_b.CreateURem(dim, i64(size));
      index.dims[static_cast<size_t>(i)] = size == 1 ? i64(0) : dim;
      stride *= size;
    }
    return index;
  }
  llvm::Value* linearOf(const Index& index, const Shape& shape) {
    return index.linear != nullptr ? index.linear : linearize(index.dims, shape.dimensions());
  }

  llvm::Value* load(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear) {
    llvm::Type* storage = storageType(type);
    llvm::Value* raw = m_b.CreateLoad(storage, m_b.CreateInBoundsGEP(storage, pointer, linear));
    switch (type) {
      case PrimitiveType::kPred: return m_b.CreateICmpNE(raw, m_b.getInt8(0));
      case PrimitiveType::kF16: return m_b.CreateFPExt(raw, m_b.getFloatTy());
      case PrimitiveType::kBF16:
        return m_b.CreateBitCast(m_b.CreateShl(m_b.CreateZExt(raw, m_b.getInt32Ty()), 16), m_b.getFloatTy());
      default: return raw;
    }
  }
  llvm::Value* toStorage(PrimitiveType type, llvm::Value* v) {
    switch (type) {
      case PrimitiveType::kPred: return m_b.CreateZExt(v, m_b.getInt8Ty());
      case PrimitiveType::kF16: return m_b.CreateFPTrunc(v, m_b.getHalfTy());
      case PrimitiveType::kBF16: return floatToBf16Bits(v);
      default: return v;
    }
  }
  void store(llvm::Value* pointer, PrimitiveType type, llvm::Value* linear, llvm::Value* v) {
    llvm::Type* storage = storageType(type);
    m_b.CreateStore(toStorage(type, v), m_b.CreateInBoundsGEP(storage, pointer, linear));
  }
  // Round-to-nearest-even float -> bf16 bits; NaN stays a quiet NaN.
  llvm::Value* floatToBf16Bits(llvm::Value* v) {
    llvm::Value* bits = m_b.CreateBitCast(v, m_b.getInt32Ty());
    llvm::Value* lsb = m_b.CreateAnd(m_b.CreateLShr(bits, 16), m_b.getInt32(1));
    llvm::Value* rounded = m_b.CreateLShr(m_b.CreateAdd(bits, m_b.CreateAdd(lsb, m_b.getInt32(0x7FFF))), 16);
    llvm::Value* isNan = m_b.CreateFCmpUNO(v, v);
    llvm::Value* result = m_b.CreateSelect(isNan, m_b.CreateOr(m_b.CreateLShr(bits, 16), m_b.getInt32(0x40)), rounded);
    return m_b.CreateTrunc(result, m_b.getInt16Ty());
  }
  // A float computed for a narrow type, rounded to that type (so every op rounds as the evaluator does).
  llvm::Value* roundTo(PrimitiveType type, llvm::Value* v) {
    if (type == PrimitiveType::kF16) return m_b.CreateFPExt(m_b.CreateFPTrunc(v, m_b.getHalfTy()), m_b.getFloatTy());
    if (type == PrimitiveType::kBF16) {
      llvm::Value* bits = m_b.CreateZExt(floatToBf16Bits(v), m_b.getInt32Ty());
      return m_b.CreateBitCast(m_b.CreateShl(bits, 16), m_b.getFloatTy());
    }
    return v;
  }

  llvm::Value* fail(const HloInstruction* instruction, const std::string& why) {
    if (m_status.ok()) {
      m_status =
          Status::error(fmt::format("{}: cannot lower {} ({})", instruction->name(), instruction->opcodeString(), why));
    }
    return llvm::PoisonValue::get(computeType(isSupportedElementType(instruction->shape().elementType())
                                                  ? instruction->shape().elementType()
                                                  : PrimitiveType::kF32));
  }

  // Scopes of the value cache: values made inside a loop body or a branch do not dominate what follows it.
  using CacheKey = std::pair<const HloInstruction*, std::vector<llvm::Value*>>;
  std::map<CacheKey, llvm::Value*> saveCache() { return m_cache; }
  void restoreCache(std::map<CacheKey, llvm::Value*> saved) { m_cache = std::move(saved); }

  // for (i = lo; i < hi; ++i) body(i); leaves the builder after the loop.
  template <typename Body>
  void loop(llvm::Value* lo, llvm::Value* hi, const Body& body, const char* name = "i") {
    llvm::BasicBlock* pre = m_b.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(m_context, std::string(name) + ".header", m_function);
    llvm::BasicBlock* bodyBlock = llvm::BasicBlock::Create(m_context, std::string(name) + ".body", m_function);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(m_context, std::string(name) + ".exit", m_function);
    m_b.CreateBr(header);
    m_b.SetInsertPoint(header);
    llvm::PHINode* i = m_b.CreatePHI(m_b.getInt64Ty(), 2, name);
    i->addIncoming(lo, pre);
    m_b.CreateCondBr(m_b.CreateICmpSLT(i, hi), bodyBlock, exit);
    m_b.SetInsertPoint(bodyBlock);
    auto saved = saveCache();
    body(static_cast<llvm::Value*>(i));
    restoreCache(std::move(saved));
    llvm::Value* next = m_b.CreateAdd(i, i64(1), "", true, true);
    i->addIncoming(next, m_b.GetInsertBlock());
    m_b.CreateBr(header);
    m_b.SetInsertPoint(exit);
  }

  // cond ? then() : otherwise(), with control flow so the untaken side is never evaluated (it may read out of
  // bounds).
  template <typename Then, typename Else>
  llvm::Value* branch(llvm::Value* cond, llvm::Type* type, const Then& thenFn, const Else& elseFn) {
    llvm::BasicBlock* thenBlock = llvm::BasicBlock::Create(m_context, "then", m_function);
    llvm::BasicBlock* elseBlock = llvm::BasicBlock::Create(m_context, "else", m_function);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(m_context, "merge", m_function);
    m_b.CreateCondBr(cond, thenBlock, elseBlock);
    m_b.SetInsertPoint(thenBlock);
    auto saved = saveCache();
    llvm::Value* a = thenFn();
    llvm::BasicBlock* thenEnd = m_b.GetInsertBlock();
    m_b.CreateBr(merge);
    restoreCache(saved);
    m_b.SetInsertPoint(elseBlock);
    llvm::Value* c = elseFn();
    llvm::BasicBlock* elseEnd = m_b.GetInsertBlock();
    m_b.CreateBr(merge);
    restoreCache(std::move(saved));
    m_b.SetInsertPoint(merge);
    llvm::PHINode* phi = m_b.CreatePHI(type, 2);
    phi->addIncoming(a, thenEnd);
    phi->addIncoming(c, elseEnd);
    return phi;
  }

  llvm::AllocaInst* entryAlloca(llvm::Type* type) {
    llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
    return entry.CreateAlloca(type);
  }

  llvm::Value* generate(const HloInstruction* instruction, const Index& index) {
    if (auto it = m_bound.find(instruction); it != m_bound.end()) return it->second;
    CacheKey key{instruction, index.dims};
    if (auto it = m_cache.find(key); it != m_cache.end()) return it->second;
    llvm::Value* value = nullptr;
    const Shape& shape = instruction->shape();
    if (!shape.isArray() || !isSupportedElementType(shape.elementType())) {
      return fail(instruction, fmt::format("element type of {} is not supported", shape.toString(false)));
    }
    if (auto it = m_leaves.find(instruction); it != m_leaves.end()) {
      value = load(it->second, shape.elementType(), linearOf(index, shape));
    } else {
      value = generateComputed(instruction, index);
    }
    m_cache[key] = value;
    return value;
  }

  // Applies a scalar computation (a reducer) to bound arguments.
  llvm::Value* applyComputation(const HloComputation* computation, const std::vector<llvm::Value*>& arguments,
                                const HloInstruction* user) {
    std::vector<HloInstruction*> parameters = computation->parameters();
    if (parameters.size() != arguments.size() || computation->root() == nullptr ||
        !computation->root()->shape().isArray()) {
      return fail(user,
                  fmt::format("reducer {} must take {} scalars and return one", computation->name(), arguments.size()));
    }
    auto savedBound = m_bound;
    auto savedCache = saveCache();
    for (size_t i = 0; i < parameters.size(); ++i) m_bound[parameters[i]] = arguments[i];
    llvm::Value* result = generate(computation->root(), Index{});
    m_bound = std::move(savedBound);
    restoreCache(std::move(savedCache));
    return result;
  }

  // A 2-D dot [m,k] x [k,n] (either operand possibly transposed) as the CPU's outer loop over rows
  // [begin, end). Accumulation is in the dot's own precision as XLA's CPU backend does it: f64 dots in f64, every
  // other floating dot (f32, f16, bf16) in f32, with one rounding to the output type at the end; the k terms are
  // summed in chunks of kDotChunk (each in increasing k order into a fresh partial sum, then added to the total),
  // each term as a fused multiply-add where the CPU has one (llvm.fmuladd). The evaluator
  // sums in double, so an f32 dot differs from it by the f32 rounding of K partial sums (see docs/CODEGEN.md).
  // Loop structure (what LLVM vectorises): columns in tiles of up to kVectorN, each tile row's accumulators one
  // LLVM vector kept in registers across the k loop (broadcast the lhs element, load the rhs tile as a vector,
  // one vector FMA per row: on AVX-512 a vfmadd231ps with an embedded broadcast); rows register-blocked, up to 8
  // at a time sharing each rhs tile load, the remaining rows in blocks of halving size.
  // Batch dimensions (any positions) are allowed: rows are then (batch..., m) flattened, the output being
  // [batch..., m, n].
  static bool isRowDot(const HloInstruction* dot) {
    if (dot->opcode() != HloOpcode::kDot || !dot->attributes().dot) return false;
    const DotDimensionNumbers& d = *dot->attributes().dot;
    const int batch = static_cast<int>(d.lhsBatch.size());
    return dot->shape().rank() == batch + 2 && d.rhsBatch.size() == d.lhsBatch.size() && d.lhsContracting.size() == 1 &&
           d.rhsContracting.size() == 1 && dot->operand(0)->shape().rank() == batch + 2 &&
           dot->operand(1)->shape().rank() == batch + 2 && isFloatingPoint(dot->shape().elementType()) &&
           dot->shape().dimension(batch + 1) <= 8192;
  }
  // Rows a row dot's range covers: product of the batch dimensions times m.
  static int64_t rowDotRows(const HloInstruction* dot) {
    const int64_t n = dot->shape().dimension(dot->shape().rank() - 1);
    return n == 0 ? 0 : dot->shape().elementCount() / n;
  }
  static constexpr int64_t kVectorN = 32;
  // Rows per register block: enough independent FMA chains to hide FMA latency, few enough that a block's
  // accumulators and partial sums stay in the 32 vector registers (AVX-512) with room for the rhs tile.
  static int64_t rowDotBlock(const HloInstruction* dot) {
    const int64_t n = dot->shape().dimension(dot->shape().rank() - 1);
    const int64_t width = std::clamp<int64_t>(n, 1, kVectorN);
    const int64_t bytes = elementByteSize(dotAccumulationType(dot->shape().elementType()));
    const int64_t registersPerRow = (width * bytes + 63) / 64;
    return std::clamp<int64_t>(12 / registersPerRow, 1, 8);
  }
  // Terms summed into a fresh partial sum before it is added to the row's total: bounds the f32 rounding error
  // growth by about kDotChunk + K / kDotChunk roundings instead of K (blocked summation, as k-blocked BLAS
  // kernels get for free), at one vector add per row per chunk.
  static constexpr int64_t kDotChunk = 32;
  // The accumulation type of a dot producing `type`.
  static PrimitiveType dotAccumulationType(PrimitiveType type) {
    return type == PrimitiveType::kF64 ? PrimitiveType::kF64 : PrimitiveType::kF32;
  }
  // `root` is the dot itself or an elementwise epilogue over it (bias add, ReLU: a kOutput fusion): each output
  // row's dot sums are computed once and the epilogue reads them, bound in place of the dot.
  void rowDot(const HloInstruction* dot, const HloInstruction* root, llvm::Value* out, llvm::Value* begin,
              llvm::Value* end) {
    const DotDimensionNumbers& d = *dot->attributes().dot;
    const HloInstruction* lhs = dot->operand(0);
    const HloInstruction* rhs = dot->operand(1);
    const PrimitiveType type = dot->shape().elementType();
    const PrimitiveType accType = dotAccumulationType(type);
    const int batchRank = static_cast<int>(d.lhsBatch.size());
    const int64_t m = dot->shape().dimension(batchRank);
    const int64_t n = dot->shape().dimension(batchRank + 1);
    const int64_t k = lhs->shape().dimension(static_cast<int>(d.lhsContracting[0]));
    if (n == 0) return;
    const std::vector<int64_t> batchDims(dot->shape().dimensions().begin(),
                                         dot->shape().dimensions().begin() + batchRank);
    llvm::Type* acc = computeType(accType);
    // Columns are computed in tiles of `width` (all n when n <= kVectorN): a tile row's accumulators are one
    // vector. Rows per block: enough independent FMA chains to hide FMA latency, few enough that a block's
    // accumulators and partial sums stay in the 32 vector registers (AVX-512) with room for the rhs row.
    const int64_t width = std::min(n, kVectorN);
    const int64_t rowBlock = rowDotBlock(dot);
    const int64_t fullTiles = n / width;
    const int64_t tailWidth = n % width;
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
        llvm::Type* vector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(w));
        for (int64_t r = 0; r < rowBlock; ++r) {
          totals[w].push_back(slot(vector));
          partials[w].push_back(slot(vector));
        }
      }
      sums = slot(llvm::ArrayType::get(acc, static_cast<uint64_t>(width)));
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
    // Columns [j0, j0 + w) of rhs row kk of the batch `batchIndex`, as one vector of accumulation-type values.
    auto rhsTile = [&](const std::vector<llvm::Value*>& batchIndex, llvm::Value* kk, llvm::Value* j0,
                       int64_t w) -> llvm::Value* {
      llvm::Type* vector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(w));
      if (rhsContiguous) {
        const Index first = operandIndex(rhs->shape().rank(), d.rhsBatch, d.rhsContracting[0], batchIndex, kk, j0);
        llvm::Value* pointer = m_b.CreateInBoundsGEP(storageType(rhs->shape().elementType()), rhsLeaf->second,
                                                     linearize(first.dims, rhs->shape().dimensions()));
        return m_b.CreateAlignedLoad(vector, pointer, llvm::Align(elementByteSize(accType)));
      }
      llvm::Value* tile = llvm::PoisonValue::get(vector);
      for (int64_t j = 0; j < w; ++j) {
        const Index index = operandIndex(rhs->shape().rank(), d.rhsBatch, d.rhsContracting[0], batchIndex, kk,
                                         m_b.CreateAdd(j0, i64(j)));
        tile = m_b.CreateInsertElement(tile, toAcc(rhs->shape().elementType(), generate(rhs, index)), i64(j));
      }
      return tile;
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
    // Rows first .. first + rows - 1, columns [j0, j0 + w): each rhs tile load is shared by the rows when they
    // share a batch (always without batch dimensions; with them, each row loads its own batch's rhs tile).
    auto block = [&](llvm::Value* first, int64_t rows, llvm::Value* j0, int64_t w) {
      llvm::Type* vector = llvm::FixedVectorType::get(acc, static_cast<unsigned>(w));
      const std::vector<llvm::AllocaInst*>& total = totals[w];
      const std::vector<llvm::AllocaInst*>& partial = partials[w];
      std::vector<RowCoordinates> rowCoordinates;
      for (int64_t r = 0; r < rows; ++r) rowCoordinates.push_back(coordinates(m_b.CreateAdd(first, i64(r))));
      // Terms [lo, hi) of every row's sums into its partial sums, then added to its totals.
      auto chunk = [&](llvm::Value* lo, llvm::Value* hi) {
        for (int64_t r = 0; r < rows; ++r) {
          m_b.CreateStore(llvm::ConstantFP::get(vector, 0.0), partial[static_cast<size_t>(r)]);
        }
        loop(
            lo, hi,
            [&](llvm::Value* kk) {
              llvm::Value* shared = batchRank == 0 ? rhsTile({}, kk, j0, w) : nullptr;
              for (int64_t r = 0; r < rows; ++r) {
                const RowCoordinates& c = rowCoordinates[static_cast<size_t>(r)];
                const Index lhsIndex =
                    operandIndex(lhs->shape().rank(), d.lhsBatch, d.lhsContracting[0], c.batchIndex, kk, c.row);
                llvm::Value* a = toAcc(lhs->shape().elementType(), generate(lhs, lhsIndex));
                llvm::Value* tile = shared != nullptr ? shared : rhsTile(c.batchIndex, kk, j0, w);
                llvm::AllocaInst* slot = partial[static_cast<size_t>(r)];
                llvm::Value* broadcast = m_b.CreateVectorSplat(static_cast<unsigned>(w), a);
                m_b.CreateStore(intrinsic(llvm::Intrinsic::fmuladd, {broadcast, tile, m_b.CreateLoad(vector, slot)}),
                                slot);
              }
            },
            "k");
        for (int64_t r = 0; r < rows; ++r) {
          llvm::AllocaInst* t = total[static_cast<size_t>(r)];
          llvm::AllocaInst* p = partial[static_cast<size_t>(r)];
          m_b.CreateStore(m_b.CreateFAdd(m_b.CreateLoad(vector, t), m_b.CreateLoad(vector, p)), t);
        }
      };
      for (int64_t r = 0; r < rows; ++r) {
        m_b.CreateStore(llvm::ConstantFP::get(vector, 0.0), total[static_cast<size_t>(r)]);
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
    // Rows `first` .. `first + rows - 1` over every column tile: the full tiles in a loop, then the narrower
    // tail tile.
    auto rowsAllColumns = [&](llvm::Value* first, int64_t rows) {
      loop(
          i64(0), i64(fullTiles), [&](llvm::Value* t) { block(first, rows, m_b.CreateMul(t, i64(width)), width); },
          "tile");
      if (tailWidth != 0) block(first, rows, i64(fullTiles * width), tailWidth);
    };
    // Whole blocks of rowBlock rows, then what remains in blocks of halving size (4 + 2 + 1 for 7 rows left, not
    // 7 single-row FMA chains bound by FMA latency); the last size, 1, takes every row still left.
    llvm::Value* blocks = m_b.CreateUDiv(m_b.CreateSub(end, begin), i64(rowBlock));
    loop(
        i64(0), blocks,
        [&](llvm::Value* b) { rowsAllColumns(m_b.CreateAdd(begin, m_b.CreateMul(b, i64(rowBlock))), rowBlock); },
        "rowblock");
    llvm::Value* next = m_b.CreateAdd(begin, m_b.CreateMul(blocks, i64(rowBlock)));
    for (int64_t size = rowBlock / 2; size >= 1; size /= 2) {
      llvm::Value* count = m_b.CreateUDiv(m_b.CreateSub(end, next), i64(size));
      llvm::Value* first = next;
      loop(
          i64(0), count,
          [&](llvm::Value* b) { rowsAllColumns(m_b.CreateAdd(first, m_b.CreateMul(b, i64(size))), size); }, "rowtail");
      next = m_b.CreateAdd(next, m_b.CreateMul(count, i64(size)));
    }
  }

  // Whether reduce() computes `reduce`'s operand row into a scratch row first (CPU, one innermost reduced dimension
  // of 8..16384 elements): then the row can also be written out as a side output (see SideOutput).
  static bool usesScratchRow(const HloInstruction* reduce, KernelTarget target) {
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

  // A multi-output fusion (sum, exp) = (reduce(e), e): while reducing row r, the scratch row of e is also stored
  // to e's output at base + j, so e is computed once, not once per output.
  struct SideOutput {
    const HloInstruction* reduce = nullptr;
    llvm::Value* pointer = nullptr;
    llvm::Value* base = nullptr;
  };
  void setSideOutput(SideOutput side) { m_sideOutput = side; }

  static constexpr int64_t kWarp = 32;

  // A column reduction (reduced dimension not the innermost) with more results than this keeps one thread per
  // result: neighbouring threads then read neighbouring addresses, and there are threads enough to fill the GPU.
  static constexpr int64_t kMaxWarpColumnResults = 8192;

  // NVPTX: whether `reduce` can be a warp reduction: one reduced dimension of at least a warp's width (the
  // innermost, or another when the results are few), and a reducer whose order HLO leaves free (reductionLanes)
  // in a type a warp shuffle carries. Returns the reduced dimension, or -1.
  static int warpReducedDimension(const HloInstruction* reduce) {
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
    return reductionLanes(reduce->toApply(), reduce->shape().elementType()) > 0 ? d : -1;
  }

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
    visit(lane, true);  // inner >= 32: every lane has a first column
    loop(
        i64(1), i64(inner / kWarp),
        [&](llvm::Value* step) { visit(m_b.CreateAdd(m_b.CreateMul(step, i64(kWarp)), lane), false); }, "col");
    if (inner % kWarp != 0) {
      llvm::Value* j = m_b.CreateAdd(i64(inner / kWarp * kWarp), lane);
      llvm::BasicBlock* tail = llvm::BasicBlock::Create(m_context, "row_tail", m_function);
      llvm::BasicBlock* after = llvm::BasicBlock::Create(m_context, "row_tail_done", m_function);
      m_b.CreateCondBr(m_b.CreateICmpULT(j, i64(inner)), tail, after);
      m_b.SetInsertPoint(tail);
      visit(j, false);
      m_b.CreateBr(after);
      m_b.SetInsertPoint(after);
    }
    // Every lane of the warp reaches here (rows * 32 threads, blocks a multiple of 32): full-mask shuffles.
    for (size_t k = 0; k < reduces.size(); ++k) {
      const HloInstruction* reduce = reduces[k];
      llvm::Type* type = partial[k]->getAllocatedType();
      for (int offset = kWarp / 2; offset > 0; offset /= 2) {
        llvm::Value* mine = m_b.CreateLoad(type, partial[k]);
        llvm::Value* theirs = shuffleXor(mine, offset);
        m_b.CreateStore(applyComputation(reduce->toApply(), {mine, theirs}, reduce), partial[k]);
      }
    }
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

  // shfl.sync.bfly over the full warp; wider or narrower scalars travel as 32-bit pieces.
  llvm::Value* shuffleXor(llvm::Value* value, int offset) {
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

 private:
  Index sameIndex(const Index& index, const HloInstruction* operand) {
    return operand->shape().rank() == 0 ? Index{} : index;
  }
  llvm::Value* operandAt(const HloInstruction* instruction, int i, const Index& index) {
    return generate(instruction->operand(i), sameIndex(index, instruction->operand(i)));
  }

  llvm::Value* mathCall(const char* name, std::vector<llvm::Value*> args) {
    llvm::Type* type = args[0]->getType();
    const bool isFloat = type->isFloatTy();
    std::string symbol = m_target == KernelTarget::kNvptx ? std::string("__nv_") + name : std::string(name);
    if (isFloat) symbol += "f";
    std::vector<llvm::Type*> types(args.size(), type);
    llvm::FunctionCallee callee = m_module.getOrInsertFunction(symbol, llvm::FunctionType::get(type, types, false));
    return m_b.CreateCall(callee, args);
  }
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args) {
    llvm::Function* fn = llvm::Intrinsic::getDeclaration(&m_module, id, {args[0]->getType()});
    return m_b.CreateCall(fn, args);
  }

  llvm::Value* floatUnary(const HloInstruction* instruction, llvm::Value* x) {
    llvm::Type* type = x->getType();
    const bool nvptx = m_target == KernelTarget::kNvptx;
    switch (instruction->opcode()) {
      case HloOpcode::kAbs: return intrinsic(llvm::Intrinsic::fabs, {x});
      case HloOpcode::kNegate: return m_b.CreateFNeg(x);
      case HloOpcode::kExp: return nvptx ? mathCall("exp", {x}) : intrinsic(llvm::Intrinsic::exp, {x});
      case HloOpcode::kExpm1: return mathCall("expm1", {x});
      case HloOpcode::kLog: return nvptx ? mathCall("log", {x}) : intrinsic(llvm::Intrinsic::log, {x});
      case HloOpcode::kLog1p: return mathCall("log1p", {x});
      case HloOpcode::kLogistic: {
        llvm::Value* e =
            nvptx ? mathCall("exp", {m_b.CreateFNeg(x)}) : intrinsic(llvm::Intrinsic::exp, {m_b.CreateFNeg(x)});
        llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
        return m_b.CreateFDiv(one, m_b.CreateFAdd(one, e));
      }
      case HloOpcode::kSqrt: return intrinsic(llvm::Intrinsic::sqrt, {x});
      case HloOpcode::kRsqrt:
        return m_b.CreateFDiv(llvm::ConstantFP::get(type, 1.0), intrinsic(llvm::Intrinsic::sqrt, {x}));
      case HloOpcode::kCbrt: return mathCall("cbrt", {x});
      case HloOpcode::kTanh: return mathCall("tanh", {x});
      case HloOpcode::kSin: return nvptx ? mathCall("sin", {x}) : intrinsic(llvm::Intrinsic::sin, {x});
      case HloOpcode::kCos: return nvptx ? mathCall("cos", {x}) : intrinsic(llvm::Intrinsic::cos, {x});
      case HloOpcode::kTan: return mathCall("tan", {x});
      case HloOpcode::kErf: return mathCall("erf", {x});
      case HloOpcode::kFloor: return intrinsic(llvm::Intrinsic::floor, {x});
      case HloOpcode::kCeil: return intrinsic(llvm::Intrinsic::ceil, {x});
      case HloOpcode::kRoundNearestAfz: return nvptx ? mathCall("round", {x}) : intrinsic(llvm::Intrinsic::round, {x});
      case HloOpcode::kRoundNearestEven: return intrinsic(llvm::Intrinsic::roundeven, {x});
      case HloOpcode::kCopy: return x;
      case HloOpcode::kSign: {
        llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
        llvm::Value* minusOne = llvm::ConstantFP::get(type, -1.0);
        llvm::Value* r = m_b.CreateSelect(m_b.CreateFCmpOLT(x, llvm::ConstantFP::get(type, 0.0)), minusOne, x);
        return m_b.CreateSelect(m_b.CreateFCmpOGT(x, llvm::ConstantFP::get(type, 0.0)), one, r);
      }
      default: return fail(instruction, "no floating-point lowering");
    }
  }

  llvm::Value* integerUnary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x) {
    llvm::Type* t = x->getType();
    const bool isSigned = isSignedInteger(type);
    switch (instruction->opcode()) {
      case HloOpcode::kNot: return m_b.CreateNot(x);
      case HloOpcode::kCopy: return x;
      case HloOpcode::kAbs:
        if (type == PrimitiveType::kPred) return x;
        return isSigned ? m_b.CreateSelect(m_b.CreateICmpSLT(x, llvm::ConstantInt::get(t, 0)), m_b.CreateNeg(x), x) : x;
      case HloOpcode::kNegate: return m_b.CreateNeg(x);
      case HloOpcode::kSign: {
        llvm::Value* zero = llvm::ConstantInt::get(t, 0);
        llvm::Value* positive = m_b.CreateZExt(isSigned ? m_b.CreateICmpSGT(x, zero) : m_b.CreateICmpNE(x, zero), t);
        if (!isSigned) return positive;
        return m_b.CreateSub(positive, m_b.CreateZExt(m_b.CreateICmpSLT(x, zero), t));
      }
      case HloOpcode::kPopulationCount: return intrinsic(llvm::Intrinsic::ctpop, {x});
      case HloOpcode::kClz:
        return m_b.CreateCall(llvm::Intrinsic::getDeclaration(&m_module, llvm::Intrinsic::ctlz, {t}),
                              {x, m_b.getFalse()});
      default: return fail(instruction, "no integer lowering");
    }
  }

  llvm::Value* floatBinary(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y) {
    llvm::Type* type = x->getType();
    switch (instruction->opcode()) {
      case HloOpcode::kAdd: return m_b.CreateFAdd(x, y);
      case HloOpcode::kSubtract: return m_b.CreateFSub(x, y);
      case HloOpcode::kMultiply: return m_b.CreateFMul(x, y);
      case HloOpcode::kDivide: return m_b.CreateFDiv(x, y);
      case HloOpcode::kRemainder:
        return m_target == KernelTarget::kNvptx ? mathCall("fmod", {x, y}) : m_b.CreateFRem(x, y);
      case HloOpcode::kPower:
        return m_target == KernelTarget::kNvptx ? mathCall("pow", {x, y}) : intrinsic(llvm::Intrinsic::pow, {x, y});
      case HloOpcode::kAtan2: return mathCall("atan2", {x, y});
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum: {
        // XLA: NaN if either is NaN, else the larger (smaller); ties keep the second operand.
        llvm::Value* pick =
            instruction->opcode() == HloOpcode::kMaximum ? m_b.CreateFCmpOGT(x, y) : m_b.CreateFCmpOLT(x, y);
        llvm::Value* r = m_b.CreateSelect(pick, x, y);
        return m_b.CreateSelect(m_b.CreateFCmpUNO(x, y), llvm::ConstantFP::getNaN(type), r);
      }
      default: return fail(instruction, "no floating-point lowering");
    }
  }

  llvm::Value* integerBinary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x, llvm::Value* y) {
    llvm::Type* t = x->getType();
    const bool isSigned = isSignedInteger(type);
    const unsigned width = t->getIntegerBitWidth();
    llvm::Value* zero = llvm::ConstantInt::get(t, 0);
    switch (instruction->opcode()) {
      case HloOpcode::kAdd: return type == PrimitiveType::kPred ? m_b.CreateOr(x, y) : m_b.CreateAdd(x, y);
      case HloOpcode::kSubtract: return m_b.CreateSub(x, y);
      case HloOpcode::kMultiply: return type == PrimitiveType::kPred ? m_b.CreateAnd(x, y) : m_b.CreateMul(x, y);
      case HloOpcode::kAnd: return m_b.CreateAnd(x, y);
      case HloOpcode::kOr: return m_b.CreateOr(x, y);
      case HloOpcode::kXor: return m_b.CreateXor(x, y);
      case HloOpcode::kMaximum:
        return m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(x, y) : m_b.CreateICmpULT(x, y), y, x);
      case HloOpcode::kMinimum:
        return m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(y, x) : m_b.CreateICmpULT(y, x), y, x);
      case HloOpcode::kDivide:
      case HloOpcode::kRemainder: {
        // XLA: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0. Divide by a safe divisor and fix.
        const bool divide = instruction->opcode() == HloOpcode::kDivide;
        llvm::Value* isZero = m_b.CreateICmpEQ(y, zero);
        llvm::Value* minusOne = llvm::ConstantInt::get(t, static_cast<uint64_t>(-1), true);
        llvm::Value* overflow =
            isSigned
                ? m_b.CreateAnd(m_b.CreateICmpEQ(y, minusOne),
                                m_b.CreateICmpEQ(x, llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(width))))
                : m_b.getFalse();
        llvm::Value* safe = m_b.CreateSelect(m_b.CreateOr(isZero, overflow), llvm::ConstantInt::get(t, 1), y);
        llvm::Value* r = divide ? (isSigned ? m_b.CreateSDiv(x, safe) : m_b.CreateUDiv(x, safe))
                                : (isSigned ? m_b.CreateSRem(x, safe) : m_b.CreateURem(x, safe));
        r = m_b.CreateSelect(overflow, divide ? x : zero, r);
        return m_b.CreateSelect(isZero, divide ? minusOne : x, r);
      }
      case HloOpcode::kShiftLeft:
      case HloOpcode::kShiftRightLogical:
      case HloOpcode::kShiftRightArithmetic: {
        llvm::Value* tooFar = m_b.CreateICmpUGE(y, llvm::ConstantInt::get(t, width));
        llvm::Value* amount = m_b.CreateSelect(tooFar, zero, y);
        if (instruction->opcode() == HloOpcode::kShiftLeft) {
          return m_b.CreateSelect(tooFar, zero, m_b.CreateShl(x, amount));
        }
        if (instruction->opcode() == HloOpcode::kShiftRightLogical) {
          return m_b.CreateSelect(tooFar, zero, m_b.CreateLShr(x, amount));
        }
        return m_b.CreateAShr(x, m_b.CreateSelect(tooFar, llvm::ConstantInt::get(t, width - 1), y));
      }
      default: return fail(instruction, "no integer lowering");
    }
  }

  llvm::Value* compare(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y) {
    const PrimitiveType type = instruction->operand(0)->shape().elementType();
    if (!instruction->attributes().direction) return fail(instruction, "compare without direction");
    const std::string* compareType = instruction->attributes().findRaw("type");
    if (compareType != nullptr && *compareType == "TOTALORDER") return fail(instruction, "TOTALORDER comparison");
    const ComparisonDirection direction = *instruction->attributes().direction;
    if (isFloatingPoint(type)) {
      switch (direction) {
        case ComparisonDirection::kEq: return m_b.CreateFCmpOEQ(x, y);
        case ComparisonDirection::kNe: return m_b.CreateFCmpUNE(x, y);
        case ComparisonDirection::kGe: return m_b.CreateFCmpOGE(x, y);
        case ComparisonDirection::kGt: return m_b.CreateFCmpOGT(x, y);
        case ComparisonDirection::kLe: return m_b.CreateFCmpOLE(x, y);
        case ComparisonDirection::kLt: return m_b.CreateFCmpOLT(x, y);
      }
    }
    const bool isSigned = isSignedInteger(type);
    switch (direction) {
      case ComparisonDirection::kEq: return m_b.CreateICmpEQ(x, y);
      case ComparisonDirection::kNe: return m_b.CreateICmpNE(x, y);
      case ComparisonDirection::kGe: return isSigned ? m_b.CreateICmpSGE(x, y) : m_b.CreateICmpUGE(x, y);
      case ComparisonDirection::kGt: return isSigned ? m_b.CreateICmpSGT(x, y) : m_b.CreateICmpUGT(x, y);
      case ComparisonDirection::kLe: return isSigned ? m_b.CreateICmpSLE(x, y) : m_b.CreateICmpULE(x, y);
      case ComparisonDirection::kLt: return isSigned ? m_b.CreateICmpSLT(x, y) : m_b.CreateICmpULT(x, y);
    }
    return fail(instruction, "unknown direction");
  }

  llvm::Value* convert(PrimitiveType from, PrimitiveType to, llvm::Value* x) {
    llvm::Type* target = computeType(to);
    if (from == to) return x;
    if (to == PrimitiveType::kPred) {
      return isFloatingPoint(from) ? m_b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                                   : m_b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
    }
    if (isFloatingPoint(from) && isFloatingPoint(to)) {
      llvm::Value* r = x->getType() == target ? x : m_b.CreateFPCast(x, target);
      return roundTo(to, r);
    }
    if (isFloatingPoint(to)) {  // integer or pred to float
      llvm::Value* r = (isSignedInteger(from)) ? m_b.CreateSIToFP(x, target) : m_b.CreateUIToFP(x, target);
      return roundTo(to, r);
    }
    if (isFloatingPoint(from)) {  // truncate toward zero, saturate, NaN -> 0
      auto id = isSignedInteger(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
      llvm::Function* fn = llvm::Intrinsic::getDeclaration(&m_module, id, {target, x->getType()});
      return m_b.CreateCall(fn, {x});
    }
    return isSignedInteger(from) ? m_b.CreateSExtOrTrunc(x, target) : m_b.CreateZExtOrTrunc(x, target);
  }

  llvm::Value* constantValue(const HloInstruction* instruction, const Index& index) {
    const Literal* literal = instruction->literal();
    const Shape& shape = instruction->shape();
    const PrimitiveType type = shape.elementType();
    if (literal == nullptr ||
        (literal->kind() != Literal::Kind::kFloat && literal->kind() != Literal::Kind::kInteger) ||
        literal->valueCount() != shape.elementCount()) {
      return fail(instruction, "constant value not available");
    }
    auto scalarConstant = [&](int64_t i) -> llvm::Value* {
      llvm::Type* t = computeType(type);
      if (isFloatingPoint(type)) return llvm::ConstantFP::get(t, literal->asDouble(i));
      int64_t v = literal->kind() == Literal::Kind::kInteger ? literal->integerValues()[static_cast<size_t>(i)]
                                                             : static_cast<int64_t>(literal->asDouble(i));
      return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), isSignedInteger(type));
    };
    if (shape.elementCount() == 1 || literal->isSplat()) return scalarConstant(0);
    // A table in a global, read at the index.
    auto it = m_constantGlobals.find(instruction);
    llvm::GlobalVariable* global = nullptr;
    if (it != m_constantGlobals.end()) {
      global = it->second;
    } else {
      llvm::Type* storage = storageType(type);
      std::vector<llvm::Constant*> elements;
      for (int64_t i = 0; i < shape.elementCount(); ++i) {
        elements.push_back(llvm::cast<llvm::Constant>(toStorageConstant(type, scalarConstant(i))));
      }
      auto* arrayType = llvm::ArrayType::get(storage, static_cast<uint64_t>(shape.elementCount()));
      const unsigned addressSpace = m_target == KernelTarget::kNvptx ? 1 : 0;
      global = new llvm::GlobalVariable(m_module, arrayType, true, llvm::GlobalValue::InternalLinkage,
                                        llvm::ConstantArray::get(arrayType, elements), "constant_table", nullptr,
                                        llvm::GlobalValue::NotThreadLocal, addressSpace);
      m_constantGlobals[instruction] = global;
    }
    return load(global, type, linearOf(index, shape));
  }
  llvm::Value* toStorageConstant(PrimitiveType type, llvm::Value* v) {
    // Constant folding through the builder gives constants for constant inputs.
    return toStorage(type, v);
  }

  llvm::Value* generateComputed(const HloInstruction* instruction, const Index& index) {
    const Shape& shape = instruction->shape();
    const PrimitiveType type = shape.elementType();
    const HloOpcode opcode = instruction->opcode();
    switch (opcode) {
      case HloOpcode::kParameter: return fail(instruction, "parameter without a buffer");
      case HloOpcode::kConstant: return constantValue(instruction, index);
      case HloOpcode::kCompare: {
        llvm::Value* x = operandAt(instruction, 0, index);
        llvm::Value* y = operandAt(instruction, 1, index);
        return compare(instruction, x, y);
      }
      case HloOpcode::kSelect: {
        llvm::Value* p = operandAt(instruction, 0, index);
        llvm::Value* x = operandAt(instruction, 1, index);
        llvm::Value* y = operandAt(instruction, 2, index);
        return m_b.CreateSelect(p, x, y);
      }
      case HloOpcode::kClamp: {
        llvm::Value* lo = operandAt(instruction, 0, index);
        llvm::Value* x = operandAt(instruction, 1, index);
        llvm::Value* hi = operandAt(instruction, 2, index);
        if (isFloatingPoint(type)) {
          // min(max(x, lo), hi) with XLA's NaN-propagating max/min.
          llvm::Value* m = m_b.CreateSelect(m_b.CreateFCmpOGT(x, lo), x, lo);
          m = m_b.CreateSelect(m_b.CreateFCmpUNO(x, lo), llvm::ConstantFP::getNaN(x->getType()), m);
          llvm::Value* r = m_b.CreateSelect(m_b.CreateFCmpOLT(m, hi), m, hi);
          return m_b.CreateSelect(m_b.CreateFCmpUNO(m, hi), llvm::ConstantFP::getNaN(x->getType()), r);
        }
        const bool isSigned = isSignedInteger(type);
        llvm::Value* m = m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(x, lo) : m_b.CreateICmpULT(x, lo), lo, x);
        return m_b.CreateSelect(isSigned ? m_b.CreateICmpSLT(hi, m) : m_b.CreateICmpULT(hi, m), hi, m);
      }
      case HloOpcode::kConvert:
        return convert(instruction->operand(0)->shape().elementType(), type, operandAt(instruction, 0, index));
      case HloOpcode::kIsFinite: {
        llvm::Value* x = operandAt(instruction, 0, index);
        return m_b.CreateFCmpOLT(intrinsic(llvm::Intrinsic::fabs, {x}), llvm::ConstantFP::getInfinity(x->getType()));
      }
      case HloOpcode::kBroadcast: {
        const HloInstruction* operand = instruction->operand(0);
        const std::vector<int64_t> dims = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
        if (static_cast<int>(dims.size()) != operand->shape().rank()) return fail(instruction, "bad dimensions");
        Index operandIndex;
        for (int64_t d : dims) operandIndex.dims.push_back(index.dims[static_cast<size_t>(d)]);
        return generate(operand, operandIndex);
      }
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast: {
        const HloInstruction* operand = instruction->operand(0);
        if (operand->shape().elementType() != type) return fail(instruction, "bitcast changing the element type");
        const std::vector<int64_t> toPhysical = physicalStrides(shape);
        const std::vector<int64_t> fromPhysical = physicalStrides(operand->shape());
        if (opcode == HloOpcode::kReshape || (toPhysical == rowMajorStrides(shape.dimensions()) &&
                                              fromPhysical == rowMajorStrides(operand->shape().dimensions()))) {
          return generate(operand, delinearize(linearOf(index, shape), operand->shape().dimensions()));
        }
        // A bitcast between layouts: result index -> physical offset -> operand index (the evaluator's rule).
        llvm::Value* physical = i64(0);
        for (size_t d = 0; d < index.dims.size(); ++d) {
          physical = m_b.CreateAdd(physical, m_b.CreateMul(index.dims[d], i64(toPhysical[d])));
        }
        Index operandIndex;
        const std::vector<int64_t>& dims = operand->shape().dimensions();
        for (size_t d = 0; d < dims.size(); ++d) {
          operandIndex.dims.push_back(m_b.CreateURem(m_b.CreateUDiv(physical, i64(fromPhysical[d])), i64(dims[d])));
        }
        return generate(operand, operandIndex);
      }
      case HloOpcode::kTranspose: {
        const std::vector<int64_t> perm = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
        if (static_cast<int>(perm.size()) != shape.rank()) return fail(instruction, "bad dimensions");
        Index operandIndex;
        operandIndex.dims.resize(perm.size());
        for (size_t j = 0; j < perm.size(); ++j) operandIndex.dims[static_cast<size_t>(perm[j])] = index.dims[j];
        return generate(instruction->operand(0), operandIndex);
      }
      case HloOpcode::kReverse: {
        const HloInstruction* operand = instruction->operand(0);
        Index operandIndex{index.dims, nullptr};
        for (int64_t d : instruction->attributes().dimensions.value_or(std::vector<int64_t>{})) {
          operandIndex.dims[static_cast<size_t>(d)] =
              m_b.CreateSub(i64(shape.dimension(static_cast<int>(d)) - 1), index.dims[static_cast<size_t>(d)]);
        }
        return generate(operand, operandIndex);
      }
      case HloOpcode::kSlice: {
        if (!instruction->attributes().slice) return fail(instruction, "slice without slice={...}");
        const auto& slice = *instruction->attributes().slice;
        Index operandIndex;
        for (size_t i = 0; i < slice.size(); ++i) {
          operandIndex.dims.push_back(
              m_b.CreateAdd(i64(slice[i].start), m_b.CreateMul(index.dims[i], i64(slice[i].stride))));
        }
        return generate(instruction->operand(0), operandIndex);
      }
      case HloOpcode::kDynamicSlice: {
        const HloInstruction* operand = instruction->operand(0);
        Index operandIndex;
        for (int i = 0; i < shape.rank(); ++i) {
          const HloInstruction* startOperand = instruction->operand(1 + i);
          llvm::Value* start = generate(startOperand, Index{});
          start = isSignedInteger(startOperand->shape().elementType()) ? m_b.CreateSExtOrTrunc(start, m_b.getInt64Ty())
                                                                       : m_b.CreateZExtOrTrunc(start, m_b.getInt64Ty());
          const int64_t maxStart = operand->shape().dimension(i) - shape.dimension(i);
          start = m_b.CreateSelect(m_b.CreateICmpSLT(start, i64(0)), i64(0), start);
          start = m_b.CreateSelect(m_b.CreateICmpSGT(start, i64(maxStart)), i64(maxStart), start);
          operandIndex.dims.push_back(m_b.CreateAdd(start, index.dims[static_cast<size_t>(i)]));
        }
        return generate(operand, operandIndex);
      }
      case HloOpcode::kIota: {
        const int64_t d = instruction->attributes().iotaDimension.value_or(0);
        llvm::Value* i = index.dims[static_cast<size_t>(d)];
        return convert(PrimitiveType::kS64, type, i);
      }
      case HloOpcode::kConcatenate: {
        const std::vector<int64_t> dims = instruction->attributes().dimensions.value_or(std::vector<int64_t>{});
        if (dims.size() != 1) return fail(instruction, "concatenate without one dimension");
        return concatenate(instruction, index, dims[0], 0, 0);
      }
      case HloOpcode::kPad: return pad(instruction, index);
      case HloOpcode::kReduce: return reduce(instruction, index);
      case HloOpcode::kDot: return dot(instruction, index);
      default: break;
    }
    if (isElementwise(opcode) && (instruction->operandCount() == 1 || instruction->operandCount() == 2)) {
      const PrimitiveType operandType = instruction->operand(0)->shape().elementType();
      if (instruction->operandCount() == 1) {
        llvm::Value* x = operandAt(instruction, 0, index);
        if (isFloatingPoint(operandType)) return roundTo(type, floatUnary(instruction, x));
        return integerUnary(instruction, operandType, x);
      }
      llvm::Value* x = operandAt(instruction, 0, index);
      llvm::Value* y = operandAt(instruction, 1, index);
      if (isFloatingPoint(operandType)) return roundTo(type, floatBinary(instruction, x, y));
      return integerBinary(instruction, operandType, x, y);
    }
    if (opcode == HloOpcode::kCopy) return operandAt(instruction, 0, index);
    return fail(instruction, "opcode not supported by the elemental emitter");
  }

  llvm::Value* concatenate(const HloInstruction* instruction, const Index& index, int64_t dim, int operand,
                           int64_t offset) {
    const HloInstruction* op = instruction->operand(operand);
    const int64_t size = op->shape().dimension(static_cast<int>(dim));
    auto here = [&]() {
      Index operandIndex{index.dims, nullptr};
      operandIndex.dims[static_cast<size_t>(dim)] = m_b.CreateSub(index.dims[static_cast<size_t>(dim)], i64(offset));
      return generate(op, operandIndex);
    };
    if (operand + 1 == instruction->operandCount()) return here();
    llvm::Value* inThis = m_b.CreateICmpSLT(index.dims[static_cast<size_t>(dim)], i64(offset + size));
    return branch(inThis, computeType(instruction->shape().elementType()), here,
                  [&]() { return concatenate(instruction, index, dim, operand + 1, offset + size); });
  }

  llvm::Value* pad(const HloInstruction* instruction, const Index& index) {
    if (!instruction->attributes().padding) return fail(instruction, "pad without padding=");
    const auto& padding = *instruction->attributes().padding;
    const HloInstruction* operand = instruction->operand(0);
    llvm::Value* inside = m_b.getTrue();
    Index operandIndex;
    for (size_t i = 0; i < padding.size(); ++i) {
      llvm::Value* t = m_b.CreateSub(index.dims[i], i64(padding[i].low));
      const int64_t step = padding[i].interior + 1;
      llvm::Value* q = step == 1 ? t : m_b.CreateSDiv(t, i64(step));
      inside = m_b.CreateAnd(inside, m_b.CreateICmpSGE(t, i64(0)));
      if (step != 1) inside = m_b.CreateAnd(inside, m_b.CreateICmpEQ(m_b.CreateSRem(t, i64(step)), i64(0)));
      inside = m_b.CreateAnd(inside, m_b.CreateICmpSLT(q, i64(operand->shape().dimension(static_cast<int>(i)))));
      operandIndex.dims.push_back(q);
    }
    return branch(
        inside, computeType(instruction->shape().elementType()), [&]() { return generate(operand, operandIndex); },
        [&]() { return generate(instruction->operand(1), Index{}); });
  }

  // Independent partial results a row reduction may keep (0: reduce strictly in order). Only for a reducer that
  // is exactly add/multiply/maximum/minimum/and/or of its two parameters, in f32/f64, integers or pred (f16 and
  // bf16 round after every step, where a different order would show).
  static int64_t reductionLanes(const HloComputation* reducer, PrimitiveType type) {
    const HloInstruction* root = reducer->root();
    std::vector<HloInstruction*> parameters = reducer->parameters();
    if (root == nullptr || parameters.size() != 2 || root->operandCount() != 2) return 0;
    const bool operandsAreParameters = (root->operand(0) == parameters[0] && root->operand(1) == parameters[1]) ||
                                       (root->operand(0) == parameters[1] && root->operand(1) == parameters[0]);
    if (!operandsAreParameters) return 0;
    switch (root->opcode()) {
      case HloOpcode::kAdd:
      case HloOpcode::kMultiply:
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum:
      case HloOpcode::kAnd:
      case HloOpcode::kOr: break;
      default: return 0;
    }
    if (type == PrimitiveType::kF16 || type == PrimitiveType::kBF16 || !isSupportedElementType(type)) return 0;
    return std::min<int64_t>(32, 128 / std::max<int64_t>(elementByteSize(type), 1));
  }

  llvm::Value* reduce(const HloInstruction* instruction, const Index& index) {
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
      const int64_t lanes = reductionLanes(reducer, instruction->shape().elementType());
      if (lanes == 0 || inner < 2 * lanes) {
        reduceFrom(0);
        return m_b.CreateLoad(type, accumulator);
      }
      // An associative, commutative reducer (HLO leaves the order of a reduction unspecified): `lanes`
      // independent partial results over strided elements, which the SLP vectoriser turns into vector ops, then
      // combined in lane order with the init value, then the tail. Floating-point sums round differently from a
      // sequential loop (within the evaluator's tolerance); max/min/and/or and integer sums are exact.
      llvm::AllocaInst* partial = nullptr;
      {
        llvm::IRBuilder<> entry(&m_function->getEntryBlock(), m_function->getEntryBlock().begin());
        partial = entry.CreateAlloca(llvm::ArrayType::get(type, static_cast<uint64_t>(lanes)));
        partial->setAlignment(llvm::Align(64));
      }
      auto lane = [&](int64_t l) { return m_b.CreateConstInBoundsGEP1_64(type, partial, static_cast<uint64_t>(l)); };
      for (int64_t l = 0; l < lanes; ++l) {
        m_b.CreateStore(m_b.CreateLoad(type, m_b.CreateConstInBoundsGEP1_64(type, row, static_cast<uint64_t>(l))),
                        lane(l));
      }
      const int64_t blocks = inner / lanes;
      loop(
          i64(1), i64(blocks),
          [&](llvm::Value* block) {
            llvm::Value* base = m_b.CreateMul(block, i64(lanes));
            for (int64_t l = 0; l < lanes; ++l) {
              llvm::Value* element =
                  m_b.CreateLoad(type, m_b.CreateInBoundsGEP(type, row, m_b.CreateAdd(base, i64(l))));
              m_b.CreateStore(applyComputation(reducer, {m_b.CreateLoad(type, lane(l)), element}, instruction),
                              lane(l));
            }
          },
          "block");
      for (int64_t l = 0; l < lanes; ++l) {
        llvm::Value* acc = m_b.CreateLoad(type, accumulator);
        m_b.CreateStore(applyComputation(reducer, {acc, m_b.CreateLoad(type, lane(l))}, instruction), accumulator);
      }
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

  llvm::Value* dot(const HloInstruction* instruction, const Index& index) {
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
    std::function<void(size_t)> nest = [&](size_t level) {
      if (level == dnums.lhsContracting.size()) {
        llvm::Value* a = widen(lhsType, generate(lhs, Index{lhsIndex, nullptr}));
        llvm::Value* c = widen(rhsType, generate(rhs, Index{rhsIndex, nullptr}));
        llvm::Value* acc = m_b.CreateLoad(accType, accumulator);
        m_b.CreateStore(
            isFloat ? intrinsic(llvm::Intrinsic::fmuladd, {a, c, acc}) : m_b.CreateAdd(acc, m_b.CreateMul(a, c)),
            accumulator);
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
    llvm::Value* sum = m_b.CreateLoad(accType, accumulator);
    if (isFloat) return convert(floatAcc, type, sum);
    return m_b.CreateTrunc(sum, computeType(type));
  }

  llvm::Module& m_module;
  llvm::LLVMContext& m_context;
  llvm::IRBuilder<> m_b;
  KernelTarget m_target;
  llvm::Function* m_function = nullptr;
  Status m_status;
  std::unordered_map<const HloInstruction*, llvm::Value*> m_leaves;
  std::unordered_map<const HloInstruction*, llvm::Value*> m_bound;
  std::map<CacheKey, llvm::Value*> m_cache;
  std::unordered_map<const HloInstruction*, llvm::GlobalVariable*> m_constantGlobals;
  SideOutput m_sideOutput;
};

// The row dot a CPU kernel computing `root` can be built around: `root` itself when it is a row dot, or the one
// row dot inside `fused` whose every dependent up to `root` is elementwise over the dot's shape (a kOutput
// fusion's epilogue). nullptr when there is none.
const HloInstruction* rowDotFor(const HloInstruction* root, const HloComputation* fused) {
  if (ElementEmitter::isRowDot(root)) return root;
  if (fused == nullptr || root->shape().rank() < 2) return nullptr;
  const HloInstruction* dot = nullptr;
  for (const auto& instruction : fused->instructions()) {
    if (instruction->opcode() != HloOpcode::kDot) continue;
    if (dot != nullptr) return nullptr;  // two dots: not an epilogue
    dot = instruction.get();
  }
  if (dot == nullptr || !ElementEmitter::isRowDot(dot) || dot->shape().dimensions() != root->shape().dimensions()) {
    return nullptr;
  }
  std::unordered_map<const HloInstruction*, bool> depends;
  bool ok = true;
  std::function<bool(const HloInstruction*)> visit = [&](const HloInstruction* node) -> bool {
    if (node == dot) return true;
    if (auto it = depends.find(node); it != depends.end()) return it->second;
    bool result = false;
    for (const HloInstruction* operand : node->operands()) result = visit(operand) || result;
    if (result && (!isElementwise(node->opcode()) || node->shape().dimensions() != root->shape().dimensions())) {
      ok = false;
    }
    depends[node] = result;
    return result;
  };
  return visit(root) && ok ? dot : nullptr;
}

// The value roots a kernel writes: for a fusion its outputs inside the fused computation, for an unfused kernel
// the instruction itself.
std::vector<const HloInstruction*> kernelRoots(const PlanKernel& kernel) {
  std::vector<const HloInstruction*> roots;
  if (kernel.instruction->opcode() == HloOpcode::kFusion) {
    for (HloInstruction* output : fusionOutputs(*kernel.instruction)) roots.push_back(output);
  } else {
    roots.push_back(kernel.instruction);
  }
  return roots;
}

// A kernel the NVPTX backend runs as warp reductions (ElementEmitter::warpRowReduce): every reduce in it reduces
// the same dimension (warpReducedDimension) of the same operand dimensions and reads no other reduce; each root either
// has the reduce operand's dimensions and reads no reduce (computed in the pass over the row), or is a reduce or an
// epilogue of the reduces that reads them at its own linear index (elementwise ops, reshapes, bitcasts, copies and
// broadcasts that only add dimensions of size 1 between it and the reduces), computed from the row totals.
struct WarpRowPlan {
  std::vector<const HloInstruction*> reduces;
  std::vector<ElementEmitter::RowOutput> rowOutputs;
  std::vector<ElementEmitter::RowOutput> elementwise;
};

std::optional<WarpRowPlan> warpRowPlan(const PlanKernel& kernel, const std::vector<const HloInstruction*>& roots,
                                       const std::vector<llvm::Value*>& args, size_t inputCount) {
  WarpRowPlan plan;
  if (kernel.instruction->opcode() == HloOpcode::kFusion) {
    for (const auto& instruction : kernel.instruction->fusedComputation()->instructions()) {
      if (instruction->opcode() == HloOpcode::kReduce) plan.reduces.push_back(instruction.get());
    }
  } else if (kernel.instruction->opcode() == HloOpcode::kReduce && roots.size() == 1 &&
             ElementEmitter::warpReducedDimension(kernel.instruction) >= 0) {
    // Unfused: the operand is a buffer, whatever computed it.
    plan.reduces.push_back(kernel.instruction);
    plan.rowOutputs.push_back({kernel.instruction, args[inputCount]});
    return plan;
  }
  if (plan.reduces.empty()) return std::nullopt;
  const std::vector<int64_t>& rowDims = plan.reduces[0]->operand(0)->shape().dimensions();
  const int reducedDim = ElementEmitter::warpReducedDimension(plan.reduces[0]);
  for (const HloInstruction* reduce : plan.reduces) {
    if (reducedDim < 0 || ElementEmitter::warpReducedDimension(reduce) != reducedDim ||
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
    const ElementEmitter::RowOutput output{root, args[inputCount + j]};
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

}  // namespace

StatusOr<std::vector<EmittedKernel>> emitKernels(const ExecutionPlan& plan, KernelTarget target, llvm::Module& module) {
  llvm::LLVMContext& context = module.getContext();
  ElementEmitter emitter(module, target);
  llvm::IRBuilder<>& b = emitter.builder();
  std::vector<EmittedKernel> emitted;
  llvm::Type* ptrType = llvm::PointerType::get(context, 0);
  llvm::Type* globalPtrType = llvm::PointerType::get(context, target == KernelTarget::kNvptx ? 1 : 0);
  for (const PlanKernel& kernel : plan.kernels) {
    const int argCount = kernelArgumentCount(kernel);
    llvm::FunctionType* fnType =
        target == KernelTarget::kCpu
            ? llvm::FunctionType::get(b.getVoidTy(), {ptrType, b.getInt64Ty(), b.getInt64Ty()}, false)
            : llvm::FunctionType::get(b.getVoidTy(),
                                      std::vector<llvm::Type*>(static_cast<size_t>(argCount), globalPtrType), false);
    llvm::Function* fn = llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage, kernel.name, module);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    if (target == KernelTarget::kNvptx) fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    emitter.beginFunction(fn);
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(context, "entry", fn);
    b.SetInsertPoint(entry);
    std::vector<llvm::Value*> args;
    llvm::Value* begin = nullptr;
    llvm::Value* end = nullptr;
    if (target == KernelTarget::kCpu) {
      for (int i = 0; i < argCount; ++i) {
        llvm::Value* slot = b.CreateInBoundsGEP(ptrType, fn->getArg(0), emitter.i64(i));
        args.push_back(b.CreateLoad(ptrType, slot, fmt::format("arg{}", i)));
      }
      begin = fn->getArg(1);
      end = fn->getArg(2);
    } else {
      for (int i = 0; i < argCount; ++i) {
        fn->getArg(static_cast<unsigned>(i))->addAttr(llvm::Attribute::NoAlias);
        args.push_back(fn->getArg(static_cast<unsigned>(i)));
      }
      auto read = [&](llvm::Intrinsic::ID id) {
        return b.CreateZExt(b.CreateCall(llvm::Intrinsic::getDeclaration(&module, id)), b.getInt64Ty());
      };
      llvm::Value* block = read(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
      llvm::Value* threads = read(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
      llvm::Value* thread = read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
      begin = b.CreateAdd(b.CreateMul(block, threads), thread);
    }
    const int64_t range = kernelRange(kernel);
    const size_t inputCount = kernel.inputs.size();

    // Roots and their output argument; grouped by element count so equal-sized outputs share one loop.
    std::vector<const HloInstruction*> roots;
    std::vector<Shape> rootShapes;
    if (kernel.instruction == nullptr) {  // synthetic copy
      roots.push_back(nullptr);
    } else {
      roots = kernelRoots(kernel);
      if (kernel.instruction->opcode() == HloOpcode::kFusion) {
        const HloComputation* fused = kernel.instruction->fusedComputation();
        std::vector<HloInstruction*> parameters = fused->parameters();
        for (size_t i = 0; i < parameters.size() && i < inputCount; ++i) emitter.setLeaf(parameters[i], args[i]);
      } else {
        for (size_t i = 0; i < inputCount; ++i)
          emitter.setLeaf(kernel.instruction->operand(static_cast<int>(i)), args[i]);
      }
    }
    if (roots.size() != kernel.outputs.size()) {
      return Status::error(
          fmt::format("{}: {} fusion outputs but {} output buffers", kernel.name, roots.size(), kernel.outputs.size()));
    }
    const HloInstruction* rowDot = target == KernelTarget::kCpu && roots.size() == 1 && roots[0] != nullptr
                                       ? rowDotFor(roots[0], kernel.instruction->opcode() == HloOpcode::kFusion
                                                                 ? kernel.instruction->fusedComputation()
                                                                 : nullptr)
                                       : nullptr;
    if (rowDot != nullptr) {
      emitter.rowDot(rowDot, roots[0], args[inputCount], begin, end);
      b.CreateRetVoid();
      if (!emitter.status().ok()) return emitter.status();
      const int64_t k =
          rowDot->operand(0)->shape().dimension(static_cast<int>(rowDot->attributes().dot->lhsContracting[0]));
      emitted.push_back({kernel.name, ElementEmitter::rowDotRows(rowDot), rowDot->shape().dimensions().back() * k,
                         ElementEmitter::rowDotBlock(rowDot)});
      continue;
    }
    // (reduce(e) over rows, e): one loop over rows computes each row of e once, writes it and reduces it.
    if (target == KernelTarget::kCpu && roots.size() == 2 && roots[0] != nullptr && roots[1] != nullptr) {
      const int reduceRoot = roots[0]->opcode() == HloOpcode::kReduce ? 0 : 1;
      const HloInstruction* reduce = roots[static_cast<size_t>(reduceRoot)];
      const HloInstruction* rowValue = roots[static_cast<size_t>(1 - reduceRoot)];
      if (ElementEmitter::usesScratchRow(reduce, target) && reduce->operand(0) == rowValue &&
          rowValue->shape().elementType() == reduce->shape().elementType() &&
          kernel.outputShapes[static_cast<size_t>(1 - reduceRoot)].dimensions() == rowValue->shape().dimensions()) {
        const int64_t inner = rowValue->shape().dimensions().back();
        const int64_t rows = reduce->shape().elementCount();
        llvm::Value* reduceOut = args[inputCount + static_cast<size_t>(reduceRoot)];
        llvm::Value* rowOut = args[inputCount + static_cast<size_t>(1 - reduceRoot)];
        emitter.loop(
            begin, end,
            [&](llvm::Value* row) {
              emitter.setSideOutput({reduce, rowOut, b.CreateMul(row, emitter.i64(inner))});
              llvm::Value* value = emitter.generate(reduce, emitter.delinearize(row, reduce->shape().dimensions()));
              emitter.setSideOutput({});
              emitter.store(reduceOut, reduce->shape().elementType(), row, value);
            },
            "row");
        b.CreateRetVoid();
        if (!emitter.status().ok()) return emitter.status();
        emitted.push_back({kernel.name, rows, inner});
        continue;
      }
    }
    // NVPTX: reductions over rows (with their epilogues and outputs of their operand's dimensions) as warp row
    // reductions.
    if (target == KernelTarget::kNvptx && !roots.empty() && roots[0] != nullptr) {
      if (std::optional<WarpRowPlan> warp = warpRowPlan(kernel, roots, args, inputCount)) {
        emitter.warpRowReduce(warp->reduces, warp->rowOutputs, warp->elementwise, begin);
        b.CreateRetVoid();
        if (!emitter.status().ok()) return emitter.status();
        emitted.push_back({kernel.name, warp->reduces[0]->shape().elementCount() * ElementEmitter::kWarp});
        continue;
      }
    }
    // Outputs of the same dimensions share one loop (a multi-output fusion computes common subexpressions once).
    std::map<std::vector<int64_t>, std::vector<size_t>> groups;
    for (size_t j = 0; j < roots.size(); ++j) groups[kernel.outputShapes[j].dimensions()].push_back(j);
    for (const auto& [dims, members] : groups) {
      const int64_t count = kernel.outputShapes[members[0]].elementCount();
      if (count == 0) continue;
      auto body = [&](llvm::Value* linear, const Index& index) {
        for (size_t j : members) {
          const Shape& outShape = kernel.outputShapes[j];
          llvm::Value* value = nullptr;
          if (roots[j] == nullptr) {
            value = emitter.load(args[0], outShape.elementType(), linear);
          } else {
            value = emitter.generate(roots[j], index);
          }
          emitter.store(args[inputCount + j], outShape.elementType(), linear, value);
        }
      };
      if (target == KernelTarget::kCpu) {
        llvm::Value* lo = begin;
        llvm::Value* hi = end;
        if (count != range) {  // the proportional part of a smaller output
          lo = b.CreateUDiv(b.CreateMul(begin, emitter.i64(count)), emitter.i64(range));
          hi = b.CreateUDiv(b.CreateMul(end, emitter.i64(count)), emitter.i64(range));
        }
        const int64_t inner = dims.empty() ? 1 : dims.back();
        if (dims.size() < 2 || inner < 2) {
          emitter.loop(lo, hi, [&](llvm::Value* linear) { body(linear, emitter.delinearize(linear, dims)); });
        } else {
          // A loop over rows and, inside it, over the innermost dimension, clipped to [lo, hi): the inner loop's
          // index is the last dimension itself, so broadcasts, slices and transposes along the outer dimensions
          // are loop-invariant there and the inner loop vectorises (a flat loop would divide per element).
          const std::vector<int64_t> outerDims(dims.begin(), dims.end() - 1);
          llvm::Value* innerSize = emitter.i64(inner);
          llvm::Value* rowLo = b.CreateUDiv(lo, innerSize);
          llvm::Value* rowHi = b.CreateUDiv(b.CreateAdd(hi, emitter.i64(inner - 1)), innerSize);
          emitter.loop(
              rowLo, rowHi,
              [&](llvm::Value* row) {
                llvm::Value* rowStart = b.CreateMul(row, innerSize);
                llvm::Value* jLo =
                    b.CreateSelect(b.CreateICmpSGT(lo, rowStart), b.CreateSub(lo, rowStart), emitter.i64(0));
                llvm::Value* rowEnd = b.CreateSub(hi, rowStart);
                llvm::Value* jHi = b.CreateSelect(b.CreateICmpSLT(rowEnd, innerSize), rowEnd, innerSize);
                const Index outer = emitter.delinearize(row, outerDims);
                emitter.loop(
                    jLo, jHi,
                    [&](llvm::Value* j) {
                      Index index;
                      index.dims = outer.dims;
                      index.dims.push_back(j);
                      index.linear = b.CreateAdd(rowStart, j);
                      body(index.linear, index);
                    },
                    "j");
              },
              "row");
        }
      } else {
        llvm::BasicBlock* then = llvm::BasicBlock::Create(context, "in_range", fn);
        llvm::BasicBlock* after = llvm::BasicBlock::Create(context, "after", fn);
        b.CreateCondBr(b.CreateICmpSLT(begin, emitter.i64(count)), then, after);
        b.SetInsertPoint(then);
        auto saved = emitter.saveCache();
        body(begin, emitter.delinearize(begin, dims));
        emitter.restoreCache(std::move(saved));
        b.CreateBr(after);
        b.SetInsertPoint(after);
      }
    }
    b.CreateRetVoid();
    if (!emitter.status().ok()) return emitter.status();
    emitted.push_back({kernel.name, range});
  }
  return emitted;
}

}  // namespace fusionscope::core
