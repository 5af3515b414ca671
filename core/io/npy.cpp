#include "core/io/npy.h"

#include <array>
#include <optional>

#include <fmt/format.h>

#include "core/base/file_util.h"
#include "core/base/npy_format.h"

namespace fusionscope::core {
namespace {

struct DtypeInfo {
  PrimitiveType type;
  std::string_view descr;
  int bytes;
};

// Element types .npy can hold, with the descriptor np.save writes for each.
constexpr std::array kDtypes = {
    DtypeInfo{PrimitiveType::kPred, "|b1", 1}, DtypeInfo{PrimitiveType::kS8, "|i1", 1},
    DtypeInfo{PrimitiveType::kS16, "<i2", 2},  DtypeInfo{PrimitiveType::kS32, "<i4", 4},
    DtypeInfo{PrimitiveType::kS64, "<i8", 8},  DtypeInfo{PrimitiveType::kU8, "|u1", 1},
    DtypeInfo{PrimitiveType::kU16, "<u2", 2},  DtypeInfo{PrimitiveType::kU32, "<u4", 4},
    DtypeInfo{PrimitiveType::kU64, "<u8", 8},  DtypeInfo{PrimitiveType::kF16, "<f2", 2},
    DtypeInfo{PrimitiveType::kF32, "<f4", 4},  DtypeInfo{PrimitiveType::kF64, "<f8", 8},
    DtypeInfo{PrimitiveType::kC64, "<c8", 8},  DtypeInfo{PrimitiveType::kC128, "<c16", 16},
    // numpy has no bfloat16: np.save of an ml_dtypes.bfloat16 array (every JAX bf16 array) writes a 2-byte void,
    // '<V2' or '|V2', the bits as they are. Read as bf16, and bf16 written so (np.load(...).view(bfloat16)).
    DtypeInfo{PrimitiveType::kBF16, "<V2", 2},
};

// The element type of a descriptor the codec accepted: byte order aside ('<', '|', '=' and one-byte '>' all
// mean little-endian data here), kind and size pick the type.
std::optional<PrimitiveType> typeOf(std::string_view descr) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.descr.substr(1) == descr.substr(1)) return info.type;
  }
  return std::nullopt;
}

}  // namespace

int64_t NpyArray::elementCount() const {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

std::string_view npyDescr(PrimitiveType type) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.type == type) return info.descr;
  }
  return {};
}

StatusOr<NpyArray> parseNpy(std::string_view bytes, std::string_view name) {
  StatusOr<NpyFile> file = decodeNpyFile(bytes, name);
  if (!file.ok()) return file.status();
  std::optional<PrimitiveType> type = typeOf(file->descr);
  if (!type) return Status::error(fmt::format("{}: error: unsupported dtype '{}'", name, file->descr));
  return NpyArray{*type, std::move(file->dims), std::move(file->data)};
}

StatusOr<NpyArray> readNpy(const std::string& path) {
  StatusOr<std::string> content = readFile(path);
  if (!content.ok()) return content.status();
  return parseNpy(*content, path);
}

StatusOr<std::string> serializeNpy(const NpyArray& array, std::string_view name) {
  std::string_view descr = npyDescr(array.type);
  if (descr.empty()) {
    return Status::error(
        fmt::format("{}: error: element type {} cannot be stored in .npy", name, primitiveTypeName(array.type)));
  }
  return encodeNpyFile(NpyFile{std::string(descr), array.dims, array.bytes}, name);
}

Status writeNpy(const std::string& path, const NpyArray& array) {
  StatusOr<std::string> content = serializeNpy(array, path);
  if (!content.ok()) return content.status();
  return writeFileAtomic(path, *content);
}

}  // namespace fusionscope::core
