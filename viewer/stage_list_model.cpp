#include "viewer/stage_list_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>

namespace fusionscope::viewer {

StageListModel::StageListModel(QObject* parent) : QAbstractTableModel(parent) {}

void StageListModel::setDocument(std::shared_ptr<const Document> document) {
  beginResetModel();
  m_document = std::move(document);
  endResetModel();
}

int StageListModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_document) return 0;
  return static_cast<int>(m_document->stages.size());
}

int StageListModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant StageListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !m_document) {
    return {};
  }
  const StageEntry& stage = m_document->stages[static_cast<size_t>(index.row())];
  if (role == kStageRole) return index.row();
  if (role == kChangedRole) return stage.changed;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case kIndex: return stage.index;
      case kPass: {
        // XLA dumps the start of every sub-pipeline as "pipeline-start" (41 of a JAX step's 104 stages): name the
        // pipeline instead, which its label starts with ("simplification: pipeline start, before algsimp").
        const size_t colon = stage.label.find(':');
        if (stage.pass == "pipeline-start" && colon != std::string::npos && colon > 0) {
          return QString::fromStdString(stage.label.substr(0, colon)) + QStringLiteral(" (start)");
        }
        return stage.pass.empty() ? QString::fromStdString(stage.label) : QString::fromStdString(stage.pass);
      }
      case kInstructions: return QVariant::fromValue<qlonglong>(stage.unfusedInstructionCount);
      case kFusions: return QVariant::fromValue<qlonglong>(stage.fusionCount);
      case kChanged: {
        if (!stage.loadError.empty()) return QStringLiteral("unreadable");
        if (stage.index == 0) return QString();
        if (!stage.changed) return QStringLiteral("·");
        qlonglong delta = stage.unfusedDelta;
        return delta == 0 ? QStringLiteral("●") : QStringLiteral("● %1%2").arg(delta > 0 ? "+" : "").arg(delta);
      }
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    QString tip = QString::fromStdString(stage.label);
    if (!stage.loadError.empty()) return tip + QStringLiteral("\n") + QString::fromStdString(stage.loadError);
    if (stage.index > 0) {
      tip += QStringLiteral("\n%1 added, %2 removed, %3 fused")
                 .arg(stage.changes.added.size())
                 .arg(stage.changes.removed.size())
                 .arg(stage.changes.fused.size());
      if (!stage.changed) tip += QStringLiteral("\nno node added, removed or fused");
    }
    return tip;
  }
  if (role == Qt::TextAlignmentRole && index.column() != kPass) {
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role == Qt::ForegroundRole && index.column() == kChanged && !stage.loadError.empty())
    return QBrush(QColor(QRgb(0xd50000)));
  if (role == Qt::ForegroundRole && index.column() == kChanged && stage.changed) return QBrush(QColor(QRgb(0x2962ff)));
  return {};
}

QVariant StageListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && (section == kInstructions || section == kChanged))
    return QStringLiteral(
        "Instructions outside fusion bodies (the operations that run on their own): a fusion pass "
        "lowers it");
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case kIndex: return QStringLiteral("#");
    case kPass: return QStringLiteral("Pass");
    case kInstructions: return QStringLiteral("Instr.");
    case kFusions: return QStringLiteral("Fusions");
    case kChanged: return QStringLiteral("Changed");
    default: return {};
  }
}

StageFilterModel::StageFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {}

void StageFilterModel::setHideUnchanged(bool hide) {
  m_hideUnchanged = hide;
  invalidateFilter();
}

void StageFilterModel::setFilterText(const QString& text) {
  m_text = text.trimmed();
  invalidateFilter();
}

bool StageFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  QModelIndex index = sourceModel()->index(sourceRow, StageListModel::kIndex, sourceParent);
  if (sourceRow == 0) return true;
  if (m_hideUnchanged && !index.data(StageListModel::kChangedRole).toBool()) return false;
  if (m_text.isEmpty()) return true;
  QString pass = sourceModel()->index(sourceRow, StageListModel::kPass, sourceParent).data().toString();
  QString label = index.data(Qt::ToolTipRole).toString();
  return pass.contains(m_text, Qt::CaseInsensitive) || label.contains(m_text, Qt::CaseInsensitive);
}

}  // namespace fusionscope::viewer
