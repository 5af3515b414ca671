#pragma once

#include <string>

#include "viewer/graph_model.h"

namespace fusionscope::viewer {

// What is selected in the graph: kept by identity (instruction, fusion or scope-group name, and its computation) so
// that it survives a relayout, a stage step and a change of view options, with where it is drawn in the graph shown.
struct Selection {
  // Where a selection is drawn in a graph: its node, else its box (an expanded fusion or group); both -1 when the
  // graph does not draw it.
  struct Place {
    int node = -1;
    int cluster = -1;
    bool drawn() const { return node >= 0 || cluster >= 0; }
  };

  int node = -1;            // the node selected in the graph shown; -1 for a box or nothing
  std::string name;         // instruction or fusion name, or a scope group's path
  std::string computation;  // the instruction's computation; empty for the entry (or a group)

  bool empty() const { return name.empty(); }
  void clear() { *this = Selection(); }
  // Selects by identity; the graph shown does not have it yet (a layout is coming).
  void setName(std::string selected, std::string inComputation = {}) {
    node = -1;
    name = std::move(selected);
    computation = std::move(inComputation);
  }

  // Where this selection is in `graph`: the instruction (in `computation`, or in `graph`'s entry when empty) or the
  // scope group of that name, else a fusion or group box of that name. With `holdingGroup`, an instruction a
  // collapsed group hides is found as that group (side by side: the other pane may group differently).
  Place placeIn(const GraphModel& graph, bool holdingGroup = false) const {
    Place place;
    if (name.empty()) return place;
    place.node = graph.findNode(name, computation);
    if (place.node < 0) place.node = graph.findGroup(name);
    if (place.node < 0 && holdingGroup) place.node = graph.findHoldingGroup(name);
    if (place.node >= 0) return place;
    place.cluster = graph.findCluster(name);
    if (place.cluster < 0) place.cluster = graph.findGroupCluster(name);
    return place;
  }
};

}  // namespace fusionscope::viewer
