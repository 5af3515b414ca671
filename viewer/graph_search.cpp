#include "viewer/graph_search.h"

#include <QApplication>
#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMainWindow>
#include <QRegularExpression>
#include <QShortcut>
#include <QStringList>
#include <QToolBar>
#include <algorithm>
#include <functional>
#include <set>

#include "core/ir/hlo_computation.h"
#include "viewer/document.h"
#include "viewer/graph_model.h"
#include "viewer/graph_scene.h"
#include "viewer/graph_view.h"
#include "core/dot/scope_groups.h"

namespace fusionscope::viewer {

GraphSearch::GraphSearch(QMainWindow* window, GraphScene* scene, GraphView* view, QDockWidget* below,
                         std::function<Context()> context)
    : QObject(window), m_scene(scene), m_view(view), m_context(std::move(context)) {
  m_bar = new QToolBar(QStringLiteral("Search"), window);
  m_bar->setObjectName(QStringLiteral("searchBar"));
  m_edit = new QLineEdit(m_bar);
  m_edit->setPlaceholderText(QStringLiteral("name or opcode (Enter: next, Shift+Enter: previous)"));
  m_edit->setClearButtonEnabled(true);
  m_edit->setMinimumWidth(320);
  m_regex = new QCheckBox(QStringLiteral("Regex"), m_bar);
  m_status = new QLabel(m_bar);
  m_bar->addWidget(new QLabel(QStringLiteral(" Find: "), m_bar));
  m_bar->addWidget(m_edit);
  m_bar->addWidget(m_regex);
  m_bar->addAction(QStringLiteral("▲"), this, &GraphSearch::previous)->setToolTip("Previous (Shift+F3)");
  m_bar->addAction(QStringLiteral("▼"), this, &GraphSearch::next)->setToolTip("Next (F3)");
  m_bar->addWidget(m_status);
  m_bar->addAction(QStringLiteral("✕"), this, &GraphSearch::close)->setToolTip("Close search (Esc)");
  new QShortcut(QKeySequence(Qt::Key_Escape), m_bar, this, &GraphSearch::close, Qt::WidgetWithChildrenShortcut);
  window->addToolBar(Qt::TopToolBarArea, m_bar);
  m_bar->hide();
  connect(m_edit, &QLineEdit::textChanged, this, [this](const QString& text) { search(text, m_regex->isChecked()); });
  connect(m_regex, &QCheckBox::toggled, this, [this](bool regex) { search(m_edit->text(), regex); });
  connect(m_edit, &QLineEdit::returnPressed, this,
          [this] { QApplication::keyboardModifiers() & Qt::ShiftModifier ? previous() : next(); });

  // The results: every matching instruction and where it is, a click shows it.
  m_dock = new QDockWidget(QStringLiteral("Search Results"), window);
  m_dock->setObjectName(QStringLiteral("searchResultsDock"));
  m_list = new QListWidget(m_dock);
  m_list->setUniformItemSizes(true);
  m_dock->setWidget(m_list);
  window->addDockWidget(Qt::LeftDockWidgetArea, m_dock);
  if (below != nullptr) window->splitDockWidget(below, m_dock, Qt::Vertical);
  m_dock->hide();
  connect(m_list, &QListWidget::currentRowChanged, this, [this](int row) {
    if (!m_filling && row >= 0) chooseResult(row);
  });
}

void GraphSearch::open() {
  m_bar->show();
  m_edit->setFocus();
  m_edit->selectAll();
  // Closing hid the outlines; the text is kept for the next search.
  if (!m_edit->text().isEmpty()) findMatches(m_edit->text(), m_regex->isChecked());
}

void GraphSearch::close() {
  m_bar->hide();
  m_dock->hide();
  m_matches.clear();
  m_clusterMatches.clear();
  m_results.clear();
  m_cursor = -1;
  m_scene->setMatches({});
  m_view->setFocus();
}

bool GraphSearch::isOpen() const {
  return m_bar->isVisible();
}

int GraphSearch::search(const QString& pattern, bool regex) {
  const int count = findMatches(pattern, regex);
  if (count > 0) next();
  return count;
}

void GraphSearch::refresh(int selectedNode) {
  if (!m_bar->isVisible() || m_edit->text().isEmpty()) return;
  findMatches(m_edit->text(), m_regex->isChecked());
  auto at = std::find(m_matches.begin(), m_matches.end(), selectedNode);
  m_cursor = selectedNode >= 0 && at != m_matches.end() ? static_cast<int>(at - m_matches.begin()) : -1;
  markCurrentResult();
}

void GraphSearch::highlight(std::vector<int> nodes) {
  m_matches = std::move(nodes);
  m_clusterMatches.clear();
  m_results.clear();
  m_cursor = m_matches.empty() ? -1 : 0;
  m_scene->setMatches(m_matches);
  fillResults();  // the last search's rows no longer say what is outlined
}

void GraphSearch::reset() {
  m_matches.clear();
  m_clusterMatches.clear();
  m_results.clear();
  m_cursor = -1;
  fillResults();
}

int GraphSearch::findMatches(const QString& pattern, bool regex) {
  m_matches.clear();
  m_clusterMatches.clear();
  m_results.clear();
  m_cursor = -1;
  const GraphModel* graph = m_scene->graph();
  if (graph == nullptr || pattern.isEmpty()) {
    m_scene->setMatches({});
    m_status->setText(QString());
    fillResults();
    return 0;
  }
  QRegularExpression expression(regex ? pattern : QRegularExpression::escape(pattern),
                                QRegularExpression::CaseInsensitiveOption);
  if (!expression.isValid()) {
    m_scene->setMatches({});
    m_status->setText(QStringLiteral(" bad regex: %1").arg(expression.errorString()));
    fillResults();
    return 0;
  }
  auto matchesText = [&](const std::string& text) { return expression.match(QString::fromStdString(text)).hasMatch(); };
  auto matches = [&](const core::HloInstruction& inst) {
    return matchesText(inst.name()) || matchesText(std::string(inst.opcodeString()));
  };
  // Instructions inside a collapsed fusion match through the fusion's node (any depth of nesting); each is a row.
  std::function<void(const core::HloComputation&, const std::string&, int)> collect =
      [&](const core::HloComputation& computation, const std::string& fusion, int node) {
        for (const auto& inst : computation.instructions()) {
          if (inst->opcode() == core::HloOpcode::kParameter) continue;
          if (matches(*inst))
            m_results.push_back({inst->name(), std::string(inst->opcodeString()), "in collapsed fusion " + fusion, node});
          if (inst->isFusion() && inst->fusedComputation() != nullptr) collect(*inst->fusedComputation(), fusion, node);
        }
      };
  int insideFusions = 0;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const GraphNode& node = graph->nodes[i];
    const int index = static_cast<int>(i);
    if (node.kind == GraphNode::Kind::kStub && node.opcode.empty()) continue;  // "from NAME" stubs
    if (matchesText(node.name) || (!node.opcode.empty() && matchesText(node.opcode))) {
      m_matches.push_back(index);
      m_results.push_back({node.name, node.opcode, node.kind == GraphNode::Kind::kGroup ? "scope group" : "", index});
    } else if (node.kind == GraphNode::Kind::kCollapsedFusion && node.instruction != nullptr &&
               node.instruction->fusedComputation() != nullptr) {
      const size_t before = m_results.size();
      collect(*node.instruction->fusedComputation(), node.name, index);
      if (m_results.size() > before) {
        m_matches.push_back(index);
        ++insideFusions;
      }
    }
  }
  // Expanded fusions and groups match by their name (their members are nodes, matched above).
  for (size_t c = 0; c < graph->clusters.size(); ++c) {
    const GraphCluster& cluster = graph->clusters[c];
    const std::string& name = cluster.group.empty() ? cluster.fusionName : cluster.group;
    if (!matchesText(name)) continue;
    m_clusterMatches.push_back(static_cast<int>(c));
    m_results.push_back({name, "", cluster.group.empty() ? "expanded fusion" : "expanded group", -1,
                         static_cast<int>(c)});
  }
  // Instructions hidden in collapsed scope groups match through the group that draws them.
  int hidden = 0;
  const Context context = m_context();
  const StageEntry* stage = context.stage;
  if (context.options != nullptr && context.options->groupScopes && stage != nullptr && stage->module &&
      stage->module->entry() != nullptr) {
    const core::ScopeTree tree = core::buildScopeTree(*stage->module->entry(), context.reference);
    std::set<int> groupNodes;
    for (const auto& inst : stage->module->entry()->instructions()) {
      if (inst == nullptr || graph->findNode(inst->name()) >= 0) continue;
      const int group = tree.representative(inst.get(), context.options->expandedGroups);
      const int node = group >= 0 ? graph->findGroup(tree.groups[static_cast<size_t>(group)].path) : -1;
      if (node < 0) continue;
      const std::string where = "in collapsed group " + graph->nodes[static_cast<size_t>(node)].lines.front();
      const size_t before = m_results.size();
      if (matches(*inst)) m_results.push_back({inst->name(), std::string(inst->opcodeString()), where, node});
      // What a fusion the group hides holds (any depth of nesting).
      if (inst->isFusion() && inst->fusedComputation() != nullptr) {
        const size_t inside = m_results.size();
        collect(*inst->fusedComputation(), inst->name(), node);
        for (size_t r = inside; r < m_results.size(); ++r) m_results[r].where += ", " + where;
      }
      if (m_results.size() == before) continue;
      hidden += static_cast<int>(m_results.size() - before);
      if (std::find(m_matches.begin(), m_matches.end(), node) == m_matches.end()) groupNodes.insert(node);
    }
    m_matches.insert(m_matches.end(), groupNodes.begin(), groupNodes.end());
  }
  m_scene->setMatches(m_matches);
  const int total = static_cast<int>(m_matches.size() + m_clusterMatches.size());
  QStringList where;
  if (insideFusions > 0) where << QStringLiteral("%1 collapsed fusions holding one").arg(insideFusions);
  if (!m_clusterMatches.empty()) where << QStringLiteral("%1 fusion or group boxes").arg(m_clusterMatches.size());
  if (hidden > 0) where << QStringLiteral("%1 inside collapsed groups").arg(hidden);
  m_status->setText(where.isEmpty()
                        ? QStringLiteral(" %1 matches").arg(total)
                        : QStringLiteral(" %1 matches (%2)").arg(total).arg(where.join(QStringLiteral(", "))));
  fillResults();
  return total;
}

void GraphSearch::fillResults() {
  m_filling = true;
  m_list->clear();
  const size_t shown = std::min(m_results.size(), kMaxSearchResults);
  for (size_t i = 0; i < shown; ++i) {
    const SearchResult& result = m_results[i];
    QString row = QString::fromStdString(result.name);
    if (!result.opcode.empty() && result.opcode != result.name)
      row += QStringLiteral("  ") + QString::fromStdString(result.opcode);
    if (!result.where.empty()) row += QStringLiteral("  — ") + QString::fromStdString(result.where);
    auto* item = new QListWidgetItem(row, m_list);
    item->setToolTip(row);  // the dock is narrow: the whole row on hover
  }
  if (m_results.size() > shown)
    m_list->addItem(QStringLiteral("… %1 more (narrow the search)").arg(m_results.size() - shown));
  m_filling = false;
  m_dock->setVisible(m_bar->isVisible() && !m_results.empty());
}

void GraphSearch::chooseResult(int row) {
  if (row < 0 || static_cast<size_t>(row) >= std::min(m_results.size(), kMaxSearchResults)) return;
  const SearchResult& result = m_results[static_cast<size_t>(row)];
  if (result.node >= 0) {
    auto at = std::find(m_matches.begin(), m_matches.end(), result.node);
    if (at != m_matches.end()) m_cursor = static_cast<int>(at - m_matches.begin());
    emit nodeChosen(result.node);
  } else if (result.cluster >= 0) {
    auto at = std::find(m_clusterMatches.begin(), m_clusterMatches.end(), result.cluster);
    if (at != m_clusterMatches.end()) m_cursor = static_cast<int>(m_matches.size() + (at - m_clusterMatches.begin()));
    emit clusterChosen(result.cluster);
  }
  const int total = static_cast<int>(m_matches.size() + m_clusterMatches.size());
  m_status->setText(QStringLiteral(" %1 of %2").arg(m_cursor + 1).arg(total));
}

void GraphSearch::markCurrentResult() {
  // The first row of the match the cursor is on, without choosing it again.
  const int nodes = static_cast<int>(m_matches.size());
  int row = -1;
  for (size_t i = 0; i < std::min(m_results.size(), kMaxSearchResults) && m_cursor >= 0; ++i) {
    const SearchResult& result = m_results[i];
    if ((m_cursor < nodes && result.node == m_matches[static_cast<size_t>(m_cursor)]) ||
        (m_cursor >= nodes && result.cluster == m_clusterMatches[static_cast<size_t>(m_cursor - nodes)])) {
      row = static_cast<int>(i);
      break;
    }
  }
  m_filling = true;
  m_list->setCurrentRow(row);
  m_filling = false;
}

void GraphSearch::showMatch() {
  const int nodes = static_cast<int>(m_matches.size());
  const int total = nodes + static_cast<int>(m_clusterMatches.size());
  if (m_cursor < nodes) {
    emit nodeChosen(m_matches[static_cast<size_t>(m_cursor)]);
  } else {
    emit clusterChosen(m_clusterMatches[static_cast<size_t>(m_cursor - nodes)]);
  }
  markCurrentResult();
  m_status->setText(QStringLiteral(" %1 of %2").arg(m_cursor + 1).arg(total));
}

void GraphSearch::next() {
  const int total = static_cast<int>(m_matches.size() + m_clusterMatches.size());
  if (total == 0) return;
  m_cursor = (m_cursor + 1) % total;
  showMatch();
}

void GraphSearch::previous() {
  const int total = static_cast<int>(m_matches.size() + m_clusterMatches.size());
  if (total == 0) return;
  m_cursor = m_cursor <= 0 ? total - 1 : m_cursor - 1;
  showMatch();
}

}  // namespace fusionscope::viewer
