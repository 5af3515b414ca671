#include "viewer/time_overlay.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "viewer/graph_model.h"
#include "viewer/timeline_model.h"

namespace fusionscope::viewer {
namespace {

double summedNs(const TimelineModel& trace, const std::string& instruction) {
  const std::vector<uint32_t> events = trace.eventsOfInstruction(instruction);
  if (events.empty()) return -1;
  double total = 0;
  for (uint32_t e : events) total += static_cast<double>(std::max<int64_t>(0, trace.trace().events[e].durNs));
  return total;
}

}  // namespace

KernelTimes kernelTimes(const GraphModel& graph, const TimelineModel& trace) {
  KernelTimes times;
  times.nodeNs.assign(graph.nodes.size(), -1);
  times.clusterNs.assign(graph.clusters.size(), -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    bool entryLevel = node.computation.empty() || node.computation == graph.entry;
    if ((node.kind == GraphNode::Kind::kInstruction || node.kind == GraphNode::Kind::kCollapsedFusion ||
         node.kind == GraphNode::Kind::kDotNode) &&
        entryLevel)
      times.nodeNs[i] = summedNs(trace, node.name);
  }
  for (const auto& [name, group] : graph.heldBy) {
    double ns = summedNs(trace, name);
    if (ns < 0) continue;
    double& total = times.nodeNs[static_cast<size_t>(group)];
    total = std::max(total, 0.0) + ns;
  }
  for (size_t c = 0; c < graph.clusters.size(); ++c) {
    if (graph.clusters[c].fusion != nullptr) times.clusterNs[c] = summedNs(trace, graph.clusters[c].fusionName);
  }
  for (double ns : times.nodeNs) {
    times.maxNs = std::max(times.maxNs, ns);
    times.linked += ns >= 0 ? 1 : 0;
  }
  for (double ns : times.clusterNs) {
    times.maxNs = std::max(times.maxNs, ns);
    times.linked += ns >= 0 ? 1 : 0;
  }
  return times;
}

double kernelTimeFraction(double ns, double maxNs) {
  if (ns <= 0 || maxNs <= 0) return 0;
  // Four decades below the largest map to 0: a 1000× shorter kernel is as pale as it gets.
  double decades = std::log10(maxNs / std::max(ns, 1.0));
  return std::clamp(1.0 - decades / 4.0, 0.0, 1.0);
}

}  // namespace fusionscope::viewer
