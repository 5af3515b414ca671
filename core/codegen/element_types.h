#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/eval/value.h"
#include "core/ir/shape.h"

namespace fusionscope::core {

class HloInstruction;

// Element types codegen lowers for every op: pred (one byte), s8..s64, u8..u64, f8 (isByteFloat), f16, bf16, f32, f64
// (c64 and c128 for the ops complexCodegenSupported names).
bool isSupportedElementType(PrimitiveType type);
// The 8-bit float types (f8e5m2, f8e4m3, f8e4m3fn, f8e3m4 and the fnuz ones): one byte in memory, computed in f32,
// decoded on load and rounded and encoded on store as the evaluator's format describes them.
bool isByteFloat(PrimitiveType type);
// Bytes per element in memory (pred = 1, c64 = 8: (re, im) f32 pairs, c128 = 16); 0 for types buffers cannot hold.
int64_t elementByteSize(PrimitiveType type);

// Whether codegen lowers `inst` as far as complex numbers go: true when no operand or result is complex, or the op is
// one of the complex forms the evaluator runs (supportsComplexForm: one list for both), which complex_emitter.cpp
// lowers (elementwise arithmetic, abs/real/imag/complex, converts, compare EQ/NE, exp/log/sqrt/sin/cos/tan/tanh/power
// and kin), data movement (both parts move as one element), select, a reduce with an add or multiply reducer, a dot
// of complex operands, LAPACK calls (geev's eigenvectors), or fft (a kernel calling FFTW, CPU only).
bool complexSupportedInCodegen(const HloInstruction& inst);

// An evaluator Value (array) as raw little-endian bytes in row-major order, and back. Fail for tuples and
// element types codegen does not hold.
StatusOr<std::vector<uint8_t>> valueToBytes(const Value& value);
StatusOr<Value> bytesToValue(const Shape& shape, const uint8_t* data, int64_t size);

// A constant instruction's literal as those bytes (what the JIT copies into its buffer, a GPU bundle stores in
// constants.bin and an ahead-of-time object puts in its read-only data); errors name the constant.
StatusOr<std::vector<uint8_t>> constantBytes(const HloInstruction& constant);

}  // namespace fusionscope::core
