#include "real/node/step_runner.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/base/json_cursor.h"  // join_names
#include "core/values/gradient_flow.h"
#include "real/compute/gpu.h"
#include "real/node/device_values.h"
#include "real/node/objective_values.h"
#include "real/node/payload.h"
#include "real/node/tensor_transfers.h"

namespace replisim::real::detail {

using core::gradient_flow;
using core::GradientFlow;
using core::Op;
using core::OpKind;

StepRunner::StepRunner(Host& host, Setup setup)
    : host_(host),
      setup_(setup),
      plan_(*setup.plan),
      graphs_(core::step_graphs(plan_)),
      transfers_(std::make_unique<TensorTransfers>(host, *this, plan_, setup.self)) {
  for (const std::vector<core::PlanGemm>& list : plan_.gemm_lists) {
    std::vector<SampleGemm>& out = sample_gemms_.emplace_back();
    for (const core::PlanGemm& g : list) out.push_back({g.m, g.n, g.k, g.batch_dim});
  }
  build_parts();
}

StepRunner::~StepRunner() {
  // The devices' threads first: a compute job still running (a job failure stops the node
  // mid-step) reads values_ and the parts.
  for (auto& [device, engine] : engines_) engine->stop();
  if (copier_) copier_->stop();
  values_.reset();  // its copy threads, before the memories they copy to
  engines_.clear();
  copier_.reset();
}

void StepRunner::build_parts() {
  parts_.reserve(graphs_.size());
  for (size_t g = 0; g < graphs_.size(); ++g) {
    const core::ClientGraph& graph = *graphs_[g];
    const size_t n = graph.ops.size();
    std::vector<bool> mine(n);
    std::vector<uint32_t> task_of(n);
    for (size_t k = 0; k < n; ++k) {
      task_of[k] = uint32_t(setup_.map->task_of_role[size_t(graph.ops[k].role)]);
      mine[k] = task_of[k] == setup_.self;
    }
    Part& p = parts_.emplace_back(graph, int(g), mine);
    p.task_of_op = task_of;
    p.owner_task = uint32_t(setup_.map->task_of_role[size_t(graph.role)]);
    p.owner = p.owner_task == setup_.self;
    std::set<uint32_t> participants;
    p.notify.assign(n, {});
    for (size_t k = 0; k < n; ++k) {
      if (task_of[k] != p.owner_task) participants.insert(task_of[k]);
      for (int in : graph.ops[k].inputs) {
        const Op& producer = graph.ops[size_t(in)];
        const bool tensor = producer.kind == OpKind::kSend && producer.peer == int(k);
        std::vector<uint32_t>& to = p.notify[size_t(in)];
        if (!tensor && task_of[size_t(in)] != task_of[k] &&
            std::find(to.begin(), to.end(), task_of[k]) == to.end()) {
          to.push_back(task_of[k]);
        }
      }
    }
    if (p.owner) p.participants.assign(participants.begin(), participants.end());
    GradientFlow flow = gradient_flow(graph);
    p.gradient_variable = std::move(flow.variable);
    p.gradients_of = std::move(flow.produces);
    p.out.assign(n, nullptr);
    p.gradients.assign(n, {});
    p.tensor_in.assign(n, 0);
  }
  loop_.emplace(plan_, graphs_, *this);
}

// One engine per device this task runs ops on. The plan's GPUs of this task take this machine's
// CUDA devices in device order (the k-th GPU: CUDA device k, modulo their count; CUDA_VISIBLE_
// DEVICES picks which); without a usable one they run on the CPU engine, and the report says so,
// with a stand-in of the device's memory (device_memory.h) holding the values it would hold.
std::vector<std::string> StepRunner::open_engines() {
  std::set<int> devices;
  for (const Part& p : parts_) {
    for (size_t k = 0; k < p.graph->ops.size(); ++k) {
      if (p.mine[k]) devices.insert(p.graph->ops[k].device);
    }
  }
  int gpus = 0;
  std::string why_not;
  std::vector<std::string> on_gpu;
  for (int d : devices) {
    const core::PlatformDevice& device = plan_.platform.devices[size_t(d)];
    std::unique_ptr<GpuDevice> gpu;
    if (device.kind == core::DeviceKind::kGpu) {
      gpu = open_gpu(gpus++, &why_not);
      if (gpu) on_gpu.push_back(device.name + " on " + gpu->description());
    }
    const bool stand_in = device.kind == core::DeviceKind::kGpu && !gpu;
    engines_[d] = std::make_unique<DeviceEngine>(device.name, std::max(1, device.cores),
                                                 std::move(gpu), stand_in);
  }
  copier_ = std::make_unique<DeviceEngine>("copies", 2);
  values_ = std::make_unique<DeviceValues>(
      plan_, parts_, [this](int d) -> DeviceEngine& { return engine(d); },
      [this](int v) { return gradient_floats(v); });
  std::vector<std::string> notes;
  if (!on_gpu.empty()) notes.push_back("GPU ops ran with cuBLAS: " + core::join_names(on_gpu));
  if (int(on_gpu.size()) < gpus) {
    notes.push_back("GPU ops ran on the CPU engine (OpenBLAS): " + why_not);
  }
  return notes;
}

std::vector<std::string> StepRunner::device_memory_summaries() const {
  return values_ ? values_->summaries() : std::vector<std::string>{};
}

void StepRunner::abandon(int g) {
  Part& p = parts_[size_t(g)];
  p.active = false;
  loop_->client(g).finished = true;
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& gradients : p.gradients) gradients.clear();
  std::fill(p.tensor_in.begin(), p.tensor_in.end(), 0);
  p.early.clear();
}

void StepRunner::roll_back(int g) {
  Part& p = parts_[size_t(g)];
  ++p.attempt;
  p.active = false;
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& gradients : p.gradients) gradients.clear();
  std::fill(p.tensor_in.begin(), p.tensor_in.end(), 0);
  p.early.clear();
}

void StepRunner::after_work(std::function<void()> then) {
  if (work_pending_ == 0) {
    then();
    return;
  }
  after_work_.push_back(std::move(then));
}

void StepRunner::work_ended() {
  if (--work_pending_ > 0 || after_work_.empty()) return;
  // After the completion that called this has run (it may still touch its part).
  for (std::function<void()>& then : std::exchange(after_work_, {})) host_.post(std::move(then));
}

void StepRunner::resume_after_rollback(int g, int step, int64_t global_step) {
  if (loop_->client(g).finished) return;
  loop_->resume(g, step, global_step);
  loop_->resume_steps(g);
}

// StepHost: the loop's hooks on this task's clock and sockets.
void StepRunner::begin_step(int g) {
  Part& p = parts_[size_t(g)];
  const core::LoopClient& loop = loop_->client(g);
  p.done_parts = 0;
  p.local_done = false;
  p.read_seen = -1;
  const int64_t local = loop.loop == core::LoopKind::kSyncWorker ? loop.next_local_step : 0;
  for (uint32_t t : p.participants) {
    host_.send_frame(t, channel::kRun, loop.step, uint64_t(g), pack_i64({local}));
  }
  begin_part(p, loop.step, local);
}

void StepRunner::begin_part(Part& p, int64_t step, int64_t local_step) {
  p.step = step;
  p.active = true;
  p.local_step = local_step;
  p.global_step_read = host_.global_step_here();
  p.steps.begin_step();
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
  std::fill(p.tensor_in.begin(), p.tensor_in.end(), 0);
  if (p.steps.op_count() == 0) {  // the chief's sync op: every op on the parameter servers
    part_done(p);
    return;
  }
  for (int op : p.steps.roots()) {
    if (op != p.graph->input_op || !p.owner) loop_->dispatch(p.index, op);
  }
  replay_early(p);
}

void StepRunner::replay_early(Part& p) {
  auto found = p.early.find(p.step);
  if (found == p.early.end()) return;
  std::vector<Early> early = std::move(found->second);
  p.early.erase(found);
  for (const Early& e : early) transfers_->arrive(p, e);
}

void StepRunner::recv(int g, int op) {
  if (parts_[size_t(g)].tensor_in[size_t(op)]) loop_->complete(g, op);
  // otherwise it completes when its tensor arrives
}

void StepRunner::complete_now(int g, int op) {
  Part& p = parts_[size_t(g)];
  if (host_.client_dead(g)) return;  // its client died: nothing follows
  if (!p.active) throw std::logic_error("an op completed outside its step");
  if (p.steps.mine(op)) transfers_->notify_remote(p, op);
  if (p.steps.complete(op, [this, g](int next) { loop_->dispatch(g, next); })) part_done(p);
}

void StepRunner::part_done(Part& p) {
  if (p.owner) {
    p.local_done = true;
    maybe_finish_step(p);
    return;
  }
  p.active = false;
  const int64_t now = host_.global_step_here();
  host_.send_frame(p.owner_task, channel::kDone, p.step, uint64_t(p.index),
                   pack_i64({p.global_step_read, now}));
  if (objective_) objective_->keep_reads(p);  // reads after the backward pass (an in-graph tower)
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
}

void StepRunner::maybe_finish_step(Part& p) {
  if (p.local_done && p.done_parts == p.participants.size()) finish_step(p);
}

// Every part of the owner's step is done: the step is over.
void StepRunner::finish_step(Part& p) {
  p.active = false;
  // Reads after the backward pass (distributed_replicated's copies, refreshed at the step's end)
  // are the next step's values.
  if (objective_) objective_->keep_reads(p);
  std::fill(p.out.begin(), p.out.end(), nullptr);
  for (auto& g : p.gradients) g.clear();
  if (p.global_step_read >= 0) p.read_seen = p.global_step_read;
  loop_->step_done(p.index);
}

void StepRunner::step_ended(int g, int step, double start_s, double end_s) {
  const Part& p = parts_[size_t(g)];
  const int64_t read =
      loop_->client(g).loop == core::LoopKind::kSyncWorker ? p.local_step : p.read_seen;
  host_.recorder().step(g, step, start_s, end_s, read);
}

void StepRunner::step_counted(int g, double start_s, double end_s) {
  host_.step_counted(g, loop_->client(g).step, start_s, end_s);
}

bool StepRunner::is_chief(int g) const {
  return g < int(plan_.clients.size()) && plan_.roles[size_t(graphs_[size_t(g)]->role)].chief;
}

// The loop's continuations below are dropped when a rollback came between (Part::attempt).
bool StepRunner::session_checkpoint(int g, bool, std::function<void(double)> then) {
  return host_.session_checkpoint(
      g, [this, g, attempt = parts_[size_t(g)].attempt, then = std::move(then)](double ready_s) {
        if (parts_[size_t(g)].attempt == attempt) then(ready_s);
      });
}

void StepRunner::chief_duties(int g, double, std::function<void(double)> then) {
  host_.chief_duties(g, [this, g, attempt = parts_[size_t(g)].attempt, then = std::move(then)] {
    if (parts_[size_t(g)].attempt == attempt) then(0);
  });
}

void StepRunner::start_step_at(int g, double at_s) {
  if (at_s <= now_s()) {
    loop_->start_step(g);
    return;
  }
  host_.at_run_time(at_s, true, [this, g, attempt = parts_[size_t(g)].attempt] {
    if (parts_[size_t(g)].attempt == attempt) loop_->start_step(g);
  });
}

void StepRunner::finish_at(int g, double at_s) {
  if (at_s <= now_s()) {
    loop_->mark_finished(g);
    return;
  }
  host_.at_run_time(at_s, true, [this, g, attempt = parts_[size_t(g)].attempt] {
    if (parts_[size_t(g)].attempt == attempt) loop_->mark_finished(g);
  });
}

// The input pipeline's batch on the input op's device.
void StepRunner::produce(int g, int64_t batch) {
  const Op& input = parts_[size_t(g)].graph->ops[size_t(parts_[size_t(g)].graph->input_op)];
  const double flop = input.compute_flop;
  const int threads = setup_.threads;
  ++work_pending_;
  DeviceEngine* device = &engine(input.device);
  const uint64_t attempt = parts_[size_t(g)].attempt;
  device->submit([this, device, g, batch, flop, threads, attempt] {
    const double start_s = now_s();
    const double done = device->execute(flop, threads);
    const double end_s = now_s();
    host_.post([this, g, batch, start_s, end_s, done, attempt] {
      work_ended();
      host_.recorder().compute(g, parts_[size_t(g)].graph->input_op, batch, start_s, end_s, done);
      if (parts_[size_t(g)].attempt != attempt) return;  // a rollback restarted the pipeline
      loop_->batch_produced(g);
    });
  });
}

}  // namespace replisim::real::detail
