#include "core/passes/reduce_window_rewriter.h"

#include <numeric>
#include <optional>
#include <vector>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/hlo_module.h"
#include "core/passes/fusion_utils.h"

namespace fusionscope::core {
namespace {

bool trivial(const WindowDim& w) {
  return w.size == 1 && w.stride == 1 && w.padLow == 0 && w.padHigh == 0 && w.windowDilation == 1 &&
         w.baseDilation == 1 && !w.reversal;
}

// The reducer's op when it is one commutative binary op of its two parameters, else nullopt.
std::optional<HloOpcode> commutativeReducerOp(const HloComputation* reducer) {
  if (reducer == nullptr || reducer->parameterCount() != 2) return std::nullopt;
  const HloInstruction* root = reducer->root();
  if (root == nullptr || root->operandCount() != 2 || root->operand(0) == root->operand(1)) return std::nullopt;
  for (const HloInstruction* operand : root->operands()) {
    if (operand->opcode() != HloOpcode::kParameter) return std::nullopt;
  }
  switch (root->opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kMultiply:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kAnd:
    case HloOpcode::kOr: return root->opcode();
    default: return std::nullopt;
  }
}

struct Scan {
  int dimension = -1;
  int64_t length = 0;
  bool forward = true;
  bool exclusive = false;
  HloOpcode op = HloOpcode::kAdd;
};

// `inst` as a scan this pass rewrites, else nullopt.
std::optional<Scan> scanOf(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::kReduceWindow || inst.operandCount() != 2 || !inst.shape().isArray() ||
      !inst.attributes().window) {
    return std::nullopt;
  }
  const Shape& input = inst.operand(0)->shape();
  if (!input.isArray() || input.hasDynamicDimension()) return std::nullopt;
  const std::vector<WindowDim>& dims = inst.attributes().window->dims;
  if (static_cast<int>(dims.size()) != input.rank()) return std::nullopt;
  Scan scan;
  for (int d = 0; d < input.rank(); ++d) {
    if (trivial(dims[static_cast<size_t>(d)])) continue;
    if (scan.dimension != -1) return std::nullopt;  // a window over two dimensions
    scan.dimension = d;
  }
  if (scan.dimension == -1) return std::nullopt;
  const WindowDim& w = dims[static_cast<size_t>(scan.dimension)];
  scan.length = input.dimension(scan.dimension);
  const bool forward = (w.padLow == scan.length - 1 || w.padLow == scan.length) && w.padHigh == 0;
  const bool reverse = (w.padHigh == scan.length - 1 || w.padHigh == scan.length) && w.padLow == 0;
  if (w.stride != 1 || w.size != scan.length || (!forward && !reverse) || w.reversal || w.baseDilation != 1 ||
      w.windowDilation != 1 || scan.length <= ReduceWindowRewriter::kBase) {
    return std::nullopt;
  }
  scan.forward = forward;
  scan.exclusive = forward ? w.padLow == scan.length : w.padHigh == scan.length;
  std::optional<HloOpcode> op = commutativeReducerOp(inst.toApply());
  if (!op) return std::nullopt;
  scan.op = *op;
  return scan;
}

// Builds the rewrite in `computation`, each new instruction with the reduce-window's metadata.
class Builder {
 public:
  Builder(HloComputation& computation, const HloInstruction& original)
      : m_computation(computation), m_original(original), m_type(original.shape().elementType()) {}

  Shape shape(std::vector<int64_t> dims) const {
    Shape s(m_type, dims);
    if (m_original.shape().layout()) {
      Layout layout;
      for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) layout.minorToMajor.push_back(d);
      s.setLayout(layout);
    }
    return s;
  }

  HloInstruction* add(std::string_view name, HloOpcode opcode, std::vector<int64_t> dims,
                      const std::vector<HloInstruction*>& operands) {
    HloInstruction* inst = m_computation.addInstruction(name, opcode, shape(std::move(dims)), operands);
    inst->mutableAttributes().metadata = m_original.attributes().metadata;
    return inst;
  }

  HloInstruction* transposeLast(HloInstruction* x, int dimension) {
    const int rank = x->shape().rank();
    if (dimension == rank - 1) return x;
    std::vector<int64_t> permutation(static_cast<size_t>(rank));
    std::iota(permutation.begin(), permutation.end(), 0);
    std::swap(permutation[static_cast<size_t>(dimension)], permutation.back());
    std::vector<int64_t> dims;
    for (int64_t p : permutation) dims.push_back(x->shape().dimension(static_cast<int>(p)));
    HloInstruction* t = add("transpose", HloOpcode::kTranspose, dims, {x});
    t->mutableAttributes().dimensions = permutation;
    return t;
  }

  HloInstruction* pad(HloInstruction* x, HloInstruction* value, int dimension, int64_t low, int64_t high) {
    std::vector<PaddingDim> padding(static_cast<size_t>(x->shape().rank()));
    padding[static_cast<size_t>(dimension)] = PaddingDim{low, high, 0};
    std::vector<int64_t> dims = x->shape().dimensions();
    dims[static_cast<size_t>(dimension)] += low + high;
    HloInstruction* p = add("pad", HloOpcode::kPad, dims, {x, value});
    p->mutableAttributes().padding = padding;
    return p;
  }

  HloInstruction* slice(HloInstruction* x, int dimension, int64_t start, int64_t limit) {
    std::vector<SliceDim> slices;
    std::vector<int64_t> dims = x->shape().dimensions();
    for (int64_t size : dims) slices.push_back(SliceDim{0, size, 1});
    slices[static_cast<size_t>(dimension)] = SliceDim{start, limit, 1};
    dims[static_cast<size_t>(dimension)] = limit - start;
    HloInstruction* s = add("slice", HloOpcode::kSlice, dims, {x});
    s->mutableAttributes().slice = slices;
    return s;
  }

  // A scan of the last dimension: a window as long as `window`, padded before (forward) or after by `padding`.
  HloInstruction* scanLast(HloInstruction* x, HloInstruction* init, int64_t window, int64_t padding, bool forward,
                           std::vector<int64_t> outDims) {
    Window w;
    w.dims.assign(static_cast<size_t>(x->shape().rank()), WindowDim{});
    WindowDim& last = w.dims.back();
    last.size = window;
    (forward ? last.padLow : last.padHigh) = padding;
    HloInstruction* r = add("reduce-window", HloOpcode::kReduceWindow, std::move(outDims), {x, init});
    r->mutableAttributes().window = w;
    r->mutableCalledComputationRefs().push_back({"to_apply", {m_original.toApply()}, false});
    return r;
  }

 private:
  HloComputation& m_computation;
  const HloInstruction& m_original;
  PrimitiveType m_type;
};

void rewrite(HloComputation& computation, HloInstruction* inst, const Scan& scan) {
  constexpr int64_t kBase = ReduceWindowRewriter::kBase;
  Builder b(computation, *inst);
  HloInstruction* init = inst->operand(1);
  const int rank = inst->operand(0)->shape().rank();
  const int last = rank - 1;
  HloInstruction* source = b.transposeLast(inst->operand(0), scan.dimension);
  const int64_t padded = (scan.length + kBase - 1) / kBase * kBase;
  if (padded != scan.length) source = b.pad(source, init, last, 0, padded - scan.length);
  const int64_t columns = padded / kBase;
  std::vector<int64_t> tiled = source->shape().dimensions();
  tiled.back() = columns;
  tiled.push_back(kBase);
  HloInstruction* reshaped = b.add("reshape", HloOpcode::kReshape, tiled, {source});
  // Within each column, then the columns' totals (each column's last element, or first for a reverse scan).
  HloInstruction* outer = b.scanLast(reshaped, init, kBase, kBase - 1, scan.forward, tiled);
  HloInstruction* total = b.slice(outer, rank, scan.forward ? kBase - 1 : 0, scan.forward ? kBase : 1);
  std::vector<int64_t> columnDims(tiled.begin(), tiled.end() - 1);
  HloInstruction* totals = b.add("reshape", HloOpcode::kReshape, columnDims, {total});
  std::vector<int64_t> exclusiveDims = columnDims;
  exclusiveDims.back() = columns + 1;
  HloInstruction* before = b.scanLast(totals, init, columns, columns, scan.forward, exclusiveDims);
  before = b.slice(before, last, scan.forward ? 0 : 1, scan.forward ? columns : columns + 1);
  HloInstruction* spread = b.add("broadcast", HloOpcode::kBroadcast, tiled, {before});
  std::vector<int64_t> kept(static_cast<size_t>(rank));
  std::iota(kept.begin(), kept.end(), 0);
  spread->mutableAttributes().dimensions = kept;
  HloInstruction* combined = b.add(opcodeName(scan.op), scan.op, tiled, {outer, spread});
  HloInstruction* result = b.add("reshape", HloOpcode::kReshape, source->shape().dimensions(), {combined});
  result = b.transposeLast(result, scan.dimension);
  if (padded != scan.length) result = b.slice(result, scan.dimension, 0, scan.length);
  if (scan.exclusive) result = b.pad(result, init, scan.dimension, scan.forward ? 1 : 0, scan.forward ? 0 : 1);
  inst->replaceAllUsesWith(result);
  (void)computation.removeInstruction(inst);
}

}  // namespace

StatusOr<bool> ReduceWindowRewriter::run(HloModule& module, PassContext&) {
  bool changed = false;
  for (HloComputation* computation : computationsToFuseIn(module)) {
    StatusOr<std::vector<HloInstruction*>> order = computation->postOrder();
    if (!order.ok()) return order.status();
    bool computationChanged = false;
    for (HloInstruction* inst : *order) {
      std::optional<Scan> scan = scanOf(*inst);
      if (!scan) continue;
      rewrite(*computation, inst, *scan);
      computationChanged = true;
    }
    if (computationChanged) {
      changed = true;
      FS_RETURN_IF_ERROR(computation->sortInPostOrder());
    }
  }
  return changed;
}

}  // namespace fusionscope::core
