#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <memory>

#include "viewer/document.h"

namespace fusionscope::viewer {

// The stages of a Document as a table: index, pass, label, instruction and fusion counts, and whether the stage
// changed the graph. Read-only; reset when a new document is shown.
class StageListModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kIndex, kPass, kInstructions, kFusions, kChanged, kColumnCount };
  static constexpr int kStageRole = Qt::UserRole + 1;    // row → position in Document::stages
  static constexpr int kChangedRole = Qt::UserRole + 2;  // bool

  explicit StageListModel(QObject* parent = nullptr);

  void setDocument(std::shared_ptr<const Document> document);
  const Document* document() const { return m_document.get(); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const Document> m_document;
};

// Filters the stage list by a text (pass or label, case-insensitive) and optionally hides stages that changed
// no node. Stage 0 is always kept: it is the reference everything else is compared with.
class StageFilterModel : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit StageFilterModel(QObject* parent = nullptr);
  void setHideUnchanged(bool hide);
  bool hideUnchanged() const { return m_hideUnchanged; }
  void setFilterText(const QString& text);

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  bool m_hideUnchanged = false;
  QString m_text;
};

}  // namespace fusionscope::viewer
