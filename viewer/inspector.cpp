#include "viewer/inspector.h"

#include <QEvent>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTextBlock>
#include <QTextBrowser>
#include <QUrl>
#include <QUrlQuery>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_instruction.h"
#include "core/ir/shape.h"
#include "core/text/hlo_printer.h"

namespace fusionscope::viewer {
namespace {

QString html(const std::string& text) {
  return QString::fromStdString(text).toHtmlEscaped();
}

QString bytesText(int64_t bytes) {
  if (bytes < 0) return QStringLiteral("-");
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? QStringLiteral("%1 B").arg(bytes)
                   : QStringLiteral("%1 %2 (%3 B)").arg(value, 0, 'f', 1).arg(kUnits[unit]).arg(bytes);
}

QString link(const core::HloInstruction& inst) {
  QUrl url;
  url.setScheme(QStringLiteral("inst"));
  QUrlQuery query;
  query.addQueryItem(QStringLiteral("c"), QString::fromStdString(inst.parent() ? inst.parent()->name() : ""));
  query.addQueryItem(QStringLiteral("n"), QString::fromStdString(inst.name()));
  url.setQuery(query);
  return QStringLiteral("<a href=\"%1\">%2</a> <span class=\"dim\">%3</span>")
      .arg(url.toString(QUrl::FullyEncoded).toHtmlEscaped(), html(inst.name()), html(std::string(inst.opcodeString())));
}

QString linkList(const std::vector<core::HloInstruction*>& list) {
  if (list.empty()) return QStringLiteral("<i>none</i>");
  QStringList items;
  for (const core::HloInstruction* inst : list) items << link(*inst);
  return items.join(QStringLiteral("<br/>"));
}

QString decisionRow(const core::FusionDecision& decision) {
  QString mark = decision.fused ? QStringLiteral("<b class=\"fused\">fused</b>")
                                : QStringLiteral("<b class=\"notfused\">not fused</b>");
  return QStringLiteral("<li>%1 [%2] %3 → %4: %5</li>")
      .arg(mark, html(decision.pass), html(decision.producer), html(decision.consumer), html(decision.reason));
}

}  // namespace

Inspector::Inspector(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  m_title = new QLabel(this);
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont titleFont = m_title->font();
  titleFont.setBold(true);
  m_title->setFont(titleFont);
  layout->addWidget(m_title);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  m_details = new QTextBrowser(splitter);
  m_details->setOpenLinks(false);
  m_details->setObjectName(QStringLiteral("inspectorDetails"));
  m_module = new QPlainTextEdit(splitter);
  m_module->setReadOnly(true);
  m_module->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_module->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_module->setObjectName(QStringLiteral("inspectorModule"));
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  layout->addWidget(splitter);
  applyPalette();
  connect(m_details, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() != QStringLiteral("inst")) return;
    QUrlQuery query(url);
    emit instructionActivated(query.queryItemValue(QStringLiteral("c"), QUrl::FullyDecoded),
                              query.queryItemValue(QStringLiteral("n"), QUrl::FullyDecoded));
  });
  clear();
}

void Inspector::clear() {
  m_title->setText(QStringLiteral("Nothing selected"));
  setDetails(QStringLiteral("<p class=\"dim\">Click a node to inspect it.</p>"));
  m_module->clear();
  m_shownModule = nullptr;
  m_keepAlive.reset();
  m_moduleTexts.clear();
  m_highlightedLine.clear();
  m_highlightName.clear();
}

void Inspector::setModuleText(const StageEntry* stage) {
  const core::HloModule* module = stage != nullptr ? stage->module.get() : nullptr;
  if (module == m_shownModule) return;
  m_shownModule = module;
  m_keepAlive = stage != nullptr ? stage->module : nullptr;
  m_highlightedLine.clear();
  m_highlightName.clear();
  if (module == nullptr && stage != nullptr && !stage->loadError.empty()) {
    m_module->setPlainText(QString::fromStdString(stage->loadError));
    return;
  }
  if (module == nullptr) {
    m_module->setPlainText(stage != nullptr && !stage->dotText.empty()
                               ? QStringLiteral("(no module text for this stage: it was read from %1)")
                                     .arg(QString::fromStdString(stage->dotSource))
                               : QString());
    return;
  }
  auto it = m_moduleTexts.find(module);
  if (it == m_moduleTexts.end()) {
    // Only the current document's texts are kept; a handful of stages' text is a few MB at most.
    if (m_moduleTexts.size() > 16) m_moduleTexts.clear();
    it = m_moduleTexts.emplace(module, QString::fromStdString(core::printModule(*module))).first;
  }
  m_module->setPlainText(it->second);
}

void Inspector::showStage(const StageEntry* stage) {
  m_highlightedLine.clear();
  if (stage == nullptr) {
    clear();
    return;
  }
  setModuleText(stage);
  m_module->setExtraSelections({});
  m_highlightName.clear();
  m_title->setText(QStringLiteral("Stage %1").arg(stage->index));
  QString text = QStringLiteral("<p><b>%1</b></p>").arg(html(stage->label));
  if (!stage->loadError.empty()) {
    text += QStringLiteral("<p><b>This stage's file could not be read</b>; the other stages are shown as read, "
                           "and the next stage is compared with the last one that was.</p><p>%1</p>")
                .arg(html(stage->loadError));
    setDetails(text);
    return;
  }
  text += QStringLiteral("<p>%1 instructions outside fusions (%2 with the fusions' bodies), %3 fusions</p>")
              .arg(stage->unfusedInstructionCount)
              .arg(stage->instructionCount)
              .arg(stage->fusionCount);
  if (stage->index > 0 && stage->changed) {
    text += QStringLiteral("<p>%1 added, %2 removed, %3 fused into fusions (%4%5 instructions outside fusions)</p>")
                .arg(stage->changes.added.size())
                .arg(stage->changes.removed.size())
                .arg(stage->changes.fused.size())
                .arg(stage->unfusedDelta >= 0 ? "+" : "")
                .arg(stage->unfusedDelta);
  }
  if (!stage->decisions.empty()) {
    int fused = 0;
    for (const auto& decision : stage->decisions) fused += decision.fused ? 1 : 0;
    text += QStringLiteral("<p>%1 fusion decisions (%2 fused)</p>").arg(stage->decisions.size()).arg(fused);
  }
  setDetails(text);
}

void Inspector::showDotNode(const std::vector<std::string>& lines) {
  m_title->setText(lines.empty() ? QStringLiteral("node") : QString::fromStdString(lines.front()));
  QString text;
  for (const std::string& line : lines) text += html(line) + QStringLiteral("<br/>");
  text += QStringLiteral("<p class=\"dim\">This stage has only a DOT graph: no HLO details.</p>");
  setDetails(text);
  m_highlightedLine.clear();
}

void Inspector::showGroup(const StageEntry& stage, const std::string& scope,
                          const std::vector<const core::HloInstruction*>& members) {
  setModuleText(&stage);
  m_title->setText(QString::fromStdString(scope));
  std::map<std::string, int> opcodes;
  int64_t bytes = 0;
  int fusions = 0;
  for (const core::HloInstruction* inst : members) {
    ++opcodes[std::string(inst->opcodeString())];
    bytes += inst->shape().byteSize();
    fusions += inst->isFusion() ? 1 : 0;
  }
  std::vector<std::pair<int, std::string>> byCount;
  for (const auto& [opcode, count] : opcodes) byCount.emplace_back(count, opcode);
  std::sort(byCount.begin(), byCount.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  QString text = QStringLiteral("<p><b>Scope group</b> %1<br/>%2 instructions of the entry computation (%3 fusions), "
                                "outputs %4</p><p><b>Opcodes</b> ")
                     .arg(html(scope))
                     .arg(members.size())
                     .arg(fusions)
                     .arg(bytesText(bytes));
  for (size_t i = 0; i < byCount.size() && i < 12; ++i) {
    text += QStringLiteral("%1%2 ×%3").arg(i == 0 ? QString() : QStringLiteral(", "), html(byCount[i].second))
                .arg(byCount[i].first);
  }
  if (byCount.size() > 12) text += QStringLiteral(", …");
  text += QStringLiteral("</p><p><b>Largest outputs</b><br/>");
  std::vector<const core::HloInstruction*> largest = members;
  std::sort(largest.begin(), largest.end(), [](const core::HloInstruction* a, const core::HloInstruction* b) {
    return a->shape().byteSize() > b->shape().byteSize();
  });
  for (size_t i = 0; i < largest.size() && i < 8; ++i) {
    text += link(*largest[i]) + QStringLiteral(" %1<br/>").arg(html(largest[i]->shape().toString(false)));
  }
  text += QStringLiteral("</p><p class=\"dim\">Expand the group (E or double-click) to see its instructions.</p>");
  setDetails(text);
  m_highlightedLine.clear();
}

void Inspector::showInstruction(const StageEntry& stage, const core::HloInstruction& inst) {
  setModuleText(&stage);
  const std::string computation = inst.parent() != nullptr ? inst.parent()->name() : std::string();
  m_title->setText(QString::fromStdString(inst.name()));
  QString text;
  text += QStringLiteral("<p><b>%1</b> · %2 · in <i>%3</i>%4</p>")
              .arg(html(inst.name()), html(std::string(inst.opcodeString())), html(computation),
                   inst.isRoot() ? QStringLiteral(" · ROOT") : QString());
  text += QStringLiteral("<pre style=\"white-space:pre-wrap\">%1</pre>").arg(html(core::printInstruction(inst)));
  const core::Shape& shape = inst.shape();
  text += QStringLiteral("<p><b>Shape</b> %1<br/><b>Bytes</b> %2</p>")
              .arg(html(shape.toString(true)), bytesText(shape.byteSize()));
  text += QStringLiteral("<p><b>Operands (%1)</b><br/>%2</p>").arg(inst.operandCount()).arg(linkList(inst.operands()));
  text += QStringLiteral("<p><b>Users (%1)</b><br/>%2</p>").arg(inst.users().size()).arg(linkList(inst.users()));
  if (const core::OpMetadata* metadata = inst.metadata(); metadata != nullptr && !metadata->empty()) {
    text += QStringLiteral("<p><b>Metadata</b><br/>");
    if (!metadata->opType.empty()) text += QStringLiteral("op_type: %1<br/>").arg(html(metadata->opType));
    if (!metadata->opName.empty()) text += QStringLiteral("op_name: %1<br/>").arg(html(metadata->opName));
    const core::HloModule* module = inst.parent() != nullptr ? inst.parent()->parent() : nullptr;
    if (std::optional<core::SourceLocation> source = module ? module->sourceLocation(*metadata) : std::nullopt) {
      text += QStringLiteral("source: %1<br/>").arg(html(source->toString()));
      // The callers, innermost first (XLA's stack-frame index), when the module has one.
      std::optional<int64_t> frame = core::stackFrameId(*metadata);
      std::vector<core::SourceLocation> stack =
          frame ? module->stackFrames().stack(*frame) : std::vector<core::SourceLocation>();
      for (size_t i = 1; i < stack.size(); ++i)
        text += QStringLiteral("&nbsp;&nbsp;called from %1<br/>").arg(html(stack[i].toString()));
    }
    if (!metadata->extra.empty()) text += html(metadata->extra);
    text += QStringLiteral("</p>");
  }
  if (const core::HloComputation* fused = inst.fusedComputation()) {
    text += QStringLiteral("<p><b>Fusion</b> %1, calls <i>%2</i></p>")
                .arg(html(std::string(core::fusionKindName(inst.fusionKind()))), html(fused->name()));
    std::vector<core::HloInstruction*> members;
    for (const auto& owned : fused->instructions()) {
      if (owned->opcode() != core::HloOpcode::kParameter) members.push_back(owned.get());
    }
    text += QStringLiteral("<p><b>Members (%1)</b><br/>%2</p>").arg(members.size()).arg(linkList(members));
  }
  // The pipeline's reasons: why this fusion was made, or why this instruction was (not) fused into a consumer.
  QString reasons;
  for (const core::FusionDecision& decision : stage.decisions) {
    if (decision.computation != computation && !decision.computation.empty()) continue;
    if (decision.fusion == inst.name() || decision.producer == inst.name() || decision.consumer == inst.name()) {
      reasons += decisionRow(decision);
    }
  }
  if (!reasons.isEmpty()) {
    text += QStringLiteral("<p><b>Decisions of pass %1</b></p><ul>%2</ul>").arg(html(stage.pass), reasons);
  } else if (inst.isFusion()) {
    text += QStringLiteral(
        "<p class=\"dim\">No decision about it was recorded by the pass that produced this "
        "stage.</p>");
  }
  setDetails(text);
  highlight(computation, inst.name());
}

void Inspector::highlight(const std::string& computation, const std::string& name) {
  QTextDocument* document = m_module->document();
  QString headerEntry = QStringLiteral("ENTRY %") + QString::fromStdString(computation) + QLatin1Char(' ');
  QString header = QLatin1Char('%') + QString::fromStdString(computation) + QLatin1Char(' ');
  QTextCursor start = document->find(headerEntry);
  if (start.isNull()) start = document->find(header);
  QString needle = QLatin1Char('%') + QString::fromStdString(name) + QStringLiteral(" = ");
  QTextCursor found = document->find(needle, start.isNull() ? QTextCursor(document) : start);
  m_highlightedLine.clear();
  m_highlightComputation = computation;
  m_highlightName = name;
  if (found.isNull()) {
    m_module->setExtraSelections({});
    return;
  }
  QTextEdit::ExtraSelection selection;
  selection.format.setBackground(palette().color(QPalette::Highlight));
  selection.format.setForeground(palette().color(QPalette::HighlightedText));
  selection.format.setProperty(QTextFormat::FullWidthSelection, true);
  selection.cursor = QTextCursor(found.block());
  selection.cursor.clearSelection();
  m_module->setExtraSelections({selection});
  m_highlightedLine = found.block().text().trimmed();
  QTextCursor visible(found.block());
  m_module->setTextCursor(visible);
  m_module->centerCursor();
}

QString Inspector::detailsText() const {
  return m_title->text() + QLatin1Char('\n') + m_details->toPlainText();
}

QString Inspector::highlightedModuleLine() const {
  return m_highlightedLine;
}

void Inspector::appendSection(const QString& html) {
  m_detailsHtml += html;
  m_details->append(html);
}

void Inspector::setDetails(const QString& html) {
  m_detailsHtml = html;
  m_details->setHtml(html);
}

void Inspector::applyPalette() {
  // Links, decisions and the highlighted module line take the palette's colours, so they read in a dark palette
  // too. Qt resolves <a> colours when the HTML is parsed: set the sheet and parse the shown HTML again.
  const QPalette palette = this->palette();  // the children get the new palette after this widget
  const bool dark = palette.color(QPalette::Base).lightness() < 128;
  m_details->document()->setDefaultStyleSheet(
      QStringLiteral("a { color: %1; } .fused { color: %2; } .notfused { color: %3; } .dim { color: %4; }")
          .arg(palette.color(QPalette::Link).name(), dark ? QStringLiteral("#81c784") : QStringLiteral("#2e7d32"),
               dark ? QStringLiteral("#ef9a9a") : QStringLiteral("#c62828"),
               palette.color(QPalette::Disabled, QPalette::Text).name()));
  m_details->setHtml(m_detailsHtml);
  if (!m_highlightName.empty()) highlight(m_highlightComputation, m_highlightName);
}

void Inspector::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) applyPalette();
}

}  // namespace fusionscope::viewer
