#include "core/graphviz/graphviz_renderer.h"

// gvc.h pulls in cgraph.h and types.h; the latter defines the ND_/ED_/GD_ accessors for layout results.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <graphviz/gvc.h>

namespace fusionscope::graphviz {
namespace {

// Graphviz gives node sizes in inches and every coordinate in points.
constexpr double kPointsPerInch = 72.0;

// Guards every Graphviz call and all state below: cgraph's parser, gvc's context and the error hook are
// process-wide globals inside Graphviz.
std::mutex& graphvizMutex() {
  static std::mutex mutex;
  return mutex;
}

// What Graphviz reported through agerr() during one API call. Graphviz hands a message to the error hook in
// pieces: "Error" or "Warning", then ": ", then the formatted text; continuation lines (AGPREV) arrive as text
// only and belong to the message before them.
class MessageLog {
 public:
  void add(std::string_view piece) {
    if (piece == "Error" || piece == "Warning") {
      m_messages.push_back({piece == "Error", std::string()});
      m_expectSeparator = true;
      return;
    }
    if (m_expectSeparator && piece == ": ") {
      m_expectSeparator = false;
      return;
    }
    m_expectSeparator = false;
    if (m_messages.empty()) m_messages.push_back({false, std::string()});
    m_messages.back().text += piece;
  }

  bool hasErrors() const {
    for (const Message& message : m_messages) {
      if (message.isError) return true;
    }
    return false;
  }

  // All error messages, each prefixed with the source name. Parser messages say "... in line N ..." about the
  // DOT text; those become "source:N: ...". Messages from later stages (e.g. an HTML-like label's own parser)
  // count lines inside the label, so they keep their wording and only get the "source: " prefix.
  std::string errorText(std::string_view sourceName, bool linesAreSourceLines) const {
    std::string result;
    for (const Message& message : m_messages) {
      if (!message.isError) continue;
      if (!result.empty()) result += "; ";
      result += formatMessage(sourceName, message.text, linesAreSourceLines);
    }
    return result;
  }

  void clear() {
    m_messages.clear();
    m_expectSeparator = false;
  }

 private:
  struct Message {
    bool isError = false;
    std::string text;
  };

  static std::string formatMessage(std::string_view sourceName, std::string text, bool linesAreSourceLines) {
    for (char& c : text) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();

    std::string prefix(sourceName);
    static constexpr std::string_view kLineMarker = " in line ";
    const size_t marker = text.find(kLineMarker);
    if (linesAreSourceLines && marker != std::string::npos) {
      size_t end = marker + kLineMarker.size();
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      if (end > marker + kLineMarker.size()) {
        prefix += ':';
        prefix.append(text, marker + kLineMarker.size(), end - marker - kLineMarker.size());
        text.erase(marker, end - marker);
      }
    }
    return prefix + ": " + text;
  }

  std::vector<Message> m_messages;
  bool m_expectSeparator = false;
};

// The log of the call that holds the mutex; Graphviz's hook has no user-data pointer.
MessageLog* activeLog = nullptr;

int onGraphvizMessage(char* text) {
  if (activeLog != nullptr && text != nullptr) activeLog->add(text);
  return 0;
}

// Points Graphviz's error hook at `log` for the lifetime of the object. Requires the mutex.
class ScopedMessageCapture {
 public:
  explicit ScopedMessageCapture(MessageLog& log) {
    activeLog = &log;
    agreseterrors();
  }
  ~ScopedMessageCapture() { activeLog = nullptr; }
  ScopedMessageCapture(const ScopedMessageCapture&) = delete;
  ScopedMessageCapture& operator=(const ScopedMessageCapture&) = delete;
};

// The gvc context, created on first use and kept for the life of the process (gvFreeContext at exit would race
// with threads still rendering, and the plugin config is loaded only once). Requires the mutex and an active
// ScopedMessageCapture, so warnings about the plugin config are captured too.
GVC_t* contextLocked() {
  static GVC_t* context = [] {
    // Install the hook before anything else in Graphviz can print; with it set, agerr() never writes stderr.
    agseterrf(&onGraphvizMessage);
    return gvContext();
  }();
  return context;
}

Status errorStatus(std::string_view sourceName, const std::string& detail) {
  return Status::error(std::string(sourceName) + ": " + detail);
}

std::string attributeOf(void* object, const char* name, bool* isHtml) {
  // agget takes char* but does not modify the name.
  const char* value = agget(object, const_cast<char*>(name));
  if (value == nullptr) return std::string();
  if (isHtml != nullptr) *isHtml = aghtmlstr(const_cast<char*>(value)) != 0;
  return value;
}

PointF toPoint(const pointf& p) {
  return PointF{p.x, p.y};
}

// DOT text as a cgraph input channel. We read through agread with this instead of agmemread because
// agmemread's channel lives on its stack and hands the text out a line at a time: text after the graph's last
// line is silently dropped, and what is left of that line stays in the lexer for the next, unrelated parse.
struct TextReader {
  std::string_view text;
  size_t position = 0;
};

int readText(void* channel, char* buffer, int size) {
  auto* reader = static_cast<TextReader*>(channel);
  if (size <= 0 || reader->position >= reader->text.size()) return 0;
  const size_t count = std::min(static_cast<size_t>(size), reader->text.size() - reader->position);
  std::memcpy(buffer, reader->text.data() + reader->position, count);
  reader->position += count;
  return static_cast<int>(count);
}

// cgraph keeps a pointer to the io discipline in every graph it reads, so both live for the process.
Agdisc_t& textDiscipline() {
  static Agiodisc_t io = {&readText, AgIoDisc.putstr, AgIoDisc.flush};
  static Agdisc_t discipline = {&AgMemDisc, &AgIdDisc, &io};
  return discipline;
}

// One parsed graph and, once laid out, its layout; both are released in the destructor. Requires the mutex for
// its whole lifetime.
class Graph {
 public:
  Graph(GVC_t* context, MessageLog& log, std::string_view sourceName)
      : m_context(context), m_log(log), m_sourceName(sourceName) {}
  ~Graph() {
    if (m_laidOut) gvFreeLayout(m_context, m_graph);
    if (m_graph != nullptr) agclose(m_graph);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Agraph_t* get() const { return m_graph; }

  Status parse(std::string_view dot) {
    if (dot.find('\0') != std::string_view::npos) {
      return errorStatus(m_sourceName, "DOT text contains a NUL byte");
    }
    m_log.clear();
    // No file name: the parser then says "syntax error in line N", which we rewrite as "source:N: ...". This
    // also restarts the parser's line counter, which reading alone does not.
    agsetfile(nullptr);
    TextReader reader{dot};
    m_graph = agread(&reader, &textDiscipline());
    if (m_graph == nullptr) {
      std::string message = m_log.errorText(m_sourceName, /*linesAreSourceLines=*/true);
      drain(reader);
      m_log.clear();
      if (message.empty()) return errorStatus(m_sourceName, "no graph found in DOT text");
      return Status::error(std::move(message));
    }
    if (m_log.hasErrors()) {
      drain(reader);
      return Status::error(m_log.errorText(m_sourceName, true));
    }
    // Whatever follows the first graph must be read too: it is how we notice text after the graph, and cgraph's
    // lexer would otherwise hand what it already buffered to the next parse.
    const int extraGraphs = drain(reader);
    if (m_log.hasErrors()) return Status::error(m_log.errorText(m_sourceName, true));
    if (extraGraphs > 0) {
      return errorStatus(m_sourceName, "expected one graph, found " + std::to_string(extraGraphs + 1));
    }
    return okStatus();
  }

  Status layout(const char* engine = "dot") {
    m_log.clear();
    if (const int nodes = agnnodes(m_graph); nodes > kMaxLayoutNodes) {
      return errorStatus(
          m_sourceName, fmt::format("the graph has {} nodes, more than the {} Graphviz can lay out safely; draw a part "
                                    "of it (the viewer's neighbourhood view, or a smaller module)",
                                    nodes, kMaxLayoutNodes));
    }
    // gvLayout lets a `layout=...` graph attribute override the engine it is given; the API promises `engine`.
    if (agattr(m_graph, AGRAPH, const_cast<char*>("layout"), nullptr) != nullptr) {
      agset(m_graph, const_cast<char*>("layout"), const_cast<char*>(engine));
    }
    if (gvLayout(m_context, m_graph, engine) != 0) {
      const std::string detail = m_log.errorText(m_sourceName, false);
      return detail.empty() ? errorStatus(m_sourceName, fmt::format("Graphviz '{}' layout failed", engine))
                            : Status::error(detail);
    }
    m_laidOut = true;
    if (m_log.hasErrors()) return Status::error(m_log.errorText(m_sourceName, false));
    return okStatus();
  }

 private:
  // Parses and discards the rest of the input (what the lexer buffered, then the unread text) until the parser
  // reports end of input. Returns the number of graphs found there; syntax errors land in the log.
  static int drain(TextReader& reader) {
    int graphs = 0;
    while (Agraph_t* extra = agread(&reader, &textDiscipline())) {
      agclose(extra);
      ++graphs;
    }
    return graphs;
  }

  GVC_t* m_context;
  MessageLog& m_log;
  std::string_view m_sourceName;
  Agraph_t* m_graph = nullptr;
  bool m_laidOut = false;
};

const char* formatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng: return "png";
    case ImageFormat::kSvg: return "svg";
  }
  return "png";
}

// A 3k-instruction training graph lays out at ~150k x 35k points; as a bitmap at 96 dpi that is beyond
// what cairo can allocate, and a 16k x 13k PNG (BERT) is beyond what image viewers open with default limits.
// Such a PNG is an overview anyway (the SVG keeps full detail), so the drawing is scaled down (Graphviz's
// `size`) until its longest side is at most kMaxPngPixels and its area at most kMaxPngArea.
constexpr double kMaxPngPixels = 16000;
constexpr double kMaxPngArea = 40e6;

void limitBitmapSize(Agraph_t* graph) {
  const boxf& box = GD_bb(graph);
  const double dpi = 96.0;
  double widthPx = (box.UR.x - box.LL.x) * dpi / 72.0;
  double heightPx = (box.UR.y - box.LL.y) * dpi / 72.0;
  double scale = std::min(
      {1.0, kMaxPngPixels / std::max(widthPx, heightPx), std::sqrt(kMaxPngArea / std::max(1.0, widthPx * heightPx))});
  if (scale >= 1.0) return;
  // The layout already read the `size` attribute into the drawing record, so that is where the limit goes.
  GD_drawing(graph)->size.x = widthPx * scale * 72.0 / dpi;
  GD_drawing(graph)->size.y = heightPx * scale * 72.0 / dpi;
}

// renderDot without taking the mutex; the caller holds it.
// Lays `dot` out once and renders it in each of `formats` (in that order of the result), without taking the
// mutex; the caller holds it. PNG goes last because capping its size changes the drawing record.
StatusOr<std::vector<std::string>> renderLocked(std::string_view dot, const std::vector<ImageFormat>& formats,
                                                std::string_view sourceName) {
  MessageLog log;
  ScopedMessageCapture capture(log);
  GVC_t* context = contextLocked();
  if (context == nullptr) return errorStatus(sourceName, "could not create the Graphviz context");

  Graph graph(context, log, sourceName);
  FS_RETURN_IF_ERROR(graph.parse(dot));
  FS_RETURN_IF_ERROR(graph.layout());

  std::vector<size_t> order(formats.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return formats[i] != ImageFormat::kPng; });
  std::vector<std::string> images(formats.size());
  for (size_t i : order) {
    ImageFormat format = formats[i];
    if (format == ImageFormat::kPng) limitBitmapSize(graph.get());
    log.clear();
    char* data = nullptr;
    unsigned int length = 0;
    const int rc = gvRenderData(context, graph.get(), formatName(format), &data, &length);
    std::string& bytes = images[i];
    if (data != nullptr) {
      if (rc == 0) bytes.assign(data, length);
      gvFreeRenderData(data);
    }
    if (rc != 0 || log.hasErrors()) {
      const std::string detail = log.errorText(sourceName, false);
      if (!detail.empty()) return Status::error(detail);
      return errorStatus(sourceName, std::string("Graphviz could not render ") + formatName(format));
    }
    if (bytes.empty()) {
      return errorStatus(sourceName, std::string("Graphviz rendered an empty ") + formatName(format));
    }
  }
  return images;
}

StatusOr<std::string> renderLocked(std::string_view dot, ImageFormat format, std::string_view sourceName) {
  StatusOr<std::vector<std::string>> images = renderLocked(dot, std::vector<ImageFormat>{format}, sourceName);
  if (!images.ok()) return images.status();
  return std::move(images->front());
}

void collectClusters(Agraph_t* graph, std::vector<ClusterLayout>& clusters) {
  // dot records the clusters it laid out in GD_clust (1-based); a cluster nested in a plain subgraph is listed
  // under the nearest enclosing cluster (or the root), so walking GD_clust finds every cluster exactly once.
  for (int i = 1; i <= GD_n_cluster(graph); ++i) {
    Agraph_t* cluster = GD_clust(graph)[i];
    ClusterLayout layout;
    layout.name = agnameof(cluster);
    layout.label = attributeOf(cluster, "label", &layout.labelIsHtml);
    const boxf& box = GD_bb(cluster);
    layout.lowerLeft = toPoint(box.LL);
    layout.upperRight = toPoint(box.UR);
    clusters.push_back(std::move(layout));
    collectClusters(cluster, clusters);
  }
}

EdgeLayout edgeLayoutOf(Agedge_t* edge) {
  EdgeLayout layout;
  layout.tail = agnameof(agtail(edge));
  layout.head = agnameof(aghead(edge));
  layout.label = attributeOf(edge, "label", &layout.labelIsHtml);
  const splines* spl = ED_spl(edge);  // null when the graph says splines=false/none
  if (spl != nullptr && spl->size > 0 && spl->list != nullptr) {
    const bezier& first = spl->list[0];
    layout.controlPoints.reserve(static_cast<size_t>(first.size));
    for (int i = 0; i < first.size; ++i) layout.controlPoints.push_back(toPoint(first.list[i]));
    // With several beziers (e.g. concentrate=true) the head end is on the last one.
    const bezier& last = spl->list[spl->size - 1];
    layout.hasArrowHead = last.eflag != 0;
    if (layout.hasArrowHead) layout.arrowHead = toPoint(last.ep);
    layout.hasArrowTail = first.sflag != 0;
    if (layout.hasArrowTail) layout.arrowTail = toPoint(first.sp);
  }
  return layout;
}

}  // namespace

StatusOr<std::vector<std::string>> renderDot(std::string_view dot, const std::vector<ImageFormat>& formats,
                                             std::string_view sourceName) {
  std::lock_guard<std::mutex> lock(graphvizMutex());
  return renderLocked(dot, formats, sourceName);
}

StatusOr<std::string> renderDot(std::string_view dot, ImageFormat format, std::string_view sourceName) {
  std::lock_guard<std::mutex> lock(graphvizMutex());
  return renderLocked(dot, format, sourceName);
}

StatusOr<GraphLayout> layoutDot(std::string_view dot, std::string_view sourceName, LayoutEngine engine) {
  std::lock_guard<std::mutex> lock(graphvizMutex());
  MessageLog log;
  ScopedMessageCapture capture(log);
  GVC_t* context = contextLocked();
  if (context == nullptr) return errorStatus(sourceName, "could not create the Graphviz context");

  Graph graph(context, log, sourceName);
  FS_RETURN_IF_ERROR(graph.parse(dot));
  const bool pinned = engine == LayoutEngine::kPinned;
  if (pinned) {
    // nop2 reads every node's `pos` and would place a node without one at the origin, on top of others.
    for (Agnode_t* node = agfstnode(graph.get()); node != nullptr; node = agnxtnode(graph.get(), node)) {
      if (attributeOf(node, "pos", nullptr).empty()) {
        return errorStatus(sourceName, fmt::format("node '{}' has no pos for the pinned layout", agnameof(node)));
      }
    }
  }
  FS_RETURN_IF_ERROR(graph.layout(pinned ? "nop2" : "dot"));

  Agraph_t* root = graph.get();
  GraphLayout result;
  result.lowerLeft = toPoint(GD_bb(root).LL);
  result.upperRight = toPoint(GD_bb(root).UR);
  result.nodes.reserve(static_cast<size_t>(agnnodes(root)));
  result.edges.reserve(static_cast<size_t>(agnedges(root)));
  for (Agnode_t* node = agfstnode(root); node != nullptr; node = agnxtnode(root, node)) {
    NodeLayout layout;
    layout.name = agnameof(node);
    layout.label = attributeOf(node, "label", &layout.labelIsHtml);
    layout.fillColor = attributeOf(node, "fillcolor", nullptr);
    layout.color = attributeOf(node, "color", nullptr);
    layout.fontColor = attributeOf(node, "fontcolor", nullptr);
    layout.center = toPoint(ND_coord(node));
    layout.width = ND_width(node) * kPointsPerInch;
    layout.height = ND_height(node) * kPointsPerInch;
    result.nodes.push_back(std::move(layout));
    for (Agedge_t* edge = agfstout(root, node); edge != nullptr; edge = agnxtout(root, edge)) {
      result.edges.push_back(edgeLayoutOf(edge));
    }
  }
  if (!pinned) collectClusters(root, result.clusters);
  return result;
}

bool renderersAvailable() {
  std::lock_guard<std::mutex> lock(graphvizMutex());
  static std::optional<bool> available;
  if (!available.has_value()) {
    static constexpr std::string_view kProbe = "digraph probe { a -> b }";
    available = renderLocked(kProbe, ImageFormat::kPng, "<probe>").ok() &&
                renderLocked(kProbe, ImageFormat::kSvg, "<probe>").ok();
  }
  return *available;
}

}  // namespace fusionscope::graphviz
