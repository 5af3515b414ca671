// Dot, convolution and batch normalisation. These accumulate in double (integers in wrapping 64-bit) and
// round once to the result type: the most accurate reference, and independent of the summation order a
// backend or a rewrite might choose.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/eval/eval_internal.h"
#include "core/eval/scalar_ops.h"
#include "core/ir/shape_rules.h"

namespace fusionscope::core::eval {
namespace {

// The elements of `v` as doubles (exact for every held type but 64-bit integers beyond 2^53).
std::vector<double> asDoubles(const Value& v) {
  if (v.holdsFloats()) return {v.floatData().begin(), v.floatData().end()};
  std::vector<double> out(static_cast<size_t>(v.elementCount()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = integerToDouble(v.elementType(), v.intData()[i]);
  return out;
}

// Copies `v` into a contiguous buffer whose dimensions are `order` (operand dimensions) in that order.
template <class T>
std::vector<T> packDims(const T* data, const std::vector<int64_t>& dims, const std::vector<int64_t>& order) {
  std::vector<int64_t> strides = rowMajorStrides(dims);
  std::vector<int64_t> counts;
  std::vector<int64_t> srcStrides;
  for (int64_t d : order) {
    counts.push_back(dims[static_cast<size_t>(d)]);
    srcStrides.push_back(strides[static_cast<size_t>(d)]);
  }
  std::vector<T> out(static_cast<size_t>(product(counts)));
  copyBox(data, 0, srcStrides, out.data(), 0, rowMajorStrides(counts), counts);
  return out;
}

Status checkDims(const std::vector<int64_t>& dims, size_t rank, std::vector<bool>& used, std::string_view what) {
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(rank) || used[static_cast<size_t>(d)]) {
      return Status::error(fmt::format("{} {} invalid for rank {}", what, dimensionsText(dims), rank));
    }
    used[static_cast<size_t>(d)] = true;
  }
  return okStatus();
}

Status checkContractionTypes(const Value& lhs, const Value& rhs, const Shape& shape) {
  FS_RETURN_IF_ERROR(expectArray(lhs, "lhs"));
  FS_RETURN_IF_ERROR(expectArray(rhs, "rhs"));
  if (isComplex(shape.elementType()) != (lhs.holdsComplex() || rhs.holdsComplex())) {
    return Status::error("complex and real operands and results do not mix in a dot");
  }
  if (!isFloatingPoint(shape.elementType()) && !isComplex(shape.elementType()) &&
      (lhs.holdsFloats() || rhs.holdsFloats())) {
    return Status::error("an integer result needs integer operands");
  }
  return okStatus();
}

}  // namespace

StatusOr<Value> evalDot(const HloInstruction& inst, const Value& lhs, const Value& rhs) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(checkContractionTypes(lhs, rhs, shape));
  const std::vector<int64_t>& l = lhs.shape().dimensions();
  const std::vector<int64_t>& r = rhs.shape().dimensions();
  DotDimensionNumbers dn;
  if (inst.attributes().dot) {
    dn = *inst.attributes().dot;
  } else {
    if (!l.empty()) dn.lhsContracting = {static_cast<int64_t>(l.size()) - 1};
    if (!r.empty()) dn.rhsContracting = {0};
  }
  std::vector<bool> lhsUsed(l.size(), false);
  std::vector<bool> rhsUsed(r.size(), false);
  FS_RETURN_IF_ERROR(checkDims(dn.lhsBatch, l.size(), lhsUsed, "lhs_batch_dims"));
  FS_RETURN_IF_ERROR(checkDims(dn.lhsContracting, l.size(), lhsUsed, "lhs_contracting_dims"));
  FS_RETURN_IF_ERROR(checkDims(dn.rhsBatch, r.size(), rhsUsed, "rhs_batch_dims"));
  FS_RETURN_IF_ERROR(checkDims(dn.rhsContracting, r.size(), rhsUsed, "rhs_contracting_dims"));
  if (dn.lhsBatch.size() != dn.rhsBatch.size() || dn.lhsContracting.size() != dn.rhsContracting.size()) {
    return Status::error("lhs and rhs have different numbers of batch or contracting dimensions");
  }
  std::vector<int64_t> outDims;
  int64_t batch = 1;
  int64_t k = 1;
  for (size_t i = 0; i < dn.lhsBatch.size(); ++i) {
    int64_t size = l[static_cast<size_t>(dn.lhsBatch[i])];
    if (size != r[static_cast<size_t>(dn.rhsBatch[i])]) return Status::error("batch dimension sizes differ");
    outDims.push_back(size);
    batch *= size;
  }
  for (size_t i = 0; i < dn.lhsContracting.size(); ++i) {
    int64_t size = l[static_cast<size_t>(dn.lhsContracting[i])];
    if (size != r[static_cast<size_t>(dn.rhsContracting[i])]) {
      return Status::error(fmt::format("contracting dimension sizes differ ({} vs {})", size,
                                       r[static_cast<size_t>(dn.rhsContracting[i])]));
    }
    k *= size;
  }
  std::vector<int64_t> lhsOrder = dn.lhsBatch;
  std::vector<int64_t> rhsOrder = dn.rhsBatch;
  int64_t m = 1;
  int64_t n = 1;
  for (size_t d = 0; d < l.size(); ++d) {
    if (lhsUsed[d]) continue;
    lhsOrder.push_back(static_cast<int64_t>(d));
    outDims.push_back(l[d]);
    m *= l[d];
  }
  lhsOrder.insert(lhsOrder.end(), dn.lhsContracting.begin(), dn.lhsContracting.end());
  rhsOrder.insert(rhsOrder.end(), dn.rhsContracting.begin(), dn.rhsContracting.end());
  for (size_t d = 0; d < r.size(); ++d) {
    if (rhsUsed[d]) continue;
    rhsOrder.push_back(static_cast<int64_t>(d));
    outDims.push_back(r[d]);
    n *= r[d];
  }
  if (outDims != shape.dimensions()) {
    return Status::error(fmt::format("result should have dimensions {}, has {}", dimensionsText(outDims),
                                     dimensionsText(shape.dimensions())));
  }
  // Packed as [batch][m][k] and [batch][k][n]; each output sums its k products in increasing k.
  if (isComplex(shape.elementType())) {
    std::vector<double> ar = packDims(lhs.floatData().data(), l, lhsOrder);
    std::vector<double> ai = packDims(lhs.imagData().data(), l, lhsOrder);
    std::vector<double> br = packDims(rhs.floatData().data(), r, rhsOrder);
    std::vector<double> bi = packDims(rhs.imagData().data(), r, rhsOrder);
    std::vector<double> re(static_cast<size_t>(batch * m * n), 0.0);
    std::vector<double> im(re.size(), 0.0);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t mi = 0; mi < m; ++mi) {
        const int64_t o = (b * m + mi) * n;
        for (int64_t ki = 0; ki < k; ++ki) {
          const auto a = static_cast<size_t>((b * m + mi) * k + ki);
          for (int64_t ni = 0; ni < n; ++ni) {
            const auto c = static_cast<size_t>((b * k + ki) * n + ni);
            re[static_cast<size_t>(o + ni)] += ar[a] * br[c] - ai[a] * bi[c];
            im[static_cast<size_t>(o + ni)] += ar[a] * bi[c] + ai[a] * br[c];
          }
        }
      }
    }
    return Value::complex(shape, std::move(re), std::move(im));
  }
  if (isFloatingPoint(shape.elementType())) {
    std::vector<double> ld = asDoubles(lhs);
    std::vector<double> rd = asDoubles(rhs);
    std::vector<double> a = packDims(ld.data(), l, lhsOrder);
    std::vector<double> b = packDims(rd.data(), r, rhsOrder);
    std::vector<double> out(static_cast<size_t>(batch * m * n), 0.0);
    for (int64_t bi = 0; bi < batch; ++bi) {
      for (int64_t mi = 0; mi < m; ++mi) {
        double* o = out.data() + (bi * m + mi) * n;
        const double* arow = a.data() + (bi * m + mi) * k;
        for (int64_t ki = 0; ki < k; ++ki) {
          double x = arow[ki];
          const double* brow = b.data() + (bi * k + ki) * n;
          for (int64_t ni = 0; ni < n; ++ni) o[ni] += x * brow[ni];
        }
      }
    }
    return Value::floats(shape, std::move(out));
  }
  std::vector<int64_t> a = packDims(lhs.intData().data(), l, lhsOrder);
  std::vector<int64_t> b = packDims(rhs.intData().data(), r, rhsOrder);
  std::vector<uint64_t> acc(static_cast<size_t>(batch * m * n), 0);
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t mi = 0; mi < m; ++mi) {
      uint64_t* o = acc.data() + (bi * m + mi) * n;
      const int64_t* arow = a.data() + (bi * m + mi) * k;
      for (int64_t ki = 0; ki < k; ++ki) {
        auto x = static_cast<uint64_t>(arow[ki]);
        const int64_t* brow = b.data() + (bi * k + ki) * n;
        for (int64_t ni = 0; ni < n; ++ni) o[ni] += x * static_cast<uint64_t>(brow[ni]);
      }
    }
  }
  std::vector<int64_t> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<int64_t>(acc[i]);
  return Value::integers(shape, std::move(out));
}

StatusOr<Value> evalConvolution(const HloInstruction& inst, const Value& lhs, const Value& rhs) {
  const Shape& shape = inst.shape();
  FS_RETURN_IF_ERROR(checkContractionTypes(lhs, rhs, shape));
  const std::vector<int64_t>& l = lhs.shape().dimensions();
  const std::vector<int64_t>& r = rhs.shape().dimensions();
  const std::vector<int64_t>& o = shape.dimensions();
  StatusOr<ConvolutionDims> labels = convolutionDims(inst);
  if (!labels.ok()) return labels.status();
  const size_t spatialCount = l.size() - 2;
  const Window& window = labels->window;
  const int64_t bg = labels->batchGroups;
  const int64_t g = labels->featureGroups;
  const int64_t batchSize = l[static_cast<size_t>(labels->lhsBatch)];
  const int64_t kernelIn = r[static_cast<size_t>(labels->rhsInput)];
  const int64_t outFeatures = r[static_cast<size_t>(labels->rhsOutput)];

  const std::vector<int64_t> ls = rowMajorStrides(l);
  const std::vector<int64_t> rs = rowMajorStrides(r);
  const std::vector<int64_t> os = rowMajorStrides(o);
  const int64_t lhsFeatureStride = ls[static_cast<size_t>(labels->lhsFeature)];
  const int64_t rhsInputStride = rs[static_cast<size_t>(labels->rhsInput)];
  const int64_t outFeaturesPerGroup = outFeatures / g;
  const int64_t outFeaturesPerBatchGroup = outFeatures / bg;
  const int64_t batchPerGroup = batchSize / bg;
  std::vector<int64_t> kernelSizes(spatialCount);
  for (size_t s = 0; s < spatialCount; ++s) kernelSizes[s] = window.dims[s].size;
  const int64_t kernelCount = product(kernelSizes);
  const bool floating = isFloatingPoint(shape.elementType());
  std::vector<double> lf;
  std::vector<double> rf;
  if (floating) {
    lf = asDoubles(lhs);
    rf = asDoubles(rhs);
  }
  const int64_t* li = floating ? nullptr : lhs.intData().data();
  const int64_t* ri = floating ? nullptr : rhs.intData().data();

  auto total = static_cast<size_t>(shape.elementCount());
  std::vector<double> outF(floating ? total : 0);
  std::vector<int64_t> outI(floating ? 0 : total);
  std::vector<int64_t> kernelIndex(spatialCount);
  forEachIndex(o, [&](const std::vector<int64_t>& index) {
    int64_t ob = index[static_cast<size_t>(labels->outBatch)];
    int64_t of = index[static_cast<size_t>(labels->outFeature)];
    // Feature groups pair output feature group k with input features [k*Ci, (k+1)*Ci); batch groups pair
    // output feature group k with input batches [k*B/bg, (k+1)*B/bg).
    int64_t firstFeature = (of / outFeaturesPerGroup) * kernelIn;
    int64_t ib = (of / outFeaturesPerBatchGroup) * batchPerGroup + ob;
    double sumF = 0;
    uint64_t sumI = 0;
    std::fill(kernelIndex.begin(), kernelIndex.end(), 0);
    for (int64_t kk = 0; kk < kernelCount; ++kk) {
      int64_t lhsBase = ib * ls[static_cast<size_t>(labels->lhsBatch)] + firstFeature * lhsFeatureStride;
      int64_t rhsBase = of * rs[static_cast<size_t>(labels->rhsOutput)];
      bool inside = true;
      for (size_t s = 0; s < spatialCount && inside; ++s) {
        const WindowDim& w = window.dims[s];
        int64_t pos =
            index[static_cast<size_t>(labels->outSpatial[s])] * w.stride + kernelIndex[s] * w.windowDilation - w.padLow;
        if (pos < 0 || pos % w.baseDilation != 0) {
          inside = false;
          break;
        }
        pos /= w.baseDilation;
        auto ld = static_cast<size_t>(labels->lhsSpatial[s]);
        if (pos >= l[ld]) {
          inside = false;
          break;
        }
        lhsBase += pos * ls[ld];
        int64_t k = w.reversal ? w.size - 1 - kernelIndex[s] : kernelIndex[s];
        rhsBase += k * rs[static_cast<size_t>(labels->rhsSpatial[s])];
      }
      if (inside) {
        if (floating) {
          for (int64_t c = 0; c < kernelIn; ++c) {
            sumF += lf[static_cast<size_t>(lhsBase + c * lhsFeatureStride)] *
                    rf[static_cast<size_t>(rhsBase + c * rhsInputStride)];
          }
        } else {
          for (int64_t c = 0; c < kernelIn; ++c) {
            sumI += static_cast<uint64_t>(li[lhsBase + c * lhsFeatureStride]) *
                    static_cast<uint64_t>(ri[rhsBase + c * rhsInputStride]);
          }
        }
      }
      for (size_t s = spatialCount; s-- > 0;) {
        if (++kernelIndex[s] < kernelSizes[s]) break;
        kernelIndex[s] = 0;
      }
    }
    int64_t linear = 0;
    for (size_t d = 0; d < o.size(); ++d) linear += index[d] * os[d];
    if (floating) {
      outF[static_cast<size_t>(linear)] = sumF;
    } else {
      outI[static_cast<size_t>(linear)] = static_cast<int64_t>(sumI);
    }
  });
  if (floating) return Value::floats(shape, std::move(outF));
  return Value::integers(shape, std::move(outI));
}

namespace {

struct BatchNormLayout {
  int64_t features = 0;
  int64_t inner = 1;  // elements per step of the feature index
  int64_t perFeature = 0;
  double epsilon = 0;
  int64_t featureOf(int64_t linear) const { return (linear / inner) % features; }
};

StatusOr<BatchNormLayout> batchNormLayout(const HloInstruction& inst, const Value& operand, Operands perFeature) {
  FS_RETURN_IF_ERROR(expectArray(operand, "operand"));
  if (!operand.holdsFloats()) return Status::error("batch norm needs a floating-point operand");
  StatusOr<int64_t> featureIndex = rawInt(inst, "feature_index", std::nullopt);
  if (!featureIndex.ok()) return featureIndex.status();
  StatusOr<double> epsilon = rawFloat(inst, "epsilon", std::nullopt);
  if (!epsilon.ok()) return epsilon.status();
  const std::vector<int64_t>& dims = operand.shape().dimensions();
  if (*featureIndex < 0 || *featureIndex >= static_cast<int64_t>(dims.size())) {
    return Status::error(fmt::format("feature_index={} out of range", *featureIndex));
  }
  BatchNormLayout layout;
  layout.features = dims[static_cast<size_t>(*featureIndex)];
  for (size_t d = static_cast<size_t>(*featureIndex) + 1; d < dims.size(); ++d) layout.inner *= dims[d];
  layout.perFeature = layout.features == 0 ? 0 : operand.elementCount() / layout.features;
  layout.epsilon = static_cast<float>(*epsilon);
  for (size_t i = 0; i < perFeature.size(); ++i) {
    const Value& v = *perFeature[i];
    if (!v.isArray() || !v.holdsFloats() || v.shape().rank() != 1 || v.elementCount() != layout.features) {
      return Status::error(
          fmt::format("per-feature operand {} must be a floating-point vector of {} elements", i + 1, layout.features));
    }
  }
  return layout;
}

// Per-feature mean and (biased) variance over every other dimension.
void featureMoments(const Value& x, const BatchNormLayout& layout, std::vector<double>& mean,
                    std::vector<double>& var) {
  auto f = static_cast<size_t>(layout.features);
  mean.assign(f, 0.0);
  var.assign(f, 0.0);
  std::span<const double> data = x.floatData();
  for (size_t i = 0; i < data.size(); ++i)
    mean[static_cast<size_t>(layout.featureOf(static_cast<int64_t>(i)))] += data[i];
  for (double& m : mean) m /= static_cast<double>(std::max<int64_t>(layout.perFeature, 1));
  for (size_t i = 0; i < data.size(); ++i) {
    double d = data[i] - mean[static_cast<size_t>(layout.featureOf(static_cast<int64_t>(i)))];
    var[static_cast<size_t>(layout.featureOf(static_cast<int64_t>(i)))] += d * d;
  }
  for (double& v : var) v /= static_cast<double>(std::max<int64_t>(layout.perFeature, 1));
}

StatusOr<std::vector<Shape>> tupleShapes(const HloInstruction& inst, size_t count) {
  const Shape& shape = inst.shape();
  if (!shape.isTuple() || static_cast<size_t>(shape.tupleSize()) != count) {
    return Status::error(fmt::format("result must be a tuple of {} arrays", count));
  }
  return shape.tupleElements();
}

}  // namespace

StatusOr<Value> evalBatchNormTraining(const HloInstruction& inst, Operands operands) {
  if (operands.size() != 3) return Status::error("batch-norm-training takes operand, scale and offset");
  StatusOr<BatchNormLayout> layout = batchNormLayout(inst, *operands[0], operands.subspan(1));
  if (!layout.ok()) return layout.status();
  StatusOr<std::vector<Shape>> shapes = tupleShapes(inst, 3);
  if (!shapes.ok()) return shapes.status();
  const Value& x = *operands[0];
  std::vector<double> mean;
  std::vector<double> var;
  featureMoments(x, *layout, mean, var);
  std::span<const double> scale = operands[1]->floatData();
  std::span<const double> offset = operands[2]->floatData();
  std::vector<double> out(static_cast<size_t>(x.elementCount()));
  for (size_t i = 0; i < out.size(); ++i) {
    auto f = static_cast<size_t>(layout->featureOf(static_cast<int64_t>(i)));
    out[i] = (x.floatData()[i] - mean[f]) / std::sqrt(var[f] + layout->epsilon) * scale[f] + offset[f];
  }
  return Value::tuple({Value::floats(x.shape(), std::move(out)), Value::floats((*shapes)[1], std::move(mean)),
                       Value::floats((*shapes)[2], std::move(var))});
}

StatusOr<Value> evalBatchNormInference(const HloInstruction& inst, Operands operands) {
  if (operands.size() != 5) return Status::error("batch-norm-inference takes operand, scale, offset, mean, variance");
  StatusOr<BatchNormLayout> layout = batchNormLayout(inst, *operands[0], operands.subspan(1));
  if (!layout.ok()) return layout.status();
  const Value& x = *operands[0];
  std::span<const double> scale = operands[1]->floatData();
  std::span<const double> offset = operands[2]->floatData();
  std::span<const double> mean = operands[3]->floatData();
  std::span<const double> var = operands[4]->floatData();
  std::vector<double> out(static_cast<size_t>(x.elementCount()));
  for (size_t i = 0; i < out.size(); ++i) {
    auto f = static_cast<size_t>(layout->featureOf(static_cast<int64_t>(i)));
    out[i] = (x.floatData()[i] - mean[f]) / std::sqrt(var[f] + layout->epsilon) * scale[f] + offset[f];
  }
  return Value::floats(x.shape(), std::move(out));
}

StatusOr<Value> evalBatchNormGrad(const HloInstruction& inst, Operands operands) {
  if (operands.size() != 5) {
    return Status::error("batch-norm-grad takes operand, scale, mean, variance and grad_output");
  }
  const Value& x = *operands[0];
  const Value& dy = *operands[4];
  StatusOr<BatchNormLayout> layout = batchNormLayout(inst, x, operands.subspan(1, 3));
  if (!layout.ok()) return layout.status();
  if (!dy.isArray() || !dy.holdsFloats() || dy.shape().dimensions() != x.shape().dimensions()) {
    return Status::error("grad_output must match the operand");
  }
  StatusOr<std::vector<Shape>> shapes = tupleShapes(inst, 3);
  if (!shapes.ok()) return shapes.status();
  std::span<const double> scale = operands[1]->floatData();
  std::span<const double> mean = operands[2]->floatData();
  std::span<const double> var = operands[3]->floatData();
  auto features = static_cast<size_t>(layout->features);
  // grad_offset = sum(dy); grad_scale = sum(dy * (x - mean)) / sqrt(var + eps);
  // grad_operand = scale / sqrt(var + eps) * (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) / (var + eps)).
  std::vector<double> sumDy(features, 0.0);
  std::vector<double> sumDyXc(features, 0.0);
  std::span<const double> xd = x.floatData();
  std::span<const double> dyd = dy.floatData();
  for (size_t i = 0; i < xd.size(); ++i) {
    auto f = static_cast<size_t>(layout->featureOf(static_cast<int64_t>(i)));
    sumDy[f] += dyd[i];
    sumDyXc[f] += dyd[i] * (xd[i] - mean[f]);
  }
  auto count = static_cast<double>(std::max<int64_t>(layout->perFeature, 1));
  std::vector<double> gradOperand(xd.size());
  for (size_t i = 0; i < xd.size(); ++i) {
    auto f = static_cast<size_t>(layout->featureOf(static_cast<int64_t>(i)));
    double varEps = var[f] + layout->epsilon;
    gradOperand[i] =
        scale[f] / std::sqrt(varEps) * (dyd[i] - sumDy[f] / count - (xd[i] - mean[f]) * (sumDyXc[f] / count) / varEps);
  }
  std::vector<double> gradScale(features);
  for (size_t f = 0; f < features; ++f) gradScale[f] = sumDyXc[f] / std::sqrt(var[f] + layout->epsilon);
  return Value::tuple({Value::floats(x.shape(), std::move(gradOperand)),
                       Value::floats((*shapes)[1], std::move(gradScale)),
                       Value::floats((*shapes)[2], std::move(sumDy))});
}

}  // namespace fusionscope::core::eval
