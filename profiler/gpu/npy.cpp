#include "profiler/gpu/npy.h"

#include <map>

namespace fusionscope::profiler::gpu {

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
  return encodeNpyFile(NpyFile{descriptor, dims, std::string(data)}, "npy");
}

}  // namespace fusionscope::profiler::gpu
