#pragma once

#include <string>
#include <vector>

namespace fusionscope::core {

struct AotArtifact;

// The C++ header of an ahead-of-time compiled module: the class `classPath` (namespaces, then the name) wrapping the
// object's entry function (docs/AOT.md). Uses only the C++ standard library; no exceptions.
std::string aotHeaderText(const AotArtifact& artifact, const std::vector<std::string>& classPath);

}  // namespace fusionscope::core
