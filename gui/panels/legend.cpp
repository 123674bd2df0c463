#include "gui/panels/legend.h"

#include <QPainter>

#include "gui/categories.h"

namespace replisim::gui {

Legend::Legend(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

QSize Legend::sizeHint() const {
  return {900, const_cast<Legend*>(this)->layout_items(900, false)};
}

int Legend::heightForWidth(int width) const {
  return const_cast<Legend*>(this)->layout_items(width, false);
}

int Legend::layout_items(int width, bool paint) {
  QPainter painter;
  if (paint) painter.begin(this);
  const QFontMetrics metrics(font());
  const int row_height = metrics.height() + 6;
  int x = 6, y = 3;
  for (int c = 0; c < kCategoryCount; ++c) {
    const QString name = category_name(Category(c));
    const int item = 14 + 5 + metrics.horizontalAdvance(name) + 16;
    if (x + item > width && x > 6) {
      x = 6;
      y += row_height;
    }
    if (paint) {
      painter.fillRect(QRect(x, y + (row_height - 12) / 2, 14, 12), category_brush(Category(c)));
      painter.setPen(palette().color(QPalette::WindowText));
      painter.drawText(QRect(x + 19, y, item, row_height), Qt::AlignVCenter | Qt::AlignLeft, name);
    }
    x += item;
  }
  return y + row_height + 3;
}

void Legend::paintEvent(QPaintEvent*) {
  layout_items(width(), true);
}

}  // namespace replisim::gui
