// JAX's LAPACK custom calls compiled for the CPU (a kernel per call that runs LAPACK on its buffers) against the
// evaluator (the same routines in f64), unfused and through both fusion presets; and where they cannot go.
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "core/codegen/aot_compiler.h"
#include "core/codegen/execution_plan.h"
#include "core/codegen/ptx_bundle.h"
#include "tests/core/testing/codegen_testing.h"

namespace fusionscope::core {
namespace {

// Every supported routine over a batch of 3, the matrices in XLA's column-major layouts as JAX's modules have them,
// fed by fusible work (a batched dot, an identity from iotas) and read by it.
constexpr std::string_view kAllRoutines = R"(HloModule linalg_all
ENTRY e {
  x = f32[3,8,8]{2,1,0} parameter(0)
  b = f32[3,8,5]{2,1,0} parameter(1)
  g = f32[3,8,8]{2,1,0} dot(x, x), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  r = s32[3,8,8] iota(), iota_dimension=1
  c = s32[3,8,8] iota(), iota_dimension=2
  diagonal = pred[3,8,8] compare(r, c), direction=EQ
  eight = f32[] constant(8)
  zero = f32[] constant(0)
  e8 = f32[3,8,8] broadcast(eight), dimensions={}
  z = f32[3,8,8] broadcast(zero), dimensions={}
  shift = f32[3,8,8] select(diagonal, e8, z)
  spd = f32[3,8,8]{1,2,0} add(g, shift)
  chol = (f32[3,8,8]{1,2,0}, s32[3]{0}) custom-call(spd), custom_call_target="lapack_spotrf_ffi", operand_layout_constraints={f32[3,8,8]{1,2,0}}, output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}, frontend_attributes={num_batch_dims="1"}
  l = f32[3,8,8]{1,2,0} get-tuple-element(chol), index=0
  info = s32[3]{0} get-tuple-element(chol), index=1
  left = f32[3,8,5]{1,2,0} custom-call(l, b), custom_call_target="lapack_strsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}, frontend_attributes={num_batch_dims="1"}
  bt = f32[3,5,8]{2,1,0} transpose(b), dimensions={0,2,1}
  right = f32[3,5,8]{1,2,0} custom-call(l, bt), custom_call_target="lapack_strsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 82 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, frontend_attributes={num_batch_dims="1"}
  lu = (f32[3,8,8]{1,2,0}, s32[3,8]{1,0}, s32[3]{0}) custom-call(x), custom_call_target="lapack_sgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}, frontend_attributes={num_batch_dims="1"}
  factors = f32[3,8,8]{1,2,0} get-tuple-element(lu), index=0
  pivots = s32[3,8]{1,0} get-tuple-element(lu), index=1
  qr = (f32[3,8,5]{1,2,0}, f32[3,5]{1,0}) custom-call(b), custom_call_target="lapack_sgeqrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}, frontend_attributes={num_batch_dims="1"}
  reflectors = f32[3,8,5]{1,2,0} get-tuple-element(qr), index=0
  tau = f32[3,5]{1,0} get-tuple-element(qr), index=1
  q = f32[3,8,5]{1,2,0} custom-call(reflectors, tau), custom_call_target="lapack_sorgqr_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}, frontend_attributes={num_batch_dims="1"}
  eig = (f32[3,8,8]{1,2,0}, f32[3,8]{1,0}, s32[3]{0}) custom-call(spd), custom_call_target="lapack_ssyevd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 85 : ui8}, frontend_attributes={num_batch_dims="1"}
  vectors = f32[3,8,8]{1,2,0} get-tuple-element(eig), index=0
  values = f32[3,8]{1,0} get-tuple-element(eig), index=1
  svd = (f32[3,8,5]{1,2,0}, f32[3,5]{1,0}, f32[3,8,5]{1,2,0}, f32[3,5,5]{1,2,0}, s32[3]{0}) custom-call(b), custom_call_target="lapack_sgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 83 : ui8}, frontend_attributes={num_batch_dims="1"}
  sv = f32[3,5]{1,0} get-tuple-element(svd), index=1
  su = f32[3,8,5]{1,2,0} get-tuple-element(svd), index=2
  svt = f32[3,5,5]{1,2,0} get-tuple-element(svd), index=3
  full = (f32[3,5,8]{1,2,0}, f32[3,5]{1,0}, f32[3,5,5]{1,2,0}, f32[3,8,8]{1,2,0}, s32[3]{0}) custom-call(bt), custom_call_target="lapack_sgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 65 : ui8}, frontend_attributes={num_batch_dims="1"}
  fv = f32[3,5]{1,0} get-tuple-element(full), index=1
  fvt = f32[3,8,8]{1,2,0} get-tuple-element(full), index=3
  two = f32[] constant(2)
  t2 = f32[3,5,8] broadcast(two), dimensions={}
  scaled = f32[3,5,8] multiply(right, t2)
  ROOT t = (f32[3,8,5]{2,1,0}, f32[3,5,8]{2,1,0}, f32[3,8,8]{2,1,0}, s32[3,8]{1,0}, f32[3,8,5]{2,1,0}, f32[3,8,5]{2,1,0}, f32[3,8,8]{2,1,0}, f32[3,8]{1,0}, s32[3]{0}, f32[3,5]{1,0}, f32[3,8,5]{2,1,0}, f32[3,5,5]{2,1,0}, f32[3,5]{1,0}, f32[3,8,8]{2,1,0}) tuple(left, scaled, factors, pivots, reflectors, q, vectors, values, info, sv, su, svt, fv, fvt)
}
)";

TEST(LinalgRunTest, EveryRoutineOverABatchAgreesWithTheEvaluator) {
  testing::expectAllAgree(kAllRoutines);
  testing::expectAllAgree(kAllRoutines, /*seed=*/11);
  // One thread: each kernel runs its whole batch in one call (the two-thread runs split it into single problems).
  std::unique_ptr<HloModule> module = testing::parseOrFail(kAllRoutines);
  EXPECT_EQ(testing::compareWithEvaluator(*module, 7, /*threads=*/1), "");
}

TEST(LinalgRunTest, DoublePrecision) {
  testing::expectAllAgree(R"(HloModule linalg_f64
ENTRY e {
  x = f64[6,6] parameter(0)
  b = f64[6,2] parameter(1)
  lu = (f64[6,6]{0,1}, s32[6], s32[]) custom-call(x), custom_call_target="lapack_dgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  factors = f64[6,6]{0,1} get-tuple-element(lu), index=0
  y = f64[6,2]{0,1} custom-call(factors, b), custom_call_target="lapack_dtrsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}
  ROOT z = f64[6,2]{0,1} custom-call(factors, y), custom_call_target="lapack_dtrsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}
}
)");
}

// Complex matrices (JAX's lapack_c*/lapack_z* targets): a batch of Hermitian positive definite matrices built from
// real work (S + iK, S symmetric with a dominant diagonal, K antisymmetric), its Cholesky factor, a solve with the
// factor's conjugate transpose, LU and QR of complex operands, the Hermitian eigensolver and the SVD; in c64 and in
// c128.
constexpr std::string_view kComplexRoutines = R"(HloModule linalg_complex
ENTRY e {
  p = f32[2,5,5]{2,1,0} parameter(0)
  q = f32[2,5,5]{2,1,0} parameter(1)
  br = f32[2,5,3]{2,1,0} parameter(2)
  bi = f32[2,5,3]{2,1,0} parameter(3)
  pt = f32[2,5,5]{2,1,0} transpose(p), dimensions={0,2,1}
  qt = f32[2,5,5]{2,1,0} transpose(q), dimensions={0,2,1}
  s = f32[2,5,5]{2,1,0} add(p, pt)
  r = s32[2,5,5]{2,1,0} iota(), iota_dimension=1
  c = s32[2,5,5]{2,1,0} iota(), iota_dimension=2
  diagonal = pred[2,5,5]{2,1,0} compare(r, c), direction=EQ
  twenty = f32[] constant(20)
  zero = f32[] constant(0)
  d20 = f32[2,5,5]{2,1,0} broadcast(twenty), dimensions={}
  z = f32[2,5,5]{2,1,0} broadcast(zero), dimensions={}
  shift = f32[2,5,5]{2,1,0} select(diagonal, d20, z)
  re = f32[2,5,5]{2,1,0} add(s, shift)
  im = f32[2,5,5]{2,1,0} subtract(q, qt)
  h = c64[2,5,5]{1,2,0} complex(re, im)
  b = c64[2,5,3]{2,1,0} complex(br, bi)
  chol = (c64[2,5,5]{1,2,0}, s32[2]{0}) custom-call(h), custom_call_target="lapack_cpotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}, frontend_attributes={num_batch_dims="1"}
  l = c64[2,5,5]{1,2,0} get-tuple-element(chol), index=0
  info = s32[2]{0} get-tuple-element(chol), index=1
  solved = c64[2,5,3]{1,2,0} custom-call(l, b), custom_call_target="lapack_ctrsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 67 : ui8, uplo = 76 : ui8}, frontend_attributes={num_batch_dims="1"}
  lu = (c64[2,5,5]{1,2,0}, s32[2,5]{1,0}, s32[2]{0}) custom-call(h), custom_call_target="lapack_cgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}, frontend_attributes={num_batch_dims="1"}
  factors = c64[2,5,5]{1,2,0} get-tuple-element(lu), index=0
  pivots = s32[2,5]{1,0} get-tuple-element(lu), index=1
  qr = (c64[2,5,3]{1,2,0}, c64[2,3]{1,0}) custom-call(b), custom_call_target="lapack_cgeqrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}, frontend_attributes={num_batch_dims="1"}
  reflectors = c64[2,5,3]{1,2,0} get-tuple-element(qr), index=0
  tau = c64[2,3]{1,0} get-tuple-element(qr), index=1
  qm = c64[2,5,3]{1,2,0} custom-call(reflectors, tau), custom_call_target="lapack_cungqr_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}, frontend_attributes={num_batch_dims="1"}
  eig = (c64[2,5,5]{1,2,0}, f32[2,5]{1,0}, s32[2]{0}) custom-call(h), custom_call_target="lapack_cheevd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 76 : ui8}, frontend_attributes={num_batch_dims="1"}
  vectors = c64[2,5,5]{1,2,0} get-tuple-element(eig), index=0
  values = f32[2,5]{1,0} get-tuple-element(eig), index=1
  svd = (c64[2,5,3]{1,2,0}, f32[2,3]{1,0}, c64[2,5,3]{1,2,0}, c64[2,3,3]{1,2,0}, s32[2]{0}) custom-call(b), custom_call_target="lapack_cgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 83 : ui8}, frontend_attributes={num_batch_dims="1"}
  sv = f32[2,3]{1,0} get-tuple-element(svd), index=1
  su = c64[2,5,3]{1,2,0} get-tuple-element(svd), index=2
  svt = c64[2,3,3]{1,2,0} get-tuple-element(svd), index=3
  general = c64[2,5,5]{1,2,0} complex(p, q)
  eig2 = (c64[2,5]{1,0}, c64[2,5,5]{1,2,0}, c64[2,5,5]{1,2,0}, s32[2]{0}) custom-call(general), custom_call_target="lapack_cgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 86 : ui8, compute_right = 86 : ui8}, frontend_attributes={num_batch_dims="1"}
  gw = c64[2,5]{1,0} get-tuple-element(eig2), index=0
  gvl = c64[2,5,5]{1,2,0} get-tuple-element(eig2), index=1
  gvr = c64[2,5,5]{1,2,0} get-tuple-element(eig2), index=2
  ROOT t = (c64[2,5,5]{1,2,0}, s32[2]{0}, c64[2,5,3]{1,2,0}, c64[2,5,5]{1,2,0}, s32[2,5]{1,0}, c64[2,5,3]{1,2,0}, c64[2,3]{1,0}, c64[2,5,3]{1,2,0}, c64[2,5,5]{1,2,0}, f32[2,5]{1,0}, f32[2,3]{1,0}, c64[2,5,3]{1,2,0}, c64[2,3,3]{1,2,0}, c64[2,5]{1,0}, c64[2,5,5]{1,2,0}, c64[2,5,5]{1,2,0}) tuple(l, info, solved, factors, pivots, reflectors, tau, qm, vectors, values, sv, su, svt, gw, gvl, gvr)
}
)";

TEST(LinalgRunTest, ComplexMatricesInSingleAndDoublePrecision) {
  testing::expectAllAgree(kComplexRoutines);
  std::string wide(kComplexRoutines);
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"f32[", "f64["}, {"c64[", "c128["}, {"lapack_c", "lapack_z"}}) {
    for (size_t at = wide.find(from); at != std::string::npos; at = wide.find(from, at + to.size())) {
      wide.replace(at, from.size(), to);
    }
  }
  testing::expectAllAgree(wide, /*seed=*/3);
}

TEST(LinalgRunTest, WhatCannotRunIsRefusedByNameBeforeCompiling) {
  std::unique_ptr<HloModule> schur = testing::parseOrFail(R"(HloModule schur
ENTRY e {
  a = f32[3,3] parameter(0)
  ROOT s = (f32[3,3], f32[3,3], f32[3], f32[3], s32[], s32[]) custom-call(a), custom_call_target="lapack_sgees_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, sort = 78 : ui8}
}
)");
  StatusOr<ExecutionPlan> plan = planExecution(*schur);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("s: custom-call lapack_sgees_ffi: LAPACK routine 'gees' is not supported"),
            std::string::npos)
      << plan.message();

  std::unique_ptr<HloModule> all = testing::parseOrFail(kAllRoutines);
  StatusOr<PtxBundle> bundle = compilePtxBundle(*all, false);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.message().find("custom-call lapack_spotrf_ffi (LAPACK) has no GPU kernel here"), std::string::npos)
      << bundle.message();
}

// Ahead-of-time objects call LAPACK through fusionscope_linalg_run, for any target: the only symbol they need beyond
// libm's, and the header's link line names the runtime library and LAPACK (programs linked and run against the
// evaluator: aot_compiler_test.cpp).
TEST(LinalgRunTest, AheadOfTimeObjectsCallTheRuntimeLibrary) {
  std::unique_ptr<HloModule> all = testing::parseOrFail(kAllRoutines);
  for (const char* target : {"x86-64", "aarch64"}) {
    AotOptions options;
    options.target = target;
    options.className = "linalg::All";
    StatusOr<AotArtifact> artifact = compileAot(*all, options);
    ASSERT_TRUE(artifact.ok()) << target << ": " << artifact.message();
    EXPECT_TRUE(artifact->callsLapack()) << target;
    EXPECT_NE(artifact->header.find("libfusionscope_linalg.a -llapacke -llapack -lblas -lm"), std::string::npos)
        << artifact->header.substr(0, 300);
  }
}

}  // namespace
}  // namespace fusionscope::core
