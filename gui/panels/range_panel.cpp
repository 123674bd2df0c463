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

const char* const kHint = "Shift+drag (or drag on the ruler) to select a time range.";

QString seconds(double s) {
  return QString::fromStdString(core::format_quantity(s, core::Dimension::kTime));
}

}  // namespace

RangePanel::RangePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  summary_ = new QLabel(kHint, this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(0, 7, this);
  table_->setHorizontalHeaderLabels({"kind", "actor", "count", "in range", "mean", "max", "run"});
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
  show_ranges({{"", model, from_s, until_s}});
}

// The window's metrics of one run, as lines of HTML.
QString RangePanel::window_summary(const RangeRun& run) {
  QString text = run.name.isEmpty() ? QString() : "<b>" + run.name + "</b> ";
  text += QString::fromStdString(run.model->title()).toHtmlEscaped() +
          QString("<br><b>%1 – %2</b> (%3)")
              .arg(seconds(run.from_s), seconds(run.until_s), seconds(run.until_s - run.from_s));
  try {
    const core::RunMetrics m = core::compute_window_metrics(run.model->trace(), run.from_s,
                                                            run.until_s, run.model->source());
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
  return text;
}

void RangePanel::show_ranges(const std::vector<RangeRun>& runs) {
  table_->setRowCount(0);
  QStringList summaries;
  for (const RangeRun& run : runs) {
    if (run.model == nullptr || !(run.until_s > run.from_s)) continue;
    summaries << window_summary(run);
    const std::vector<RangeStatistic> rows = run.model->range_statistics(run.from_s, run.until_s);
    for (const RangeStatistic& s : rows) {
      const int r = table_->rowCount();
      table_->insertRow(r);
      auto* kind = new QTableWidgetItem(category_name(s.category));
      kind->setData(Qt::DecorationRole, category_colour(s.category));
      table_->setItem(r, 0, kind);
      table_->setItem(r, 1, new QTableWidgetItem(QString::fromStdString(s.actor)));
      table_->setItem(r, 2, new QTableWidgetItem(QString::number(s.count)));
      table_->setItem(r, 3, new QTableWidgetItem(seconds(s.total_s)));
      table_->setItem(r, 4, new QTableWidgetItem(seconds(s.mean_s)));
      table_->setItem(r, 5, new QTableWidgetItem(seconds(s.max_s)));
      table_->setItem(r, 6, new QTableWidgetItem(run.name));
    }
  }
  table_->setColumnHidden(6, runs.size() < 2);
  summary_->setText(summaries.isEmpty() ? kHint : summaries.join("<br>"));
}

}  // namespace replisim::gui
