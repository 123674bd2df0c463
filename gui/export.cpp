#include "gui/export.h"

#include <QFile>
#include <QFileInfo>
#include <QPainter>
#include <QSvgGenerator>
#include <QWidget>

#include "core/base/error.h"
#include "gui/timeline_view.h"

namespace replisim::gui {

namespace {

void paint_stacked(QPainter& painter, const std::vector<const TimelineView*>& views, QSize size) {
  for (size_t i = 0; i < views.size(); ++i) {
    painter.save();
    painter.translate(0, double(i) * size.height());
    painter.setClipRect(QRect(QPoint(0, 0), size));
    views[i]->render_to(painter, size);
    painter.restore();
  }
}

// Writes through a temporary name, then renames, so no half-written file is left behind.
template <typename Write>
void write_atomically(const QString& path, Write write) {
  const QString temporary = path + ".part";
  if (!write(temporary)) {
    QFile::remove(temporary);
    throw core::OutputError(path.toStdString(), "the image could not be written");
  }
  QFile::remove(path);
  if (!QFile::rename(temporary, path)) {
    QFile::remove(temporary);
    throw core::OutputError(path.toStdString(), "could not rename the temporary file");
  }
}

}  // namespace

QImage render_timelines(const std::vector<const TimelineView*>& views, QSize size) {
  QImage image(size.width(), size.height() * int(views.size()), QImage::Format_RGB32);
  image.fill(Qt::white);
  QPainter painter(&image);
  paint_stacked(painter, views, size);
  return image;
}

void export_png(QWidget& widget, const QString& path) {
  const QImage image = widget.grab().toImage();
  write_atomically(path,
                   [&image](const QString& temporary) { return image.save(temporary, "PNG"); });
}

void export_svg(const std::vector<const TimelineView*>& views, QSize size, const QString& path) {
  write_atomically(path, [&](const QString& temporary) {
    QSvgGenerator svg;
    svg.setFileName(temporary);
    svg.setSize(QSize(size.width(), size.height() * int(views.size())));
    svg.setViewBox(QRect(0, 0, size.width(), size.height() * int(views.size())));
    svg.setTitle("replisim timeline");
    QPainter painter;
    if (!painter.begin(&svg)) return false;
    paint_stacked(painter, views, size);
    return painter.end() && QFileInfo(temporary).size() > 0;
  });
}

}  // namespace replisim::gui
