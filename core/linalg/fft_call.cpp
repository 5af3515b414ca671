#include "core/linalg/fft_call.h"

#include <cctype>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/ir/hlo_instruction.h"

namespace fusionscope::core::linalg {
namespace {

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

// `{16,16}` -> {16, 16}; nullopt when malformed.
std::optional<std::vector<int64_t>> intList(std::string_view text) {
  std::vector<int64_t> out;
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip();
  if (i >= text.size() || text[i] != '{') return std::nullopt;
  ++i;
  skip();
  if (i < text.size() && text[i] == '}') return out;
  while (true) {
    skip();
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (start == i || i - start > 12) return std::nullopt;
    out.push_back(std::stoll(std::string(text.substr(start, i - start))));
    skip();
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == '}') return out;
    return std::nullopt;
  }
}

}  // namespace

double FftCall::flops() const {
  const auto n = static_cast<double>(product(lengths));
  const double perTransform = 5.0 * n * std::log2(std::max(n, 2.0));
  const bool real = kind == FftKind::kRfft || kind == FftKind::kIrfft;
  return static_cast<double>(batch) * (real ? perTransform / 2 : perTransform);
}

bool isFft(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::kFft;
}

StatusOr<FftCall> fftCallOf(const HloInstruction& inst) {
  auto bad = [&](const std::string& why) { return Status::badInput(fmt::format("fft: {}", why)); };
  if (!isFft(inst)) return bad("not an fft instruction");
  if (inst.operandCount() != 1) return bad(fmt::format("takes one operand, has {}", inst.operandCount()));
  FftCall call;
  const std::string* type = inst.attributes().findRaw("fft_type");
  if (type == nullptr) return bad("missing fft_type= (FFT, IFFT, RFFT or IRFFT)");
  if (*type == "FFT") {
    call.kind = FftKind::kFft;
  } else if (*type == "IFFT") {
    call.kind = FftKind::kIfft;
  } else if (*type == "RFFT") {
    call.kind = FftKind::kRfft;
  } else if (*type == "IRFFT") {
    call.kind = FftKind::kIrfft;
  } else {
    return bad(fmt::format("unknown fft_type={} (FFT, IFFT, RFFT or IRFFT)", *type));
  }
  const std::string* lengthText = inst.attributes().findRaw("fft_length");
  if (lengthText == nullptr) return bad("missing fft_length={...}");
  std::optional<std::vector<int64_t>> lengths = intList(*lengthText);
  if (!lengths || lengths->empty() || lengths->size() > 3) {
    return bad(fmt::format("fft_length={} must list 1 to 3 sizes", *lengthText));
  }
  for (int64_t n : *lengths) {
    if (n < 1 || n > (int64_t{1} << 30)) return bad(fmt::format("fft_length={} has a size out of range", *lengthText));
  }
  call.lengths = *lengths;
  const Shape& in = inst.operand(0)->shape();
  const Shape& out = inst.shape();
  if (!in.isArray() || !out.isArray()) return bad("operand and result must be arrays");
  const int rank = static_cast<int>(call.lengths.size());
  if (in.rank() < rank || out.rank() != in.rank()) {
    return bad(
        fmt::format("{} -> {} does not fit fft_length={}", in.toString(false), out.toString(false), *lengthText));
  }
  // Element types: complex in and out, except a real input (RFFT) or output (IRFFT); one precision.
  const PrimitiveType inType = in.elementType();
  const PrimitiveType outType = out.elementType();
  const bool realIn = call.kind == FftKind::kRfft;
  const bool realOut = call.kind == FftKind::kIrfft;
  const PrimitiveType expectedIn =
      realIn ? (outType == PrimitiveType::kC128 ? PrimitiveType::kF64 : PrimitiveType::kF32)
             : (outType == PrimitiveType::kF64 || outType == PrimitiveType::kC128 ? PrimitiveType::kC128
                                                                                  : PrimitiveType::kC64);
  const PrimitiveType expectedOut =
      realOut ? (inType == PrimitiveType::kC128 ? PrimitiveType::kF64 : PrimitiveType::kF32)
              : (inType == PrimitiveType::kF64 || inType == PrimitiveType::kC128 ? PrimitiveType::kC128
                                                                                 : PrimitiveType::kC64);
  if (inType != expectedIn || outType != expectedOut) {
    return bad(fmt::format("{} {} takes {} to {} or the double-precision pair, not {} to {}", *type, *lengthText,
                           realIn ? "f32" : "c64", realOut ? "f32" : "c64", primitiveTypeName(inType),
                           primitiveTypeName(outType)));
  }
  call.doublePrecision = inType == PrimitiveType::kF64 || inType == PrimitiveType::kC128;
  // The trailing dimensions: fft_length on the side that holds the full points, n/2+1 last on the halved side.
  call.batch = 1;
  for (int d = 0; d < in.rank() - rank; ++d) {
    if (in.dimension(d) != out.dimension(d)) {
      return bad(fmt::format("batch dimension {} differs: {} -> {}", d, in.toString(false), out.toString(false)));
    }
    call.batch *= in.dimension(d);
  }
  for (int j = 0; j < rank; ++j) {
    const int d = in.rank() - rank + j;
    const int64_t n = call.lengths[static_cast<size_t>(j)];
    const bool last = j == rank - 1;
    const int64_t full = n;
    const int64_t half = n / 2 + 1;
    const int64_t inExpected = last && realOut ? half : full;
    const int64_t outExpected = last && realIn ? half : full;
    if (in.dimension(d) != inExpected || out.dimension(d) != outExpected) {
      return bad(fmt::format("{} with fft_length={} needs dimension {} of {} in and {} out, has {} -> {}", *type,
                             *lengthText, d, inExpected, outExpected, in.toString(false), out.toString(false)));
    }
  }
  return call;
}

std::vector<int64_t> encodeFft(const FftCall& call) {
  std::vector<int64_t> words = {kFftDescriptorMagic,
                                static_cast<int64_t>(call.kind),
                                call.doublePrecision ? 1 : 0,
                                static_cast<int64_t>(call.lengths.size()),
                                1,
                                1,
                                1,
                                call.batch};
  for (size_t i = 0; i < call.lengths.size(); ++i) words[4 + i] = call.lengths[i];
  return words;
}

}  // namespace fusionscope::core::linalg
