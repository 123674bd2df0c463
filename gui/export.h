// Exports of what the viewer shows: PNG (pixels of a widget, or of timelines rendered at a given
// size) and SVG (the timelines' painting as vectors, through QtSvg).
#pragma once

#include <QImage>
#include <QSize>
#include <QString>
#include <vector>

class QWidget;

namespace replisim::gui {

class TimelineView;

// `views` rendered one above the other at `size` each (the painting of TimelineView::render_to).
QImage render_timelines(const std::vector<const TimelineView*>& views, QSize size);

// Writes `widget` as it is on screen (QWidget::grab) to `path` as PNG. Throws core::OutputError
// when the file cannot be written.
void export_png(QWidget& widget, const QString& path);

// Writes `views` stacked, each `size`, to `path` as SVG. Throws core::OutputError as above.
void export_svg(const std::vector<const TimelineView*>& views, QSize size, const QString& path);

}  // namespace replisim::gui
