// Classroom mode: one catalog entry per bundled seed and classroom scenario with its texts,
// captions whose numbers come from the run's metrics, and the animation drawing only what has
// happened by its time.
#include <gtest/gtest.h>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QScrollBar>
#include <QTableWidget>
#include <QTextDocumentFragment>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/metrics/report.h"
#include "core/strategy/strategy_names.h"
#include "gui/categories.h"
#include "gui/classroom_catalog.h"
#include "gui/classroom_panel.h"
#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/panels/metrics_table.h"
#include "gui/scenario_panel.h"
#include "gui/timeline_view.h"
#include "gui_fixtures.h"

namespace replisim::gui {
namespace {

const QString kScenarios = QString(REPLISIM_SOURCE_DIR) + "/scenarios";

TEST(Classroom, TheListHasOneEntryPerBundledSeedAndClassroomScenarioEachWithItsText) {
  std::set<std::string> bundled;
  for (const char* folder : {"seed", "classroom"}) {
    for (const QString& file : QDir(kScenarios + "/" + folder).entryList({"*.json"}, QDir::Files))
      bundled.insert(std::string(folder) + "/" + file.toStdString());
  }
  ASSERT_GE(bundled.size(), 6u);
  ClassroomPanel panel([] { return std::vector<TimelineView*>(); });
  ASSERT_TRUE(panel.load_catalog(kScenarios)) << panel.error_line().toStdString();
  std::set<std::string> listed;
  for (const ClassroomEntry& e : panel.entries()) {
    EXPECT_TRUE(listed.insert(e.file).second) << e.file << " listed twice";
    EXPECT_FALSE(e.title.empty() || e.claim.empty() || e.look.empty()) << e.file;
    for (const std::string& strategy : core::parse_strategy_list(e.strategy))
      EXPECT_TRUE(e.captions.count(strategy)) << e.file << ": no caption for " << strategy;
  }
  EXPECT_EQ(listed, bundled);
  ASSERT_EQ(panel.list()->count(), int(panel.entries().size()));
  for (int i = 0; i < panel.list()->count(); ++i) {
    EXPECT_EQ(panel.list()->item(i)->text().toStdString(), panel.entries()[size_t(i)].title);
    EXPECT_TRUE(panel.list()->item(i)->toolTip().contains(
        QString::fromStdString(panel.entries()[size_t(i)].claim)));
  }
}

TEST(Classroom, ACaptionTakesItsNumbersFromTheMetrics) {
  core::RunMetrics m;
  m.links = {{"pc1/nic/up", 0.66}, {"pc2/nic/down", 0.1}};
  m.throughput_samples_per_s = 123.4;
  const std::string text = "the client's NIC is busy {link:pc1/nic/up}% ({throughput} samples/s)";
  EXPECT_EQ(render_caption(text, m), "the client's NIC is busy 66% (123 samples/s)");
  m.links[0].utilization = 0.5;
  EXPECT_EQ(render_caption(text, m), "the client's NIC is busy 50% (123 samples/s)");
  EXPECT_THROW(render_caption("{link:pc9/nic/up}", m), std::invalid_argument);
  EXPECT_THROW(render_caption("{colour}", m), std::invalid_argument);
  EXPECT_FALSE(check_caption("{link}").empty());  // needs its argument
  EXPECT_TRUE(check_caption("{lost_steps} steps lost").empty());
}

// A catalog of one seed entry whose in_graph caption is `caption`, written in a new directory
// named after `name`; returns the directory.
QString catalog_with_caption(const std::string& name, const char* caption) {
  const QString dir = QString::fromStdString(test::temporary_path(name));
  QDir().mkpath(dir);
  QFile file(dir + "/classroom.catalog");
  EXPECT_TRUE(file.open(QIODevice::WriteOnly));
  const nlohmann::json catalog = {{"scenarios",
                                   {{{"file", "seed/x.json"},
                                     {"title", "t"},
                                     {"claim", "c"},
                                     {"look", "l"},
                                     {"strategy", "both"},
                                     {"captions", {{"in_graph", caption}}}}}}};
  file.write(QByteArray::fromStdString(catalog.dump()));
  file.close();
  return dir;
}

TEST(Classroom, ABrokenCatalogGivesOneLineAndAnEmptyList) {
  const QString dir = catalog_with_caption("catalog", "{nonsense}");
  ClassroomPanel panel([] { return std::vector<TimelineView*>(); });
  EXPECT_FALSE(panel.load_catalog(dir));
  EXPECT_NE(panel.error_line().indexOf("nonsense"), -1) << panel.error_line().toStdString();
  EXPECT_EQ(panel.list()->count(), 0);
  QDir(dir).removeRecursively();
}

TEST(Classroom, ChoosingTheSeedRunsItAndCaptionsBothRunsFromTheirMetrics) {
  MainWindow window;
  window.set_classroom_mode(true);
  ClassroomPanel* classroom = window.classroom();
  ASSERT_TRUE(classroom->load_catalog(kScenarios));
  const int seed = classroom->index_of("two_machines");
  ASSERT_GE(seed, 0);
  classroom->choose(seed);
  ASSERT_TRUE(window.scenario_panel()->wait_for_run(60000));
  ASSERT_TRUE(window.comparing()) << window.scenario_panel()->error_line().toStdString();
  const ModelList& runs = window.scenario_panel()->last_models();
  ASSERT_EQ(runs.size(), 2u);
  const ClassroomEntry& entry = classroom->entries()[size_t(seed)];
  for (const auto& run : runs) {
    ASSERT_NE(run->metrics(), nullptr);
    const std::string strategy = run->trace().meta.strategy;
    const QString expected =
        QString::fromStdString(render_caption(entry.captions.at(strategy), *run->metrics()));
    EXPECT_TRUE(classroom->caption_text().contains(expected.toHtmlEscaped()))
        << classroom->caption_text().toStdString();
  }
  window.set_classroom_mode(false);
}

TEST(Classroom, TheAnimationDrawsOnlyWhatHasHappenedByItsTime) {
  TimelineView view;
  view.resize(1000, 400);
  view.set_model(test::tiny_model());
  view.axis()->set_range(0, 5);
  view.show();
  const int lane = test::lane_named(*view.model(), "worker0", "compute pc1/gpu0");
  ASSERT_GE(lane, 0);
  auto pixel = [&](double t) {
    return view.viewport()->grab().toImage().pixelColor(int(view.x_of(t)),
                                                        view.lane_middle_y(lane));
  };
  view.set_reveal_until_s(2.5);
  EXPECT_EQ(pixel(1.9), category_colour(Category::kForward));  // the first op has happened
  EXPECT_EQ(pixel(3.9), background_colour());                  // the second not yet
  view.set_reveal_until_s(std::numeric_limits<double>::infinity());
  EXPECT_EQ(pixel(3.9), category_colour(Category::kForward));
}

// The first entry of the report's "bound by (critical path)" row (core::format_report, what
// `replisim simulate` prints): its share name and percentage, "pc2/gpu0 60%".
std::string report_first_bound_by(const core::RunMetrics& metrics) {
  const std::string report = core::format_report({metrics}, "");
  const std::string label = "bound by (critical path)";
  const size_t at = report.find(label);
  if (at == std::string::npos) return "";
  const std::string row =
      report.substr(at + label.size(), report.find('\n', at) - at - label.size());
  std::smatch first;
  if (!std::regex_search(row, first, std::regex(R"(\S.*?\s\d+%)"))) return "";
  return first.str();
}

// Per catalog scenario: every shown run's caption names as its cause ("bound by ...") the
// report's first "bound by" entry, shows no placeholder or unfilled figure, and the rows "Where
// to look" names are unfolded, highlighted and scrolled to, the others folded.
class ClassroomScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(ClassroomScenario, CaptionNamesTheReportsFirstBoundByAndTheLookRowsAreShown) {
  MainWindow window;
  window.resize(1280, 720);
  window.show();
  window.set_classroom_mode(true);
  ClassroomPanel* classroom = window.classroom();
  ASSERT_TRUE(classroom->load_catalog(kScenarios));
  const int index = classroom->index_of(QString::fromStdString(GetParam()));
  ASSERT_GE(index, 0);
  classroom->choose(index);
  ASSERT_TRUE(window.scenario_panel()->wait_for_run(300000));
  ASSERT_TRUE(window.scenario_panel()->error_line().isEmpty())
      << window.scenario_panel()->error_line().toStdString();
  const ModelList& runs = window.scenario_panel()->last_models();
  ASSERT_FALSE(runs.empty());
  const QString caption = classroom->caption_text();
  EXPECT_FALSE(caption.contains("(caption")) << caption.toStdString();
  EXPECT_FALSE(caption.contains('{')) << caption.toStdString();
  const ClassroomEntry& entry = classroom->entries()[size_t(index)];
  std::vector<TimelineView*> views{window.timeline()};
  if (window.comparing()) views = {window.compare()->view_a(), window.compare()->view_b()};
  ASSERT_EQ(views.size(), runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const core::RunMetrics* metrics = runs[i]->metrics();
    ASSERT_NE(metrics, nullptr) << runs[i]->metrics_error();
    const std::string strategy = runs[i]->trace().meta.strategy;
    const std::string first = report_first_bound_by(*metrics);
    ASSERT_FALSE(first.empty()) << strategy << ": the report has no bound-by row";
    // The caption on screen names that cause first: "bound by <name> <pct>%".
    const std::string line = QTextDocumentFragment::fromHtml(caption).toPlainText().toStdString();
    const std::string who = runs.size() > 1
                                ? std::string(i == 0 ? "A" : "B") + " (" + strategy + "): "
                                : strategy + ": ";
    const size_t at = line.find(who);
    ASSERT_NE(at, std::string::npos) << line;
    const size_t cause = line.find("bound by ", at);
    ASSERT_NE(cause, std::string::npos) << strategy << ": the caption names no cause: " << line;
    EXPECT_EQ(line.substr(cause + 9, first.size()), first)
        << strategy << ": the report's first bound-by entry is " << first << "; caption: " << line;
    // "Where to look": its rows unfolded and highlighted, the others folded.
    TimelineView* view = views[i];
    const auto rows = entry.rows.find(strategy);
    ASSERT_NE(rows, entry.rows.end()) << entry.file << " names no rows for " << strategy;
    int highlighted = 0;
    // A run with training.objective's accuracy curve shows it first: the view stays at the top.
    const bool curve =
        std::any_of(view->model()->counters().begin(), view->model()->counters().end(),
                    [](const CounterTrack& c) { return c.name == "accuracy"; });
    if (curve) EXPECT_EQ(view->scroll_y(), 0) << strategy << ": the accuracy curve is not in sight";
    for (int p = 0; p < view->model()->process_count(); ++p) {
      const std::string name = view->model()->process_name(p);
      const bool named =
          std::find(rows->second.begin(), rows->second.end(), name) != rows->second.end();
      EXPECT_EQ(view->group_highlighted(p), named) << strategy << " " << name;
      EXPECT_EQ(view->group_collapsed(p), !named) << strategy << " " << name;
      if (named && highlighted++ == 0 && !curve) {  // the first named group's header is in sight
        const int visible = view->viewport()->height() - TimelineView::kRulerHeightPx;
        EXPECT_GE(view->group_top_y(p), view->scroll_y()) << name;
        EXPECT_LE(view->group_top_y(p) + TimelineView::kHeaderHeightPx, view->scroll_y() + visible)
            << name;
      }
    }
    EXPECT_EQ(highlighted, int(rows->second.size())) << strategy << ": a named row is missing";
  }
}

INSTANTIATE_TEST_SUITE_P(Catalog, ClassroomScenario,
                         ::testing::Values("two_machines", "heterogeneous", "ps_bottleneck",
                                           "model_parallel", "sync_straggler", "ps_failure",
                                           "ps_vs_allreduce", "more_workers"),
                         [](const ::testing::TestParamInfo<std::string>& name) {
                           return name.param;
                         });

// Every bundled catalog entry is covered by ClassroomScenario above.
TEST(Classroom, EveryCatalogEntryHasItsCaptionTest) {
  const std::set<std::string> tested = {"two_machines",    "heterogeneous",  "ps_bottleneck",
                                        "model_parallel",  "sync_straggler", "ps_failure",
                                        "ps_vs_allreduce", "more_workers"};
  for (const ClassroomEntry& e : load_classroom_catalog(kScenarios.toStdString()))
    EXPECT_TRUE(
        tested.count(QFileInfo(QString::fromStdString(e.file)).completeBaseName().toStdString()))
        << e.file;
}

TEST(Classroom, ACaptionThatNamesNoCauseIsRefused) {
  const QString dir = catalog_with_caption("catalog-cause", "the NIC is the bottleneck");
  ClassroomPanel panel([] { return std::vector<TimelineView*>(); });
  EXPECT_FALSE(panel.load_catalog(dir));
  EXPECT_NE(panel.error_line().indexOf("names no cause"), -1) << panel.error_line().toStdString();
  QDir(dir).removeRecursively();
}

TEST(Classroom, CausesComeFromTheCriticalPathAndTheWaits) {
  core::RunMetrics m;
  m.bound_by.seconds = 10;
  m.bound_by.shares = {{"pc2/gpu0", 6}, {"pc1<->pc2 network", 4}};
  core::WaitBreakdown fast, slow;
  fast.role = "tower0";
  fast.role_kind = slow.role_kind = "tower";
  fast.peers = 0.4;
  slow.role = "tower1";
  slow.peers = 0.05;
  m.waits = {slow, fast};
  EXPECT_EQ(render_caption("bound by {bound_by_path}", m),
            "bound by pc2/gpu0 60%, pc1<->pc2 network 40%");
  EXPECT_EQ(render_caption("{bound_by} {bound_by_pct}%", m), "pc2/gpu0 60%");
  EXPECT_EQ(render_caption("{waiting_most:tower.peers} {waiting_most_pct:tower.peers}%", m),
            "tower0 40%");
  m.bound_by.shares = {{"pc1<->pc2 network", 7}, {"pc2/gpu0", 3}};
  EXPECT_EQ(render_caption("{bound_by}", m), "pc1<->pc2 network");
  EXPECT_EQ(fallback_caption(m).rfind("bound by pc1<->pc2 network 70%", 0), 0u)
      << fallback_caption(m);
  m.bound_by = {};
  EXPECT_THROW(render_caption("{bound_by}", m), std::invalid_argument);
  EXPECT_EQ(fallback_caption(m).find('{'), std::string::npos);
}

// A knob changed in a two-strategy scenario: the new pair is shown and the previous one kept
// beside it, before against after per strategy with B − A, in the table and the captions.
TEST(Classroom, AKnobChangeInATwoStrategyScenarioKeepsThePreviousPairBesideTheNew) {
  MainWindow window;
  window.resize(1280, 720);
  window.show();
  window.set_classroom_mode(true);
  ClassroomPanel* classroom = window.classroom();
  ASSERT_TRUE(classroom->load_catalog(kScenarios));
  classroom->choose(classroom->index_of("two_machines"));
  ScenarioPanel* panel = window.scenario_panel();
  ASSERT_TRUE(panel->wait_for_run(120000));
  const ModelList first = panel->last_models();
  ASSERT_EQ(first.size(), 2u) << panel->error_line().toStdString();
  EXPECT_TRUE(panel->before_pair().empty());
  ASSERT_TRUE(panel->apply_knob("nic_gbps=25")) << panel->error_line().toStdString();
  panel->run();
  ASSERT_TRUE(panel->wait_for_run(120000));
  ASSERT_TRUE(panel->error_line().isEmpty()) << panel->error_line().toStdString();
  const ModelList& after = panel->last_models();
  ASSERT_EQ(after.size(), 2u);
  ASSERT_EQ(panel->before_pair().size(), 2u);
  EXPECT_EQ(panel->before_pair()[0], first[0]);
  EXPECT_EQ(panel->before_pair()[1], first[1]);
  EXPECT_NE(after[0], first[0]);
  QTableWidget* table = window.compare()->metrics_table();
  ASSERT_EQ(table->columnCount(), 7);
  for (int pair = 0; pair < 2; ++pair) {
    const std::string strategy = after[size_t(pair)]->trace().meta.strategy;
    EXPECT_EQ(first[size_t(pair)]->trace().meta.strategy, strategy);
    const int column = 1 + 3 * pair;
    EXPECT_TRUE(table->horizontalHeaderItem(column)->text().contains("before"));
    EXPECT_TRUE(
        table->horizontalHeaderItem(column)->text().contains(QString::fromStdString(strategy)));
    EXPECT_EQ(table->item(0, 0)->text(), "throughput (samples/s)");
    const double was = first[size_t(pair)]->metrics()->throughput_samples_per_s;
    const double now = after[size_t(pair)]->metrics()->throughput_samples_per_s;
    EXPECT_NEAR(table->item(0, column)->text().toDouble(), was, 1e-3 * was);
    EXPECT_NEAR(table->item(0, column + 1)->text().toDouble(), now, 1e-3 * now);
    EXPECT_NEAR(table->item(0, column + 2)->text().toDouble(), now - was,
                1e-3 * std::abs(now - was) + 1e-3);
    EXPECT_TRUE(classroom->caption_text().contains(
        QString("Before the change: %1 samples/s, now %2").arg(was, 0, 'f', 0).arg(now, 0, 'f', 0)))
        << classroom->caption_text().toStdString();
  }
  // The timelines show the new pair, or one strategy before against after.
  CompareView* compare = window.compare();
  ASSERT_EQ(compare->pair_choices(), 3);
  EXPECT_EQ(compare->view_a()->model(), after[0]);
  EXPECT_EQ(compare->view_b()->model(), after[1]);
  for (int pair = 0; pair < 2; ++pair) {
    compare->show_pair(1 + pair);
    EXPECT_EQ(compare->view_a()->model(), first[size_t(pair)]);
    EXPECT_EQ(compare->view_b()->model(), after[size_t(pair)]);
    EXPECT_EQ(table->columnCount(), 7);
  }
  compare->show_pair(0);
  EXPECT_EQ(compare->view_a()->model(), after[0]);
  // A new scenario forgets the pair.
  classroom->choose(classroom->index_of("ps_bottleneck"));
  ASSERT_TRUE(panel->wait_for_run(120000));
  EXPECT_TRUE(panel->before_pair().empty());
  EXPECT_FALSE(compare->findChild<QComboBox*>("shown_pair")->isVisible());
}

// Classroom mode on a 1280 x 720 projector and on larger screens: the caption is whole inside its
// dock without scrolling, no dock is narrower than its content (controls cut off on the right),
// the fault combo shows a whole role name, and each timeline keeps at least 200 pixels.
class ClassroomScreen : public ::testing::TestWithParam<QSize> {};

TEST_P(ClassroomScreen, ClassroomModeFitsTheScreen) {
  MainWindow window;
  window.resize(GetParam());
  window.show();
  window.set_classroom_mode(true);
  ClassroomPanel* classroom = window.classroom();
  ASSERT_TRUE(classroom->load_catalog(kScenarios));
  classroom->choose(classroom->index_of("two_machines"));
  ASSERT_TRUE(window.scenario_panel()->wait_for_run(120000));
  ASSERT_TRUE(window.comparing());
  QApplication::processEvents();
  const QWidget* viewport = classroom->parentWidget();  // the dock's scroll area's viewport
  const QLabel* caption = classroom->findChild<QLabel*>("caption");
  ASSERT_NE(caption, nullptr);
  EXPECT_LE(caption->mapTo(viewport, QPoint(0, caption->height())).y(), viewport->height())
      << "the caption runs past the dock's bottom";
  EXPECT_GE(classroom->width(), classroom->minimumSizeHint().width());
  auto* panel_dock = window.findChild<QDockWidget*>("Scenario");
  ASSERT_NE(panel_dock, nullptr);
  panel_dock->raise();  // a tab beside the classroom panel on a narrow window
  QApplication::processEvents();
  ScenarioPanel* panel = window.scenario_panel();
  ASSERT_TRUE(panel->isVisible());
  EXPECT_GE(panel->width(), panel->minimumSizeHint().width()) << "controls cut off on the right";
  EXPECT_LE(panel->mapTo(&window, QPoint(panel->width(), 0)).x(), window.width());
  auto* fault_target = panel->findChild<QComboBox*>("fault_target");
  ASSERT_NE(fault_target, nullptr);
  EXPECT_GT(fault_target->width(), fault_target->fontMetrics().horizontalAdvance("worker1") + 16);
  EXPECT_GE(window.compare()->view_a()->height(), 200);
  EXPECT_GE(window.compare()->view_b()->height(), 200);
  // With the topology under the timelines the classroom's column keeps its height: the caption
  // still ends inside it.
  auto* classroom_dock = window.findChild<QDockWidget*>("Classroom");
  ASSERT_NE(classroom_dock, nullptr);
  classroom_dock->raise();
  window.show_topology(true);
  QApplication::processEvents();
  EXPECT_LE(caption->mapTo(viewport, QPoint(0, caption->height())).y(), viewport->height())
      << "with the topology shown, the caption runs past the dock's bottom";
  window.show_topology(false);
  window.set_classroom_mode(false);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ClassroomScreen,
                         ::testing::Values(QSize(1280, 720), QSize(1600, 1000), QSize(1920, 1080)),
                         [](const ::testing::TestParamInfo<QSize>& size) {
                           return std::to_string(size.param.width()) + "x" +
                                  std::to_string(size.param.height());
                         });

}  // namespace
}  // namespace replisim::gui
