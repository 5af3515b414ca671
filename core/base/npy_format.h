#pragma once

// The NumPy .npy file format (versions 1.0, 2.0 and 3.0; C order, little-endian data) as descriptor strings and
// raw bytes: the one codec behind the CLI's arrays (core/io/npy.h maps descriptors to element types) and the
// standalone GPU runner (profiler/gpu/npy.h maps them to bundle dtypes). Standard library and the header-only
// status.h only, so the GPU runner can compile it without fs_base.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace fusionscope {

// A .npy file's contents: the dtype descriptor as written ("<f4", "|b1", "<V2"), the dimensions and the element
// bytes. Invariant after decodeNpyFile: data.size() == product(dims) * npyDescrBytes(descr).
struct NpyFile {
  std::string descr;
  std::vector<int64_t> dims;
  std::string data;
};

// The element size of a descriptor of the form [<|=>]KIND DIGITS ("<f4" -> 4); -1 when it is not of that form.
int npyDescrBytes(std::string_view descr);

// Parses the bytes of a .npy file; `name` labels errors, which read `NAME: error: WHAT`. Refused: bad magic or
// version, a header that is not NumPy's dict of 'descr', 'fortran_order' and 'shape', structured or big-endian
// dtypes, Fortran order, and data whose size does not match the header.
StatusOr<NpyFile> decodeNpyFile(std::string_view bytes, std::string_view name);

// The bytes NumPy's np.save writes for `file`: version 1.0 (2.0 when the header does not fit 1.0's 16-bit length),
// room for the first dimension to grow to 21 digits, the data aligned to 64 bytes.
StatusOr<std::string> encodeNpyFile(const NpyFile& file, std::string_view name);

}  // namespace fusionscope
