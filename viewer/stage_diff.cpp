#include "viewer/stage_diff.h"

#include <string>
#include <utility>

namespace fusionscope::viewer {
namespace {

// An instruction name from stages.json's change lists: `name` in the entry, `computation/name` elsewhere.
std::pair<std::string, std::string> splitQualified(const std::string& qualified) {
  size_t slash = qualified.find('/');
  if (slash == std::string::npos) return {std::string(), qualified};
  return {qualified.substr(0, slash), qualified.substr(slash + 1)};
}

}  // namespace

StageDiff stageDiff(const StageEntry& stage, const GraphModel& graph, const GraphModel* previous) {
  StageDiff diff;
  for (const std::string& qualified : stage.changes.added) {
    auto [computation, name] = splitQualified(qualified);
    int node = graph.findNode(name, computation);
    // Inside a collapsed scope group: the group shows that this pass changed something in it.
    if (node < 0 && computation.empty()) node = graph.findHoldingGroup(name);
    if (node >= 0) diff.addedNodes.insert(node);
    int cluster = graph.findCluster(name);
    if (cluster >= 0) diff.fusedClusters.insert(cluster);
  }
  for (const auto& fused : stage.changes.fused) {
    auto [computation, name] = splitQualified(fused.fusion);
    int node = graph.findNode(name, computation);
    if (node < 0 && computation.empty()) node = graph.findHoldingGroup(name);
    if (node >= 0) {
      diff.fusedNodes.insert(node);
      diff.addedNodes.erase(node);
    }
    int cluster = graph.findCluster(name);
    if (cluster >= 0) diff.fusedClusters.insert(cluster);
  }
  if (previous == nullptr) return diff;
  for (const std::string& qualified : stage.changes.removed) {
    auto [computation, name] = splitQualified(qualified);
    int node = previous->findNode(name, computation);
    if (node < 0) continue;
    const GraphNode& n = previous->nodes[static_cast<size_t>(node)];
    diff.ghosts.push_back({QRectF(n.x, n.y, n.width, n.height), QString::fromStdString(name)});
  }
  return diff;
}

}  // namespace fusionscope::viewer
