// `run --save-reference`: the files a checker elsewhere (scripts/gpu-check) compares a GPU's results with.
#include "app/cli/reference_files.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/base/file_util.h"
#include "core/base/json_output.h"
#include "core/codegen/element_types.h"
#include "core/io/npy.h"

namespace fusionscope::cli {
namespace {

StatusOr<nlohmann::ordered_json> writeNpyEntry(const core::Value& value, const std::string& dir,
                                               const std::string& file) {
  StatusOr<std::vector<uint8_t>> bytes = core::valueToBytes(value);
  if (!bytes.ok()) return bytes.status();
  core::NpyArray array;
  array.type = value.shape().elementType();
  array.dims = value.shape().dimensions();
  array.bytes.assign(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  FS_RETURN_IF_ERROR(core::writeNpy((std::filesystem::path(dir) / file).string(), array));
  nlohmann::ordered_json entry;
  entry["dtype"] = std::string(core::primitiveTypeName(array.type));
  entry["dims"] = array.dims;
  entry["file"] = file;
  return entry;
}

}  // namespace

Status saveReference(const core::ExecutionPlan& plan, const std::vector<core::Value>& arguments,
                     const core::Value& expected, const core::ResultBounds& bounds, uint64_t seed,
                     const std::string& dir) {
  for (const char* sub : {"inputs", "expected"}) {
    FS_RETURN_IF_ERROR(makeDirectories((std::filesystem::path(dir) / sub).string()));
  }
  nlohmann::ordered_json j;
  j["schema"] = "fusionscope.reference/2";
  j["module"] = plan.module;
  j["seed"] = seed;
  j["bound_samples"] = bounds.samples;
  j["inputs"] = nlohmann::ordered_json::array();
  for (const core::PlanParameter& p : plan.parameters) {
    StatusOr<nlohmann::ordered_json> entry =
        writeNpyEntry(arguments[static_cast<size_t>(p.index)], dir, "inputs/" + p.name + ".npy");
    if (!entry.ok()) return Status::error("parameter " + p.name + ": " + entry.message());
    nlohmann::ordered_json e;
    e["index"] = p.index;
    e["name"] = p.name;
    e.update(*entry);
    j["inputs"].push_back(std::move(e));
  }
  j["outputs"] = nlohmann::ordered_json::array();
  const std::vector<const core::Value*> outputs = core::outputArrays(expected);
  if (outputs.size() != bounds.bounds.size()) return Status::error("the bounds do not match the outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    StatusOr<nlohmann::ordered_json> entry = writeNpyEntry(*outputs[i], dir, fmt::format("expected/output_{}.npy", i));
    if (!entry.ok()) return Status::error(fmt::format("output {}: {}", i, entry.message()));
    StatusOr<nlohmann::ordered_json> bound = writeNpyEntry(bounds.bounds[i], dir, fmt::format("expected/bound_{}.npy", i));
    if (!bound.ok()) return Status::error(fmt::format("output {} bounds: {}", i, bound.message()));
    nlohmann::ordered_json e;
    e["index"] = i;
    e["name"] = i < bounds.names.size() ? bounds.names[i] : fmt::format("output {}", i);
    e.update(*entry);
    e["bound_file"] = (*bound)["file"];
    j["outputs"].push_back(std::move(e));
  }
  return writeFileAtomic((std::filesystem::path(dir) / "reference.json").string(), jsonOutputText(j, 2) + "\n");
}

}  // namespace fusionscope::cli
