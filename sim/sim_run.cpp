// Set-up, the driver actor and the outcome of one simulation run.
#include "sim/sim_run.h"

#include <malloc.h>

#include <algorithm>

#include <xbt/log.h>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include "core/base/units.h"
#include "core/runtime/recovery_timeline.h"
#include "sim/sim_engine.h"
#include "sim/sim_platform.h"
#include "sim/sim_sharing.h"

namespace replisim::sim {
namespace detail {

namespace {

// Above this many devices in use the actors' stacks go without guard pages (build_platform).
constexpr long kGuardPagesUpToDevices = 2000;
// glibc's initial mmap threshold (mallopt(3)).
constexpr int kMmapThresholdBytes = 128 * 1024;
// Blocks glibc may serve with mmap: far above the actors of any run (mallopt(3); default 65,536).
constexpr int kMmapMaxBlocks = 1 << 24;

// Which plan devices run at least one op.
std::vector<bool> devices_used(const std::vector<const core::ClientGraph*>& graphs,
                               size_t devices) {
  std::vector<bool> used(devices, false);
  for (const core::ClientGraph* graph : graphs) {
    for (const Op& op : graph->ops) used[size_t(op.device)] = true;
  }
  return used;
}

}  // namespace

SimRun::SimRun(const core::Plan& plan, core::TraceSink& sink, Progress progress,
               const SimSettings& settings)
    : plan_(plan),
      progress_(std::move(progress)),
      settings_(settings),
      recorder_(plan, sink),
      graphs_(core::step_graphs(plan)),
      loop_(plan, graphs_, *this),
      links_(plan, recorder_, outcome_.notes),
      network_(plan, *this, links_),
      sync_(plan, recorder_, *this),
      recovery_(plan, recorder_, outcome_.notes),
      steady_(plan),
      steps_limit_(plan.steps) {
  for (const core::ClientGraph* graph : graphs_) clients_.emplace_back(*graph);
  if (core::objective_computed_by_simulator(plan)) {
    values_ = std::make_unique<core::ValueEngine>(plan);
    record_evaluation(values_->evaluate_now(0), 0.0);
  }
  if (plan.sync == core::kAllReduceSync) {
    SimCollectives::Hooks hooks;
    hooks.now_s = [] { return sg4::Engine::get_clock(); };
    hooks.at = [this](double at_s, std::function<void()> work) {
      // Keys wrap after 2^26 waiting at once (far more than ever wait): FIFO among equal times.
      const int key = next_deferred_;
      next_deferred_ = (next_deferred_ + 1) & ((1 << 26) - 1);
      deferred_[key] = std::move(work);
      timers_.push({at_s, (1 << 28) + key, TimerKind::kDeferred, key});
      driver_wake_->notify_all();
    };
    hooks.complete = [this](int c, int op) {
      loop_.enqueue(c, op);
      loop_.drain();
    };
    hooks.incarnation = [this](int c) { return clients_[size_t(c)].incarnation; };
    hooks.client_dead = [this](int c) { return clients_[size_t(c)].dead; };
    collectives_.emplace(plan, network_, recorder_, std::move(hooks),
                         settings.collective_fast_path);
  }
}

// The network model, the connections, and the platform's hosts and links for the devices the
// plan uses (and the process endpoints the connections need).
void SimRun::build_platform() {
  configure_network_model(plan_.platform.network_model);
  configure_sim_settings(settings_);
  const std::vector<bool> used = devices_used(graphs_, plan_.platform.devices.size());
  if (std::count(used.begin(), used.end(), true) > kGuardPagesUpToDevices) {
    // Each actor's stack has a guard page, two memory mappings per actor, and the kernel allows
    // 65,530 per process (vm.max_map_count; simgrid-notes.md section 6): a device has a compute
    // actor per core, a receiver and a pooled transfer actor per connection it has in flight
    // (none with the exact sharing model, except while it hands its flows to SimGrid: then an
    // actor per flow in flight carries it).
    sg4::Engine::set_config("contexts/guard-size", 0);
    // Without a guard page SimGrid 3.32 allocates each stack with calloc (ContextSwapped.cpp).
    // glibc serves a request above its mmap threshold with fresh zero pages, touched only as the
    // stack grows; but the threshold rises as large blocks are freed (up to 32 MiB), and calloc
    // from the heap zeroes all 8 MiB: measured, 1,024 workers peaked at 2.3 GB against 127 MB
    // at 512. A fixed threshold (which also stops its rise) keeps stacks in mmap.
    mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
    // glibc serves at most 65,536 blocks with mmap (M_MMAP_MAX) and takes the rest from the
    // heap, zeroed: at 8,192 workers (over 65,536 actors) the simulation grew to 10 GB, 16,384
    // was killed at 23 GB. Adjacent anonymous mappings merge, so the kernel's limit on mappings
    // is not reached.
    mallopt(M_MMAP_MAX, kMmapMaxBlocks);
  }
  bool degraded_links = false, switch_fault = false;
  for (const core::PlanFault& f : plan_.faults) {
    degraded_links |= f.kind == core::PlanFaultKind::kLink && f.factor > 0;
    switch_fault |=
        f.kind == core::PlanFaultKind::kLink && !plan_.platform.links[size_t(f.link)].split_duplex;
  }
  const bool no_crosstraffic =
      degraded_links && plan_.platform.network_model == core::NetworkModel::kLv08;
  if (no_crosstraffic) {
    // SimGrid 3.32's update of flow penalties on a bandwidth change assumes each flow saw the
    // link's previous bandwidth when it started, which LV08's reverse traffic breaks (negative
    // penalty, abort): with a link degraded at run time, the reverse-traffic term is off.
    sg4::Engine::set_config("network/crosstraffic:0");
  }
  network_.prepare(graphs_);
  if (collectives_) collectives_->prepare();
  const SimPlatform platform =
      build_sim_platform(plan_.platform, used, switch_fault, network_.process_endpoints(),
                         network_.processes().names.size());
  // SimGrid sets the model's latency factor when the platform creates the model.
  network_.set_latency_factor(network_latency_factor());
  devices_.resize(platform.hosts.size());
  for (size_t d = 0; d < platform.hosts.size(); ++d) devices_[d].host = platform.hosts[d];
  endpoint_hosts_ = platform.endpoint_hosts;
  network_.set_device_hosts(platform.hosts);
  service_host_ = platform.service_host;
  if (no_crosstraffic) {
    outcome_.notes.push_back(
        "a link fault changes a bandwidth at run time, so LV08's reverse-traffic term (5% of each "
        "flow on the opposite direction) is off in this run");
  }
}

void SimRun::create_actors() {
  const std::vector<bool> used = devices_used(graphs_, plan_.platform.devices.size());
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!used[d]) continue;
    DeviceState& device = devices_[d];
    const int index = int(d);
    for (int core = 0; core < plan_.platform.devices[d].cores; ++core) {
      device.compute_actors.push_back(
          sg4::Actor::create(plan_.platform.devices[d].name + "/compute." + std::to_string(core),
                             device.host, [this, index, core] { compute_loop(index, core); }));
      device.compute_actors.back()->daemonize();
    }
    network_.create_receiver(index, device.host);
  }
  for (size_t e = 0; e < endpoint_hosts_.size(); ++e) {
    network_.create_receiver(int(devices_.size() + e), endpoint_hosts_[e]);
  }
  network_.create_mailboxes();
  use_sharing_model();
  // The driver runs on the service host: a fault on a device must not stop the step loop.
  sg4::Actor::create("driver", service_host_, [this] { driver(); });
  if (settings_.internal_error_at_s >= 0) {
    const double at_s = settings_.internal_error_at_s;
    sg4::Actor::create("internal-error", service_host_, [at_s] {
      sg4::this_actor::sleep_until(at_s);
      REPLISIM_ASSERT(at_s < 0, "a broken invariant on purpose (SimSettings::internal_error_at_s)");
    })->daemonize();
  }
}

SharingStats SimRun::sharing_stats() const {
  return network_.sharing_engine() ? network_.sharing_engine()->stats() : SharingStats{};
}

// The `auto` engine's exact sharing model (sim_sharing.h), in runs without faults (a fault
// changes bandwidths, turns hosts off or holds flows, none of which the model knows).
void SimRun::use_sharing_model() {
  // LV08's reverse traffic: SimGrid 3.32 puts 5% of each flow on its reverse route
  // (NetworkCm02Model::comm_action_expand_constraints, a constant, not a configuration key).
  constexpr double kCrossTrafficCoefficient = 0.05;
  if (settings_.network_engine != NetworkEngine::kAuto || !plan_.faults.empty()) return;
  std::vector<std::string> nic_names;
  for (int nic : plan_.platform.nic_links())
    nic_names.push_back(plan_.platform.links[size_t(nic)].name);
  const bool crosstraffic = simgrid::config::get_value<bool>("network/crosstraffic");
  network_.use_sharing_model(service_host_, nic_names,
                             simgrid::config::get_value<double>("network/bandwidth-factor"),
                             crosstraffic ? kCrossTrafficCoefficient : 0.0);
}

// Starts every client at its start-up offset, then serves delayed step starts, faults and
// restarts until all clients have finished with no restart pending (the only non-daemon actor:
// the simulation ends when it returns).
void SimRun::driver() {
  for (size_t c = 0; c < clients_.size(); ++c) {
    timers_.push({clients_[c].graph->start_offset_s, -1 - int(c), TimerKind::kStart, int(c), 0});
  }
  schedule_faults();
  std::unique_lock<sg4::Mutex> lock(*driver_mutex_);
  while (finished_clients_ < int(clients_.size()) || recovery_.job_down()) {
    if (timers_.empty()) {
      driver_wake_->wait(lock);
      continue;
    }
    const Timer timer = timers_.top();
    if (timer.at_s > sg4::Engine::get_clock()) {
      driver_wake_->wait_until(lock, timer.at_s);
      continue;
    }
    timers_.pop();
    serve(timer);
    loop_.drain();
  }
}

void SimRun::serve(const Timer& timer) {
  switch (timer.kind) {
    case TimerKind::kStart:
    case TimerKind::kStep:
    case TimerKind::kFinish:
    case TimerKind::kRollback:
      if (clients_[size_t(timer.index)].incarnation != timer.incarnation) return;
      if (timer.kind == TimerKind::kRollback) {
        clients_[size_t(timer.index)].awaiting_restart = false;
        loop_.resume_steps(timer.index);
      } else if (timer.kind == TimerKind::kStart) {
        if (!clients_[size_t(timer.index)].dead)
          clients_[size_t(timer.index)].awaiting_restart = false;
        loop_.start_client(timer.index);
      } else if (timer.kind == TimerKind::kStep) {
        loop_.start_step(timer.index);
      } else if (!clients_[size_t(timer.index)].dead) {
        loop_.mark_finished(timer.index);
      }
      return;
    case TimerKind::kFault:
    case TimerKind::kFaultEnd:
      inject_fault(timer.index, timer.kind == TimerKind::kFaultEnd);
      return;
    case TimerKind::kDetect:
      detect_job_failure();
      return;
    case TimerKind::kRestart:
      restart_job();
      return;
    case TimerKind::kResumed:
      recovery_.resumed();
      return;
    case TimerKind::kDeferred: {
      auto found = deferred_.find(timer.index);
      if (found == deferred_.end()) return;
      const std::function<void()> work = std::move(found->second);
      deferred_.erase(found);
      work();
      return;
    }
  }
}

void SimRun::report_progress() {
  if (!progress_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_progress_) return;
  next_progress_ = now + kProgressEvery;
  core::RunProgress p;
  p.time_s = sg4::Engine::get_clock();
  p.global_step = global_step_;
  for (size_t c = 0; c < plan_.clients.size(); ++c)
    p.steps_done.push_back(loop_.client(int(c)).step);
  progress_(p);
}

// How the run ended (restarts, a job failure, a sync stall; a deadlock is a backend error) and
// the faults that struck after it.
void SimRun::record_outcome() {
  recovery_.finish(outcome_);
  const bool hung_at_barrier = sync_.barriers() && finished_clients_ < int(clients_.size());
  if (!outcome_.job_failure && collectives_ && finished_clients_ < int(clients_.size())) {
    // An all-reduce waits for a rank that will not come (SimGrid found every actor blocked).
    int live = 0;
    for (size_t c = 0; c < clients_.size(); ++c) live += clients_[c].dead ? 0 : 1;
    outcome_.stall = core::StallRecord{last_update_s_, global_step_, live, sg4::Engine::get_clock(),
                                       collectives_->waiting_for()};
  } else if (!outcome_.job_failure &&
             ((sync_.enabled() && global_step_ < steps_limit_) || hung_at_barrier)) {
    // Synchronous training stopped: SimGrid found every actor blocked (a take waiting for
    // gradients no live worker will send, workers waiting for tokens or at a barrier).
    std::vector<bool> finished, dead;
    for (size_t c = 0; c < clients_.size(); ++c) {
      finished.push_back(loop_.client(int(c)).finished);
      dead.push_back(clients_[c].dead);
    }
    outcome_.stall = sync_.stall(finished, dead, last_update_s_, sg4::Engine::get_clock());
  } else if (!outcome_.job_failure && finished_clients_ < int(clients_.size())) {
    throw core::BackendError(
        "the simulation deadlocked at t=" + std::to_string(sg4::Engine::get_clock()) + " s with " +
        std::to_string(clients_.size() - size_t(finished_clients_)) + " client(s) unfinished");
  }
  if (collectives_ && collectives_->formed() > 0) {
    outcome_.notes.push_back(
        "all-reduce: " + std::to_string(collectives_->formed()) + " collective(s), " +
        std::to_string(collectives_->carried_whole()) +
        " of them rings carried whole (nothing else on their links; docs/allreduce.md)");
  }
  const double end_s = sg4::Engine::get_clock();
  core::note_faults_after_the_end(plan_, end_s, 0, outcome_.notes);
  outcome_.end_s = end_s;
  if (steady_.enabled()) outcome_.steady_state = steady_.record(end_s);
}

core::RunOutcome SimRun::run(const std::function<void(const core::RunOutcome&)>& finished) {
  const auto setup_started = std::chrono::steady_clock::now();
  sg4::Engine engine("replisim");
  xbt_log_control_set("xbt_cfg.thres:warning");
  build_platform();
  if (sync_.enabled() || sync_.barriers()) sync_.reset();
  std::vector<sg4::Host*> hosts;
  for (const DeviceState& d : devices_) hosts.push_back(d.host);
  apply_slowdowns(plan_, hosts, recorder_);
  driver_mutex_ = sg4::Mutex::create();
  driver_wake_ = sg4::ConditionVariable::create();
  links_.start();
  create_actors();
  const auto start = std::chrono::steady_clock::now();
  setup_wall_s_ = std::chrono::duration<double>(start - setup_started).count();
  next_progress_ = start + kProgressEvery;
  engine.run();
  engine_wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record_outcome();
  if (finished) finished(outcome_);
  return outcome_;
}

}  // namespace detail

SimResult run_plan_in_this_process(const core::Plan& plan, core::TraceSink& sink,
                                   const std::function<void(const core::RunProgress&)>& progress,
                                   const SimSettings& settings,
                                   const std::function<void(const SimResult&)>& finished) {
  detail::SimRun run(plan, sink, progress, settings);
  SimResult result;
  auto collect = [&run, &result](const core::RunOutcome& outcome) {
    result.outcome = outcome;
    result.engine_wall_s = run.engine_wall_s();
    result.setup_wall_s = run.setup_wall_s();
    result.sharing = run.sharing_stats();
  };
  run.run([&](const core::RunOutcome& outcome) {
    collect(outcome);
    if (finished) finished(result);
  });
  return result;
}

}  // namespace replisim::sim
