#pragma once

#include <QWidget>
#include <memory>
#include <string>
#include <unordered_map>

#include "viewer/document.h"

class QTextBrowser;
class QPlainTextEdit;
class QLabel;

namespace fusionscope::viewer {

// The right-hand dock: what the selected instruction is (HLO text, shape and bytes, operands and users as links,
// metadata), for a fusion its kind, members and the pipeline's decision reasons, and below the stage's module
// text with the instruction's line highlighted. Holds no graph state: the window tells it what to show.
class Inspector : public QWidget {
  Q_OBJECT

 public:
  explicit Inspector(QWidget* parent = nullptr);

  void showStage(const StageEntry* stage);
  // `instruction` belongs to stage->module.
  void showInstruction(const StageEntry& stage, const core::HloInstruction& instruction);
  // A node of a DOT-only stage: only what its label says.
  void showDotNode(const std::vector<std::string>& lines);
  // A collapsed scope group: its scope, how many instructions of the stage it holds, their opcodes and output bytes,
  // and links to the largest members. `members` belong to stage.module.
  void showGroup(const StageEntry& stage, const std::string& scope,
                 const std::vector<const core::HloInstruction*>& members);
  void clear();
  // Adds a section (HTML) below what showInstruction wrote, e.g. the timeline's kernel timing.
  void appendSection(const QString& html);

  QString detailsText() const;
  QString highlightedModuleLine() const;

 signals:
  // A clicked operand/user/member link: the instruction `name` in `computation`.
  void instructionActivated(const QString& computation, const QString& name);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void setDetails(const QString& html);
  void applyPalette();
  void setModuleText(const StageEntry* stage);
  void highlight(const std::string& computation, const std::string& name);

  QLabel* m_title;
  QTextBrowser* m_details;
  QPlainTextEdit* m_module;
  const core::HloModule* m_shownModule = nullptr;
  std::unordered_map<const core::HloModule*, QString> m_moduleTexts;  // printed once per stage
  std::shared_ptr<const core::HloModule> m_keepAlive;
  QString m_highlightedLine;
  QString m_detailsHtml;               // what the details show, parsed again when the palette changes
  std::string m_highlightComputation;  // the highlighted module line's instruction, to recolour it
  std::string m_highlightName;
};

}  // namespace fusionscope::viewer
