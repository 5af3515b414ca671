#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"

// HLO's `fft` (fft_type=FFT|IFFT|RFFT|IRFFT, fft_length={...}) run through FFTW from the system (Debian's libfftw3:
// double and single precision, planned once per shape and reused): the evaluator runs every transform in f64 on its
// copies, the CPU JIT in the program's precision on its buffers. One description (FftCall), read off the
// instruction, serves both; docs/CODEGEN.md, "FFT".
//
// Semantics (XLA's): the transform runs over the last fft_length.size() (1 to 3) dimensions, every leading dimension
// indexes an independent transform (the batch).
//   FFT    c[..., n...]        -> c[..., n...]          forward, unnormalised (sign -1)
//   IFFT   c[..., n...]        -> c[..., n...]          inverse (sign +1), scaled by 1 / prod(n)
//   RFFT   f[..., n...]        -> c[..., n..., n/2+1]   forward of real input: the non-redundant half of the last
//                                                       dimension
//   IRFFT  c[..., n..., n/2+1] -> f[..., n...]          inverse to real output, scaled by 1 / prod(n); the input is
//                                                       read as the half of a Hermitian-symmetric spectrum (the
//                                                       imaginary parts that symmetry makes zero are ignored)
namespace fusionscope::core {
class HloInstruction;
}

namespace fusionscope::core::linalg {

enum class FftKind : int64_t { kFft = 0, kIfft = 1, kRfft = 2, kIrfft = 3 };

struct FftCall {
  FftKind kind = FftKind::kFft;
  bool doublePrecision = false;  // c128 / f64 (else c64 / f32)
  std::vector<int64_t> lengths;  // fft_length: the transform's dimensions, 1 to 3
  int64_t batch = 1;             // independent transforms (the product of the leading dimensions)
  // Floating-point operations of the whole call, about 5 N log2 N per complex transform of N points (half that
  // for a real one): the cost the planner and the work estimate use.
  double flops() const;
};

// True for an `fft` instruction.
bool isFft(const HloInstruction& inst);
// The transform `inst` computes; fails ("fft: ...", without the instruction's name), naming what is wrong, on an
// fft_type, fft_length or shapes that do not fit (the element types included: c64/f32 or c128/f64).
StatusOr<FftCall> fftCallOf(const HloInstruction& inst);

// A flat form for generated code (the kernel passes it to fusionscope_fft_run), and back.
constexpr int64_t kFftDescriptorMagic = 0x46534654;  // "FSFT", the first word
std::vector<int64_t> encodeFft(const FftCall& call);

}  // namespace fusionscope::core::linalg

extern "C" {
// Runs transforms [begin, end) of the call `descriptor` (encodeFft's words) from buffers[0] (the input) to buffers[1]
// (the output), row-major, complex elements as interleaved (re, im) pairs. Returns 0, or -1 (outputs untouched) for a
// malformed descriptor, a range outside the batch, or when FFTW cannot plan the transform or scratch memory cannot
// be had. Thread-safe: planning is serialised, plans are kept and reused. core/linalg/fft_runtime.cpp.
int fusionscope_fft_run(const int64_t* descriptor, void* const* buffers, int64_t begin, int64_t end);
// Makes (and keeps) the plan `descriptor` needs, so that the first run does not: 0, or -1 as above.
int fusionscope_fft_prepare(const int64_t* descriptor);
}
