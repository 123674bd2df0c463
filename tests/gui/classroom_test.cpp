// Classroom mode: one catalog entry per bundled seed and classroom scenario with its texts,
// captions whose numbers come from the run's metrics, and the animation drawing only what has
// happened by its time.
#include <gtest/gtest.h>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QListWidget>
#include <set>

#include "gui/categories.h"
#include "gui/classroom_catalog.h"
#include "gui/classroom_panel.h"
#include "gui/main_window.h"
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
    EXPECT_TRUE(e.captions.count(e.strategy == "both" ? "in_graph" : e.strategy)) << e.file;
  }
  EXPECT_EQ(listed, bundled);
  ASSERT_EQ(panel.list()->count(), int(panel.entries().size()));
  for (int i = 0; i < panel.list()->count(); ++i) {
    EXPECT_TRUE(panel.list()->item(i)->text().contains(
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

TEST(Classroom, ABrokenCatalogGivesOneLineAndAnEmptyList) {
  const QString dir = QString::fromStdString(test::temporary_path("catalog"));
  QDir().mkpath(dir);
  QFile file(dir + "/classroom.catalog");
  ASSERT_TRUE(file.open(QIODevice::WriteOnly));
  file.write(R"({"scenarios": [{"file": "seed/x.json", "title": "t", "claim": "c", "look": "l",
             "strategy": "both", "captions": {"in_graph": "{nonsense}"}}]})");
  file.close();
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

}  // namespace
}  // namespace replisim::gui
