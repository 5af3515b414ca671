#include "viewer/time_overlay.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
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

void countLinked(KernelTimes& times) {
  for (const std::vector<double>* list : {&times.nodeNs, &times.clusterNs}) {
    for (double ns : *list) {
      times.maxNs = std::max(times.maxNs, ns);
      times.linked += ns >= 0 ? 1 : 0;
    }
  }
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
  countLinked(times);
  return times;
}

KernelTimes sourceLineTimes(const GraphModel& graph, const std::unordered_map<std::string, double>& lineNs) {
  KernelTimes times;
  times.nodeNs.assign(graph.nodes.size(), -1);
  times.clusterNs.assign(graph.clusters.size(), -1);
  auto lineOf = [&](const std::string& name) {
    auto found = lineNs.find(name);
    return found == lineNs.end() ? -1.0 : found->second;
  };
  // A fusion's hottest member line (the fusion itself when it is attributed as one operation).
  auto hottest = [&](const core::HloInstruction* fusion, const std::string& name) {
    double ns = lineOf(name);
    if (fusion != nullptr && fusion->fusedComputation() != nullptr) {
      for (const auto& member : fusion->fusedComputation()->instructions()) ns = std::max(ns, lineOf(member->name()));
    }
    return ns;
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    if (node.kind == GraphNode::Kind::kInstruction) times.nodeNs[i] = lineOf(node.name);
    if (node.kind == GraphNode::Kind::kCollapsedFusion) times.nodeNs[i] = hottest(node.instruction, node.name);
  }
  for (const auto& [name, group] : graph.heldBy) {
    double& ns = times.nodeNs[static_cast<size_t>(group)];
    ns = std::max(ns, lineOf(name));
  }
  for (size_t c = 0; c < graph.clusters.size(); ++c) {
    times.clusterNs[c] = hottest(graph.clusters[c].fusion, graph.clusters[c].fusionName);
  }
  countLinked(times);
  return times;
}

double kernelTimeFraction(double ns, double maxNs) {
  if (ns <= 0 || maxNs <= 0) return 0;
  // Four decades below the largest map to 0: a 1000× shorter kernel is as pale as it gets.
  double decades = std::log10(maxNs / std::max(ns, 1.0));
  return std::clamp(1.0 - decades / 4.0, 0.0, 1.0);
}

}  // namespace fusionscope::viewer
