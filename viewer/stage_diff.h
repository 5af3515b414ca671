#pragma once

#include <set>
#include <vector>

#include "viewer/document.h"
#include "viewer/graph_model.h"
#include "viewer/graph_scene.h"

namespace fusionscope::viewer {

// What a stage changed, as items of its laid-out graph: the nodes it added, the fusion nodes and clusters it
// created or grew, and ghosts of the instructions it removed at their place in the previous stage's layout.
struct StageDiff {
  std::set<int> addedNodes;
  std::set<int> fusedNodes;
  std::set<int> fusedClusters;
  std::vector<GraphScene::Ghost> ghosts;
};

// Maps `stage`'s change lists (stages.json's names, `computation/name` outside the entry) onto `graph`; ghosts
// only when `previous` (the previous stage's layout) is given.
StageDiff stageDiff(const StageEntry& stage, const GraphModel& graph, const GraphModel* previous);

}  // namespace fusionscope::viewer
