#include "core/linalg/linalg_call.h"

// The part of the LAPACK custom calls that runs them: gathering each problem's matrices into LAPACK's column-major
// order, the LAPACKE/CBLAS calls, the results scattered back, and the C entry generated code calls
// (fusionscope_linalg_run). It depends on LAPACKE and CBLAS only (not on the IR or on fs_base's functions), so an
// ahead-of-time object that calls LAPACK links it as a small static library of its own (fs_linalg_runtime,
// docs/AOT.md).

#include <complex>

// LAPACKE's complex types as C++'s (layout-compatible with Fortran's COMPLEX and with the interleaved (re, im) pairs
// of the evaluator's and compiled code's buffers).
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>

#include <cblas.h>
#include <dlfcn.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <mutex>
#include <new>

namespace fusionscope::core::linalg {

namespace {

// The batch offset (elements) of problem `p` in `view`.
int64_t batchOffset(const ArrayView& view, int64_t batchDims, int64_t p) {
  int64_t offset = 0;
  for (int64_t d = batchDims - 1; d >= 0; --d) {
    const int64_t size = view.dims[static_cast<size_t>(d)];
    offset += (p % size) * view.strides[static_cast<size_t>(d)];
    p /= size;
  }
  return offset;
}

template <class T>
void gather(const ArrayView& view, const void* base, int64_t offset, int64_t batchDims, std::vector<T>& out) {
  const size_t r = static_cast<size_t>(batchDims);
  const int64_t rows = view.dims[r];
  const int64_t cols = view.dims.size() > r + 1 ? view.dims[r + 1] : 1;
  const int64_t rowStride = view.strides[r];
  const int64_t colStride = view.dims.size() > r + 1 ? view.strides[r + 1] : 0;
  const T* data = static_cast<const T*>(base) + offset;
  out.resize(static_cast<size_t>(rows * cols));
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t i = 0; i < rows; ++i) out[static_cast<size_t>(c * rows + i)] = data[i * rowStride + c * colStride];
  }
}

template <class T>
void scatter(const ArrayView& view, void* base, int64_t offset, int64_t batchDims, const std::vector<T>& in) {
  const size_t r = static_cast<size_t>(batchDims);
  const int64_t rows = view.dims[r];
  const int64_t cols = view.dims.size() > r + 1 ? view.dims[r + 1] : 1;
  const int64_t rowStride = view.strides[r];
  const int64_t colStride = view.dims.size() > r + 1 ? view.strides[r + 1] : 0;
  T* data = static_cast<T*>(base) + offset;
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t i = 0; i < rows; ++i) data[i * rowStride + c * colStride] = in[static_cast<size_t>(c * rows + i)];
  }
}

void storeInfo(const ArrayView& view, void* base, int64_t batchDims, int64_t p, lapack_int info) {
  static_cast<int32_t*>(base)[batchOffset(view, batchDims, p)] = static_cast<int32_t>(info);
}

// An eigenvector's sign is not part of its definition, and LAPACK's choice differs between precisions (ssyevd and
// dsyevd on one matrix return some columns negated). Each column is turned so that its first component within 0.1 %
// of the largest magnitude is positive: the evaluator's f64 result and compiled code's f32 one then agree, and a
// rounding that moves the components by less than 0.1 % cannot change the choice.
// Whether the vector of `n` elements at `v` (stride `stride`) is to be negated.
template <class T>
bool pointsBackwards(const T* v, int64_t n, int64_t stride) {
  T largest = 0;
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::abs(v[i * stride]));
  for (int64_t i = 0; i < n; ++i) {
    if (largest > 0 && std::abs(v[i * stride]) >= largest * T(0.999)) return v[i * stride] < 0;
  }
  return false;
}

template <class T>
void negate(T* v, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) v[i * stride] = T(0) - v[i * stride];  // 0 - x: a zero stays +0
}

// The n x n column-major matrix's columns, each turned.
template <class T>
void orientColumns(std::vector<T>& columns, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    if (pointsBackwards(columns.data() + c * n, n, 1)) negate(columns.data() + c * n, n, 1);
  }
}

// u (m x uc, column-major) and vt (vr x n): the first k singular pairs turn together, by u's column; u's further
// columns and vt's further rows (mode A's completions of the bases) each by itself.
template <class T>
void orientSingularVectors(std::vector<T>& u, int64_t m, int64_t uc, std::vector<T>& vt, int64_t vr, int64_t n,
                           int64_t k) {
  for (int64_t i = 0; i < std::max(uc, vr); ++i) {
    T* column = i < uc ? u.data() + i * m : nullptr;
    T* row = i < vr ? vt.data() + i : nullptr;
    if (i < k) {
      if (pointsBackwards(column, m, 1)) {
        negate(column, m, 1);
        negate(row, n, vr);
      }
      continue;
    }
    if (column && pointsBackwards(column, m, 1)) negate(column, m, 1);
    if (row && pointsBackwards(row, n, vr)) negate(row, n, vr);
  }
}

// LAPACK and BLAS by element type: one name per routine for f32 and f64 (column-major, LAPACKE's _work forms: no
// allocation, no NaN scan). A workspace query is the call with lwork = -1.
constexpr int kCol = LAPACK_COL_MAJOR;
lapack_int potrf(char uplo, lapack_int n, float* a) {
  return LAPACKE_spotrf_work(kCol, uplo, n, a, std::max(1, n));
}
lapack_int potrf(char uplo, lapack_int n, double* a) {
  return LAPACKE_dpotrf_work(kCol, uplo, n, a, std::max(1, n));
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, lapack_int m, lapack_int n,
          float alpha, const float* a, lapack_int lda, float* b) {
  cblas_strsm(CblasColMajor, side, uplo, trans, diag, m, n, alpha, a, lda, b, std::max(1, m));
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, lapack_int m, lapack_int n,
          double alpha, const double* a, lapack_int lda, double* b) {
  cblas_dtrsm(CblasColMajor, side, uplo, trans, diag, m, n, alpha, a, lda, b, std::max(1, m));
}
lapack_int getrf(lapack_int m, lapack_int n, float* a, lapack_int* ipiv) {
  return LAPACKE_sgetrf_work(kCol, m, n, a, std::max(1, m), ipiv);
}
lapack_int getrf(lapack_int m, lapack_int n, double* a, lapack_int* ipiv) {
  return LAPACKE_dgetrf_work(kCol, m, n, a, std::max(1, m), ipiv);
}
lapack_int geqrf(lapack_int m, lapack_int n, float* a, float* tau, float* work, lapack_int lwork) {
  return LAPACKE_sgeqrf_work(kCol, m, n, a, std::max(1, m), tau, work, lwork);
}
lapack_int geqrf(lapack_int m, lapack_int n, double* a, double* tau, double* work, lapack_int lwork) {
  return LAPACKE_dgeqrf_work(kCol, m, n, a, std::max(1, m), tau, work, lwork);
}
lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, float* a, const float* tau, float* work, lapack_int lwork) {
  return LAPACKE_sorgqr_work(kCol, m, n, k, a, std::max(1, m), tau, work, lwork);
}
lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, double* a, const double* tau, double* work,
                 lapack_int lwork) {
  return LAPACKE_dorgqr_work(kCol, m, n, k, a, std::max(1, m), tau, work, lwork);
}
lapack_int syevd(char uplo, lapack_int n, float* a, float* w, float* work, lapack_int lwork, lapack_int* iwork,
                 lapack_int liwork) {
  return LAPACKE_ssyevd_work(kCol, 'V', uplo, n, a, std::max(1, n), w, work, lwork, iwork, liwork);
}
lapack_int syevd(char uplo, lapack_int n, double* a, double* w, double* work, lapack_int lwork, lapack_int* iwork,
                 lapack_int liwork) {
  return LAPACKE_dsyevd_work(kCol, 'V', uplo, n, a, std::max(1, n), w, work, lwork, iwork, liwork);
}
lapack_int gesdd(char jobz, lapack_int m, lapack_int n, float* a, float* s, float* u, float* vt, lapack_int ldvt,
                 float* work, lapack_int lwork, lapack_int* iwork) {
  return LAPACKE_sgesdd_work(kCol, jobz, m, n, a, std::max(1, m), s, u, std::max(1, m), vt, ldvt, work, lwork, iwork);
}
lapack_int gesdd(char jobz, lapack_int m, lapack_int n, double* a, double* s, double* u, double* vt, lapack_int ldvt,
                 double* work, lapack_int lwork, lapack_int* iwork) {
  return LAPACKE_dgesdd_work(kCol, jobz, m, n, a, std::max(1, m), s, u, std::max(1, m), vt, ldvt, work, lwork, iwork);
}

// Complex types: the same routines (ungqr for orgqr); a triangular solve's op is N, T or C (conjugate transpose).
using c64 = std::complex<float>;
using c128 = std::complex<double>;
lapack_int potrf(char uplo, lapack_int n, c64* a) {
  return LAPACKE_cpotrf_work(kCol, uplo, n, a, std::max(1, n));
}
lapack_int potrf(char uplo, lapack_int n, c128* a) {
  return LAPACKE_zpotrf_work(kCol, uplo, n, a, std::max(1, n));
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, lapack_int m, lapack_int n,
          c64 alpha, const c64* a, lapack_int lda, c64* b) {
  cblas_ctrsm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, std::max(1, m));
}
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, lapack_int m, lapack_int n,
          c128 alpha, const c128* a, lapack_int lda, c128* b) {
  cblas_ztrsm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, std::max(1, m));
}
lapack_int getrf(lapack_int m, lapack_int n, c64* a, lapack_int* ipiv) {
  return LAPACKE_cgetrf_work(kCol, m, n, a, std::max(1, m), ipiv);
}
lapack_int getrf(lapack_int m, lapack_int n, c128* a, lapack_int* ipiv) {
  return LAPACKE_zgetrf_work(kCol, m, n, a, std::max(1, m), ipiv);
}
lapack_int geqrf(lapack_int m, lapack_int n, c64* a, c64* tau, c64* work, lapack_int lwork) {
  return LAPACKE_cgeqrf_work(kCol, m, n, a, std::max(1, m), tau, work, lwork);
}
lapack_int geqrf(lapack_int m, lapack_int n, c128* a, c128* tau, c128* work, lapack_int lwork) {
  return LAPACKE_zgeqrf_work(kCol, m, n, a, std::max(1, m), tau, work, lwork);
}
lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, c64* a, const c64* tau, c64* work, lapack_int lwork) {
  return LAPACKE_cungqr_work(kCol, m, n, k, a, std::max(1, m), tau, work, lwork);
}
lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, c128* a, const c128* tau, c128* work, lapack_int lwork) {
  return LAPACKE_zungqr_work(kCol, m, n, k, a, std::max(1, m), tau, work, lwork);
}

lapack_int heevd(char uplo, lapack_int n, c64* a, float* w, c64* work, lapack_int lwork, float* rwork,
                 lapack_int lrwork, lapack_int* iwork, lapack_int liwork) {
  return LAPACKE_cheevd_work(kCol, 'V', uplo, n, a, std::max(1, n), w, work, lwork, rwork, lrwork, iwork, liwork);
}
lapack_int heevd(char uplo, lapack_int n, c128* a, double* w, c128* work, lapack_int lwork, double* rwork,
                 lapack_int lrwork, lapack_int* iwork, lapack_int liwork) {
  return LAPACKE_zheevd_work(kCol, 'V', uplo, n, a, std::max(1, n), w, work, lwork, rwork, lrwork, iwork, liwork);
}

// Turns the complex vector (count elements, stride apart) so that its first component within 0.1 % of its largest
// magnitude is real and positive, that component exactly so (a complex eigenvector's or singular vector's phase is
// arbitrary, and which component LAPACK makes real can differ between precisions). Returns the factor applied (1 for
// a zero vector).
template <class R>
std::complex<R> turnRealPositive(std::complex<R>* v, int64_t count, int64_t stride) {
  R largest = 0;
  for (int64_t i = 0; i < count; ++i) largest = std::max(largest, std::abs(v[i * stride]));
  for (int64_t i = 0; i < count; ++i) {
    const R magnitude = std::abs(v[i * stride]);
    if (largest > 0 && magnitude >= largest * R(0.999)) {
      const std::complex<R> turn = std::conj(v[i * stride]) / magnitude;
      for (int64_t k = 0; k < count; ++k) v[k * stride] *= turn;
      v[i * stride] = {magnitude, R(0)};
      return turn;
    }
  }
  return std::complex<R>(1, 0);
}

// Each of the n columns (column-major n x n) turned by turnRealPositive.
template <class R>
void orientComplexColumns(std::complex<R>* columns, int64_t n) {
  for (int64_t j = 0; j < n; ++j) turnRealPositive(columns + j * n, n, 1);
}

lapack_int gesdd(char jobz, lapack_int m, lapack_int n, c64* a, float* s, c64* u, c64* vt, lapack_int ldvt, c64* work,
                 lapack_int lwork, float* rwork, lapack_int* iwork) {
  return LAPACKE_cgesdd_work(kCol, jobz, m, n, a, std::max(1, m), s, u, std::max(1, m), vt, ldvt, work, lwork, rwork,
                             iwork);
}
lapack_int gesdd(char jobz, lapack_int m, lapack_int n, c128* a, double* s, c128* u, c128* vt, lapack_int ldvt,
                 c128* work, lapack_int lwork, double* rwork, lapack_int* iwork) {
  return LAPACKE_zgesdd_work(kCol, jobz, m, n, a, std::max(1, m), s, u, std::max(1, m), vt, ldvt, work, lwork, rwork,
                             iwork);
}

template <class T>
constexpr bool kIsComplex = false;
template <class T>
constexpr bool kIsComplex<std::complex<T>> = true;

// The real type of T's values: T itself, or a complex type's part type.
template <class T>
struct RealOfStruct {
  using type = T;
};
template <class T>
struct RealOfStruct<std::complex<T>> {
  using type = T;
};
template <class T>
using RealOf = typename RealOfStruct<T>::type;

// u (m x uc, column-major) and vt (vr x n) of a complex SVD: a singular pair's phase is arbitrary (u's column times
// e^{i t} with vt's row times e^{-i t} is another SVD). Each of the first k pairs is turned so that u's column's first
// component within 0.1 % of its largest magnitude is real and positive; further columns and rows (mode A's
// completions) each by itself likewise.
template <class R>
void orientComplexSingularVectors(std::vector<std::complex<R>>& u, int64_t m, int64_t uc,
                                  std::vector<std::complex<R>>& vt, int64_t vr, int64_t n, int64_t k) {
  for (int64_t i = 0; i < std::max(uc, vr); ++i) {
    std::complex<R>* column = i < uc ? u.data() + i * m : nullptr;
    std::complex<R>* row = i < vr ? vt.data() + i : nullptr;
    if (column && row && i < k) {
      const std::complex<R> turn = turnRealPositive(column, m, 1);
      for (int64_t j = 0; j < n; ++j) row[j * vr] *= std::conj(turn);
      continue;
    }
    if (column) turnRealPositive(column, m, 1);
    if (row) turnRealPositive(row, n, vr);
  }
}

lapack_int geev(char jobvl, char jobvr, lapack_int n, float* a, float* wr, float* wi, float* vl, float* vr, float* work,
                lapack_int lwork) {
  const lapack_int ld = std::max(1, n);
  return LAPACKE_sgeev_work(kCol, jobvl, jobvr, n, a, ld, wr, wi, vl, ld, vr, ld, work, lwork);
}
lapack_int geev(char jobvl, char jobvr, lapack_int n, double* a, double* wr, double* wi, double* vl, double* vr,
                double* work, lapack_int lwork) {
  const lapack_int ld = std::max(1, n);
  return LAPACKE_dgeev_work(kCol, jobvl, jobvr, n, a, ld, wr, wi, vl, ld, vr, ld, work, lwork);
}

lapack_int geev(char jobvl, char jobvr, lapack_int n, c64* a, c64* w, c64* vl, c64* vr, c64* work, lapack_int lwork,
                float* rwork) {
  const lapack_int ld = std::max(1, n);
  return LAPACKE_cgeev_work(kCol, jobvl, jobvr, n, a, ld, w, vl, ld, vr, ld, work, lwork, rwork);
}
lapack_int geev(char jobvl, char jobvr, lapack_int n, c128* a, c128* w, c128* vl, c128* vr, c128* work,
                lapack_int lwork, double* rwork) {
  const lapack_int ld = std::max(1, n);
  return LAPACKE_zgeev_work(kCol, jobvl, jobvr, n, a, ld, w, vl, ld, vr, ld, work, lwork, rwork);
}

// geev's real eigenvector matrix (column-major n x n) as complex columns: a real eigenvalue's column as it is, a
// conjugate pair's (wi[j] > 0, then wi[j + 1] < 0) columns j and j + 1 as v = x + iy and its conjugate. Each column
// is then rotated so that its first component within 0.1 % of the largest magnitude is real and positive (LAPACK makes
// the largest component real, and which one that is can differ between precisions).
template <class T>
std::vector<std::complex<T>> complexEigenvectors(const std::vector<T>& v, const std::vector<T>& wi, int64_t n) {
  std::vector<std::complex<T>> out(static_cast<size_t>(n * n));
  for (int64_t j = 0; j < n; ++j) {
    const bool pairFirst = wi[static_cast<size_t>(j)] > 0 && j + 1 < n;
    const bool pairSecond = wi[static_cast<size_t>(j)] < 0 && j > 0;
    for (int64_t i = 0; i < n; ++i) {
      const T x = v[static_cast<size_t>((pairSecond ? j - 1 : j) * n + i)];
      const T y = pairFirst    ? v[static_cast<size_t>((j + 1) * n + i)]
                  : pairSecond ? -v[static_cast<size_t>(j * n + i)]
                               : T(0);
      out[static_cast<size_t>(j * n + i)] = {x, y};
    }
    turnRealPositive(out.data() + j * n, n, 1);
  }
  return out;
}

// `work` sized by the routine's answer to a workspace query (at least one element).
template <class T>
lapack_int workspace(T query) {
  if constexpr (kIsComplex<T>) {
    return std::max<lapack_int>(1, static_cast<lapack_int>(query.real()));
  } else {
    return std::max<lapack_int>(1, static_cast<lapack_int>(query));
  }
}

template <class T>
void solve(const Call& call, void* const* buffers, int64_t begin, int64_t end) {
  const int64_t bd = call.batchDims;
  const ArrayView& a = call.inputs[0];
  const size_t r = static_cast<size_t>(bd);
  const lapack_int rows = static_cast<lapack_int>(a.dims[r]);
  const lapack_int cols = static_cast<lapack_int>(a.dims[r + 1]);
  void* const* outs = buffers + call.inputs.size();
  std::vector<T> matrix;
  std::vector<T> other;
  std::vector<T> work;
  std::vector<lapack_int> iwork;
  std::vector<lapack_int> pivots;
  for (int64_t p = begin; p < end; ++p) {
    gather<T>(a, buffers[0], batchOffset(a, bd, p), bd, matrix);
    lapack_int info = 0;
    switch (call.routine) {
      case Routine::kPotrf:
        if (rows > 0) info = potrf(call.uplo, rows, matrix.data());
        scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, matrix);
        storeInfo(call.outputs[1], outs[1], bd, p, info);
        break;
      case Routine::kTrsm: {
        const ArrayView& b = call.inputs[1];
        gather<T>(b, buffers[1], batchOffset(b, bd, p), bd, other);
        const lapack_int m = static_cast<lapack_int>(b.dims[r]);
        const lapack_int n = static_cast<lapack_int>(b.dims[r + 1]);
        const T alpha = call.inputs.size() > 2 ? *static_cast<const T*>(buffers[2]) : T(1);
        if (m > 0 && n > 0) {
          trsm(call.side == 'R' ? CblasRight : CblasLeft, call.uplo == 'U' ? CblasUpper : CblasLower,
               call.trans == 'N'   ? CblasNoTrans
               : call.trans == 'C' ? CblasConjTrans
                                   : CblasTrans,
               call.diag == 'U' ? CblasUnit : CblasNonUnit, m, n, alpha, matrix.data(), std::max<lapack_int>(1, rows),
               other.data());
        }
        scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, other);
        break;
      }
      case Routine::kGetrf: {
        pivots.assign(static_cast<size_t>(std::min(rows, cols)), 0);
        if (rows > 0 && cols > 0) info = getrf(rows, cols, matrix.data(), pivots.data());
        scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, matrix);
        const ArrayView& ipiv = call.outputs[1];
        int32_t* out = static_cast<int32_t*>(outs[1]) + batchOffset(ipiv, bd, p);
        for (size_t i = 0; i < pivots.size(); ++i) out[static_cast<int64_t>(i) * ipiv.strides[r]] = pivots[i];
        storeInfo(call.outputs[2], outs[2], bd, p, info);
        break;
      }
      case Routine::kGeqrf:
        other.assign(static_cast<size_t>(std::min(rows, cols)), T(0));
        if (rows > 0 && cols > 0) {
          T query = 0;
          geqrf(rows, cols, nullptr, nullptr, &query, -1);
          work.resize(static_cast<size_t>(workspace(query)));
          geqrf(rows, cols, matrix.data(), other.data(), work.data(), workspace(query));
        }
        scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, matrix);
        scatter<T>(call.outputs[1], outs[1], batchOffset(call.outputs[1], bd, p), bd, other);
        break;
      case Routine::kOrgqr: {
        const ArrayView& tau = call.inputs[1];
        const lapack_int k = static_cast<lapack_int>(tau.dims[r]);
        gather<T>(tau, buffers[1], batchOffset(tau, bd, p), bd, other);
        if (rows > 0 && cols > 0) {
          T query = 0;
          orgqr(rows, cols, k, nullptr, nullptr, &query, -1);
          work.resize(static_cast<size_t>(workspace(query)));
          orgqr(rows, cols, k, matrix.data(), other.data(), work.data(), workspace(query));
        }
        scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, matrix);
        break;
      }
      case Routine::kSyevd:
        if constexpr (kIsComplex<T>) {  // heevd: real eigenvalues, complex eigenvectors
          using R = typename T::value_type;
          std::vector<R> w(static_cast<size_t>(rows), R(0));
          if (rows > 0) {
            T query = 0;
            R rquery = 0;
            lapack_int iquery = 0;
            heevd(call.uplo, rows, nullptr, nullptr, &query, -1, &rquery, -1, &iquery, -1);
            work.resize(static_cast<size_t>(workspace(query)));
            std::vector<R> rwork(static_cast<size_t>(std::max<lapack_int>(1, static_cast<lapack_int>(rquery))));
            iwork.resize(static_cast<size_t>(std::max<lapack_int>(1, iquery)));
            info = heevd(call.uplo, rows, matrix.data(), w.data(), work.data(), workspace(query), rwork.data(),
                         static_cast<lapack_int>(rwork.size()), iwork.data(), static_cast<lapack_int>(iwork.size()));
          }
          if (info == 0) orientComplexColumns(matrix.data(), rows);
          scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, matrix);
          scatter<R>(call.outputs[1], outs[1], batchOffset(call.outputs[1], bd, p), bd, w);
          storeInfo(call.outputs[2], outs[2], bd, p, info);
        } else {
          other.assign(static_cast<size_t>(rows), T(0));
          if (rows > 0) {
            T query = 0;
            lapack_int iquery = 0;
            syevd(call.uplo, rows, nullptr, nullptr, &query, -1, &iquery, -1);
            work.resize(static_cast<size_t>(workspace(query)));
            iwork.resize(static_cast<size_t>(std::max<lapack_int>(1, iquery)));
            info = syevd(call.uplo, rows, matrix.data(), other.data(), work.data(), workspace(query), iwork.data(),
                         static_cast<lapack_int>(iwork.size()));
          }
          if (info == 0) orientColumns(matrix, rows);
          scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, matrix);
          scatter<T>(call.outputs[1], outs[1], batchOffset(call.outputs[1], bd, p), bd, other);
          storeInfo(call.outputs[2], outs[2], bd, p, info);
        }
        break;
      case Routine::kGesdd: {
        using R = RealOf<T>;
        // a' is a unchanged (LAPACK's scratch otherwise: nothing a program may read).
        scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, matrix);
        const int64_t k = std::min(rows, cols);
        const ArrayView& uView = call.outputs[2];
        const ArrayView& vtView = call.outputs[3];
        const lapack_int uc = static_cast<lapack_int>(uView.dims[r + 1]);
        const lapack_int vr = static_cast<lapack_int>(vtView.dims[r]);
        std::vector<R> s(static_cast<size_t>(k), R(0));
        std::vector<T> u(static_cast<size_t>(rows) * static_cast<size_t>(uc), T(0));
        std::vector<T> vt(static_cast<size_t>(vr) * static_cast<size_t>(cols), T(0));
        if (k > 0) {
          const lapack_int ldvt = std::max<lapack_int>(1, vr);
          T query = 0;
          iwork.resize(static_cast<size_t>(8 * k));
          if constexpr (kIsComplex<T>) {
            // LAPACK 3.7's rwork bound for every jobz.
            const int64_t mx = std::max(rows, cols);
            const int64_t lrwork = std::max<int64_t>({1, 5 * k * k + 7 * k, 2 * mx * k + 2 * k * k + k});
            std::vector<R> rwork(static_cast<size_t>(lrwork));
            gesdd(call.jobz, rows, cols, nullptr, nullptr, nullptr, nullptr, ldvt, &query, -1, rwork.data(),
                  iwork.data());
            work.resize(static_cast<size_t>(workspace(query)));
            info = gesdd(call.jobz, rows, cols, matrix.data(), s.data(), u.data(), vt.data(), ldvt, work.data(),
                         workspace(query), rwork.data(), iwork.data());
          } else {
            gesdd(call.jobz, rows, cols, nullptr, nullptr, nullptr, nullptr, ldvt, &query, -1, iwork.data());
            work.resize(static_cast<size_t>(workspace(query)));
            info = gesdd(call.jobz, rows, cols, matrix.data(), s.data(), u.data(), vt.data(), ldvt, work.data(),
                         workspace(query), iwork.data());
          }
          if (call.jobz == 'N') {
            std::fill(u.begin(), u.end(), T(0));
            std::fill(vt.begin(), vt.end(), T(0));
          } else if (info == 0) {
            if constexpr (kIsComplex<T>) {
              orientComplexSingularVectors(u, rows, uc, vt, vr, cols, k);
            } else {
              orientSingularVectors(u, rows, uc, vt, vr, cols, k);
            }
          }
        }
        scatter<R>(call.outputs[1], outs[1], batchOffset(call.outputs[1], bd, p), bd, s);
        scatter<T>(uView, outs[2], batchOffset(uView, bd, p), bd, u);
        scatter<T>(vtView, outs[3], batchOffset(vtView, bd, p), bd, vt);
        storeInfo(call.outputs[4], outs[4], bd, p, info);
        break;
      }
      case Routine::kGeev: {
        if constexpr (kIsComplex<T>) {  // cgeev, zgeev: (w, vl, vr, info)
          using R = RealOf<T>;
          const size_t n = static_cast<size_t>(rows);
          std::vector<T> w(n, T(0));
          std::vector<T> vl(call.jobvl == 'V' ? n * n : 1, T(0));
          std::vector<T> vr(call.jobz == 'V' ? n * n : 1, T(0));
          if (rows > 0) {
            std::vector<R> rwork(2 * n);
            T query = 0;
            geev(call.jobvl, call.jobz, rows, nullptr, nullptr, nullptr, nullptr, &query, -1, rwork.data());
            work.resize(static_cast<size_t>(workspace(query)));
            info = geev(call.jobvl, call.jobz, rows, matrix.data(), w.data(), vl.data(), vr.data(), work.data(),
                        workspace(query), rwork.data());
          }
          scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, w);
          for (int side = 0; side < 2; ++side) {
            const bool computed = (side == 0 ? call.jobvl : call.jobz) == 'V' && info == 0;
            std::vector<T>& vectors = side == 0 ? vl : vr;
            if (computed) {
              orientComplexColumns(vectors.data(), rows);
            } else {
              vectors.assign(n * n, T(0));
            }
            const ArrayView& view = call.outputs[static_cast<size_t>(1 + side)];
            scatter<T>(view, outs[1 + side], batchOffset(view, bd, p), bd, vectors);
          }
          storeInfo(call.outputs[3], outs[3], bd, p, info);
        } else {
          const size_t n = static_cast<size_t>(rows);
          std::vector<T> wr(n, T(0));
          std::vector<T> wi(n, T(0));
          std::vector<T> vl(call.jobvl == 'V' ? n * n : 1, T(0));
          std::vector<T> vr(call.jobz == 'V' ? n * n : 1, T(0));
          if (rows > 0) {
            T query = 0;
            geev(call.jobvl, call.jobz, rows, nullptr, nullptr, nullptr, nullptr, nullptr, &query, -1);
            work.resize(static_cast<size_t>(workspace(query)));
            info = geev(call.jobvl, call.jobz, rows, matrix.data(), wr.data(), wi.data(), vl.data(), vr.data(),
                        work.data(), workspace(query));
          }
          scatter<T>(call.outputs[0], outs[0], batchOffset(call.outputs[0], bd, p), bd, wr);
          scatter<T>(call.outputs[1], outs[1], batchOffset(call.outputs[1], bd, p), bd, wi);
          for (int side = 0; side < 2; ++side) {
            const bool computed = (side == 0 ? call.jobvl : call.jobz) == 'V' && info == 0;
            const std::vector<std::complex<T>> vectors =
                computed ? complexEigenvectors(side == 0 ? vl : vr, wi, rows)
                         : std::vector<std::complex<T>>(n * n, std::complex<T>(0, 0));
            const ArrayView& view = call.outputs[static_cast<size_t>(2 + side)];
            scatter<std::complex<T>>(view, outs[2 + side], batchOffset(view, bd, p), bd, vectors);
          }
          storeInfo(call.outputs[4], outs[4], bd, p, info);
        }
        break;
      }
    }
  }
}

// OpenBLAS (Debian's libopenblas, when it provides LAPACK and BLAS) starts its own threads for each call: on the
// small matrices of a batch that costs more than it saves (an 8x8 syevd: 20 us with its threads, 9 us without), and
// the batch is already split across FusionScope's workers. One thread per call; looked up by name, so the reference
// LAPACK works as well.
void singleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] {
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(1);
  });
}

}  // namespace

void solveProblems(const Call& call, void* const* buffers, int64_t begin, int64_t end) {
  singleThreadedBlas();
  switch (call.type) {
    case PrimitiveType::kF32: solve<float>(call, buffers, begin, end); break;
    case PrimitiveType::kC64: solve<std::complex<float>>(call, buffers, begin, end); break;
    case PrimitiveType::kC128: solve<std::complex<double>>(call, buffers, begin, end); break;
    default: solve<double>(call, buffers, begin, end); break;
  }
}

bool decodeCall(const int64_t* words, Call* call) {
  if (words == nullptr || words[0] != kDescriptorMagic) return false;
  call->routine = static_cast<Routine>(words[1]);
  call->type = static_cast<PrimitiveType>(words[2]);
  call->batchDims = words[3];
  call->uplo = static_cast<char>(words[4]);
  call->side = static_cast<char>(words[5]);
  call->trans = static_cast<char>(words[6]);
  call->diag = static_cast<char>(words[7]);
  call->jobz = static_cast<char>(words[8]);
  call->jobvl = static_cast<char>(words[9]);
  const int64_t inputs = words[10];
  const int64_t outputs = words[11];
  size_t at = 12;
  auto take = [&]() {
    ArrayView view;
    view.type = static_cast<PrimitiveType>(words[at++]);
    const int64_t rank = words[at++];
    view.dims.assign(words + at, words + at + rank);
    at += static_cast<size_t>(rank);
    view.strides.assign(words + at, words + at + rank);
    at += static_cast<size_t>(rank);
    return view;
  };
  call->inputs.clear();
  call->outputs.clear();
  for (int64_t i = 0; i < inputs; ++i) call->inputs.push_back(take());
  for (int64_t i = 0; i < outputs; ++i) call->outputs.push_back(take());
  return true;
}

}  // namespace fusionscope::core::linalg

extern "C" void fusionscope_linalg_run(const int64_t* descriptor, void* const* buffers, int64_t begin, int64_t end) {
  using namespace fusionscope::core::linalg;
  Call call;
  if (!decodeCall(descriptor, &call)) return;
  // Out of memory for scratch leaves the outputs as they were; nothing else can fail once callOf accepted the call.
  try {
    solveProblems(call, buffers, begin, end);
  } catch (const std::bad_alloc&) {
  }
}
