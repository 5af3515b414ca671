#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace fusionscope::viewer {

class GraphModel;
class TimelineModel;

// Kernel time per drawn node and fusion box, from a linked trace (the time overlay: View → Colour by Kernel Time).
// A node's time is the summed duration of the trace's complete events that ran its instruction
// (TimelineModel::eventsOfInstruction: the `hlo_op` arg, else the kernel name); a collapsed scope group sums the
// entry instructions it holds; an expanded fusion's box gets its fusion's. -1 where nothing in the trace ran it.
struct KernelTimes {
  std::vector<double> nodeNs;
  std::vector<double> clusterNs;
  double maxNs = 0;  // the largest node or box time
  int linked = 0;    // nodes and boxes with a time
};

KernelTimes kernelTimes(const GraphModel& graph, const TimelineModel& trace);

// The same overlay coloured by source line (View → Colour by Source-Line Time): a node gets the time of the source
// line its instruction came from (`lineNs`: TimeAttributionPanel::sourceLineTimes, by instruction name), so every
// node of a hot line glows alike; a collapsed fusion and a fusion's box get their hottest member's line.
KernelTimes sourceLineTimes(const GraphModel& graph, const std::unordered_map<std::string, double>& lineNs);

// Where `ns` lies between 0 and `maxNs` on a logarithmic scale (kernel times span orders of magnitude), in [0, 1].
double kernelTimeFraction(double ns, double maxNs);

}  // namespace fusionscope::viewer
