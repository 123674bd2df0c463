#include "gui/panels/range_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

#include "core/base/units.h"
#include "core/metrics/metrics.h"

namespace replisim::gui {

namespace {

QString seconds(double s) {
  return QString::fromStdString(core::format_quantity(s, core::Dimension::kTime));
}

}  // namespace

RangePanel::RangePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  summary_ = new QLabel("Shift+drag (or drag on the ruler) to select a time range.", this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(0, 6, this);
  table_->setHorizontalHeaderLabels({"kind", "actor", "count", "in range", "mean", "max"});
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setSortingEnabled(false);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);
}

QString RangePanel::metrics_text() const {
  return summary_->text();
}

void RangePanel::show_range(const TimelineModel* model, double from_s, double until_s) {
  table_->setRowCount(0);
  if (model == nullptr || !(until_s > from_s)) {
    summary_->setText("Shift+drag (or drag on the ruler) to select a time range.");
    return;
  }
  QString text = QString("<b>%1 – %2</b> (%3)")
                     .arg(seconds(from_s), seconds(until_s), seconds(until_s - from_s));
  try {
    const core::RunMetrics m =
        core::compute_window_metrics(model->trace(), from_s, until_s, model->source());
    text += QString("<br>throughput %1 samples/s, %2 updates")
                .arg(m.throughput_samples_per_s, 0, 'f', 1)
                .arg(m.updates_in_window);
    if (m.step_time_s.mean > 0) text += QString(", step time %1").arg(seconds(m.step_time_s.mean));
    text += QString("<br>bottleneck %1 (%2 % busy)")
                .arg(QString::fromStdString(m.bottleneck.name).toHtmlEscaped())
                .arg(int(std::lround(m.bottleneck.utilization * 100)));
  } catch (const std::exception& e) {
    text += "<br>(no metrics: " + QString(e.what()).toHtmlEscaped() + ")";
  }
  summary_->setText(text);
  const std::vector<RangeStatistic> rows = model->range_statistics(from_s, until_s);
  table_->setRowCount(int(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    const RangeStatistic& s = rows[r];
    auto* kind = new QTableWidgetItem(category_name(s.category));
    kind->setData(Qt::DecorationRole, category_colour(s.category));
    table_->setItem(int(r), 0, kind);
    table_->setItem(int(r), 1, new QTableWidgetItem(QString::fromStdString(s.actor)));
    table_->setItem(int(r), 2, new QTableWidgetItem(QString::number(s.count)));
    table_->setItem(int(r), 3, new QTableWidgetItem(seconds(s.total_s)));
    table_->setItem(int(r), 4, new QTableWidgetItem(seconds(s.mean_s)));
    table_->setItem(int(r), 5, new QTableWidgetItem(seconds(s.max_s)));
  }
}

}  // namespace replisim::gui
