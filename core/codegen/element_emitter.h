#pragma once

// The elemental IR emitter of core/codegen (internal to it): generates the value of an HLO instruction at an index
// from its operands' values, as XLA's elemental IR emitter does. kernel_emitter.cpp drives it per kernel;
// its methods live by concern:
//   element_emitter.cpp    elementwise ops, constants, shapes ops (broadcast, slice, concatenate, pad, ...)
//   vector_math_emitter.cpp  the CPU's f32 exp, expm1, log, log1p, tanh, erf as arithmetic in the IR
//   reduction_emitter.cpp  reductions in the evaluator's order, or in lanes where the reducer allows
//   dot_emitter.cpp        dots: the CPU's register-blocked row dot and the generic loop nest
//   gpu_reduction_emitter.cpp  NVPTX only: a warp per reduction result
//   window_emitter.cpp     reduce-window, convolution (and the CPU's per-pixel rowConvolution),
//                          select-and-scatter, gather
//   serial_emitter.cpp     scatter and sort: whole-kernel loops rather than a value per output element
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "core/base/status.h"
#include "core/codegen/element_types.h"
#include "core/codegen/execution_plan.h"
#include "core/codegen/kernel_emitter.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"

namespace fusionscope::core {

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
  ElementEmitter(llvm::Module& module, KernelTarget target, VectorUnit vectors = {})
      : m_module(module), m_context(module.getContext()), m_b(m_context), m_target(target), m_vectors(vectors) {}

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
      case PrimitiveType::kC64: return llvm::StructType::get(m_context, {m_b.getFloatTy(), m_b.getFloatTy()});
      case PrimitiveType::kC128: return llvm::StructType::get(m_context, {m_b.getDoubleTy(), m_b.getDoubleTy()});
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
  llvm::Value* floatToBf16Bits(llvm::Value* v);
  // A float computed for a narrow type, rounded to that type (so every op rounds as the evaluator does).
  llvm::Value* roundTo(PrimitiveType type, llvm::Value* v);

  llvm::Value* fail(const HloInstruction* instruction, const std::string& why);

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

  llvm::Value* generate(const HloInstruction* instruction, const Index& index);

  // A dynamic-update-slice whose output buffer `out` already holds its operand (PlanKernel::updatedInput): stores
  // the update's elements [begin, end) (row-major over the update) at the clamped window.
  void dynamicUpdateSliceInPlace(const HloInstruction* update, llvm::Value* out, llvm::Value* begin, llvm::Value* end);
  // Applies a scalar computation (a reducer) to bound arguments.
  llvm::Value* applyComputation(const HloComputation* computation, const std::vector<llvm::Value*>& arguments,
                                const HloInstruction* user);
  // The same for a computation returning a tuple of scalars (the reducer of a variadic reduce-window, the combiner
  // of a variadic scatter: N accumulators then N elements in, N results out); one value for an array root.
  std::vector<llvm::Value*> applyComputationValues(const HloComputation* computation,
                                                   const std::vector<llvm::Value*>& arguments,
                                                   const HloInstruction* user);
  // window_emitter.cpp: the N results of a reduce-window of N inputs (N = 1: the plain one) at `index`; empty
  // after a failure. A variadic one is tuple-shaped, so never fused: its kernel stores these to its N outputs.
  std::vector<llvm::Value*> reduceWindowValues(const HloInstruction* instruction, const Index& index);
  // The N result shapes of a reduce or reduce-window of N inputs (N inputs of one shape, N init values, N results
  // of one shape; N = 1: the plain one), or empty when it is not so formed.
  static std::vector<Shape> variadicResults(const HloInstruction& instruction);
  // reduction_emitter.cpp: the N results of a variadic reduce (N inputs of one shape, N init values: argmax's value
  // and index) at `index` of its outputs, the reduced dimensions visited in row-major order as the evaluator does, so
  // any reducer gives its result; empty after a failure. Tuple-shaped, so never fused: its kernel stores these.
  std::vector<llvm::Value*> variadicReduceValues(const HloInstruction* instruction, const Index& index);

  // A 2-D dot [m,k] x [k,n] (either operand possibly transposed) as the CPU's outer loop over rows
  // [begin, end). Accumulation is in the dot's own precision as XLA's CPU backend does it: f64 dots in f64, every
  // other floating dot (f32, f16, bf16) in f32, with one rounding to the output type at the end; the k terms are
  // summed in chunks of kDotChunk (each in increasing k order into a fresh partial sum, then added to the total),
  // each term as a fused multiply-add where the CPU has one (llvm.fmuladd). The evaluator
  // sums in double, so an f32 dot differs from it by the f32 rounding of K partial sums (see docs/CODEGEN.md).
  // Loop structure (what LLVM vectorises): columns in tiles of up to vectorN(), each tile row's accumulators one
  // LLVM vector kept in registers across the k loop (broadcast the lhs element, load the rhs tile as a vector,
  // one vector FMA per row: on AVX-512 a vfmadd231ps with an embedded broadcast); rows register-blocked, up to 8
  // at a time sharing each rhs tile load, the remaining rows in blocks of halving size.
  // Batch dimensions (any positions) are allowed: rows are then (batch..., m) flattened, the output being
  // [batch..., m, n].
  static bool isRowDot(const HloInstruction* dot);
  // Rows a row dot's range covers: product of the batch dimensions times m.
  static int64_t rowDotRows(const HloInstruction* dot) {
    const int64_t n = dot->shape().dimension(dot->shape().rank() - 1);
    return n == 0 ? 0 : dot->shape().elementCount() / n;
  }
  // Columns per tile of the blocked kernels: two vector registers of f32 (32 on AVX-512, 16 on AVX2, 8 on SSE).
  static int64_t vectorN(VectorUnit vectors) { return 2 * vectors.registerBytes / 4; }
  int64_t vectorN() const { return vectorN(m_vectors); }
  // Vector registers one row of a row dot's column tile takes (its partial sums).
  static int64_t rowDotRegistersPerRow(const HloInstruction* dot, VectorUnit vectors) {
    const int64_t n = dot->shape().dimension(dot->shape().rank() - 1);
    const int64_t width = std::clamp<int64_t>(n, 1, vectorN(vectors));
    const int64_t bytes = elementByteSize(rowDotAccumulationType(dot->shape().elementType()));
    return (width * bytes + vectors.registerBytes - 1) / vectors.registerBytes;
  }
  // Rows per register block: enough independent FMA chains to hide FMA latency, few enough that a block's
  // partial sums stay in registers with room for the rhs tile and the broadcast lhs element: at most 12
  // accumulator registers, and no more than the register file minus four (AVX-512: 6 rows of 2 zmm; AVX2: the
  // classic 6x16 block of 12 ymm, the rhs tile's 2 and the broadcast making 15 of 16).
  static int64_t rowDotBlock(const HloInstruction* dot, VectorUnit vectors) {
    const int64_t budget = std::min<int64_t>(12, vectors.registers - 4);
    return std::clamp<int64_t>(budget / rowDotRegistersPerRow(dot, vectors), 1, 8);
  }
  // Terms summed into a fresh partial sum before it is added to the row's total: bounds the f32 rounding error
  // growth by about kDotChunk + K / kDotChunk roundings instead of K (blocked summation, as k-blocked BLAS
  // kernels get for free), at one vector add per row per chunk.
  static constexpr int64_t kDotChunk = 32;
  // The lhs rows a row dot keeps in the L2 cache while it walks the column tiles over them (see rowsRange).
  static constexpr int64_t kDotRowGroupBytes = 128 * 1024;
  // The largest rhs tile (k x padded columns) a row dot packs into a stack scratch (see rowsRange).
  static constexpr int64_t kDotPackedBytes = 256 * 1024;
  // The accumulation type of a dot producing `type`.
  static PrimitiveType dotAccumulationType(PrimitiveType type);
  // The row dot's: floating dots as dotAccumulationType, integer dots in their own type (s8 x s8 -> s32 sums in
  // s32, wrapping as XLA's do).
  static PrimitiveType rowDotAccumulationType(PrimitiveType type) {
    return isFloatingPoint(type) ? dotAccumulationType(type) : type;
  }
  // `root` is the dot itself or an elementwise epilogue over it (bias add, ReLU: a kOutput fusion): each output
  // row's dot sums are computed once and the epilogue reads them, bound in place of the dot.
  void rowDot(const HloInstruction* dot, const HloInstruction* root, llvm::Value* out, llvm::Value* begin,
              llvm::Value* end);

  // An unfused transpose of the two innermost dimensions ([.., c, r] -> [.., r, c], both row-major), as
  // `dot-rhs-transpose` makes: the CPU computes it in strips of kTransposeStrip output rows. Per input row c, the
  // strip's kTransposeStrip contiguous elements are read at once and written one to each output row, so reads are
  // whole cache lines and writes kTransposeStrip sequential streams, where the element loop reads one element per
  // cache line. The range is the strips: batch × ceil(r / kTransposeStrip).
  static constexpr int64_t kTransposeStrip = 16;
  // An L x L block held as L vectors of L lanes (row r = rows[r]; L a power of two) transposed: its columns, by
  // log2(L) rounds of two-input shuffles (rows i and i + s exchange their odd and even lane blocks of s).
  std::vector<llvm::Value*> transposeInRegisters(std::vector<llvm::Value*> rows);
  // Copies the lanes x lanes block at `from` (its rows `fromStride` elements apart) transposed to `to` (rows
  // `toStride` apart): lanes vector loads, transposeInRegisters, lanes vector stores.
  void transposeBlock(llvm::Value* from, int64_t fromStride, llvm::Value* to, int64_t toStride, int64_t lanes,
                      llvm::Type* type);
  // Copies the row-major [rows][columns] matrix at `from` (elements of `type`) transposed to the row-major
  // [columns][rows] matrix at `to`: whole L x L blocks (one vector register's lanes) loaded as rows, transposed in
  // registers and stored as rows, the edges element by element.
  void transposeMatrix(llvm::Value* from, llvm::Value* to, int64_t rows, int64_t columns, llvm::Type* type);
  static bool isStripTranspose(const HloInstruction* transpose);
  static int64_t stripTransposeStrips(const HloInstruction* transpose);
  void stripTranspose(const HloInstruction* transpose, llvm::Value* in, llvm::Value* out, llvm::Value* begin,
                      llvm::Value* end);

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

  // Whether reduce() computes `reduce`'s operand row into a scratch row first (CPU, one innermost reduced dimension
  // of 8..16384 elements): then the row can also be written out as a side output (see SideOutput).
  static bool usesScratchRow(const HloInstruction* reduce, KernelTarget target);

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

  // serial_emitter.cpp: ops that are not a function of the output index, as whole-kernel loops.
  // scatter: `outs` = the operands (one output per operand: several for a variadic scatter), then the updates
  // applied in the evaluator's order (update elements row-major) with the combiner inlined; one range item (a
  // thread) does it all, since updates may collide.
  void scatterKernel(const HloInstruction* scatter, const std::vector<llvm::Value*>& outs);
  // sort along one dimension: range item `slice` sorts one slice of every operand into `outs` (one per operand),
  // stably, as the evaluator's merge sort orders equal keys.
  void sortKernel(const HloInstruction* sort, const std::vector<llvm::Value*>& outs, llvm::Value* slice);
  static constexpr int64_t kMaxMergeSortLength = 4096;
  // Slices a sort kernel has (its range).
  static int64_t sortSlices(const HloInstruction* sort);
  // if (cond) body(); with the value cache scoped to the body (its values do not dominate what follows).
  void ifThen(llvm::Value* cond, const std::function<void()>& body);

 private:
  // window_emitter.cpp: windowed and indexed ops, each computed per output element.
  llvm::Value* reduceWindow(const HloInstruction* instruction, const Index& index);
  llvm::Value* convolution(const HloInstruction* instruction, const Index& index);
  llvm::Value* selectAndScatter(const HloInstruction* instruction, const Index& index);
  llvm::Value* gather(const HloInstruction* instruction, const Index& index);
  // The operand coordinate a window position reads in one dimension: (out * stride + k * dilation - padLow) /
  // baseDilation, and whether it is a real element (not padding nor a base-dilation hole).
  std::pair<llvm::Value*, llvm::Value*> windowCoordinate(llvm::Value* out, llvm::Value* k, const WindowDim& w,
                                                         int64_t size);
  // One slice sorted as the evaluator does (its bottom-up merge sort, on an index permutation in two stack
  // arrays of `length`), for slices up to kMaxMergeSortLength; longer ones use an in-place insertion sort.
  void mergeSortSlice(const HloInstruction* sort, const std::vector<llvm::Value*>& outs,
                      const std::vector<int64_t>& dims, int64_t length,
                      const std::function<llvm::Value*(llvm::Value*)>& linearAt);

  Index sameIndex(const Index& index, const HloInstruction* operand);
  llvm::Value* operandAt(const HloInstruction* instruction, int i, const Index& index);

  llvm::Value* mathCall(const char* name, std::vector<llvm::Value*> args);
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args);

  llvm::Value* floatUnary(const HloInstruction* instruction, llvm::Value* x);
  // Vector math in the IR (vector_math_emitter.cpp): f32 exp, expm1, log, log1p and atan2 and f64 exp and log as
  // polynomials (vectorisable, no slow lanes; other types go to the vector library or libm), f32 tanh and erf as
  // rational approximations.
  llvm::Value* cpuExp(llvm::Value* x);
  llvm::Value* cpuExpm1(llvm::Value* x);
  llvm::Value* expF32(llvm::Value* x, bool minusOne);
  llvm::Value* expF64(llvm::Value* x);
  llvm::Value* cpuLog(llvm::Value* x);
  llvm::Value* logF64(llvm::Value* x);
  llvm::Value* cpuLog1p(llvm::Value* x);
  // atan2(y, x): in the IR for f32 on the CPU (cpuAtan2), else the math library's.
  llvm::Value* atan2Of(llvm::Value* y, llvm::Value* x);
  llvm::Value* cpuAtan2(llvm::Value* y, llvm::Value* x);
  llvm::Value* rationalTanh(llvm::Value* x);
  llvm::Value* rationalErf(llvm::Value* x);
  // c0 * x^(n-1) + ... + c(n-1), by Horner's rule with fused multiply-adds.
  llvm::Value* horner(const std::vector<double>& coefficients, llvm::Value* x);

  llvm::Value* integerUnary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x);

  llvm::Value* floatBinary(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y);

  llvm::Value* integerBinary(const HloInstruction* instruction, PrimitiveType type, llvm::Value* x, llvm::Value* y);
  llvm::Value* floatMaxMin(bool maximum, llvm::Value* x, llvm::Value* y);
  llvm::Value* integerMaxMin(bool maximum, bool isSigned, llvm::Value* x, llvm::Value* y);
  // One step of a reductionLanes reducer (add, multiply, and, or, maximum, minimum) on scalars or vectors of
  // `type`, as the reducer computes it.
  llvm::Value* reductionStep(HloOpcode op, PrimitiveType type, llvm::Value* x, llvm::Value* y);

  llvm::Value* compare(const HloInstruction* instruction, llvm::Value* x, llvm::Value* y);

  llvm::Value* floatToInteger(llvm::Value* x, llvm::Type* target, bool isSigned);
  llvm::Value* convert(PrimitiveType from, PrimitiveType to, llvm::Value* x);

  llvm::Value* constantValue(const HloInstruction* instruction, const Index& index);
  llvm::Value* toStorageConstant(PrimitiveType type, llvm::Value* v);

  llvm::Value* generateComputed(const HloInstruction* instruction, const Index& index);

  // complex_emitter.cpp: complex values are structs {re, im} of the part type.
  llvm::Value* makeComplex(PrimitiveType type, llvm::Value* re, llvm::Value* im);
  std::pair<llvm::Value*, llvm::Value*> complexParts(llvm::Value* z);
  // exp, expm1, log, log1p, sin, cos, sqrt of a real part, as floatUnary lowers them for the target.
  llvm::Value* realMath(HloOpcode op, llvm::Value* x);
  llvm::Value* complexDivide(PrimitiveType type, llvm::Value* x, llvm::Value* y);
  llvm::Value* complexAbs(llvm::Value* re, llvm::Value* im);
  llvm::Value* complexTanh(PrimitiveType type, llvm::Value* z);
  // add, subtract, multiply, divide of two complex values (nullptr for other ops).
  llvm::Value* complexBinary(HloOpcode op, PrimitiveType type, llvm::Value* x, llvm::Value* y);
  // An elementwise instruction, convert or compare with a complex operand or result.
  llvm::Value* complexElementwise(const HloInstruction* instruction, const Index& index);

  llvm::Value* concatenate(const HloInstruction* instruction, const Index& index, int64_t dim, int operand,
                           int64_t offset);

  llvm::Value* pad(const HloInstruction* instruction, const Index& index);
  llvm::Value* bitcastConvert(const HloInstruction* instruction, const Index& index);
  llvm::Value* clampedStart(const HloInstruction* instruction, int operand, int64_t maxStart);
  llvm::Value* dynamicUpdateSlice(const HloInstruction* instruction, const Index& index);

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

  llvm::Value* reduce(const HloInstruction* instruction, const Index& index);

  llvm::Value* dot(const HloInstruction* instruction, const Index& index);

  llvm::Module& m_module;
  llvm::LLVMContext& m_context;
  llvm::IRBuilder<> m_b;
  KernelTarget m_target;
  VectorUnit m_vectors;
  llvm::Function* m_function = nullptr;
  Status m_status;
  std::unordered_map<const HloInstruction*, llvm::Value*> m_leaves;
  std::unordered_map<const HloInstruction*, llvm::Value*> m_bound;
  std::map<CacheKey, llvm::Value*> m_cache;
  std::unordered_map<const HloInstruction*, llvm::GlobalVariable*> m_constantGlobals;
  SideOutput m_sideOutput;
};

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
                                       const std::vector<llvm::Value*>& args, size_t inputCount);

}  // namespace fusionscope::core
