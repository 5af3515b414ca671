#include "core/pipeline/pass_registry.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/ir/hlo_clone.h"
#include "core/passes/algebraic_simplifier.h"
#include "core/passes/batch_norm_expander.h"
#include "core/passes/call_inliner.h"
#include "core/passes/conditional_simplifier.h"
#include "core/passes/convolution_layout.h"
#include "core/passes/cse.h"
#include "core/passes/dce.h"
#include "core/passes/dot_rhs_transpose.h"
#include "core/passes/float_normalization.h"
#include "core/passes/fusion_merger.h"
#include "core/passes/gather_scatter_expanders.h"
#include "core/passes/instruction_fusion.h"
#include "core/passes/library_fusion.h"
#include "core/passes/multi_output_fusion.h"
#include "core/passes/reduce_window_rewriter.h"
#include "core/passes/reshape_mover.h"
#include "core/passes/rng_bit_generator_expander.h"
#include "core/passes/softmax_fusion.h"
#include "core/passes/topk_decomposer.h"
#include "core/passes/tree_reduction.h"
#include "core/passes/tuple_simplifier.h"
#include "core/passes/while_loop_invariant_code_motion.h"
#include "core/passes/while_loop_simplifier.h"
#include "core/pipeline/stage.h"

namespace fusionscope::core {
namespace {

struct Registration {
  PassInfo info;
  std::function<std::unique_ptr<HloPass>()> create;
};

template <typename Pass>
std::function<std::unique_ptr<HloPass>()> factory() {
  return [] { return std::make_unique<Pass>(); };
}

const std::vector<Registration>& registrations() {
  static const std::vector<Registration> kPasses = {
      {{"inline", "inline every call into its caller"}, factory<CallInliner>()},
      {{"simplify", "algebraic simplification: x+0, x*1, identity reshapes/transposes, constant folding"},
       factory<AlgebraicSimplifier>()},
      {{"reshape-mover",
        "an elementwise op over the same reshape/transpose of its operands computed before it, the reshape after "
        "(XLA's reshape mover, in the simplification loop)"},
       factory<ReshapeMover>()},
      {{"cse", "common subexpression elimination"}, factory<CommonSubexpressionElimination>()},
      {{"dce", "dead code elimination: unused instructions and computations"}, factory<DeadCodeElimination>()},
      {{"tuple-simplify", "get-tuple-element of tuple, tuple of get-tuple-elements"}, factory<TupleSimplifier>()},
      {{"while-simplify",
        "while loops: state elements that always hold one value merged, elements nothing reads dropped (as XLA)"},
       factory<WhileLoopSimplifier>()},
      {{"conditional-simplify",
        "a conditional whose branch index is a constant runs that branch inline; one over a pred whose branches hold "
        "only cheap ops selects between both (XLA's conditional simplifier)"},
       factory<ConditionalSimplifier>()},
      {{"reduce-window-rewriter",
        "a cumulative reduction longer than 16 elements as a scan within columns of 16 and one over the columns' "
        "totals (XLA CPU's ReduceWindowRewriter; cpu preset)"},
       factory<ReduceWindowRewriter>()},
      {{"while-licm",
        "what a while body computes from values that do not change between iterations computed once before the loop "
        "(XLA's while-loop invariant code motion; cpu preset)"},
       factory<WhileLoopInvariantCodeMotion>()},
      {{"fusion", "producer-consumer fusion into kLoop, kInput and kOutput fusions (cost model in bytes)"},
       factory<InstructionFusion>()},
      {{"dot-rhs-transpose",
        "a large dot rhs contracted on its innermost dimension is transposed once before the dot (free dimension "
        "innermost)"},
       factory<DotRhsTranspose>()},
      {{"convolution-layout",
        "a convolution whose output feature is not innermost (NCHW, 01oi kernels) computes NHWC from an HWIO kernel "
        "between transposes"},
       factory<ConvolutionLayout>()},
      {{"library-fusion",
        "dots, convolutions and large reductions with their neighbours into library (kCustom) fusions"},
       factory<LibraryFusion>()},
      {{"tree-reduction",
        "reductions over more than 32 elements reduce windows of 32 first (reduce-window, then reduce)"},
       factory<TreeReduction>()},
      {{"softmax-fusion",
        "whole-row normalizations (softmax, layer norm: reduce, broadcast back, combine) into one kCustom fusion each"},
       factory<SoftmaxFusion>()},
      {{"fusion-merger", "merge loop fusions into their consumer fusions when that cuts memory traffic"},
       factory<FusionMerger>()},
      {{"multi-output-fusion", "sibling and producer-consumer multi-output fusion (tuple roots)"},
       factory<MultiOutputFusion>()},
      {{"batch-norm-expander",
        "batch-norm-training/-inference/-grad into broadcasts, elementwise ops and add reductions (as XLA)"},
       factory<BatchNormExpander>()},
      {{"bf16-normalization",
        "bf16 ops computed in f32 between converts, reducers cloned in f32 (XLA CPU's float normalization; "
        "cpu preset)"},
       factory<FloatNormalization>()},
      {{"topk-decomposer",
        "topk (and XLA CPU's TopK custom-call) into a stable sort of (values, iota) and slices of its first k (XLA "
        "CPU's TopkDecomposer; cpu preset)"},
       factory<TopKDecomposer>()},
      {{"rng-bit-generator-expander",
        "rng-bit-generator into the elementwise ThreeFry or Philox rounds that compute its numbers (as XLA)"},
       factory<RngBitGeneratorExpander>()},
      {{"gather-scatter-batching",
        "gathers and scatters with batching dimensions (vmap) as plain ones: an iota per batching dimension joins "
        "the index vector (XLA's batched gather/scatter normalizer)"},
       factory<GatherScatterBatchingNormalizer>()},
      {{"gather-expander",
        "a gather of a single slice as a dynamic-slice and a reshape (XLA's gather expander for simple gathers)"},
       factory<SimpleGatherExpander>()},
      {{"scatter-expander",
        "a scatter of a single window as a dynamic-update-slice of the combined window, kept unchanged when the "
        "window leaves the operand (XLA's scatter expander for simple scatters)"},
       factory<SimpleScatterExpander>()},
  };
  return kPasses;
}

std::string knownNames() {
  std::vector<std::string> names;
  for (const Registration& r : registrations()) names.push_back(r.info.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::unique_ptr<PassPipeline> simplification(bool cpu) {
  auto pipeline = std::make_unique<PassPipeline>("simplification");
  // XLA expands batch norms (both backends, cuDNN aside) and random-number generators right after inlining,
  // before its simplifier: the simplifier, cse and tuple-simplify then clean up the expansions in the same round,
  // and fusion sees their ops. XLA CPU decomposes top-k into a sort as early (XLA GPU keeps it for its own kernel).
  // XLA's simplification loop moves reshapes across elementwise ops (the reshape mover) between its simplifier and
  // CSE: values written in two shapes (a mean in [1,1,1,C] and in [C]) become one.
  // XLA CPU hoists loop invariants out of while bodies (its while-loop invariant code motion) before tuple-simplify
  // and the while-loop simplifier in the same loop.
  // XLA CPU rewrites long scans into short ones (its reduce-window rewriter) as early.
  // Both XLA backends first turn batched (vmapped) gathers and scatters into plain ones, and in their
  // simplification loop a gather of one slice into a dynamic-slice and a scatter of one window into a
  // dynamic-update-slice: fusion then sees those ops (and the index vectors' iotas, slices and bounds checks).
  // Both XLA backends remove conditionals whose branch is known when compiling (or cheap) in that loop, so the
  // branch's ops are fused with their neighbours.
  // XLA CPU runs CSE once the simplification loop is done, not in it (its pass-by-pass dumps show `cse` after the
  // loop): values the loop rewrites differently stay apart, as gp_regression's two jitter terms, one moved into
  // f32[1] by the reshape mover and one kept in f32[] because the gradient reads its reshape too.
  for (const char* name :
       {"inline", "batch-norm-expander", "rng-bit-generator-expander", "gather-scatter-batching", "gather-expander",
        "scatter-expander", "topk-decomposer", "reduce-window-rewriter", "simplify", "reshape-mover", "cse",
        "while-licm", "tuple-simplify", "while-simplify", "conditional-simplify", "dce"}) {
    const std::string_view pass(name);
    if (!cpu && (pass == "topk-decomposer" || pass == "reduce-window-rewriter" || pass == "while-licm")) continue;
    if (cpu && pass == "cse") continue;
    pipeline->addPass(std::move(createPass(name)).value());
  }
  // Inlining and folding expose more folding and sharing; a few rounds reach the fixed point in practice.
  pipeline->setFixedPoint(3);
  return pipeline;
}

}  // namespace

const std::vector<PassInfo>& registeredPasses() {
  static const std::vector<PassInfo> kInfos = [] {
    std::vector<PassInfo> infos;
    for (const Registration& r : registrations()) infos.push_back(r.info);
    return infos;
  }();
  return kInfos;
}

StatusOr<std::unique_ptr<HloPass>> createPass(std::string_view name) {
  for (const Registration& r : registrations()) {
    if (r.info.name == name) return r.create();
  }
  return Status::error(fmt::format("unknown pass '{}' (known passes: {})", name, knownNames()));
}

std::vector<std::string> presetNames() {
  return {"gpu", "cpu"};
}

Backend backendFor(const PipelineSpec& spec) {
  // `--passes` with `--pipeline cpu` runs those passes with the cpu backend's rules, as the user asked.
  return spec.preset == "cpu" ? Backend::kCpu : Backend::kGpu;
}

StatusOr<std::unique_ptr<PassPipeline>> buildPipeline(const PipelineSpec& spec) {
  std::set<std::string, std::less<>> disabled;
  for (const std::string& name : spec.disabled) {
    if (StatusOr<std::unique_ptr<HloPass>> pass = createPass(name); !pass.ok()) return pass.status();
    disabled.insert(name);
  }
  std::unique_ptr<PassPipeline> pipeline;
  if (!spec.passes.empty()) {
    pipeline = std::make_unique<PassPipeline>("custom");
    for (const std::string& name : spec.passes) {
      StatusOr<std::unique_ptr<HloPass>> pass = createPass(name);
      if (!pass.ok()) return pass.status();
      pipeline->addPass(std::move(*pass));
    }
  } else if (spec.preset == "gpu" || spec.preset == "cpu") {
    pipeline = std::make_unique<PassPipeline>(spec.preset);
    // XLA CPU has no bf16 arithmetic: its float normalization computes bf16 ops in f32 once, before its
    // simplification loop, which then folds the converts of constants and moves converts past broadcasts.
    if (spec.preset == "cpu") pipeline->addPass(std::move(createPass("bf16-normalization")).value());
    pipeline->addPass(simplification(spec.preset == "cpu"));
    // XLA CPU's CSE after its simplification loop (above).
    if (spec.preset == "cpu") pipeline->addPass(std::move(createPass("cse")).value());
    auto fusion = std::make_unique<PassPipeline>("fusion");
    // XLA's CPU order: the library rewriter takes its subgraphs before the loop fusion.
    if (spec.preset == "cpu") {
      // XLA CPU's layout assignment gives a dot's rhs the layout its GEMM reads; here, a transpose before the dot.
      fusion->addPass(std::move(createPass("dot-rhs-transpose")).value());
      fusion->addPass(std::move(createPass("convolution-layout")).value());
      fusion->addPass(std::move(createPass("library-fusion")).value());
      // XLA CPU rewrites the reductions its library did not take into trees before loop fusion.
      fusion->addPass(std::move(createPass("tree-reduction")).value());
    }
    // XLA's GPU order: the softmax rewriter forms its row fusions before priority fusion.
    if (spec.preset == "gpu") fusion->addPass(std::move(createPass("softmax-fusion")).value());
    fusion->addPass(std::move(createPass("fusion")).value());
    if (spec.preset == "gpu") {
      // XLA's GPU order: producer-consumer fusion, then merge loop fusions, then multi-output fusion.
      fusion->addPass(std::move(createPass("fusion-merger")).value());
      fusion->addPass(std::move(createPass("multi-output-fusion")).value());
    }
    fusion->addPass(std::move(createPass("cse")).value());
    fusion->addPass(std::move(createPass("dce")).value());
    pipeline->addPass(std::move(fusion));
  } else {
    return Status::error(fmt::format("unknown pipeline '{}' (known: gpu, cpu)", spec.preset));
  }
  pipeline->setDisabledPasses(std::move(disabled));
  return pipeline;
}

StatusOr<std::unique_ptr<HloModule>> optimizedCopy(const HloModule& module, const std::string& preset, bool fusion) {
  std::unique_ptr<HloModule> copy = cloneModule(module);
  if (preset == "none") return copy;
  PipelineSpec spec;
  spec.preset = preset;
  if (!fusion) spec.disabled = {"softmax-fusion", "fusion", "fusion-merger", "multi-output-fusion"};
  StatusOr<std::unique_ptr<PassPipeline>> pipeline = buildPipeline(spec);
  if (!pipeline.ok()) return pipeline.status();
  PassContext context(fusionConfigFor(backendFor(spec)));
  StatusOr<PipelineRun> run = runPipeline(**pipeline, *copy, context);
  if (!run.ok()) return run.status();
  return copy;
}

}  // namespace fusionscope::core
