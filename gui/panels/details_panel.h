// The details of the selected span: every field of its event, named and with units.
#pragma once

#include <QTextBrowser>

#include "gui/timeline_model.h"

namespace replisim::gui {

class DetailsPanel : public QTextBrowser {
  Q_OBJECT

 public:
  explicit DetailsPanel(QWidget* parent = nullptr);
  // Shows slice `slice` of `model`'s layout (-1 or a null model: nothing selected).
  void show_slice(const TimelineModel* model, int slice);
};

}  // namespace replisim::gui
