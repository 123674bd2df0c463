// The scenario panel: a knob writes its field and nothing else, a bad value shows replisim's line,
// cancel leaves no child process, and a knob change shows before against after.
#include <gtest/gtest.h>
#include <unistd.h>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QSpinBox>
#include <filesystem>
#include <fstream>

#include "core/sweep/sweep_knobs.h"
#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/scenario_document.h"
#include "gui/scenario_panel.h"
#include "gui_fixtures.h"
#include "tests/support/run_binary.h"

namespace replisim::gui {
namespace {

using Json = ScenarioDocument::Json;

std::string scenario(const std::string& name) {
  return std::string(REPLISIM_SOURCE_DIR) + "/scenarios/" + name;
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

// Child processes of this test (from /proc: those whose parent is us).
int children() {
  return int(replisim::test::child_processes(getpid()).size());
}

class PanelTest : public ::testing::Test {
 protected:
  void open(const std::string& name) {
    ASSERT_TRUE(panel.open_scenario(QString::fromStdString(scenario(name))))
        << panel.error_line().toStdString();
    before = read_json(scenario(name));
  }
  template <typename W>
  W* control(const char* name) {
    W* w = panel.findChild<W*>(name);
    EXPECT_NE(w, nullptr) << name;
    return w;
  }
  ScenarioPanel panel{REPLISIM_BINARY};
  Json before;
};

TEST_F(PanelTest, OneMoreReplicaCopiesTheFastestMachineAndChangesNothingElse) {
  open("seed/two_machines.json");
  control<QSpinBox>("replicas")->setValue(3);
  Json expected = before;
  Json pc3 = before["cluster"]["machines"][0];  // pc1 has the faster GPU (10 TFLOPS)
  pc3["name"] = "pc3";
  expected["cluster"]["machines"].push_back(pc3);
  expected["training"]["replicas"].push_back("pc3/gpu0");
  EXPECT_EQ(panel.document()->json(), expected);
  control<QSpinBox>("replicas")->setValue(2);
  expected["training"]["replicas"].erase(2);  // the machine stays, unused
  EXPECT_EQ(panel.document()->json(), expected);
}

// The panel's replicas knob and the sweep's are one edit (core::set_scenario_replica_count): on
// machines of 4 GPUs the spin box steps by a machine, and 24 replicas are the file the sweep's
// replicas=24 makes.
TEST_F(PanelTest, TheReplicasKnobIsTheSweepsOnAFourGpuTemplate) {
  open("planning/resnet50_16gpu_10gbe.json");
  QSpinBox* replicas = control<QSpinBox>("replicas");
  EXPECT_EQ(replicas->value(), 16);
  EXPECT_EQ(replicas->singleStep(), 4);
  replicas->setValue(24);
  nlohmann::json swept = nlohmann::json(before);
  core::find_sweep_knob("replicas")
      .apply(swept, "24",
             {scenario("planning/resnet50_16gpu_10gbe.json"), nullptr, "between_graph"});
  EXPECT_EQ(nlohmann::json(panel.document()->json()), swept);
  EXPECT_EQ(panel.document()->json()["cluster"]["machines"][0]["count"], 6);
}

TEST_F(PanelTest, NicSpeedFaultAndParameterServersWriteTheirFieldsOnly) {
  open("seed/two_machines.json");
  control<QDoubleSpinBox>("nic_gbps")->setValue(25);
  Json expected = before;
  for (Json& m : expected["cluster"]["machines"]) m["nic"]["bandwidth"] = "25 Gbps";
  EXPECT_EQ(panel.document()->json(), expected);
  control<QComboBox>("device")->setCurrentText("pc2/gpu0");
  control<QDoubleSpinBox>("speed_factor")->setValue(2);
  expected["cluster"]["machines"][1]["gpus"][0]["speed"] = "10 TFLOPS";
  EXPECT_EQ(panel.document()->json(), expected);
  control<QComboBox>("fault_kind")->setCurrentText("role");
  control<QComboBox>("fault_target")->setCurrentText("worker1");
  control<QDoubleSpinBox>("fault_at_s")->setValue(20);
  expected["faults"] = Json::array({Json{{"kind", "role"}, {"role", "worker1"}, {"at", "20 s"}}});
  EXPECT_EQ(panel.document()->json(), expected);
  control<QSpinBox>("ps_count")->setValue(2);
  expected["training"]["ps"] = Json::array({"pc1/cpu", "pc2/cpu"});
  EXPECT_EQ(panel.document()->json(), expected);
  control<QComboBox>("fault_kind")->setCurrentText("none");
  expected.erase("faults");
  EXPECT_EQ(panel.document()->json(), expected);
}

TEST_F(PanelTest, BackupWorkersSetReplicasToAggregateAndSaveAsWritesANewFileOnly) {
  open("classroom/sync_straggler.json");
  control<QSpinBox>("backup_workers")->setValue(0);
  Json expected = before;
  expected["training"]["sync"]["replicas_to_aggregate"] = 4;  // R = T: no backup worker
  EXPECT_EQ(panel.document()->json(), expected);
  const std::string copy = test::temporary_path("no_backup.json");
  ASSERT_TRUE(panel.save_to(QString::fromStdString(copy))) << panel.error_line().toStdString();
  EXPECT_EQ(read_json(copy), expected);
  // The original is never written over without asking.
  EXPECT_FALSE(panel.save_to(QString::fromStdString(scenario("classroom/sync_straggler.json"))));
  EXPECT_FALSE(panel.error_line().isEmpty());
  EXPECT_EQ(read_json(scenario("classroom/sync_straggler.json")), before);
  std::filesystem::remove(copy);
}

TEST_F(PanelTest, TheSyncModeOffersDistributedReplicatedAndShowsWhatTheFileSays) {
  open("published/resnet50_bs32_16gpu.json");
  EXPECT_EQ(control<QComboBox>("sync")->currentText().toStdString(), "distributed_replicated");
  EXPECT_FALSE(control<QSpinBox>("backup_workers")->isEnabled());
  EXPECT_EQ(panel.document()->json(), before);  // showing it wrote nothing
  control<QComboBox>("sync")->setCurrentText("async");
  Json expected = before;
  expected["training"]["sync"] = "async";
  EXPECT_EQ(panel.document()->json(), expected);
  control<QComboBox>("sync")->setCurrentText("distributed_replicated");
  EXPECT_EQ(panel.document()->json(), before);
}

TEST_F(PanelTest, ABadValueShowsReplisimsOneLineAndTheNextEditRunsAgain) {
  open("seed/two_machines.json");
  panel.set_interactive_steps(12);
  panel.set_strategy("in_graph");
  ASSERT_TRUE(panel.apply_knob("fault=machine:nosuch@5"));
  panel.run();
  ASSERT_TRUE(panel.wait_for_run(60000));
  const std::string error = panel.error_line().toStdString();
  EXPECT_NE(error.find("nosuch"), std::string::npos) << error;
  EXPECT_NE(error.find("two_machines.json (edited)"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_TRUE(panel.last_models().empty());
  ASSERT_TRUE(panel.apply_knob("fault=none"));
  panel.run();
  ASSERT_TRUE(panel.wait_for_run(60000));
  EXPECT_TRUE(panel.error_line().isEmpty()) << panel.error_line().toStdString();
  ASSERT_EQ(panel.last_models().size(), 1u);
  EXPECT_EQ(panel.last_models()[0]->trace().meta.strategy, "in_graph");
  EXPECT_FALSE(panel.apply_knob("colour=blue"));  // not a knob: one line, nothing runs
  EXPECT_FALSE(panel.running());
}

TEST_F(PanelTest, CancelLeavesNoChildProcess) {
  open("classroom/ps_failure.json");
  panel.set_strategy("between_graph");
  const int before_run = children();
  panel.run();
  QElapsedTimer timer;
  timer.start();
  while (children() == before_run && timer.elapsed() < 10000) QApplication::processEvents();
  ASSERT_GT(children(), before_run);
  panel.cancel();
  QApplication::processEvents();
  EXPECT_FALSE(panel.running());
  EXPECT_EQ(children(), before_run);
}

TEST(PanelWindow, AKnobChangeShowsBeforeAndAfterInTheCompareViewWithTheirMetrics) {
  MainWindow window;
  window.scenario_panel()->set_interactive_steps(12);
  window.scenario_panel()->set_strategy("in_graph");
  ASSERT_TRUE(window.open_in_panel(QString::fromStdString(scenario("seed/two_machines.json"))));
  ASSERT_TRUE(window.scenario_panel()->wait_for_run(60000));
  EXPECT_FALSE(window.comparing());
  ASSERT_TRUE(window.scenario_panel()->apply_knob("replicas=3"));
  ASSERT_TRUE(window.scenario_panel()->wait_for_run(60000));
  ASSERT_TRUE(window.comparing()) << window.scenario_panel()->error_line().toStdString();
  const auto& a = window.compare()->view_a()->model();
  const auto& b = window.compare()->view_b()->model();
  ASSERT_TRUE(a && b && a->metrics() && b->metrics());
  auto towers = [](const TimelineModel& m) {
    int n = 0;
    for (int p = 0; p < m.process_count(); ++p) n += m.process_name(p).rfind("tower", 0) == 0;
    return n;
  };
  EXPECT_EQ(towers(*a), 2);
  EXPECT_EQ(towers(*b), 3);
  EXPECT_GT(window.scenario_panel()->last_knob_to_timeline_s(), 0);
  EXPECT_TRUE(window.findChild<QLabel*>("runs_label")->text().contains("replicas 2 → 3"));
}

}  // namespace
}  // namespace replisim::gui
