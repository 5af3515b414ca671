#pragma once

#include <cstdint>
#include <vector>

namespace fusionscope::core {

// Permutations as a transpose's `dimensions` hold them: result dimension i is operand dimension permutation[i].

inline bool isIdentityPermutation(const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Where each operand dimension went: inverse[permutation[i]] = i.
inline std::vector<int64_t> inversePermutation(const std::vector<int64_t>& permutation) {
  std::vector<int64_t> inverse(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i) inverse[static_cast<size_t>(permutation[i])] = static_cast<int64_t>(i);
  return inverse;
}

}  // namespace fusionscope::core
