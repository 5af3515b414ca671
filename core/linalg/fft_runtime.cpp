// The part of HLO's fft that runs it: FFTW plans (double and single precision), kept per transform shape, and the C
// entry generated code calls (fusionscope_fft_run). Like linalg_runtime.cpp it depends on FFTW and the standard
// library only, so an ahead-of-time object that transforms links it from libfusionscope_linalg.a (docs/AOT.md).
//
// Why FFTW: it is the FFT library Debian ships (libfftw3-dev; pocketfft and DUCC, XLA CPU's, are not packaged), it
// has both precisions and batched multi-dimensional real and complex plans, and its planner picks codelets for the
// sizes at hand. Plans are made with FFTW_ESTIMATE (no timing runs: a plan costs microseconds, and measuring would
// make results depend on the machine's load) and FFTW_UNALIGNED (they run on any buffer of the shape).

#include <complex>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include <fftw3.h>

#include "core/linalg/fft_call.h"

namespace fusionscope::core::linalg {
namespace {

struct Descriptor {
  int64_t kind = 0;  // FftKind
  bool f64 = false;
  int rank = 0;
  int64_t lengths[3] = {1, 1, 1};
  int64_t batch = 0;
  int64_t points() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= lengths[d];
    return n;
  }
  // Elements (complex or real, as the transform reads and writes them) of one transform's input and output.
  int64_t halfPoints() const { return points() / lengths[rank - 1] * (lengths[rank - 1] / 2 + 1); }
  int64_t inputElements() const { return kind == 3 ? halfPoints() : points(); }
  int64_t outputElements() const { return kind == 2 ? halfPoints() : points(); }
  bool complexInput() const { return kind != 2; }
  bool complexOutput() const { return kind != 3; }
  auto key() const { return std::make_tuple(kind, f64, rank, lengths[0], lengths[1], lengths[2]); }
};

bool decode(const int64_t* words, Descriptor* d) {
  if (words == nullptr || words[0] != kFftDescriptorMagic) return false;
  d->kind = words[1];
  d->f64 = words[2] != 0;
  d->rank = static_cast<int>(words[3]);
  if (d->kind < 0 || d->kind > 3 || d->rank < 1 || d->rank > 3) return false;
  for (int i = 0; i < d->rank; ++i) {
    d->lengths[i] = words[4 + i];
    if (d->lengths[i] < 1 || d->lengths[i] > (int64_t{1} << 30)) return false;
  }
  d->batch = words[7];
  return d->batch >= 0;
}

// One plan per (kind, precision, dimensions) for a single transform, run on every batch element with FFTW's
// new-array execute. Kept for the process's life and destroyed at its exit (a leak checker would report them
// otherwise).
struct Plan {
  void* plan = nullptr;
  bool f64 = false;
};

template <class Key>
struct PlanCache {
  std::map<Key, Plan> plans;
  ~PlanCache() {
    for (auto& [key, plan] : plans) {
      if (plan.plan == nullptr) continue;
      if (plan.f64) {
        fftw_destroy_plan(static_cast<fftw_plan>(plan.plan));
      } else {
        fftwf_destroy_plan(static_cast<fftwf_plan>(plan.plan));
      }
    }
  }
};

std::mutex& plannerMutex() {
  static std::mutex mutex;
  return mutex;
}

template <class Real>
struct Fftw;

template <>
struct Fftw<double> {
  using Complex = fftw_complex;
  static void* plan(const Descriptor& d, int* n, void* in, void* out) {
    const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
    switch (d.kind) {
      case 0:
        return fftw_plan_dft(d.rank, n, static_cast<Complex*>(in), static_cast<Complex*>(out), FFTW_FORWARD, flags);
      case 1:
        return fftw_plan_dft(d.rank, n, static_cast<Complex*>(in), static_cast<Complex*>(out), FFTW_BACKWARD, flags);
      case 2: return fftw_plan_dft_r2c(d.rank, n, static_cast<double*>(in), static_cast<Complex*>(out), flags);
      default: return fftw_plan_dft_c2r(d.rank, n, static_cast<Complex*>(in), static_cast<double*>(out), flags);
    }
  }
  static void execute(const Descriptor& d, void* plan, void* in, void* out) {
    auto* p = static_cast<fftw_plan>(plan);
    switch (d.kind) {
      case 0:
      case 1: fftw_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out)); return;
      case 2: fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Complex*>(out)); return;
      default: fftw_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<double*>(out)); return;
    }
  }
};

template <>
struct Fftw<float> {
  using Complex = fftwf_complex;
  static void* plan(const Descriptor& d, int* n, void* in, void* out) {
    const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
    switch (d.kind) {
      case 0:
        return fftwf_plan_dft(d.rank, n, static_cast<Complex*>(in), static_cast<Complex*>(out), FFTW_FORWARD, flags);
      case 1:
        return fftwf_plan_dft(d.rank, n, static_cast<Complex*>(in), static_cast<Complex*>(out), FFTW_BACKWARD, flags);
      case 2: return fftwf_plan_dft_r2c(d.rank, n, static_cast<float*>(in), static_cast<Complex*>(out), flags);
      default: return fftwf_plan_dft_c2r(d.rank, n, static_cast<Complex*>(in), static_cast<float*>(out), flags);
    }
  }
  static void execute(const Descriptor& d, void* plan, void* in, void* out) {
    auto* p = static_cast<fftwf_plan>(plan);
    switch (d.kind) {
      case 0:
      case 1: fftwf_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out)); return;
      case 2: fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Complex*>(out)); return;
      default: fftwf_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<float*>(out)); return;
    }
  }
};

// The plan for `d`'s single transform, made on first use (on scratch arrays: FFTW_ESTIMATE does not read them).
template <class Real>
void* planFor(const Descriptor& d) {
  static PlanCache<decltype(d.key())> cache;
  std::lock_guard<std::mutex> lock(plannerMutex());
  Plan& plan = cache.plans[d.key()];
  if (plan.plan != nullptr) return plan.plan;
  plan.f64 = d.f64;
  int n[3] = {static_cast<int>(d.lengths[0]), static_cast<int>(d.lengths[1]), static_cast<int>(d.lengths[2])};
  std::vector<Real> in(static_cast<size_t>(2 * d.inputElements()));
  std::vector<Real> out(static_cast<size_t>(2 * d.outputElements()));
  plan.plan = Fftw<Real>::plan(d, n, in.data(), out.data());
  return plan.plan;
}

template <class Real>
bool run(const Descriptor& d, const void* input, void* output, int64_t begin, int64_t end) {
  void* plan = planFor<Real>(d);
  if (plan == nullptr) return false;
  const int64_t inWords = (d.complexInput() ? 2 : 1) * d.inputElements();
  const int64_t outWords = (d.complexOutput() ? 2 : 1) * d.outputElements();
  const auto* in = static_cast<const Real*>(input);
  auto* out = static_cast<Real*>(output);
  // A complex-to-real plan overwrites its input, which is another instruction's value: each transform runs on a copy
  // of its input. Input and output overlapping (never planned so; a guard) copy the whole range's input first.
  const bool overlap = in < out + end * outWords && out < in + end * inWords;
  std::vector<Real> whole;
  if (overlap) whole.assign(in + begin * inWords, in + end * inWords);
  const Real* first = overlap ? whole.data() : in + begin * inWords;  // transform `begin`'s input
  std::vector<Real> scratch;
  if (d.kind == 3) scratch.resize(static_cast<size_t>(inWords));
  const Real scale = static_cast<Real>(1.0 / static_cast<double>(d.points()));
  for (int64_t t = begin; t < end; ++t) {
    const Real* src = first + (t - begin) * inWords;
    Real* dst = out + t * outWords;
    void* source = const_cast<Real*>(src);
    if (d.kind == 3) {
      std::memcpy(scratch.data(), src, sizeof(Real) * scratch.size());
      source = scratch.data();
    }
    Fftw<Real>::execute(d, plan, source, dst);
    if (d.kind == 1 || d.kind == 3) {
      for (int64_t i = 0; i < outWords; ++i) dst[i] *= scale;
    }
  }
  return true;
}

}  // namespace
}  // namespace fusionscope::core::linalg

extern "C" int fusionscope_fft_run(const int64_t* descriptor, void* const* buffers, int64_t begin, int64_t end) {
  using namespace fusionscope::core::linalg;
  Descriptor d;
  if (!decode(descriptor, &d) || buffers == nullptr || begin < 0 || end > d.batch || begin > end) return -1;
  if (begin == end) return 0;
  try {
    return (d.f64 ? run<double>(d, buffers[0], buffers[1], begin, end)
                  : run<float>(d, buffers[0], buffers[1], begin, end))
               ? 0
               : -1;
  } catch (const std::bad_alloc&) {
    return -1;
  }
}

extern "C" int fusionscope_fft_prepare(const int64_t* descriptor) {
  using namespace fusionscope::core::linalg;
  Descriptor d;
  if (!decode(descriptor, &d)) return -1;
  try {
    return (d.f64 ? planFor<double>(d) : planFor<float>(d)) != nullptr ? 0 : -1;
  } catch (const std::bad_alloc&) {
    return -1;
  }
}
