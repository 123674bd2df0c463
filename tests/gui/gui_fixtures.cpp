#include "gui_fixtures.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <QDir>
#include <QStandardPaths>
#include <filesystem>
#include <fstream>

#include "core/trace/trace_format.h"

namespace replisim::gui::test {

core::Trace tiny_trace(double shift_s) {
  core::Trace trace;
  trace.meta.scenario = "tiny";
  trace.meta.strategy = "between_graph";
  trace.meta.steps = 1;
  trace.meta.batch_per_replica = 32;
  core::Platform& p = trace.meta.platform;
  p.links = {{"switch", 1e12, 0, false},
             {"pc1/nic", 1.25e9, 1e-5, true},
             {"pc2/nic", 1.25e9, 1e-5, true},
             {"pc1/pcie/gpu0", 16e9, 1e-6, true}};
  p.switch_link = 0;
  p.machines = {{"pc1", {1}, {0, 1}}, {"pc2", {2}, {2}}};
  p.devices = {{"pc1/cpu", 0, core::DeviceKind::kCpu, 1e11, 1, -1, 0},
               {"pc1/gpu0", 0, core::DeviceKind::kGpu, 1e13, 1, 3, 0},
               {"pc2/cpu", 1, core::DeviceKind::kCpu, 1e11, 1, -1, 0}};
  trace.meta.roles = {{"worker0", core::RoleKind::kWorker, "pc1/gpu0", true},
                      {"ps0", core::RoleKind::kParameterServer, "pc2/cpu", false}};
  trace.meta.clients = {{"worker0", 32, 0, 0}};
  trace.meta.ps = {"ps0"};
  trace.meta.variables = {{"global_step", 8, 0}};
  trace.meta.backend = "sim";
  const uint32_t worker = trace.intern("worker0"), ps = trace.intern("ps0");
  const uint32_t gpu = trace.intern("pc1/gpu0"), cpu = trace.intern("pc2/cpu");
  auto compute = [&](const char* label, core::OpKind op, uint32_t actor, uint32_t device,
                     double start, double end) {
    core::TraceEvent e;
    e.kind = core::EventKind::kCompute;
    e.op = op;
    e.actor = actor;
    e.client = worker;
    e.device = device;
    e.label = trace.intern(label);
    e.step = 0;
    e.start_s = start + shift_s;
    e.end_s = end + shift_s;
    e.flop = 1e9;
    trace.events.push_back(e);
  };
  compute("fwd/a", core::OpKind::kForward, worker, gpu, 1, 2);
  compute("fwd/b", core::OpKind::kForward, worker, gpu, 3, 4);
  core::TraceEvent send;
  send.kind = core::EventKind::kTransfer;
  send.op = core::OpKind::kSend;
  send.producer = core::OpKind::kBackward;
  send.actor = worker;
  send.client = worker;
  send.device = gpu;
  send.peer_actor = ps;
  send.peer = cpu;
  send.label = trace.intern("send/grad");
  send.step = 0;
  send.start_s = 2 + shift_s;
  send.end_s = 2.5 + shift_s;
  send.bytes = 1e6;
  send.message_id = 0;
  trace.events.push_back(send);
  compute("apply/w", core::OpKind::kApply, ps, cpu, 2.5, 2.75);
  core::TraceEvent step;
  step.kind = core::EventKind::kStep;
  step.actor = worker;
  step.client = worker;
  step.step = 0;
  step.start_s = 0.5 + shift_s;
  step.end_s = 4.5 + shift_s;
  step.global_step_read = 0;
  trace.events.push_back(step);
  core::TraceEvent update;
  update.kind = core::EventKind::kUpdate;
  update.op = core::OpKind::kGlobalStepIncrement;
  update.actor = worker;
  update.client = worker;
  update.device = cpu;
  update.label = trace.intern("global_step_increment");
  update.step = 0;
  update.start_s = update.end_s = 2.75 + shift_s;
  update.global_step_read = 0;
  update.global_step_after = 1;
  update.samples = 32;
  trace.events.push_back(update);
  trace.outcome.end_s = 4.5 + shift_s;
  return trace;
}

core::Trace tiny_objective_trace(double target_accuracy) {
  core::Trace trace = tiny_trace();
  trace.meta.objective_target = "accuracy";
  trace.meta.objective_target_value = target_accuracy;
  const uint32_t step = trace.intern("global_step"), loss = trace.intern("loss");
  const uint32_t accuracy = trace.intern("accuracy");
  trace.counters = {{step, 0, 0},    {loss, 0, 1.2},    {accuracy, 0, 0.4},
                    {step, 2.75, 1}, {loss, 2.75, 0.6}, {accuracy, 2.75, 0.8}};
  return trace;
}

std::shared_ptr<const TimelineModel> tiny_model(double shift_s) {
  return std::make_shared<const TimelineModel>(tiny_trace(shift_s), "tiny");
}

int lane_named(const TimelineModel& model, const std::string& actor, const std::string& label) {
  for (size_t l = 0; l < model.lanes().size(); ++l) {
    if (model.lanes()[l].label == label && model.process_name(model.lanes()[l].process) == actor) {
      return int(l);
    }
  }
  return -1;
}

std::string temporary_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("replisim_gui_tests_" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  return (folder / (std::string(info ? info->name() : "x") + "_" + name)).string();
}

void write_native(const core::Trace& trace, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  core::write_trace_binary(out, trace);
}

}  // namespace replisim::gui::test
