#include "gui/compare_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>

#include "gui/panels/metrics_table.h"

namespace replisim::gui {

CompareView::CompareView(QWidget* parent)
    : QWidget(parent), axis_(new TimeAxis(this)), axis_b_(new TimeAxis(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel("Offset of B (ms):", this));
  offset_ = new QDoubleSpinBox(this);
  offset_->setRange(-1e9, 1e9);
  offset_->setDecimals(3);
  offset_->setToolTip("Where B's time 0 lies on the shared axis: aligns the runs");
  bar->addWidget(offset_);
  own_axes_ = new QCheckBox("own time axes", this);
  own_axes_->setObjectName("own_axes");
  own_axes_->setToolTip(
      "Each run on its own time axis, fitted to it; unchecked, both timelines zoom and pan "
      "together (F fits both)");
  bar->addWidget(own_axes_);
  bar->addStretch(1);
  runs_label_ = new QLabel(this);
  runs_label_->setObjectName("runs_label");
  runs_label_->setStyleSheet("font-weight: bold;");
  bar->addWidget(runs_label_);
  pairs_ = new QComboBox(this);
  pairs_->setObjectName("shown_pair");
  pairs_->setToolTip(
      "Which two runs the timelines show: the new pair, or one strategy before and "
      "after the change");
  pairs_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  pairs_->hide();
  bar->addWidget(pairs_);
  layout->addLayout(bar);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  a_ = new TimelineView(axis_, splitter);
  b_ = new TimelineView(axis_, splitter);
  table_ = new MetricsTable(splitter);
  splitter->addWidget(a_);
  splitter->addWidget(b_);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 4);
  splitter->setStretchFactor(1, 4);
  splitter->setStretchFactor(2, 2);
  layout->addWidget(splitter, 1);
  connect(offset_, &QDoubleSpinBox::valueChanged, this,
          [this](double ms) { b_->set_offset_s(ms * 1e-3); });
  connect(own_axes_, &QCheckBox::toggled, this, &CompareView::set_own_axes);
  connect(pairs_, &QComboBox::activated, this, &CompareView::show_pair);
}

void CompareView::set_models(std::shared_ptr<const TimelineModel> a,
                             std::shared_ptr<const TimelineModel> b) {
  before_.clear();
  after_.clear();
  runs_.clear();
  run_pairs_.clear();
  pairs_->clear();
  pairs_->hide();
  runs_label_->show();
  a_->set_model(std::move(a));
  b_->set_model(std::move(b));
  table_->set_models(a_->model().get(), b_->model().get());
  fit_all();
}

void CompareView::set_runs_label(const QString& text) {
  runs_label_->setText(text);
}

void CompareView::set_before_after(const ModelList& before, const ModelList& after,
                                   const QString& change) {
  before_ = before;
  after_ = after;
  runs_.clear();
  run_pairs_.clear();
  table_->set_before_after(before, after);
  pairs_->clear();
  QStringList strategies;
  for (const auto& run : after) strategies << QString::fromStdString(run->trace().meta.strategy);
  pairs_->addItem("A: " + strategies.join(" · B: ") + ", after " + change);
  for (size_t i = 0; i < std::min(before.size(), after.size()); ++i)
    pairs_->addItem(strategies[int(i)] + ": A before · B after " + change);
  pairs_->setCurrentIndex(0);
  runs_label_->hide();  // the choice names the runs
  pairs_->show();
}

int CompareView::pair_choices() const {
  return pairs_->count();
}

void CompareView::set_runs(const ModelList& runs) {
  if (runs.size() < 2) return;
  set_models(runs[0], runs[1]);
  if (runs.size() == 2) return;
  runs_ = runs;
  pairs_->clear();
  auto name = [](const std::shared_ptr<const TimelineModel>& run) {
    const std::string& strategy = run->trace().meta.strategy;
    return QString::fromStdString(strategy.empty() ? run->title() : strategy);
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = i + 1; j < runs.size(); ++j) {
      run_pairs_.emplace_back(i, j);
      pairs_->addItem("A: " + name(runs[i]) + " · B: " + name(runs[j]));
    }
  }
  pairs_->setCurrentIndex(0);
  runs_label_->hide();  // the choice names the runs
  pairs_->show();
}

void CompareView::show_pair(int choice) {
  if (choice < 0 || choice >= pairs_->count()) return;
  pairs_->setCurrentIndex(choice);
  if (!run_pairs_.empty()) {
    const auto [a, b] = run_pairs_[size_t(choice)];
    a_->set_model(runs_[a]);
    b_->set_model(runs_[b]);
    table_->set_models(runs_[a].get(), runs_[b].get());
    fit_all();
    emit runs_switched();
    return;
  }
  const bool after_pair = choice == 0;
  const size_t strategy = size_t(std::max(0, choice - 1));
  a_->set_model(after_pair ? after_[0] : before_[strategy]);
  b_->set_model(after_pair ? after_[1] : after_[strategy]);
  fit_all();
  emit runs_switched();
}

void CompareView::set_offset_s(double offset_s) {
  offset_->setValue(offset_s * 1e3);
}

double CompareView::offset_s() const {
  return b_->offset_s();
}

void CompareView::set_own_axes(bool own) {
  if (own_axes_->isChecked() != own) own_axes_->setChecked(own);  // toggles back to here
  if (own == own_axes()) return;
  b_->set_axis(own ? axis_b_ : axis_);
  fit_all();
}

void CompareView::fit_all() {
  if (own_axes()) {
    a_->fit_all();
    b_->fit_all();
    return;
  }
  double from = 0, until = 0;
  bool any = false;
  for (TimelineView* view : {a_, b_}) {
    if (!view->model()) continue;
    const double f = view->model()->begin_s() + view->offset_s();
    const double u = view->model()->end_s() + view->offset_s();
    from = any ? std::min(from, f) : f;
    until = any ? std::max(until, u) : u;
    any = true;
  }
  if (!any) return;
  const double pad = 0.01 * (until - from);
  axis_->set_range(from - pad, until + pad);
}

}  // namespace replisim::gui
