// JAX's LAPACK custom calls in the evaluator (core/linalg): known factorizations of small matrices, batches, and the
// routines and types that are refused by name.
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/core/eval/eval_testing.h"

namespace fusionscope::testing {
namespace {

using core::PrimitiveType;
using core::Value;

std::string module(std::string_view body) {
  return std::string("HloModule linalg\nENTRY e {\n") + std::string(body) + "\n}\n";
}

TEST(LinalgEvalTest, CholeskyKeepsTheOtherTriangleAndReportsInfo) {
  const std::string hlo = module(R"(
  a = f32[2,2]{1,0} parameter(0)
  ROOT c = (f32[2,2]{0,1}, s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}, frontend_attributes={num_batch_dims="0"})");
  const Value spd = evalValue(hlo, {f32({2, 2}, {4, 2, 2, 3})});
  EXPECT_EQ(element(spd, 0), "f32[2,2] {{2, 2}, {1, 1.4142135}}");
  EXPECT_EQ(element(spd, 1), "s32[] 0");
  // Not positive definite: LAPACK stops at the second minor.
  EXPECT_EQ(element(evalValue(hlo, {f32({2, 2}, {1, 2, 2, 1})}), 1), "s32[] 2");
}

TEST(LinalgEvalTest, CholeskyOverABatch) {
  const Value v = evalValue(module(R"(
  a = f32[2,2,2] parameter(0)
  ROOT c = (f32[2,2,2], s32[2]) custom-call(a), custom_call_target="lapack_spotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 85 : ui8}, frontend_attributes={num_batch_dims="1"})"),
                            {f32({2, 2, 2}, {4, 2, 2, 3, 9, 0, 0, -1})});
  // Upper: U^T U = a, the lower triangle kept; the second matrix is not positive definite.
  EXPECT_EQ(element(v, 0).substr(0, 44), "f32[2,2,2] {{{2, 1}, {2, 1.4142135}}, {{3, 0");
  EXPECT_EQ(element(v, 1), "s32[2] {0, 2}");
}

TEST(LinalgEvalTest, TriangularSolvesEverySideAndTriangle) {
  // Lower, left, non-unit: a x = b.
  EXPECT_EQ(evalText(module(R"(
  a = f32[2,2] parameter(0)
  b = f32[2,1] parameter(1)
  ROOT x = f32[2,1] custom-call(a, b), custom_call_target="lapack_strsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8})"),
                     {f32({2, 2}, {2, 99, 1, 1}), f32({2, 1}, {2, 3})}),
            "f32[2,1] {{1}, {2}}");
  // Upper, right, transposed: x a^T = b.
  EXPECT_EQ(evalText(module(R"(
  a = f32[2,2] parameter(0)
  b = f32[1,2] parameter(1)
  ROOT x = f32[1,2] custom-call(a, b), custom_call_target="lapack_strsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 82 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8})"),
                     {f32({2, 2}, {2, 1, 99, 1}), f32({1, 2}, {4, 2})}),
            "f32[1,2] {{1, 2}}");
  // Unit diagonal: the stored diagonal is not read.
  EXPECT_EQ(evalText(module(R"(
  a = f32[2,2] parameter(0)
  b = f32[2,1] parameter(1)
  ROOT x = f32[2,1] custom-call(a, b), custom_call_target="lapack_strsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8})"),
                     {f32({2, 2}, {5, 0, 3, 5}), f32({2, 1}, {1, 4})}),
            "f32[2,1] {{1}, {1}}");
}

TEST(LinalgEvalTest, LuWithPartialPivoting) {
  const Value v = evalValue(module(R"(
  a = f32[2,2] parameter(0)
  ROOT lu = (f32[2,2], s32[2], s32[]) custom-call(a), custom_call_target="lapack_sgetrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={})"),
                            {f32({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(element(v, 0), "f32[2,2] {{3, 4}, {0.33333334, 0.6666667}}");
  EXPECT_EQ(element(v, 1), "s32[2] {2, 2}");  // 1-based, as LAPACK
  EXPECT_EQ(element(v, 2), "s32[] 0");
}

TEST(LinalgEvalTest, QrReflectorsFormAnOrthonormalQ) {
  const Value v = evalValue(module(R"(
  a = f64[3,2] parameter(0)
  qr = (f64[3,2], f64[2]) custom-call(a), custom_call_target="lapack_dgeqrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  r = f64[3,2] get-tuple-element(qr), index=0
  tau = f64[2] get-tuple-element(qr), index=1
  q = f64[3,2] custom-call(r, tau), custom_call_target="lapack_dorgqr_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  ROOT t = (f64[3,2], f64[3,2]) tuple(r, q))"),
                            {f64({3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(v.isTuple());
  const Value& r = v.tupleElement(0);
  const Value& q = v.tupleElement(1);
  // Q^T Q = I and Q R = a (R: the upper triangle of the first result).
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double dot = 0;
      for (int k = 0; k < 3; ++k) dot += q.at({k, i}) * q.at({k, j});
      EXPECT_NEAR(dot, i == j ? 1 : 0, 1e-12);
    }
  }
  const double a[3][2] = {{1, 2}, {3, 4}, {5, 6}};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      double product = 0;
      for (int k = 0; k <= j; ++k) product += q.at({i, k}) * r.at({k, j});
      EXPECT_NEAR(product, a[i][j], 1e-12);
    }
  }
}

TEST(LinalgEvalTest, EigenvaluesAscendingEigenvectorsOriented) {
  const Value v = evalValue(module(R"(
  a = f32[2,2] parameter(0)
  ROOT e = (f32[2,2], f32[2], s32[]) custom-call(a), custom_call_target="lapack_ssyevd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 76 : ui8})"),
                            {f32({2, 2}, {2, 1, 1, 2})});
  EXPECT_EQ(element(v, 1), "f32[2] {1, 3}");
  EXPECT_EQ(element(v, 2), "s32[] 0");
  // Columns are eigenvectors; each turned so that its first largest component is positive.
  EXPECT_EQ(element(v, 0), "f32[2,2] {{0.70710677, 0.70710677}, {-0.70710677, 0.70710677}}");
}

TEST(LinalgEvalTest, SingularValuesDescendingPairsOriented) {
  const Value v = evalValue(module(R"(
  a = f32[2,2] parameter(0)
  ROOT s = (f32[2,2], f32[2], f32[2,2], f32[2,2], s32[]) custom-call(a), custom_call_target="lapack_sgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 83 : ui8})"),
                            {f32({2, 2}, {2, 0, 0, -3})});
  EXPECT_EQ(element(v, 0), "f32[2,2] {{2, 0}, {0, -3}}");  // the operand, unchanged
  EXPECT_EQ(element(v, 1), "f32[2] {3, 2}");
  // u's columns turned positive; vt's rows turn with them: a = u diag(s) vt.
  EXPECT_EQ(element(v, 2), "f32[2,2] {{0, 1}, {1, 0}}");
  EXPECT_EQ(element(v, 3), "f32[2,2] {{-0, -1}, {1, 0}}");  // LAPACK's zero, sign and all
  EXPECT_EQ(element(v, 4), "s32[] 0");
}

TEST(LinalgEvalTest, FullSvdOfATallMatrixReconstructsIt) {
  const std::vector<double> a = {1, 2, 3, -1, 0, 2, 4, 1, -2, 0.5, 3, 1, 2, 2, -1};  // 5 x 3
  const Value v = evalValue(module(R"(
  a = f64[5,3] parameter(0)
  ROOT s = (f64[5,3], f64[3], f64[5,5], f64[3,3], s32[]) custom-call(a), custom_call_target="lapack_dgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 65 : ui8})"),
                            {f64({5, 3}, a)});
  ASSERT_TRUE(v.isTuple());
  const Value& s = v.tupleElement(1);
  const Value& u = v.tupleElement(2);
  const Value& vt = v.tupleElement(3);
  EXPECT_GE(s.doubleAt(0), s.doubleAt(1));
  EXPECT_GE(s.doubleAt(1), s.doubleAt(2));
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) {  // u is orthogonal, its two completing columns included
      double dot = 0;
      for (int k = 0; k < 5; ++k) dot += u.at({k, i}) * u.at({k, j});
      EXPECT_NEAR(dot, i == j ? 1 : 0, 1e-12);
    }
    for (int j = 0; j < 3; ++j) {
      double product = 0;
      for (int k = 0; k < 3; ++k) product += u.at({i, k}) * s.doubleAt(k) * vt.at({k, j});
      EXPECT_NEAR(product, a[static_cast<size_t>(i * 3 + j)], 1e-12);
    }
  }
  // No vectors asked for: u and vt are zeros, the singular values the same.
  const Value n = evalValue(module(R"(
  a = f64[5,3] parameter(0)
  ROOT s = (f64[5,3], f64[3], f64[5,5], f64[3,3], s32[]) custom-call(a), custom_call_target="lapack_dgesdd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 78 : ui8})"),
                            {f64({5, 3}, a)});
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(n.tupleElement(1).doubleAt(i), s.doubleAt(i), 1e-13);
  EXPECT_EQ(element(n, 3), "f64[3,3] {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}");
}

// jnp.linalg.eig on the CPU: geev's eigenvalues (real and imaginary parts) and complex eigenvectors, left and right,
// each of unit norm and turned so that its first largest component is real and positive.
TEST(LinalgEvalTest, GeneralEigenvaluesAndEigenvectors) {
  const std::string geev = R"(
  a = f32[2,2]{1,0} parameter(0)
  ROOT e = (f32[2], f32[2], c64[2,2]{1,0}, c64[2,2]{1,0}, s32[]) custom-call(a), custom_call_target="lapack_sgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 86 : ui8, compute_right = 86 : ui8})";
  // A rotation by 90 degrees: eigenvalues +-i, the positive imaginary part first; right eigenvectors (1, -i) and
  // (1, i) over sqrt 2 in columns, and the left ones (u^H A = lambda u^H, A^T u = conj(lambda) u) the same.
  const Value rotation = evalValue(module(geev), {f32({2, 2}, {0, -1, 1, 0})});
  EXPECT_EQ(element(rotation, 0), "f32[2] {0, 0}");
  EXPECT_EQ(element(rotation, 1), "f32[2] {1, -1}");
  EXPECT_EQ(element(rotation, 3), "c64[2,2] {{(0.70710677, 0), (0.70710677, 0)}, {(0, -0.70710677), (0, 0.70710677)}}");
  EXPECT_EQ(element(rotation, 2), "c64[2,2] {{(0.70710677, 0), (0.70710677, 0)}, {(0, -0.70710677), (0, 0.70710677)}}");
  EXPECT_EQ(element(rotation, 4), "s32[] 0");
  // Upper triangular: eigenvalues 2 and 3, right eigenvectors (1, 0) and (1, 1) / sqrt 2.
  const Value triangular = evalValue(module(geev), {f32({2, 2}, {2, 1, 0, 3})});
  EXPECT_EQ(element(triangular, 0), "f32[2] {2, 3}");
  EXPECT_EQ(element(triangular, 1), "f32[2] {0, 0}");
  EXPECT_EQ(element(triangular, 3), "c64[2,2] {{(1, 0), (0.70710677, 0)}, {(0, 0), (0.70710677, 0)}}");
  // compute_left = N: the left eigenvectors are zeros.
  const Value rightOnly = evalValue(module(R"(
  a = f64[2,2]{1,0} parameter(0)
  ROOT e = (f64[2], f64[2], c128[2,2]{1,0}, c128[2,2]{1,0}, s32[]) custom-call(a), custom_call_target="lapack_dgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 78 : ui8, compute_right = 86 : ui8})"),
                                    {f64({2, 2}, {2, 1, 0, 3})});
  EXPECT_EQ(element(rightOnly, 2), "c128[2,2] {{(0, 0), (0, 0)}, {(0, 0), (0, 0)}}");
}

// A batch of random 6 x 6 matrices in f64: A v = lambda v and u^H A = lambda u^H for every pair, to rounding.
TEST(LinalgEvalTest, GeneralEigenpairsSatisfyTheirDefinition) {
  constexpr int n = 6;
  constexpr int batch = 3;
  std::vector<double> a(batch * n * n);
  uint64_t state = 12345;
  for (double& x : a) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<double>(state >> 11) * 0x1.0p-53 * 2 - 1;
  }
  const Value e = evalValue(module(R"(
  a = f64[3,6,6]{2,1,0} parameter(0)
  ROOT e = (f64[3,6], f64[3,6], c128[3,6,6]{2,1,0}, c128[3,6,6]{2,1,0}, s32[3]) custom-call(a), custom_call_target="lapack_dgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 86 : ui8, compute_right = 86 : ui8}, frontend_attributes={num_batch_dims="1"})"),
                            {f64({batch, n, n}, a)});
  ASSERT_TRUE(e.isTuple());
  const Value& wr = e.tupleElement(0);
  const Value& wi = e.tupleElement(1);
  const Value& vl = e.tupleElement(2);
  const Value& vr = e.tupleElement(3);
  using C = std::complex<double>;
  int complexPairs = 0;
  for (int b = 0; b < batch; ++b) {
    auto at = [&](int i, int j) { return a[static_cast<size_t>((b * n + i) * n + j)]; };
    for (int k = 0; k < n; ++k) {
      const C lambda(wr.floatData()[static_cast<size_t>(b * n + k)], wi.floatData()[static_cast<size_t>(b * n + k)]);
      complexPairs += lambda.imag() > 0;
      auto v = [&](const Value& m, int i) {
        const auto idx = static_cast<size_t>((b * n + i) * n + k);
        return C(m.floatData()[idx], m.imagData()[idx]);
      };
      double norm = 0;
      for (int i = 0; i < n; ++i) norm += std::norm(v(vr, i));
      EXPECT_NEAR(norm, 1.0, 1e-12);
      for (int i = 0; i < n; ++i) {
        C right = 0;
        C left = 0;
        for (int j = 0; j < n; ++j) {
          right += at(i, j) * v(vr, j);
          left += std::conj(v(vl, j)) * at(j, i);
        }
        EXPECT_LT(std::abs(right - lambda * v(vr, i)), 1e-12) << b << " " << k;
        EXPECT_LT(std::abs(left - lambda * std::conj(v(vl, i))), 1e-12) << b << " " << k;
      }
    }
  }
  EXPECT_GT(complexPairs, 0) << "the random matrices have complex eigenvalues";
}

// jnp.linalg.eig of a complex matrix: cgeev and zgeev give the eigenvalues as one complex array. An upper triangular
// matrix's are its diagonal; a batch of random 6 x 6 complex matrices satisfies A v = lambda v and u^H A = lambda u^H
// for every pair, each vector of unit norm with its first largest component real and positive.
TEST(LinalgEvalTest, ComplexGeneralEigenpairs) {
  const Value triangular =
      evalValue(module(R"(
  a = c64[2,2]{1,0} parameter(0)
  ROOT g = (c64[2], c64[2,2]{1,0}, c64[2,2]{1,0}, s32[]) custom-call(a), custom_call_target="lapack_cgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 86 : ui8, compute_right = 86 : ui8})"),
                {Value::complex(core::Shape(PrimitiveType::kC64, {2, 2}), {1, 1, 0, 2}, {1, 0, 0, 0})});
  EXPECT_EQ(element(triangular, 0), "c64[2] {(1, 1), (2, 0)}");
  EXPECT_EQ(element(triangular, 3), "s32[] 0");

  constexpr int n = 6;
  constexpr int batch = 3;
  std::vector<double> re(batch * n * n);
  std::vector<double> im(re.size());
  uint64_t state = 777;
  for (std::vector<double>* part : {&re, &im}) {
    for (double& x : *part) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      x = static_cast<double>(state >> 11) * 0x1.0p-53 * 2 - 1;
    }
  }
  const Value e = evalValue(module(R"(
  a = c128[3,6,6]{2,1,0} parameter(0)
  ROOT e = (c128[3,6], c128[3,6,6]{2,1,0}, c128[3,6,6]{2,1,0}, s32[3]) custom-call(a), custom_call_target="lapack_zgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 86 : ui8, compute_right = 86 : ui8}, frontend_attributes={num_batch_dims="1"})"),
                            {Value::complex(core::Shape(PrimitiveType::kC128, {batch, n, n}), re, im)});
  ASSERT_TRUE(e.isTuple());
  ASSERT_EQ(e.tupleSize(), 4);
  const Value& w = e.tupleElement(0);
  const Value& vl = e.tupleElement(1);
  const Value& vr = e.tupleElement(2);
  EXPECT_EQ(element(e, 3), "s32[3] {0, 0, 0}");
  using C = std::complex<double>;
  for (int b = 0; b < batch; ++b) {
    auto at = [&](int i, int j) {
      const auto idx = static_cast<size_t>((b * n + i) * n + j);
      return C(re[idx], im[idx]);
    };
    for (int k = 0; k < n; ++k) {
      const C lambda(w.floatData()[static_cast<size_t>(b * n + k)], w.imagData()[static_cast<size_t>(b * n + k)]);
      auto v = [&](const Value& m, int i) {
        const auto idx = static_cast<size_t>((b * n + i) * n + k);
        return C(m.floatData()[idx], m.imagData()[idx]);
      };
      for (const Value* side : {&vl, &vr}) {
        double norm = 0;
        double largest = 0;
        for (int i = 0; i < n; ++i) {
          norm += std::norm(v(*side, i));
          largest = std::max(largest, std::abs(v(*side, i)));
        }
        EXPECT_NEAR(norm, 1.0, 1e-12);
        for (int i = 0; i < n; ++i) {
          if (std::abs(v(*side, i)) < largest * 0.999) continue;
          EXPECT_GT(v(*side, i).real(), 0) << b << " " << k;
          EXPECT_EQ(v(*side, i).imag(), 0) << b << " " << k;
          break;
        }
      }
      for (int i = 0; i < n; ++i) {
        C right = 0;
        C left = 0;
        for (int j = 0; j < n; ++j) {
          right += at(i, j) * v(vr, j);
          left += std::conj(v(vl, j)) * at(j, i);
        }
        EXPECT_LT(std::abs(right - lambda * v(vr, i)), 1e-12) << b << " " << k;
        EXPECT_LT(std::abs(left - lambda * std::conj(v(vl, i))), 1e-12) << b << " " << k;
      }
    }
  }
}

// Complex operands: the Hermitian A = [[4, 2-2i], [2+2i, 6]] has the Cholesky factor L = [[2, .], [1+i, 2]] (the
// upper triangle keeps A's elements); L^H x = [3+i, 2i] is solved by x = [1, i] (with L^T, not the conjugate
// transpose, it would be [2, i]); and Q R of a complex matrix has orthonormal columns and gives the matrix back.
TEST(LinalgEvalTest, ComplexCholeskySolveAndQr) {
  auto c64 = [](std::vector<int64_t> dims, std::vector<double> re, std::vector<double> im) {
    return Value::complex(core::Shape(PrimitiveType::kC64, std::move(dims)), std::move(re), std::move(im));
  };
  const Value v = evalValue(module(R"(
  a = c64[2,2] parameter(0)
  b = c64[2,1] parameter(1)
  chol = (c64[2,2], s32[]) custom-call(a), custom_call_target="lapack_cpotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}
  l = c64[2,2] get-tuple-element(chol), index=0
  x = c64[2,1] custom-call(l, b), custom_call_target="lapack_ctrsm_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 67 : ui8, uplo = 76 : ui8}
  ROOT t = (c64[2,2], c64[2,1]) tuple(l, x))"),
                            {c64({2, 2}, {4, 2, 2, 6}, {0, -2, 2, 0}), c64({2, 1}, {3, 0}, {1, 2})});
  EXPECT_EQ(element(v, 0), "c64[2,2] {{(2, 0), (2, -2)}, {(1, 1), (2, 0)}}");
  EXPECT_EQ(element(v, 1), "c64[2,1] {{(1, 0)}, {(0, 1)}}");

  const Value qr = evalValue(
      module(R"(
  a = c128[3,2] parameter(0)
  f = (c128[3,2], c128[2]) custom-call(a), custom_call_target="lapack_zgeqrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  r = c128[3,2] get-tuple-element(f), index=0
  tau = c128[2] get-tuple-element(f), index=1
  q = c128[3,2] custom-call(r, tau), custom_call_target="lapack_zungqr_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={}
  ROOT t = (c128[3,2], c128[3,2]) tuple(r, q))"),
      {Value::complex(core::Shape(PrimitiveType::kC128, {3, 2}), {1, 2, 3, 4, 5, 6}, {0.5, -1, 2, 0, -3, 1})});
  ASSERT_TRUE(qr.isTuple());
  auto at = [](const Value& m, int i, int j) {
    const size_t k = static_cast<size_t>(i * 2 + j);
    return std::complex<double>(m.floatData()[k], m.imagData()[k]);
  };
  const Value& r = qr.tupleElement(0);
  const Value& q = qr.tupleElement(1);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      std::complex<double> dot = 0;
      for (int k = 0; k < 3; ++k) dot += std::conj(at(q, k, i)) * at(q, k, j);
      EXPECT_NEAR(std::abs(dot - std::complex<double>(i == j ? 1 : 0)), 0, 1e-12);
    }
  }
  const std::complex<double> a[3][2] = {{{1, 0.5}, {2, -1}}, {{3, 2}, {4, 0}}, {{5, -3}, {6, 1}}};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      std::complex<double> product = 0;
      for (int k = 0; k <= j; ++k) product += at(q, i, k) * at(r, k, j);
      EXPECT_NEAR(std::abs(product - a[i][j]), 0, 1e-12);
    }
  }
}

// The Hermitian [[2, i], [-i, 2]] has eigenvalues 1 and 3 (ascending, real) with eigenvectors (1, i)/sqrt(2) and
// (1, -i)/sqrt(2), each turned so that its first largest component is real and positive.
TEST(LinalgEvalTest, HermitianEigenvaluesRealEigenvectorsPhased) {
  const Value v = evalValue(module(R"(
  a = c64[2,2] parameter(0)
  ROOT e = (c64[2,2], f32[2], s32[]) custom-call(a), custom_call_target="lapack_cheevd_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, uplo = 76 : ui8})"),
                            {Value::complex(core::Shape(PrimitiveType::kC64, {2, 2}), {2, 0, 0, 2}, {0, 1, -1, 0})});
  ASSERT_TRUE(v.isTuple());
  EXPECT_EQ(element(v, 1), "f32[2] {1, 3}");
  EXPECT_EQ(element(v, 2), "s32[] 0");
  const Value& vectors = v.tupleElement(0);
  const double h = std::sqrt(0.5);
  const std::complex<double> expected[2][2] = {{{h, 0}, {h, 0}}, {{0, h}, {0, -h}}};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const size_t k = static_cast<size_t>(2 * i + j);
      const std::complex<double> got(vectors.floatData()[k], vectors.imagData()[k]);
      EXPECT_NEAR(std::abs(got - expected[i][j]), 0, 1e-6) << i << "," << j;
    }
  }
}

// A complex SVD gives the matrix back as U S V^H, singular values descending, each u column's first largest component
// real and positive (its v turned with it), in both modes.
TEST(LinalgEvalTest, ComplexSvdReconstructsTheMatrix) {
  const std::vector<double> re = {1, 2, 3, 4, 5, 6};
  const std::vector<double> im = {0.5, -1, 2, 0, -3, 1};
  for (const char* mode : {"83", "65"}) {
    const bool full = std::string(mode) == "65";
    const std::string shapes =
        full ? "c128[3,2], f64[2], c128[3,3], c128[2,2], s32[]" : "c128[3,2], f64[2], c128[3,2], c128[2,2], s32[]";
    const Value v = evalValue(module("  a = c128[3,2] parameter(0)\n  ROOT s = (" + shapes +
                                     ") custom-call(a), custom_call_target=\"lapack_zgesdd_ffi\", "
                                     "api_version=API_VERSION_TYPED_FFI, backend_config={mode = " +
                                     std::string(mode) + " : ui8}"),
                              {Value::complex(core::Shape(PrimitiveType::kC128, {3, 2}), re, im)});
    ASSERT_TRUE(v.isTuple()) << mode;
    const Value& s = v.tupleElement(1);
    const Value& u = v.tupleElement(2);
    const Value& vt = v.tupleElement(3);
    const int uc = full ? 3 : 2;
    EXPECT_GE(s.floatData()[0], s.floatData()[1]);
    auto at = [](const Value& m, int cols, int i, int j) {
      const size_t k = static_cast<size_t>(i * cols + j);
      return std::complex<double>(m.floatData()[k], m.imagData()[k]);
    };
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 2; ++j) {
        std::complex<double> sum = 0;
        for (int k = 0; k < 2; ++k) sum += at(u, uc, i, k) * s.floatData()[static_cast<size_t>(k)] * at(vt, 2, k, j);
        EXPECT_NEAR(std::abs(sum - std::complex<double>(re[static_cast<size_t>(2 * i + j)],
                                                        im[static_cast<size_t>(2 * i + j)])),
                    0, 1e-12)
            << mode;
      }
    }
    for (int k = 0; k < uc; ++k) {
      double largest = 0;
      for (int i = 0; i < 3; ++i) largest = std::max(largest, std::abs(at(u, uc, i, k)));
      for (int i = 0; i < 3; ++i) {
        if (std::abs(at(u, uc, i, k)) >= largest * 0.999) {
          EXPECT_EQ(at(u, uc, i, k).imag(), 0.0) << mode << " column " << k;
          EXPECT_GT(at(u, uc, i, k).real(), 0.0) << mode << " column " << k;
          break;
        }
      }
    }
  }
}

TEST(LinalgEvalTest, UnsupportedRoutinesAndTypesAreRefusedByName) {
  const std::string schur = evalText(module(R"(
  a = f32[3,3] parameter(0)
  ROOT s = (f32[3,3], f32[3], f32[3], f32[3,3], s32[], s32[]) custom-call(a), custom_call_target="lapack_sgees_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={mode = 86 : ui8, sort = 78 : ui8})"),
                                     {f32({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1})});
  EXPECT_NE(schur.find("lapack_sgees_ffi: LAPACK routine 'gees' is not supported"), std::string::npos) << schur;
  const std::string eigShape = evalText(module(R"(
  a = f32[3,3] parameter(0)
  ROOT s = (f32[3,3], c64[3], c64[3,3], c64[3,3], s32[]) custom-call(a), custom_call_target="lapack_sgeev_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={compute_left = 86 : ui8, compute_right = 86 : ui8})"),
                                        {f32({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1})});
  EXPECT_NE(eigShape.find("result 0 (eigenvalues' real parts) must be f32[3]"), std::string::npos) << eigShape;
  const std::string shape = evalText(module(R"(
  a = f32[3,2] parameter(0)
  ROOT c = (f32[3,2], s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8})"),
                                     {f32({3, 2}, {1, 0, 0, 1, 0, 0})});
  EXPECT_NE(shape.find("the matrix must be square"), std::string::npos) << shape;
  const std::string old = evalText(module(R"(
  a = f32[2,2] parameter(0)
  ROOT c = (f32[2,2], s32[]) custom-call(a), custom_call_target="lapack_spotrf", backend_config={uplo = 76 : ui8})"),
                                   {f32({2, 2}, {1, 0, 0, 1})});
  EXPECT_NE(old.find("only the typed-FFI form"), std::string::npos) << old;
}

}  // namespace
}  // namespace fusionscope::testing
