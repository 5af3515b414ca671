#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/ir/shape.h"

// The LAPACK custom calls JAX writes on the CPU (`custom_call_target="lapack_spotrf_ffi"` and its kin), run through
// LAPACK and BLAS from the system (LAPACKE, CBLAS): the evaluator runs them in f64 on its copies, the CPU JIT in the
// program's type on its buffers. One description (Call), read off the
// instruction, serves both; docs/CODEGEN.md, "LAPACK custom calls". Complex types (JAX's lapack_c*/lapack_z* targets)
// for potrf, trsm (op: transpose or conjugate transpose), getrf, geqrf, ungqr, heevd (syevd's Hermitian form: real
// eigenvalues, each complex eigenvector's phase turned as geev's below), gesdd (real singular values, each pair's
// phase turned by u's column) and geev (cgeev/zgeev: a[n,n] -> (w c[n], vl c[n,n], vr c[n,n], info s32), the
// eigenvalues in one complex array).
//
// Semantics (jaxlib's CPU kernels; the leading `num_batch_dims` dimensions of every operand and result are a batch,
// one independent problem per batch element):
//   potrf  a[n,n]                    -> (factor[n,n], info s32)          the `uplo` triangle holds the Cholesky
//                                                                        factor, the other keeps a's elements
//   trsm   a[k,k], b[m,n] (, alpha)  -> x[m,n]                           op(a) x = alpha b (side L) or
//                                                                        x op(a) = alpha b (side R)
//   getrf  a[m,n]                    -> (lu[m,n], ipiv s32[min], info)  partial pivoting, ipiv 1-based
//   geqrf  a[m,n]                    -> (qr[m,n], tau[min])              Householder reflectors below the diagonal
//   orgqr  a[m,n], tau[k]            -> q[m,n]                           the first n columns of the reflectors' Q
//                                                                        (ungqr for complex types)
//   syevd  a[n,n]                    -> (v[n,n], w[n], info s32)         eigenvalues ascending, eigenvectors in
//                                                                        columns, computed and written with either
//                                                                        mode (JAX reads them only with mode V)
//   gesdd  a[m,n]                    -> (a', s[k], u[m,k|m], vt[k|n,n], info s32)   k = min(m, n); singular values
//                                                                        descending, u's columns and vt's rows the
//                                                                        singular vectors (mode S: k of each, A: all,
//                                                                        N: none, u and vt zero); a' (LAPACK's
//                                                                        scratch, unspecified) is a unchanged
//   geev   a[n,n]                    -> (wr[n], wi[n], vl c[n,n], vr c[n,n], info s32)   a general matrix's eigenvalues
//                                                                        (real and imaginary parts) and left and right
//                                                                        eigenvectors (`compute_left`/`compute_right`
//                                                                        V or N; not computed: zeros) in columns, of
//                                                                        the complex type of the matrix's precision
//                                                                        (c64 for f32), unit 2-norm
// An eigenvector's or a singular pair's sign is arbitrary, and LAPACK's choice differs between precisions: each is
// turned so that the first component within 0.1 % of its vector's largest magnitude is positive (for a singular
// pair, of u's column; vt's row turns with it; a complex eigenvector is rotated so that this component is real and
// positive, where LAPACK makes its largest component real), so that results in f32 and f64 can be compared.
namespace fusionscope::core {
class HloInstruction;
}

namespace fusionscope::core::linalg {

enum class Routine : int64_t { kPotrf, kTrsm, kGetrf, kGeqrf, kOrgqr, kSyevd, kGesdd, kGeev };

// One operand or result array: its dimensions and each dimension's stride in elements.
struct ArrayView {
  PrimitiveType type = PrimitiveType::kF32;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};

struct Call {
  Routine routine = Routine::kPotrf;
  PrimitiveType type =
      PrimitiveType::kF32;  // of the matrices: f32, f64, c64 or c128 (potrf, trsm, getrf, geqrf, ungqr)
  int64_t batchDims = 0;                      // leading dimensions of every array that index the batch
  char uplo = 'L';
  char side = 'L';
  char trans = 'N';
  char diag = 'N';
  char jobz = 'S';   // gesdd: S (k singular vectors each side), A (all), N (none); geev: V or N, right vectors
  char jobvl = 'N';  // geev: V or N, left eigenvectors
  std::vector<ArrayView> inputs;
  std::vector<ArrayView> outputs;
  // Problems in all (the product of the batch dimensions).
  int64_t batch() const;
};

// True for a custom call whose target is one of JAX's LAPACK targets (`lapack_?potrf_ffi`, ...), supported or not.
bool isLapackCustomCall(const HloInstruction& inst);

// The call `inst` makes (arrays in row-major logical order, as the evaluator and compiled code hold them). Fails,
// naming the target, on a routine or element type not supported here (gees, ...) and on shapes that do not fit
// the routine.
StatusOr<Call> callOf(const HloInstruction& inst);

// Solves problems [begin, end) of `call`; buffers: the inputs then the outputs, each laid out as its ArrayView says
// (an output may be the same memory as an input). Matrices are gathered into column-major scratch (LAPACK's order)
// and scattered back. Fails only when scratch memory cannot be had.
Status run(const Call& call, void* const* buffers, int64_t begin, int64_t end);

// A flat form of a call for generated code (the kernel passes it to fusionscope_linalg_run), and back.
constexpr int64_t kDescriptorMagic = 0x46534c41;  // "FSLA", the first word
std::vector<int64_t> encode(const Call& call);
StatusOr<Call> decode(const int64_t* words);

// The runtime (linalg_runtime.cpp, which needs LAPACKE and CBLAS and nothing of the IR): decodes a flat form into
// `call` (false when `words` is not one), and solves problems [begin, end) as run() does, throwing std::bad_alloc
// when scratch memory cannot be had.
bool decodeCall(const int64_t* words, Call* call);
void solveProblems(const Call& call, void* const* buffers, int64_t begin, int64_t end);

// Scalar operations one problem takes, roughly (to decide whether to split a batch across threads).
int64_t costPerProblem(const Call& call);

}  // namespace fusionscope::core::linalg

// The entry generated code calls: decodes `descriptor` (encode()) and runs problems [begin, end) on `buffers`.
extern "C" void fusionscope_linalg_run(const int64_t* descriptor, void* const* buffers, int64_t begin, int64_t end);
