// The colour legend of the timeline: a swatch and name per category, wrapped to the width.
#pragma once

#include <QWidget>

namespace replisim::gui {

class Legend : public QWidget {
  Q_OBJECT

 public:
  explicit Legend(QWidget* parent = nullptr);
  QSize sizeHint() const override;
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  int layout_items(int width, bool paint);  // the height the items need at `width`
};

}  // namespace replisim::gui
