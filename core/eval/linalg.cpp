// JAX's LAPACK custom calls in the evaluator: the same LAPACK routines as compiled code, in f64 on row-major copies
// of the operands (core/linalg/linalg_call.h), the results rounded once to the program's type.
#include <complex>
#include <cstring>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/linalg/linalg_call.h"

namespace fusionscope::core::eval {
namespace {

// geev returns eigenvalues in the order its QR iteration found them, and sgeev and dgeev (cgeev and zgeev) can find a
// matrix's in different orders (measured: one of 8 random 6 x 6 systems). The reference keeps the program's order: the
// single-precision routine runs on the operand too, and each double-precision eigenpair (value, both vectors) is moved
// to the place of the single-precision eigenvalue nearest to it (each used once). `buffers` are the double-precision
// call's: (operand, wr, wi, vl, vr, info) for a real matrix, (operand, w, vl, vr, info) for a complex one, complex
// arrays as (re, im) pairs.
Status orderLikeSinglePrecision(const linalg::Call& single, const std::vector<double>& operand,
                                const std::vector<void*>& buffers) {
  const bool complex = isComplex(single.type);
  const int64_t batch = single.batch();
  const size_t r = static_cast<size_t>(single.batchDims);
  const int64_t n = single.inputs[0].dims[r];
  const auto problems = static_cast<size_t>(batch);
  const auto columns = static_cast<size_t>(n);
  const size_t nn = columns * columns;
  // The single-precision run (no vectors): its eigenvalues as (re, im) at stride `step`.
  std::vector<float> a(operand.begin(), operand.end());
  std::vector<float> values(2 * problems * columns);
  std::vector<float> vl(2 * problems * nn);
  std::vector<float> vr(vl.size());
  std::vector<int32_t> info(problems);
  linalg::Call call = single;
  call.jobvl = 'N';
  call.jobz = 'N';
  std::vector<void*> singleBuffers =
      complex ? std::vector<void*>{a.data(), values.data(), vl.data(), vr.data(), info.data()}
              : std::vector<void*>{a.data(),  values.data(), values.data() + problems * columns,
                                   vl.data(), vr.data(),     info.data()};
  FS_RETURN_IF_ERROR(linalg::run(call, singleBuffers.data(), 0, batch));
  const size_t step = complex ? 2 : 1;
  const float* sre = values.data();
  const float* sim = complex ? values.data() + 1 : values.data() + problems * columns;
  auto* dre = static_cast<double*>(buffers[1]);
  auto* dim = complex ? dre + 1 : static_cast<double*>(buffers[2]);
  const size_t next = complex ? 2 : 3;
  auto* dvl = static_cast<double*>(buffers[next]);
  auto* dvr = static_cast<double*>(buffers[next + 1]);
  const auto* dinfo = static_cast<const int32_t*>(buffers[next + 2]);
  auto at = [&](size_t p, size_t k) { return (p * columns + k) * step; };
  for (size_t p = 0; p < problems; ++p) {
    if (info[p] != 0 || dinfo[p] != 0) continue;
    std::vector<size_t> from(columns);
    std::vector<bool> used(columns, false);
    for (size_t k = 0; k < columns; ++k) {
      const std::complex<double> target(sre[at(p, k)], sim[at(p, k)]);
      size_t best = columns;
      double bestDistance = 0;
      for (size_t j = 0; j < columns; ++j) {
        if (used[j]) continue;
        const double distance = std::abs(std::complex<double>(dre[at(p, j)], dim[at(p, j)]) - target);
        if (best == columns || distance < bestDistance) {
          best = j;
          bestDistance = distance;
        }
      }
      used[best] = true;
      from[k] = best;
    }
    // Values, then each vector matrix's columns (row-major [n, n] of (re, im) pairs: column k at stride n).
    std::vector<std::complex<double>> moved(columns);
    for (size_t k = 0; k < columns; ++k) moved[k] = {dre[at(p, from[k])], dim[at(p, from[k])]};
    for (size_t k = 0; k < columns; ++k) {
      dre[at(p, k)] = moved[k].real();
      dim[at(p, k)] = moved[k].imag();
    }
    for (double* m : {dvl, dvr}) {
      double* matrix = m + 2 * p * nn;
      std::vector<double> copy(matrix, matrix + 2 * nn);
      for (size_t i = 0; i < columns; ++i) {
        for (size_t k = 0; k < columns; ++k) {
          matrix[2 * (i * columns + k)] = copy[2 * (i * columns + from[k])];
          matrix[2 * (i * columns + k) + 1] = copy[2 * (i * columns + from[k]) + 1];
        }
      }
    }
  }
  return okStatus();
}

}  // namespace

StatusOr<Value> evalLinalg(const HloInstruction& inst, Operands operands) {
  StatusOr<linalg::Call> parsed = linalg::callOf(inst);
  if (!parsed.ok()) return parsed.status();
  linalg::Call call = std::move(*parsed);
  if (operands.size() != call.inputs.size()) {
    return Status::error(fmt::format("{}: {} operand(s), {} value(s)", inst.name(), call.inputs.size(), operands.size()));
  }
  // Every floating-point array in f64 (complex ones in c128, as (re, im) pairs); the s32 ones (pivots, info) as they
  // are.
  const linalg::Call asWritten = call;
  call.type = isComplex(call.type) ? PrimitiveType::kC128 : PrimitiveType::kF64;
  std::vector<std::vector<double>> floats;
  std::vector<std::vector<int32_t>> ints;
  std::vector<void*> buffers;
  floats.reserve(call.inputs.size() + call.outputs.size());
  ints.reserve(call.outputs.size());
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    FS_RETURN_IF_ERROR(expectArray(*operands[i], "a LAPACK operand"));
    std::span<const double> data = operands[i]->floatData();
    if (data.size() != static_cast<size_t>(operands[i]->elementCount())) {
      return Status::error(fmt::format("{}: operand {} is not floating-point", inst.name(), i));
    }
    if (operands[i]->holdsComplex()) {
      std::span<const double> imag = operands[i]->imagData();
      std::vector<double>& pairs = floats.emplace_back(2 * data.size());
      for (size_t k = 0; k < data.size(); ++k) {
        pairs[2 * k] = data[k];
        pairs[2 * k + 1] = imag[k];
      }
      call.inputs[i].type = PrimitiveType::kC128;
    } else {
      floats.emplace_back(data.begin(), data.end());
      call.inputs[i].type = PrimitiveType::kF64;
    }
    buffers.push_back(floats.back().data());
  }
  std::vector<Shape> shapes;
  if (inst.shape().isTuple()) {
    shapes = inst.shape().tupleElements();
  } else {
    shapes.push_back(inst.shape());
  }
  for (size_t i = 0; i < call.outputs.size(); ++i) {
    const int64_t count = shapes[i].elementCount();
    if (isComplex(shapes[i].elementType())) {  // (re, im) pairs of doubles (geev's eigenvectors, complex results)
      floats.emplace_back(static_cast<size_t>(2 * count), 0.0);
      call.outputs[i].type = PrimitiveType::kC128;
      buffers.push_back(floats.back().data());
    } else if (isFloatingPoint(shapes[i].elementType())) {
      floats.emplace_back(static_cast<size_t>(count), 0.0);
      call.outputs[i].type = PrimitiveType::kF64;
      buffers.push_back(floats.back().data());
    } else {
      ints.emplace_back(static_cast<size_t>(count), 0);
      buffers.push_back(ints.back().data());
    }
  }
  FS_RETURN_IF_ERROR(linalg::run(call, buffers.data(), 0, call.batch()));
  const bool single = asWritten.type == PrimitiveType::kF32 || asWritten.type == PrimitiveType::kC64;
  if (call.routine == linalg::Routine::kGeev && single) {
    FS_RETURN_IF_ERROR(orderLikeSinglePrecision(asWritten, floats[0], buffers));
  }
  std::vector<Value> results;
  size_t nextFloat = call.inputs.size();
  size_t nextInt = 0;
  for (const Shape& shape : shapes) {
    if (isComplex(shape.elementType())) {
      const std::vector<double>& pairs = floats[nextFloat++];
      std::vector<double> re(pairs.size() / 2);
      std::vector<double> im(pairs.size() / 2);
      for (size_t k = 0; k < re.size(); ++k) {
        re[k] = pairs[2 * k];
        im[k] = pairs[2 * k + 1];
      }
      results.push_back(Value::complex(shape, std::move(re), std::move(im)));
    } else if (isFloatingPoint(shape.elementType())) {
      results.push_back(Value::floats(shape, std::move(floats[nextFloat++])));
    } else {
      const std::vector<int32_t>& data = ints[nextInt++];
      results.push_back(Value::integers(shape, std::vector<int64_t>(data.begin(), data.end())));
    }
  }
  if (!inst.shape().isTuple()) return std::move(results[0]);
  return Value::tuple(std::move(results));
}

}  // namespace fusionscope::core::eval
