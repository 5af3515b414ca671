#include "core/linalg/linalg_call.h"

#include <algorithm>
#include <cctype>
#include <new>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/ir/hlo_instruction.h"

namespace fusionscope::core::linalg {

namespace {

struct Target {
  char prefix = 's';  // s d c z
  std::string routine;
};

std::optional<Target> parseTarget(std::string_view target) {
  constexpr std::string_view head = "lapack_";
  if (!target.starts_with(head) || target.size() < head.size() + 2) return std::nullopt;
  Target out;
  out.prefix = target[head.size()];
  std::string_view rest = target.substr(head.size() + 1);
  if (rest.ends_with("_ffi")) rest.remove_suffix(4);
  out.routine = std::string(rest);
  return out;
}

// `{diag = 78 : ui8, side = 76 : ui8}`: the character value of `key`, or `missing`.
char characterAttribute(const std::optional<std::string>& config, std::string_view key, char missing) {
  if (!config) return missing;
  const std::string& text = *config;
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    const bool startsWord = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_');
    size_t p = at + key.size();
    while (p < text.size() && text[p] == ' ') ++p;
    if (startsWord && p < text.size() && text[p] == '=') {
      ++p;
      while (p < text.size() && text[p] == ' ') ++p;
      int value = 0;
      bool digits = false;
      while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) {
        value = value * 10 + (text[p] - '0');
        digits = true;
        ++p;
      }
      if (digits && value > 0 && value < 128) return static_cast<char>(value);
      return missing;
    }
    at += key.size();
  }
  return missing;
}

// `num_batch_dims="2"` in the frontend attributes.
std::optional<int64_t> batchDimsAttribute(const std::optional<std::string>& attributes) {
  if (!attributes) return std::nullopt;
  const size_t at = attributes->find("num_batch_dims=\"");
  if (at == std::string::npos) return std::nullopt;
  int64_t value = 0;
  bool digits = false;
  for (size_t p = at + 16; p < attributes->size() && std::isdigit(static_cast<unsigned char>((*attributes)[p])); ++p) {
    value = value * 10 + ((*attributes)[p] - '0');
    digits = true;
    if (value > 64) return std::nullopt;
  }
  return digits ? std::optional<int64_t>(value) : std::nullopt;
}

// Arrays in memory, the evaluator's and compiled code's alike, are in row-major logical order (a layout changes
// only what a bitcast means, core/codegen/element_emitter.cpp).
ArrayView viewOf(const Shape& shape) {
  ArrayView view;
  view.type = shape.elementType();
  view.dims = shape.dimensions();
  view.strides = rowMajorStrides(shape.dimensions());
  return view;
}

std::string_view routineName(Routine routine) {
  switch (routine) {
    case Routine::kPotrf: return "potrf";
    case Routine::kTrsm: return "trsm";
    case Routine::kGetrf: return "getrf";
    case Routine::kGeqrf: return "geqrf";
    case Routine::kOrgqr: return "orgqr";
    case Routine::kSyevd: return "syevd";
    case Routine::kGesdd: return "gesdd";
    case Routine::kGeev: return "geev";
  }
  return "?";
}

}  // namespace

int64_t Call::batch() const {
  int64_t count = 1;
  if (inputs.empty()) return 0;
  for (int64_t d = 0; d < batchDims; ++d) count *= inputs[0].dims[static_cast<size_t>(d)];
  return count;
}

bool isLapackCustomCall(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::kCustomCall && inst.attributes().customCallTarget &&
         inst.attributes().customCallTarget->starts_with("lapack_");
}

StatusOr<Call> callOf(const HloInstruction& inst) {
  const std::string target = inst.attributes().customCallTarget.value_or("");
  const std::optional<Target> parsed = parseTarget(target);
  if (inst.opcode() != HloOpcode::kCustomCall || !parsed) {
    return Status::badInput(fmt::format("{}: not a LAPACK custom call", inst.name()));
  }
  Call call;
  const std::string& r = parsed->routine;
  if (r == "potrf") {
    call.routine = Routine::kPotrf;
  } else if (r == "trsm") {
    call.routine = Routine::kTrsm;
  } else if (r == "getrf") {
    call.routine = Routine::kGetrf;
  } else if (r == "geqrf") {
    call.routine = Routine::kGeqrf;
  } else if (r == "orgqr" || r == "ungqr") {
    call.routine = Routine::kOrgqr;
  } else if (r == "syevd" || r == "heevd") {
    call.routine = Routine::kSyevd;
  } else if (r == "gesdd") {
    call.routine = Routine::kGesdd;
  } else if (r == "geev") {
    call.routine = Routine::kGeev;
  } else {
    return Status::badInput(fmt::format(
        "{}: custom-call {}: LAPACK routine '{}' is not supported (potrf, trsm, getrf, geqrf, orgqr, syevd, "
        "gesdd and geev are)",
        inst.name(), target, r));
  }
  const bool complex = parsed->prefix == 'c' || parsed->prefix == 'z';
  if (!complex && parsed->prefix != 's' && parsed->prefix != 'd') {
    return Status::badInput(fmt::format("{}: custom-call {}: unknown LAPACK type prefix '{}' (s, d, c, z)", inst.name(),
                                        target, parsed->prefix));
  }
  if (!target.ends_with("_ffi")) {
    return Status::badInput(
        fmt::format("{}: custom-call {}: only the typed-FFI form (`{}_ffi`, JAX 0.4.31 and later) is supported",
                    inst.name(), target, target));
  }
  call.type = parsed->prefix == 's'   ? PrimitiveType::kF32
              : parsed->prefix == 'd' ? PrimitiveType::kF64
              : parsed->prefix == 'c' ? PrimitiveType::kC64
                                      : PrimitiveType::kC128;
  const auto& attributes = inst.attributes();
  call.uplo = characterAttribute(attributes.backendConfig, "uplo", 'L');
  call.side = characterAttribute(attributes.backendConfig, "side", 'L');
  call.trans = characterAttribute(attributes.backendConfig, "trans_x", 'N');
  call.diag = characterAttribute(attributes.backendConfig, "diag", 'N');
  auto bad = [&](std::string_view why) {
    return Status::badInput(fmt::format("{}: custom-call {}: {}", inst.name(), target, why));
  };
  if ((call.uplo != 'L' && call.uplo != 'U') || (call.side != 'L' && call.side != 'R') ||
      (call.trans != 'N' && call.trans != 'T' && call.trans != 'C') || (call.diag != 'N' && call.diag != 'U')) {
    return bad("backend_config uplo/side/trans_x/diag must be L|U, L|R, N|T|C, N|U");
  }
  if (call.trans == 'C' && !complex) call.trans = 'T';  // real types: the conjugate transpose is the transpose

  for (const HloInstruction* operand : inst.operands()) {
    if (!operand->shape().isArray()) return bad("operands must be arrays");
    call.inputs.push_back(viewOf(operand->shape()));
  }
  if (inst.shape().isTuple()) {
    for (const Shape& element : inst.shape().tupleElements()) {
      if (!element.isArray()) return bad("results must be arrays");
      call.outputs.push_back(viewOf(element));
    }
  } else if (inst.shape().isArray()) {
    call.outputs.push_back(viewOf(inst.shape()));
  }
  const size_t expectedInputs = call.routine == Routine::kTrsm || call.routine == Routine::kOrgqr ? 2 : 1;
  const size_t expectedOutputs = call.routine == Routine::kTrsm || call.routine == Routine::kOrgqr    ? 1
                                 : call.routine == Routine::kPotrf || call.routine == Routine::kGeqrf ? 2
                                 : call.routine == Routine::kGeev && complex                          ? 4
                                 : call.routine == Routine::kGesdd || call.routine == Routine::kGeev  ? 5
                                                                                                      : 3;
  const bool alpha = call.routine == Routine::kTrsm && call.inputs.size() == 3;
  if ((call.inputs.size() != expectedInputs && !alpha) || call.outputs.size() != expectedOutputs) {
    return bad(fmt::format("{} takes {} operand(s) and gives {} result(s), this has {} and {}", routineName(call.routine),
                           expectedInputs, expectedOutputs, call.inputs.size(), call.outputs.size()));
  }
  const ArrayView& a = call.inputs[0];
  const int64_t rank = static_cast<int64_t>(a.dims.size());
  if (rank < 2) return bad("the matrix operand needs at least two dimensions");
  call.batchDims = batchDimsAttribute(attributes.frontendAttributes).value_or(rank - 2);
  if (call.batchDims != rank - 2) return bad(fmt::format("num_batch_dims must be the operand's rank minus 2 ({})", rank - 2));
  const int64_t bd = call.batchDims;
  const std::vector<int64_t> batchShape(a.dims.begin(), a.dims.begin() + bd);
  const int64_t rows = a.dims[static_cast<size_t>(bd)];
  const int64_t cols = a.dims[static_cast<size_t>(bd) + 1];
  auto expect = [&](const ArrayView& view, PrimitiveType type, std::vector<int64_t> tail,
                    std::string_view what) -> Status {
    std::vector<int64_t> dims = batchShape;
    dims.insert(dims.end(), tail.begin(), tail.end());
    if (view.type != type || view.dims != dims) {
      Shape wanted(type, dims);
      return bad(fmt::format("{} must be {}", what, wanted.toString()));
    }
    return okStatus();
  };
  const PrimitiveType t = call.type;
  const PrimitiveType s32 = PrimitiveType::kS32;
  constexpr int64_t kMaxOrder = 1 << 20;
  if (rows > kMaxOrder || cols > kMaxOrder) return bad("matrices larger than 2^20 rows or columns are not supported");
  FS_RETURN_IF_ERROR(expect(a, t, {rows, cols}, "the matrix operand"));
  switch (call.routine) {
    case Routine::kPotrf:
    case Routine::kSyevd:
      if (rows != cols) return bad("the matrix must be square");
      FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {rows, cols}, "result 0"));
      if (call.routine == Routine::kPotrf) {
        FS_RETURN_IF_ERROR(expect(call.outputs[1], s32, {}, "result 1 (info)"));
      } else {
        // Real eigenvalues (f32 for c64, f64 for c128).
        const PrimitiveType real = t == PrimitiveType::kC64    ? PrimitiveType::kF32
                                   : t == PrimitiveType::kC128 ? PrimitiveType::kF64
                                                               : t;
        FS_RETURN_IF_ERROR(expect(call.outputs[1], real, {rows}, "result 1 (eigenvalues)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[2], s32, {}, "result 2 (info)"));
      }
      break;
    case Routine::kTrsm: {
      if (rows != cols) return bad("the triangular matrix must be square");
      const ArrayView& b = call.inputs[1];
      if (b.dims.size() != a.dims.size()) return bad("both operands need the same batch dimensions");
      const int64_t m = b.dims[static_cast<size_t>(bd)];
      const int64_t n = b.dims[static_cast<size_t>(bd) + 1];
      FS_RETURN_IF_ERROR(expect(b, t, {m, n}, "operand 1"));
      if ((call.side == 'L' ? m : n) != rows) {
        return bad(fmt::format("a {0}x{0} triangular matrix cannot solve a {1}x{2} right-hand side from the {3}", rows,
                               m, n, call.side == 'L' ? "left" : "right"));
      }
      if (alpha && (call.inputs[2].type != t || !call.inputs[2].dims.empty())) return bad("alpha must be a scalar");
      FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {m, n}, "the result"));
      break;
    }
    case Routine::kGetrf:
      FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {rows, cols}, "result 0"));
      FS_RETURN_IF_ERROR(expect(call.outputs[1], s32, {std::min(rows, cols)}, "result 1 (pivots)"));
      FS_RETURN_IF_ERROR(expect(call.outputs[2], s32, {}, "result 2 (info)"));
      break;
    case Routine::kGeqrf:
      FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {rows, cols}, "result 0"));
      FS_RETURN_IF_ERROR(expect(call.outputs[1], t, {std::min(rows, cols)}, "result 1 (tau)"));
      break;
    case Routine::kGesdd: {
      const int64_t k = std::min(rows, cols);
      FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {rows, cols}, "result 0"));
      const PrimitiveType real = t == PrimitiveType::kC64    ? PrimitiveType::kF32
                                 : t == PrimitiveType::kC128 ? PrimitiveType::kF64
                                                             : t;
      FS_RETURN_IF_ERROR(expect(call.outputs[1], real, {k}, "result 1 (singular values)"));
      const ArrayView& u = call.outputs[2];
      const ArrayView& vt = call.outputs[3];
      const size_t r = static_cast<size_t>(bd);
      if (u.dims.size() != r + 2 || vt.dims.size() != r + 2) return bad("u and vt must be matrices per problem");
      const bool reduced = u.dims[r + 1] == k && vt.dims[r] == k;
      const bool full = u.dims[r + 1] == rows && vt.dims[r] == cols;
      if (!reduced && !full) {
        return bad(fmt::format("u and vt must be [{0},{1}] and [{1},{2}] (reduced) or [{0},{0}] and [{2},{2}] (full)",
                               rows, k, cols));
      }
      FS_RETURN_IF_ERROR(expect(u, t, {rows, u.dims[r + 1]}, "result 2 (u)"));
      FS_RETURN_IF_ERROR(expect(vt, t, {vt.dims[r], cols}, "result 3 (vt)"));
      FS_RETURN_IF_ERROR(expect(call.outputs[4], s32, {}, "result 4 (info)"));
      const char mode = characterAttribute(attributes.backendConfig, "mode", reduced ? 'S' : 'A');
      call.jobz = mode == 'N' ? 'N' : reduced ? 'S' : 'A';
      break;
    }
    case Routine::kGeev: {
      if (rows != cols) return bad("the matrix must be square");
      if (isComplex(t)) {  // cgeev, zgeev: complex eigenvalues in one array
        FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {rows}, "result 0 (eigenvalues)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[1], t, {rows, rows}, "result 1 (left eigenvectors)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[2], t, {rows, rows}, "result 2 (right eigenvectors)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[3], s32, {}, "result 3 (info)"));
      } else {
        const PrimitiveType c = t == PrimitiveType::kF32 ? PrimitiveType::kC64 : PrimitiveType::kC128;
        FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {rows}, "result 0 (eigenvalues' real parts)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[1], t, {rows}, "result 1 (eigenvalues' imaginary parts)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[2], c, {rows, rows}, "result 2 (left eigenvectors)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[3], c, {rows, rows}, "result 3 (right eigenvectors)"));
        FS_RETURN_IF_ERROR(expect(call.outputs[4], s32, {}, "result 4 (info)"));
      }
      call.jobvl = characterAttribute(attributes.backendConfig, "compute_left", 'V') == 'N' ? 'N' : 'V';
      call.jobz = characterAttribute(attributes.backendConfig, "compute_right", 'V') == 'N' ? 'N' : 'V';
      break;
    }
    case Routine::kOrgqr: {
      const ArrayView& tau = call.inputs[1];
      if (tau.dims.size() != static_cast<size_t>(bd) + 1) return bad("tau must be a vector per problem");
      const int64_t k = tau.dims.back();
      FS_RETURN_IF_ERROR(expect(tau, t, {k}, "operand 1 (tau)"));
      if (cols > rows || k > cols) return bad("orgqr needs rows >= columns >= reflectors");
      FS_RETURN_IF_ERROR(expect(call.outputs[0], t, {rows, cols}, "the result"));
      break;
    }
  }
  return call;
}

Status run(const Call& call, void* const* buffers, int64_t begin, int64_t end) {
  try {
    solveProblems(call, buffers, begin, end);
  } catch (const std::bad_alloc&) {
    return Status::failedWork(fmt::format("LAPACK {}: out of memory for its scratch", routineName(call.routine)));
  }
  return okStatus();
}

std::vector<int64_t> encode(const Call& call) {
  std::vector<int64_t> words = {kDescriptorMagic,
                                static_cast<int64_t>(call.routine),
                                static_cast<int64_t>(call.type),
                                call.batchDims,
                                call.uplo,
                                call.side,
                                call.trans,
                                call.diag,
                                call.jobz,
                                call.jobvl,
                                static_cast<int64_t>(call.inputs.size()),
                                static_cast<int64_t>(call.outputs.size())};
  auto add = [&](const ArrayView& view) {
    words.push_back(static_cast<int64_t>(view.type));
    words.push_back(static_cast<int64_t>(view.dims.size()));
    words.insert(words.end(), view.dims.begin(), view.dims.end());
    words.insert(words.end(), view.strides.begin(), view.strides.end());
  };
  for (const ArrayView& view : call.inputs) add(view);
  for (const ArrayView& view : call.outputs) add(view);
  return words;
}

StatusOr<Call> decode(const int64_t* words) {
  Call call;
  if (!decodeCall(words, &call)) return Status::error("not a LAPACK call descriptor");
  return call;
}

int64_t costPerProblem(const Call& call) {
  const size_t r = static_cast<size_t>(call.batchDims);
  const int64_t m = call.inputs[0].dims[r];
  const int64_t n = call.inputs[0].dims[r + 1];
  switch (call.routine) {
    case Routine::kPotrf: return std::max<int64_t>(1, n * n * n / 3);
    case Routine::kTrsm: {
      const ArrayView& b = call.inputs[1];
      return std::max<int64_t>(1, m * b.dims[r] * b.dims[r + 1]);
    }
    case Routine::kGetrf: return std::max<int64_t>(1, m * n * std::min(m, n));
    case Routine::kGeqrf:
    case Routine::kOrgqr: return std::max<int64_t>(1, 2 * m * n * n);
    case Routine::kSyevd: return std::max<int64_t>(1, 9 * n * n * n);
    case Routine::kGesdd: return std::max<int64_t>(1, 12 * m * n * std::min(m, n));
    case Routine::kGeev: return std::max<int64_t>(1, 25 * n * n * n);
  }
  return 1;
}

}  // namespace fusionscope::core::linalg
