#pragma once

#include <QDialog>

#include "core/pipeline/pass_registry.h"

class QComboBox;
class QLineEdit;

namespace fusionscope::viewer {

// File > Pipeline…: a preset, an explicit pass list or passes to skip, with the registered pass names as help.
// Holds only its widgets; the spec it returns is not checked (core::buildPipeline does that).
class PipelineDialog : public QDialog {
  Q_OBJECT

 public:
  explicit PipelineDialog(const core::PipelineSpec& spec, QWidget* parent = nullptr);
  core::PipelineSpec spec() const;

 private:
  QComboBox* m_preset;
  QLineEdit* m_passes;
  QLineEdit* m_disabled;
};

}  // namespace fusionscope::viewer
