#include "viewer/pipeline_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>

namespace fusionscope::viewer {
namespace {

QString joinNames(const std::vector<std::string>& names) {
  QStringList list;
  for (const std::string& name : names) list << QString::fromStdString(name);
  return list.join(QStringLiteral(", "));
}

std::vector<std::string> splitNames(const QString& text) {
  std::vector<std::string> names;
  for (const QString& part : text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
    names.push_back(part.toStdString());
  }
  return names;
}

}  // namespace

PipelineDialog::PipelineDialog(const core::PipelineSpec& spec, QWidget* parent) : QDialog(parent) {
  setWindowTitle(QStringLiteral("Pipeline"));
  auto* form = new QFormLayout(this);
  m_preset = new QComboBox(this);
  for (const std::string& name : core::presetNames()) m_preset->addItem(QString::fromStdString(name));
  if (m_preset->findText(QStringLiteral("none")) < 0) m_preset->addItem(QStringLiteral("none"));
  m_preset->setCurrentText(QString::fromStdString(spec.preset));
  m_passes = new QLineEdit(joinNames(spec.passes), this);
  m_passes->setPlaceholderText(QStringLiteral("explicit pass list, e.g. inline, fusion, dce (overrides the preset)"));
  m_disabled = new QLineEdit(joinNames(spec.disabled), this);
  m_disabled->setPlaceholderText(QStringLiteral("passes to skip"));
  QStringList known;
  for (const core::PassInfo& info : core::registeredPasses()) known << QString::fromStdString(info.name);
  auto* help = new QLabel(QStringLiteral("Passes: ") + known.join(QStringLiteral(", ")), this);
  help->setWordWrap(true);
  form->addRow(QStringLiteral("Preset"), m_preset);
  form->addRow(QStringLiteral("Passes"), m_passes);
  form->addRow(QStringLiteral("Disabled"), m_disabled);
  form->addRow(help);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(QStringLiteral("Run"));
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

core::PipelineSpec PipelineDialog::spec() const {
  core::PipelineSpec spec;
  spec.preset = m_preset->currentText().toStdString();
  spec.passes = splitNames(m_passes->text());
  spec.disabled = splitNames(m_disabled->text());
  return spec;
}

}  // namespace fusionscope::viewer
