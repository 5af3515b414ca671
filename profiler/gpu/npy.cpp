#include "profiler/gpu/npy.h"

#include <cstring>
#include <map>

#include "profiler/gpu/bundle.h"

namespace fusionscope::profiler::gpu {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::string shapeText(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += std::to_string(dims[i]);
    if (dims.size() == 1 || i + 1 < dims.size()) out += ",";
    if (i + 1 < dims.size()) out += " ";
  }
  return out + ")";
}

// The value of `key` in the header dict, e.g. 'descr': '<f4' -> <f4, 'shape': (2, 3) -> "(2, 3)".
std::string headerValue(std::string_view header, std::string_view key) {
  std::string quoted(1, '\'');  // appended, not `"'" + string`: GCC 12's -O3 -Wrestrict false alarm
  quoted.append(key).push_back('\'');
  size_t at = header.find(quoted);
  if (at == std::string_view::npos) return {};
  size_t colon = header.find(':', at + quoted.size());
  if (colon == std::string_view::npos) return {};
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string_view::npos) return {};
  if (header[start] == '\'') {
    size_t end = header.find('\'', start + 1);
    return end == std::string_view::npos ? std::string() : std::string(header.substr(start + 1, end - start - 1));
  }
  if (header[start] == '(') {
    size_t end = header.find(')', start);
    return end == std::string_view::npos ? std::string() : std::string(header.substr(start, end - start + 1));
  }
  size_t end = header.find_first_of(",}", start);
  return std::string(header.substr(start, end - start));
}

}  // namespace

std::string npyDescriptor(const std::string& dtype) {
  static const std::map<std::string, std::string> kDescriptors = {
      {"f32", "<f4"}, {"f64", "<f8"}, {"f16", "<f2"}, {"bf16", "<V2"}, {"s8", "|i1"},  {"s16", "<i2"},  {"s32", "<i4"},
      {"s64", "<i8"}, {"u8", "|u1"},  {"u16", "<u2"}, {"u32", "<u4"},  {"u64", "<u8"}, {"pred", "|b1"},
  };
  auto it = kDescriptors.find(dtype);
  return it == kDescriptors.end() ? std::string() : it->second;
}

StatusOr<std::string> encodeNpy(const std::string& dtype, const std::vector<int64_t>& dims, std::string_view data) {
  std::string descriptor = npyDescriptor(dtype);
  if (descriptor.empty()) return Status::error("npy: unknown dtype \"" + dtype + "\"");
  int64_t elements = 1;
  for (int64_t d : dims) elements *= d;
  if (static_cast<int64_t>(data.size()) != elements * dtypeBytes(dtype)) {
    return Status::error("npy: " + std::to_string(data.size()) + " bytes for " + std::to_string(elements) + " " +
                         dtype + " elements");
  }
  std::string header = "{'descr': '" + descriptor + "', 'fortran_order': False, 'shape': " + shapeText(dims) + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n' is padded to a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(data);
  return out;
}

StatusOr<NpyArray> decodeNpy(std::string_view bytes, const std::string& name) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view(kMagic, 6)) {
    return Status::error(name + ": error: not a .npy file (bad magic)");
  }
  auto major = static_cast<unsigned char>(bytes[6]);
  size_t headerLength = 0;
  size_t offset = 0;
  if (major == 1) {
    headerLength =
        static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Status::error(name + ": error: truncated .npy header");
    for (int i = 3; i >= 0; --i) headerLength = (headerLength << 8) | static_cast<unsigned char>(bytes[8 + i]);
    offset = 12;
  } else {
    return Status::error(name + ": error: unsupported .npy version " + std::to_string(major));
  }
  if (offset + headerLength > bytes.size()) return Status::error(name + ": error: truncated .npy header");
  std::string_view header = bytes.substr(offset, headerLength);
  NpyArray array;
  array.descriptor = headerValue(header, "descr");
  if (array.descriptor.empty()) return Status::error(name + ": error: .npy header has no descr");
  if (headerValue(header, "fortran_order") != "False") {
    return Status::error(name + ": error: Fortran-order .npy files are not supported");
  }
  std::string shape = headerValue(header, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') {
    return Status::error(name + ": error: .npy header has no shape");
  }
  std::string inner = shape.substr(1, shape.size() - 2);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string item = inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t first = item.find_first_not_of(' ');
    if (first != std::string::npos) {
      try {
        array.dims.push_back(std::stoll(item.substr(first)));
      } catch (...) {
        return Status::error(name + ": error: bad .npy shape " + shape);
      }
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  array.data.assign(bytes.substr(offset + headerLength));
  return array;
}

}  // namespace fusionscope::profiler::gpu
