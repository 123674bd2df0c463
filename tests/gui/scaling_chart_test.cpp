// The scaling charts (gui/charts): the series and bottleneck labels a sweep's results make, and the
// viewer's scaling window opening a results file (or refusing another file with one line).
#include <QChart>
#include <QChartView>
#include <QFile>
#include <QGraphicsSimpleTextItem>
#include <QImage>
#include <QLineSeries>
#include <QProcess>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QTabWidget>
#include <QTableWidget>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/sweep/sweep_results.h"
#include "gui/charts/front_chart.h"
#include "gui/charts/scaling_chart.h"
#include "gui/charts/scaling_window.h"
#include "gui/main_window.h"
#include "tests/gui/gui_fixtures.h"

namespace replisim::gui {
namespace {

// replicas 1, 2, 4 × ps 1, 2: the GPU binds until one PS's NIC does at 4 replicas.
core::SweepResults two_series() {
  core::SweepResults r;
  r.scenario_name = "toy";
  r.axes = {{"replicas", {"1", "2", "4"}}, {"ps", {"1", "2"}}};
  r.points_total = 6;
  size_t index = 0;
  for (int replicas : {1, 2, 4}) {
    for (int ps : {1, 2}) {
      core::SweepRow row;
      row.index = index++;
      row.knobs = {{"replicas", std::to_string(replicas)}, {"ps", std::to_string(ps)}};
      row.strategy = "between_graph";
      row.replica_devices = replicas;
      const bool nic_bound = replicas == 4 && ps == 1;
      row.throughput_samples_per_s = nic_bound ? 300 : 100.0 * replicas;
      row.bottleneck_kind = nic_bound ? "ps nic" : "gpu";
      row.bottleneck = nic_bound ? "ps0/nic/up" : "w0/gpu0";
      row.step_time_mean_s = 0.1;
      row.compute_share = 0.7;
      row.network_share = 0.3;
      r.rows.push_back(row);
    }
  }
  core::compute_scaling_efficiency(r.rows);
  return r;
}

std::vector<QString> label_texts(QChart* chart) {
  std::vector<QString> texts;
  for (QGraphicsItem* item : chart->childItems()) {
    if (auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(item)) texts.push_back(text->text());
  }
  return texts;
}

TEST(ScalingChart, OneLinePerSeriesAndTheBottleneckWhereItChanges) {
  QChartView view(make_sweep_chart(two_series(), SweepChartKind::kThroughput, 250));
  view.resize(1000, 700);
  QChart* chart = view.chart();
  std::vector<QString> names;
  for (QAbstractSeries* s : chart->series()) {
    if (auto* line = qobject_cast<QLineSeries*>(s); line && !qobject_cast<QScatterSeries*>(s)) {
      names.push_back(line->name());
    }
  }
  EXPECT_EQ(names, (std::vector<QString>{"ps=1", "ps=2", "target: 250 samples/s"}));
  const std::vector<QString> labels = label_texts(chart);
  // "gpu" once at the shared first point and once where ps=2 bends up (100, 200, 400 on a doubling
  // axis: 26.6° then 45° in the unit square), "ps nic" where ps=1 changes.
  EXPECT_EQ(std::count(labels.begin(), labels.end(), "gpu"), 2);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), "ps nic"), 1);
  EXPECT_TRUE(chart->title().startsWith("toy: throughput"));
  QChartView breakdown(make_sweep_chart(two_series(), SweepChartKind::kBreakdown));
  ASSERT_EQ(breakdown.chart()->series().size(), 1);
  auto* bars = qobject_cast<QStackedBarSeries*>(breakdown.chart()->series().front());
  ASSERT_NE(bars, nullptr);
  EXPECT_EQ(bars->count(), 3);  // compute, network, waiting
}

// A sweep that says what bound each point (version 2) labels the curves with the critical path's
// largest share, as simulate names it, not with the busiest resource.
TEST(ScalingChart, LabelsNameWhatBoundTheStep) {
  core::SweepResults r = two_series();
  for (core::SweepRow& row : r.rows) {
    const bool nic_bound = row.bottleneck_kind == "ps nic";
    row.bound_by_share = nic_bound ? "ps0 network" : "compute";
    row.bound_by = row.bound_by_share + (nic_bound ? " 80%, compute 20%" : " 70%, ps0 network 30%");
  }
  QChartView view(make_sweep_chart(r, SweepChartKind::kThroughput));
  view.resize(1000, 700);
  const std::vector<QString> labels = label_texts(view.chart());
  // "compute" at the shared first point and where ps=2 bends up (as in the test above).
  EXPECT_EQ(std::count(labels.begin(), labels.end(), "compute"), 2);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), "ps0 network"), 1);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), "gpu"), 0);
  // The window's table: what bound it first, the busiest resource beside it.
  const std::string path = test::temporary_path("bound.json");
  std::ofstream(path) << core::sweep_results_to_json(r).dump();
  MainWindow window;
  window.open_paths({QString::fromStdString(path)}, true);
  ASSERT_NE(window.scaling_window(), nullptr) << window.last_error().toStdString();
  QTableWidget* table = window.scaling_window()->table();
  int bound = -1, busiest = -1;
  for (int c = 0; c < table->columnCount(); ++c) {
    const QString header = table->horizontalHeaderItem(c)->text();
    if (header == "bound by (critical path)") bound = c;
    if (header == "busiest resource") busiest = c;
  }
  ASSERT_GE(bound, 0);
  EXPECT_EQ(busiest, bound + 1);
  EXPECT_EQ(table->item(0, bound)->text().toStdString(), r.rows[0].bound_by);
}

TEST(ScalingChart, TwelveColoursAndDashesSoNoSeriesRepeats) {
  std::set<QRgb> colours;
  std::set<std::pair<QRgb, int>> looks;
  for (size_t i = 0; i < 48; ++i) {
    const SeriesStyle style = sweep_series_style(i);
    if (i < 12) colours.insert(style.color.rgb());
    looks.insert({style.color.rgb(), int(style.line)});
    if (i > 0) {
      EXPECT_NE(style.line, sweep_series_style(i - 1).line) << i;
    }
  }
  EXPECT_EQ(colours.size(), 12u);
  EXPECT_EQ(looks.size(), 48u);
  EXPECT_FALSE(sweep_series_style(11).marker_square);
  EXPECT_TRUE(sweep_series_style(12).marker_square);
}

// By hand, x over 4 and y over 340 into a unit square: 100 -> 200 -> 300 rises at 49.6° (dx 0.25,
// dy 0.294), 300 -> 320 -> 340 at 13.2° (dy 0.059): a bend of 36° at the third point, none at the
// second or fourth (0°). The binding changes at the fifth.
TEST(ScalingChart, LabelsWhereTheSlopeOrTheBindingChanges) {
  const std::vector<QPointF> points = {{0, 100}, {1, 200}, {2, 300}, {3, 320}, {4, 340}};
  const std::vector<std::string> same(5, "compute");
  EXPECT_EQ(curve_label_points(points, same, 4, 340), (std::vector<size_t>{0, 2}));
  std::vector<std::string> changing = same;
  changing[4] = "ps0 network";
  EXPECT_EQ(curve_label_points(points, changing, 4, 340), (std::vector<size_t>{0, 2, 4}));
  // A straight line has no bend, whatever its slope.
  EXPECT_EQ(curve_label_points({{0, 0}, {1, 100}, {2, 200}, {3, 300}}, same, 3, 300),
            (std::vector<size_t>{0}));
}

// 14 series (replicas 1..16 × ps 1..14) whose curves meet: every label stays in the plot area and
// covers no other label (the issue's "ps nic" on "ps nic").
TEST(ScalingChart, ManySeriesLabelsDoNotCollide) {
  core::SweepResults r;
  r.scenario_name = "many";
  r.axes = {{"replicas", {"1", "2", "4", "8", "16"}}, {"ps", {}}};
  for (int ps = 1; ps <= 14; ++ps) r.axes[1].values.push_back(std::to_string(ps));
  size_t index = 0;
  for (int replicas : {1, 2, 4, 8, 16}) {
    for (int ps = 1; ps <= 14; ++ps) {
      core::SweepRow row;
      row.index = index++;
      row.knobs = {{"replicas", std::to_string(replicas)}, {"ps", std::to_string(ps)}};
      row.strategy = "between_graph";
      row.replica_devices = replicas;
      const bool nic_bound = replicas > ps;
      row.throughput_samples_per_s = 100.0 * std::min(replicas, ps + 1);
      row.bottleneck_kind = nic_bound ? "ps nic" : "gpu";
      row.bottleneck = nic_bound ? "ps0/nic/up" : "w0/gpu0";
      r.rows.push_back(row);
    }
  }
  core::compute_scaling_efficiency(r.rows);
  for (SweepChartKind kind : {SweepChartKind::kThroughput, SweepChartKind::kEfficiency}) {
    QChartView view(make_sweep_chart(r, kind));
    view.resize(1400, 850);
    view.grab();
    QChart* chart = view.chart();
    std::vector<QRectF> boxes;
    std::set<QRgb> colours;
    for (QGraphicsItem* item : chart->childItems()) {
      if (auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(item)) {
        boxes.push_back(text->mapRectToParent(text->boundingRect()));
      }
    }
    for (QAbstractSeries* s : chart->series()) {
      if (auto* line = qobject_cast<QLineSeries*>(s); line && !qobject_cast<QScatterSeries*>(s)) {
        colours.insert(line->pen().color().rgb());
      }
    }
    EXPECT_EQ(colours.size(), 12u);
    ASSERT_GT(boxes.size(), 14u);
    for (size_t i = 0; i < boxes.size(); ++i) {
      EXPECT_TRUE(chart->plotArea().contains(boxes[i])) << i;
      for (size_t j = 0; j < i; ++j) EXPECT_FALSE(boxes[i].intersects(boxes[j])) << i << " " << j;
    }
  }
}

// A sweep of `ps` alone: no efficiency to draw, and the chart says why.
TEST(ScalingChart, NoEfficiencyCurveWhereReplicasIsNotVaried) {
  core::SweepResults r = two_series();
  r.axes = {{"ps", {"1", "2"}}};
  r.rows.resize(2);
  for (core::SweepRow& row : r.rows) row.knobs.erase(row.knobs.begin());  // replicas
  core::compute_scaling_efficiency(r.rows);
  QChartView view(make_sweep_chart(r, SweepChartKind::kEfficiency));
  EXPECT_TRUE(view.chart()->series().isEmpty());
  EXPECT_NE(view.chart()->title().indexOf("no scaling efficiency"), -1)
      << view.chart()->title().toStdString();
}

// A series without efficiencies (ps=1 here) is left out of the efficiency chart, and the next
// keeps the look it has in the throughput chart.
TEST(ScalingChart, ASeriesKeepsItsLookInEveryChart) {
  core::SweepResults r = two_series();
  for (core::SweepRow& row : r.rows) {
    if (row.knobs[1].second == "1") row.scaling_efficiency.reset();
  }
  QChartView view(make_sweep_chart(r, SweepChartKind::kEfficiency));
  std::vector<QLineSeries*> lines;
  for (QAbstractSeries* s : view.chart()->series()) {
    if (auto* line = qobject_cast<QLineSeries*>(s); line && !qobject_cast<QScatterSeries*>(s)) {
      lines.push_back(line);
    }
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]->name(), "ps=2");
  EXPECT_EQ(lines[0]->pen().color(), sweep_series_style(1).color);
  EXPECT_EQ(lines[0]->pen().style(), sweep_series_style(1).line);
}

TEST(ScalingWindow, OpensResultsAndRefusesOtherFiles) {
  const std::string path = test::temporary_path("sweep.json");
  std::ofstream(path) << core::sweep_results_to_json(two_series()).dump();
  MainWindow window;
  ASSERT_TRUE(looks_like_sweep_results(QString::fromStdString(path)));
  window.open_paths({QString::fromStdString(path)}, true);
  ASSERT_NE(window.scaling_window(), nullptr) << window.last_error().toStdString();
  EXPECT_EQ(window.scaling_window()->tabs()->count(), 3);
  EXPECT_EQ(window.scaling_window()->table()->rowCount(), 6);
  const std::string other = test::temporary_path("other.json");
  std::ofstream(other) << R"({"format": "replisim-sweep", "version": 7})";
  EXPECT_FALSE(window.open_sweep_results(QString::fromStdString(other)));
  EXPECT_NE(window.last_error().indexOf("a sweep of another version"), -1)
      << window.last_error().toStdString();
  EXPECT_FALSE(window.last_error().contains('\n'));
}

// recommend's results as its JSON has them: three priced points, two on the front; point 2 the
// cheapest meeting the target, point 0 the fastest within budget.
nlohmann::json three_priced_points() {
  const auto point = [](const char* label, double hours, double cost, bool front, bool meets) {
    return nlohmann::json{{"label", label},
                          {"instance", std::string(label).substr(0, 2)},
                          {"pricing", "on_demand"},
                          {"usd_per_hour", cost / hours},
                          {"throughput_samples_per_s", 1e6 / (3600 * hours)},
                          {"job_time_s", 3600 * hours},
                          {"job_cost_usd", cost},
                          {"meets_target", meets},
                          {"within_budget", true},
                          {"on_front", front},
                          {"bound_by", {{"text", std::string("w0 GPUs of ") + label}}},
                          {"bottleneck", {{"resource", "w0/gpu0"}, {"utilization", 0.9}}}};
  };
  return {{"format", "replisim-recommend"},
          {"version", 1},
          {"scenario", "s"},
          {"catalog", "c"},
          {"target", {{"kind", "samples"}, {"samples", 1e6}, {"deadline_s", 36000}}},
          {"budget_usd", 100},
          {"points",
           {point("p3 x4", 2, 80, true, true), point("p2 x1", 30, 60, false, false),
            point("p3 x1", 8, 40, true, true)}},
          {"front", {0, 2}},
          {"cheapest_meeting_target", 2},
          {"fastest_within_budget", 0}};
}

// The viewer opens recommend's results as it opens a sweep's: the front's chart, and the priced
// points with the chosen ones first, bold, named; a file that names a point it does not have is
// one line naming its path.
TEST(ScalingWindow, RecommendsResultsShowTheFrontAndTheChosenPointsFirst) {
  const std::string path = test::temporary_path("recommend.json");
  std::ofstream(path) << three_priced_points().dump();
  ASSERT_TRUE(looks_like_recommend_results(QString::fromStdString(path)));
  EXPECT_FALSE(looks_like_sweep_results(QString::fromStdString(path)));
  MainWindow window;
  window.open_paths({QString::fromStdString(path)}, true);
  ASSERT_TRUE(window.showing_scaling_chart()) << window.last_error().toStdString();
  ScalingWindow* shown = window.scaling_window();
  ASSERT_EQ(shown->tabs()->count(), 1);
  EXPECT_EQ(shown->tabs()->tabText(0), "front");
  auto* view = qobject_cast<QChartView*>(shown->tabs()->widget(0));
  ASSERT_NE(view, nullptr);
  int front_points = -1;
  for (QAbstractSeries* s : view->chart()->series()) {
    if (s->name() == "Pareto front") front_points = int(qobject_cast<QLineSeries*>(s)->count());
  }
  EXPECT_EQ(front_points, 2);
  EXPECT_TRUE(view->chart()->title().contains("cheapest meeting the target (green): p3 x1"))
      << view->chart()->title().toStdString();
  QTableWidget* table = shown->table();
  ASSERT_EQ(table->rowCount(), 3);
  EXPECT_EQ(table->item(0, 0)->text(), "cheapest meeting the target");
  EXPECT_EQ(table->item(0, 1)->text(), "p3 x1");
  EXPECT_TRUE(table->item(0, 1)->font().bold());
  EXPECT_EQ(table->item(1, 0)->text(), "fastest within budget");
  EXPECT_EQ(table->item(1, 1)->text(), "p3 x4");
  EXPECT_EQ(table->item(2, 0)->text(), "");
  EXPECT_EQ(table->item(2, 1)->text(), "p2 x1");
  EXPECT_FALSE(table->item(2, 1)->font().bold());
  EXPECT_EQ(table->item(0, 9)->text(), "w0 GPUs of p3 x1");  // what binds the chosen point
  EXPECT_EQ(table->item(0, 5)->text(), "8.00");              // hours

  nlohmann::json bad = three_priced_points();
  bad["front"] = {0, 3};
  std::ofstream(path) << bad.dump();
  EXPECT_FALSE(window.open_sweep_results(QString::fromStdString(path)));
  EXPECT_NE(window.last_error().indexOf("/front/1"), -1) << window.last_error().toStdString();
  EXPECT_FALSE(window.last_error().contains('\n'));
  bad = three_priced_points();
  bad["points"][1].erase("job_cost_usd");
  std::ofstream(path) << bad.dump();
  EXPECT_THROW(read_recommend_results(path), core::InputError);
  try {
    read_recommend_results(path);
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/points/1/job_cost_usd"), std::string::npos) << e.what();
  }
}

// A sweep given on the command line shows its chart in the window (not an empty window beside a
// separate one), and --screenshot renders that chart.
TEST(ScalingWindow, ASweepOnTheCommandLineIsShownInTheWindowAndInItsScreenshot) {
  const std::string path = test::temporary_path("cli-sweep.json");
  std::ofstream(path) << core::sweep_results_to_json(two_series()).dump();
  MainWindow window;
  window.resize(1000, 700);
  window.show();
  window.open_paths({QString::fromStdString(path)}, true);
  ASSERT_TRUE(window.showing_scaling_chart()) << window.last_error().toStdString();
  EXPECT_TRUE(window.scaling_window()->isVisible());
  EXPECT_TRUE(window.isAncestorOf(window.scaling_window()));
  EXPECT_FALSE(window.timeline()->isVisible());
  EXPECT_FALSE(window.side_tabs()->isVisible());  // the selection's panel gives the chart its width
  // A trace opened after it brings the timelines back.
  window.show_models({test::tiny_model()});
  EXPECT_FALSE(window.showing_scaling_chart());
  EXPECT_TRUE(window.timeline()->isVisible());
  EXPECT_TRUE(window.side_tabs()->isVisible());

  // The screenshot of SWEEP.json against that of an empty window (what it used to render): coloured
  // pixels (the chart's lines) below the tool bar and the timelines' legend.
  auto coloured_pixels = [](const QStringList& files) {
    const QString png = QString::fromStdString(test::temporary_path("cli-sweep.png"));
    QProcess gui;
    gui.start(REPLISIM_GUI_BINARY, files + QStringList{"--screenshot", png, "--size", "1000x700"});
    EXPECT_TRUE(gui.waitForFinished(60000));
    EXPECT_EQ(gui.exitCode(), 0) << gui.readAllStandardError().toStdString();
    const QImage shot(png);
    EXPECT_EQ(shot.size(), QSize(1000, 700));
    int coloured = 0;
    for (int y = shot.height() / 5; y < shot.height() * 9 / 10; y += 2) {
      for (int x = 0; x < shot.width(); x += 2) {
        const QColor c = shot.pixelColor(x, y);
        coloured += c.hsvSaturation() > 100 && c.value() > 60;
      }
    }
    QFile::remove(png);
    return coloured;
  };
  const int empty = coloured_pixels({});
  const int chart = coloured_pixels({QString::fromStdString(path)});
  EXPECT_LT(empty, 20);
  EXPECT_GT(chart, 200) << "no chart in the screenshot";
}

}  // namespace
}  // namespace replisim::gui
