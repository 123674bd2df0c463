// The "real" backend's launcher: one `replisim node` process per task, their progress and
// failures, the restarts after a job failure, and the merge of their traces.
#include "real/backend/real_backend.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include <cblas.h>
#include <fcntl.h>
#include <unistd.h>
#include <asio/version.hpp>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/runtime/recovery_timeline.h"
#include "core/trace/trace_format.h"
#include "core/trace/trace_merge.h"
#include "real/backend/launcher.h"
#include "real/cluster.h"
#include "real/isolate/shaped_links.h"
#include "real/node/node.h"
#include "real/node/objective_values.h"

namespace replisim::real {
namespace {

namespace fs = std::filesystem;
using core::InputError;

struct Settings {
  int threads = 1;
  std::string checkpoint_dir;
  std::string node_binary;  // "": this executable
  bool node_is_self = false;
  double connect_timeout_s = 30;
  std::string isolate;  // "" (loopback) or "netns" (a shaped network namespace per machine)
  bool insecure_frames = false;  // the nodes' frames without MACs
};

Settings read_settings(const nlohmann::json& j) {
  Settings s;
  if (!j.is_object()) throw InputError("", "settings", "must be an object");
  for (const auto& [key, value] : j.items()) {
    if (key == "threads" && value.is_number_integer() && value.get<int64_t>() >= 1 &&
        value.get<int64_t>() <= 64) {
      s.threads = value.get<int>();
    } else if (key == "checkpoint_dir" && value.is_string()) {
      s.checkpoint_dir = value.get<std::string>();
    } else if (key == "node_binary" && value.is_string() && !value.get<std::string>().empty()) {
      s.node_binary = value.get<std::string>();
    } else if (key == "connect_timeout_s" && value.is_number() && value.get<double>() > 0 &&
               value.get<double>() <= 3600) {
      s.connect_timeout_s = value.get<double>();
    } else if (key == "isolate" && value.is_string() && (value == "netns" || value == "none")) {
      s.isolate = value == "netns" ? "netns" : "";
    } else if (key == "insecure_frames" && value.is_boolean()) {
      s.insecure_frames = value.get<bool>();
    } else {
      throw InputError("", key,
                       "not a setting of the real backend, or a bad value (threads 1..64, "
                       "checkpoint_dir, node_binary, connect_timeout_s 0..3600, isolate "
                       "netns|none, insecure_frames)");
    }
  }
  if (s.node_binary.empty()) {
    s.node_is_self = true;
    std::error_code ec;
    s.node_binary = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec) s.node_binary = "/proc/self/exe";
  }
  return s;
}

}  // namespace

core::BackendInfo RealBackend::info() const {
  // The engines a real trace was measured with ("Asio 1.28.1", OpenBLAS's build line).
  std::string blas = openblas_get_config();
  while (!blas.empty() && blas.back() == ' ') blas.pop_back();
  const std::string asio = "Asio " + std::to_string(ASIO_VERSION / 100000) + "." +
                           std::to_string(ASIO_VERSION / 100 % 1000) + "." +
                           std::to_string(ASIO_VERSION % 100);
  return {kName,
          "runs the plan on real processes of this machine over loopback TCP",
          {{"asio", asio}, {"blas", blas}}};
}

namespace {

// What one incarnation of the run ended with.
struct Incarnation {
  std::vector<core::Trace> parts;  // every task's
  int job_fault = -1;              // the job fault that killed one of its tasks, or -1
  // A death from outside that failed the job (kind kJob; core::death_of_roles): at_s and the
  // description are the failure its tasks recorded (the first to see it).
  std::optional<core::PlanFault> unplanned_job_fault;
  bool failed() const { return job_fault >= 0 || unplanned_job_fault.has_value(); }
  const core::PlanFault& fault(const core::Plan& plan) const {
    return job_fault >= 0 ? plan.faults[size_t(job_fault)] : *unplanned_job_fault;
  }
};

// The tasks each death fault of the plan kills.
std::vector<std::set<int>> victims_of_faults(const core::Plan& plan, const TaskMap& map) {
  std::vector<std::set<int>> victims(plan.faults.size());
  for (size_t f = 0; f < plan.faults.size(); ++f) {
    for (int r : plan.faults[f].roles) victims[f].insert(map.task_of_role[size_t(r)]);
    for (int c : plan.faults[f].clients) {
      victims[f].insert(map.task_of_role[size_t(plan.clients[size_t(c)].role)]);
    }
  }
  return victims;
}

// The fault that killed task `t` (its part says when): the latest death fault of the incarnation
// (started at `from_s`) with `t` among its victims that had struck by then.
int fault_that_killed(const core::Plan& plan, const std::vector<std::set<int>>& victims, int t,
                      double killed_s, double from_s) {
  int found = -1;
  for (size_t f = 0; f < plan.faults.size(); ++f) {
    const core::PlanFault& fault = plan.faults[f];
    // A killed task records the time of its fault (killed_s).
    if (!fault.is_death() || victims[f].count(t) == 0 || fault.at_s < from_s ||
        fault.at_s > killed_s + 1e-9) {
      continue;
    }
    if (found < 0 || fault.at_s >= plan.faults[size_t(found)].at_s) found = int(f);
  }
  return found;
}

// The launcher's facts for the restart after incarnation `ended` failed by its job fault.
nlohmann::json resume_facts(const core::Plan& plan, const Incarnation& ended, int incarnation,
                            double origin_clock_s, double previous_resumed_s) {
  const core::PlanFault& fault = ended.fault(plan);
  // Every surviving task stopped at the plan's detection time (its timer), or, after a death from
  // outside, when it saw it (at once: a killed process's connections reset); the restart follows
  // restart_delay after that, as the simulation has them. The global step then is the last
  // update's.
  const core::RecoveryTimeline timeline(plan.recovery);
  const double detected_s = ended.job_fault >= 0 ? timeline.detected_s(fault.at_s) : fault.at_s;
  int64_t global_step = 0;
  for (const core::Trace& t : ended.parts) {
    for (const core::TraceEvent& e : t.events) {
      if (e.kind == core::EventKind::kUpdate && e.end_s <= detected_s) {
        global_step = std::max(global_step, e.global_step_after);
      }
    }
  }
  nlohmann::json facts = {{"incarnation", incarnation},
                          {"origin_clock_s", origin_clock_s},
                          {"fault", ended.job_fault},
                          {"fault_s", fault.at_s},
                          {"detected_s", detected_s},
                          {"restart_s", timeline.restart_s(detected_s)},
                          {"global_step_at_failure", global_step},
                          {"previous_resumed_s", std::min(previous_resumed_s, fault.at_s)}};
  if (ended.job_fault < 0) {
    facts["cause"] = fault.description;
    facts["actor"] =
        fault.roles.empty() ? std::string("job") : plan.roles[size_t(fault.roles.front())].name;
  }
  return facts;
}

double monotonic_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

namespace {

// One `run`: its directory, the cluster on loopback (listening sockets held across restarts), the
// coordinator's progress pipe, and each incarnation's processes.
class Launch {
 public:
  Launch(const core::Plan& plan, const Settings& settings, const core::RunOptions& options)
      : plan_(plan), settings_(settings), options_(options), dir_{launch::make_run_dir()} {
    spec_.tasks = tasks_of_plan(plan);
    spec_.token = launch::random_token();
    plan_file_ = dir_.path / "plan.json";
    cluster_file_ = dir_.path / "cluster.json";
    map_ = map_roles(plan, spec_, cluster_file_.string());
    if (settings.isolate == "netns") network_ = std::make_unique<isolate::ShapedLinks>(plan);
    for (size_t t = 0; t < spec_.tasks.size(); ++t) {
      ClusterTask& task = spec_.tasks[t];
      if (network_) {
        const int machine = machine_of_task(t);
        task.host = network_->net.address(size_t(machine));
        listeners_.push_back(network_->net.listen(size_t(machine), &task.port));
      } else {
        task.host = "127.0.0.1";
        listeners_.push_back(launch::listen_loopback(&task.port));
      }
    }
    std::string text;
    core::write_plan_json(plan, 1, [&text](const std::string& piece) { text += piece; });
    launch::write_text(plan_file_, text + "\n");
    launch::write_text(cluster_file_,
                       core::dump_json(cluster_spec_to_json(spec_, false), 1) + "\n");
    victims_ = victims_of_faults(plan, map_);
    assign_cores();
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw core::BackendError(std::string("pipe: ") + std::strerror(errno));
    }
    progress_ = std::make_unique<launch::ProgressPipe>(fds[0]);
    progress_fd_ = fds[1];  // kept for restarted coordinators
  }
  ~Launch() {
    for (int fd : listeners_) ::close(fd);
    ::close(progress_fd_);
  }

  // Every start of the run, until it ends as the plan says (or fails: BackendError; or is
  // cancelled: RunCancelled); then the parts of every start.
  std::vector<core::Trace> run() {
    std::vector<core::Trace> parts;
    std::optional<nlohmann::json> resume;  // the facts of the restart in progress
    double previous_resumed_s = 0;
    for (int incarnation = 0;; ++incarnation) {
      launch::NodeGroup group;
      start(group, incarnation, resume);
      const double from_s = resume ? resume->at("restart_s").get<double>() : 0.0;
      try {
        watch(group, from_s, incarnation);
      } catch (const core::BackendError& e) {
        // A restart that cannot start (a task killed while the tasks connect again): the run ends
        // with what its earlier starts measured, as a job failure that failed the run.
        if (!resume) throw;
        dir_.keep = false;  // the run's failure keeps it where its caller asks (keep_measurements)
        const std::string cause = resume->contains("cause")
                                      ? resume->at("cause").get<std::string>()
                                      : plan_.faults[resume->at("fault").get<size_t>()].description;
        failed_restart_ = core::JobFailureRecord{
            resume->at("fault_s").get<double>(), resume->at("detected_s").get<double>(),
            resume->at("global_step_at_failure").get<int64_t>(),
            cause + "; the restart failed: " + e.what(), true};
        break;
      }
      const double resumed_before_s = previous_resumed_s;
      Incarnation ended = collect(group, from_s, &previous_resumed_s);
      if (resume) rebuild_restart_record(group, *resume, resumed_before_s, parts, ended);
      parts.insert(parts.end(), ended.parts.begin(), ended.parts.end());
      if (!ended.failed() || !plan_.recovery.enabled) break;
      // TF's cluster manager starts the tasks again restart_delay after the clients failed.
      if (!progress_->origin_clock_s) {
        throw core::BackendError("the coordinator never said when the run started");
      }
      resume = resume_facts(plan_, ended, incarnation + 1, *progress_->origin_clock_s,
                            previous_resumed_s);
      wait_until(*progress_->origin_clock_s + resume->at("restart_s").get<double>());
    }
    return parts;
  }

 public:
  // What the run's launcher did with this machine's cores ("cores: ..."; the report's note).
  const std::string& cores_note() const { return cores_note_; }

 private:
  // Each task's computing threads (its roles' devices' engine threads, times --threads) on
  // cores of their own when this process may use enough of them (sched_setaffinity), so that a
  // role runs as fast as the one core calibrate measured, undisturbed by its peers; else none
  // is pinned and the note says how many threads shared how many cores.
  void assign_cores() {
    const std::vector<int> allowed = launch::allowed_cpus();
    std::vector<size_t> threads(spec_.tasks.size(), 0);
    size_t needed = 0;
    for (size_t t = 0; t < spec_.tasks.size(); ++t) {
      // The devices the task computes on: its roles' main devices (a worker's or tower's compute
      // device, a PS's CPU), and the devices of its forward, loss and backward ops (a
      // multi-tower worker's other towers). The light work elsewhere (an input op, a local step
      // increment on a worker's CPU) asks no core of its own.
      std::set<int> devices;
      for (int r : map_.roles_of_task[t]) devices.insert(plan_.roles[size_t(r)].device);
      for (const core::ClientGraph* g : core::step_graphs(plan_)) {
        for (const core::Op& op : g->ops) {
          const bool tower_work = op.kind == core::OpKind::kForward ||
                                  op.kind == core::OpKind::kLoss ||
                                  op.kind == core::OpKind::kBackward;
          if (tower_work && op.role >= 0 && map_.task_of_role[size_t(op.role)] == int(t)) {
            devices.insert(op.device);
          }
        }
      }
      // A device's engine runs max(1, cores) ops at once (real/node/step_runner.cpp), each with
      // --threads BLAS threads.
      for (int d : devices) {
        threads[t] += size_t(std::max(1, plan_.platform.devices[size_t(d)].cores)) *
                      size_t(settings_.threads);
      }
      needed += threads[t];
    }
    cpus_of_task_.assign(spec_.tasks.size(), {});
    if (allowed.empty() || needed > allowed.size()) {
      const auto count = [](size_t n, const char* what) {
        return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
      };
      cores_note_ = "cores: " + count(spec_.tasks.size(), "task") + " with " +
                    count(needed, "computing thread") + " on " + count(allowed.size(), "core") +
                    ": not pinned, the kernel's scheduler shared the cores among them";
      return;
    }
    cores_note_ = "cores: each task on cores of its own (sched_setaffinity):";
    size_t next = 0;
    for (size_t t = 0; t < spec_.tasks.size(); ++t) {
      cores_note_ += (t ? ", " : " ") + spec_.tasks[t].name() + " on core";
      if (threads[t] > 1) cores_note_ += "s";
      for (size_t k = 0; k < threads[t]; ++k) {
        cpus_of_task_[t].push_back(allowed[next++]);
        cores_note_ += (k ? "," : " ") + std::to_string(cpus_of_task_[t].back());
      }
    }
  }

  // One process per task; after a restart each gets the restart's facts.
  void start(launch::NodeGroup& group, int incarnation,
             const std::optional<nlohmann::json>& resume) {
    const std::string suffix = incarnation == 0 ? "" : ".restart" + std::to_string(incarnation);
    fs::path resume_file;
    if (resume) {
      resume_file = dir_.path / ("resume" + suffix + ".json");
      launch::write_text(resume_file, resume->dump(1) + "\n");
    }
    for (size_t t = 0; t < spec_.tasks.size(); ++t) {
      launch::NodeProcess node;
      node.task = spec_.tasks[t].name();
      node.task_index = int(t);
      node.role = plan_.roles[size_t(map_.roles_of_task[t].front())].name;
      node.host = spec_.tasks[t].host;
      node.log = dir_.path / (node.task + suffix + ".log");
      node.trace = dir_.path / (node.task + suffix + ".trace");
      launch::NodeCommand command;
      command.binary = settings_.node_binary;
      command.binary_is_self = settings_.node_is_self;
      command.argv = {settings_.node_binary,
                      "node",
                      "--plan",
                      plan_file_.string(),
                      "--role",
                      node.role,
                      "--cluster",
                      cluster_file_.string(),
                      "--listen-fd",
                      std::to_string(listeners_[t]),
                      "--trace-out",
                      node.trace.string(),
                      "--threads",
                      std::to_string(settings_.threads),
                      "--connect-timeout",
                      std::to_string(settings_.connect_timeout_s),
                      "--launched"};
      if (!settings_.checkpoint_dir.empty()) {
        command.argv.insert(command.argv.end(), {"--checkpoint-dir", settings_.checkpoint_dir});
      }
      if (resume) command.argv.insert(command.argv.end(), {"--resume", resume_file.string()});
      command.keep_fds = {listeners_[t]};
      if (int(t) == map_.coordinator_task) {
        command.argv.insert(command.argv.end(), {"--progress-fd", std::to_string(progress_fd_)});
        command.keep_fds.push_back(progress_fd_);
      }
      command.environment = {std::string(kClusterTokenVariable) + "=" + spec_.token};
      if (network_) {
        command.netns_fd = network_->net.namespace_fd(size_t(machine_of_task(t)));
        command.argv.push_back("--shaped-links");
      }
      if (settings_.insecure_frames) command.argv.push_back("--insecure-frames");
      command.cpus = cpus_of_task_[t];
      group.start(std::move(node), command);
    }
  }

  // Progress, exits, cancellation, until every task ended. A task that failed stops the others
  // within their own detection (its ERROR frames, or a lost connection); after a grace period
  // they are killed and the run fails, naming the first.
  void watch(launch::NodeGroup& group, double from_s, int incarnation) {
    // A planned death wrote its part, saying so (killed_s), before its SIGKILL: any other
    // SIGKILL was no fault of the plan's.
    const auto planned = [&](const launch::NodeProcess& n) {
      bool victim = false;
      for (size_t f = 0; f < victims_.size(); ++f) {
        victim |= victims_[f].count(n.task_index) > 0 && plan_.faults[f].at_s >= from_s;
      }
      if (!victim) return false;
      try {
        const std::vector<core::Trace> runs = core::read_trace_file(n.trace);
        return runs.size() == 1 && runs.front().outcome.killed_s.has_value();
      } catch (const std::exception&) {
        return false;
      }
    };
    constexpr auto kPoll = std::chrono::milliseconds(50);
    constexpr double kGraceS = 5;
    std::optional<std::chrono::steady_clock::time_point> failed_at;
    bool killed_before_start = false;
    // Since when every task still running was stopped (time_point{}: not all of them now).
    std::chrono::steady_clock::time_point leftovers_stopped_at{};
    for (;;) {
      progress_->poll(options_.progress);
      if (network_ && progress_->origin_clock_s) {
        network_->play(monotonic_s() - *progress_->origin_clock_s);
      }
      const size_t running = group.reap(planned);
      if (options_.cancelled && options_.cancelled()) {
        group.terminate();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        group.kill_all();
        throw core::RunCancelled();
      }
      if (running == 0) break;
      // A task killed from outside before this start of the job began (the coordinator's START,
      // which the progress pipe passes on): it cannot begin; the others go at once rather than
      // at their connect timeout.
      if (progress_->starts <= incarnation &&
          std::any_of(group.nodes.begin(), group.nodes.end(),
                      [](const launch::NodeProcess& n) { return n.died_unplanned(); })) {
        killed_before_start = true;
        group.kill_all();
        break;
      }
      // A task stopped (SIGSTOP) that its peers declared lost and outlived: after a grace period
      // (its peers' silence deadline has passed by then), killed and salvaged as a death.
      if (std::all_of(group.nodes.begin(), group.nodes.end(),
                      [](const launch::NodeProcess& n) { return n.exited || n.stopped(); })) {
        const auto now = std::chrono::steady_clock::now();
        if (leftovers_stopped_at == std::chrono::steady_clock::time_point{}) {
          leftovers_stopped_at = now;
        }
        if (now - leftovers_stopped_at > std::chrono::duration<double>(kGraceS) &&
            group.kill_stopped_leftovers() > 0) {
          break;
        }
      } else {
        leftovers_stopped_at = {};
      }
      if (group.failed() != nullptr) {
        const auto now = std::chrono::steady_clock::now();
        if (!failed_at) failed_at = now;
        if (now - *failed_at > std::chrono::duration<double>(kGraceS)) {
          group.kill_all();
          break;
        }
      }
      std::this_thread::sleep_for(kPoll);
    }
    progress_->poll(options_.progress);
    const bool all_killed =
        std::all_of(group.nodes.begin(), group.nodes.end(),
                    [](const launch::NodeProcess& n) { return n.died_unplanned(); });
    if (group.failed() != nullptr || all_killed || killed_before_start) {
      dir_.keep = true;
      throw core::BackendError(launch::root_cause(group) + " (logs: " + dir_.path.string() + ")");
    }
  }

  // Every task's part (a task the plan killed wrote its own first), and the job fault that ended
  // the start, if one did.
  Incarnation collect(const launch::NodeGroup& group, double from_s, double* previous_resumed_s) {
    Incarnation ended;
    for (size_t t = 0; t < spec_.tasks.size(); ++t) {
      if (group.nodes[t].died_unplanned()) {
        salvage(group.nodes[t], ended);
        continue;
      }
      std::vector<core::Trace> runs = core::read_trace_file(group.nodes[t].trace);
      if (runs.size() != 1) {
        throw core::BackendError("task " + spec_.tasks[t].name() + " wrote " +
                                 std::to_string(runs.size()) + " runs");
      }
      const core::RunOutcome& outcome = runs.front().outcome;
      if (outcome.killed_s) {
        const int f = fault_that_killed(plan_, victims_, int(t), *outcome.killed_s, from_s);
        if (f >= 0 && plan_.faults[size_t(f)].kind == core::PlanFaultKind::kJob)
          ended.job_fault = f;
      }
      if (int(t) == map_.coordinator_task && !outcome.restarts.empty()) {
        *previous_resumed_s = outcome.restarts.back().resumed_s;
      }
      ended.parts.push_back(std::move(runs.front()));
    }
    drop_failures_without_a_death(group, ended);
    find_unplanned_job_fault(group, ended);
    return ended;
  }

  // The restart record a restarted start's coordinator writes at its end (the report's job
  // failures row): when a death from outside took the coordinator first, rebuilt here as the
  // Restorer would have made it, from the restart's facts, the chief's recovery event (the
  // restore: when training resumed, from which global_step) and the restored checkpoint's event in
  // the earlier parts (when its save read the variables). A note says so.
  void rebuild_restart_record(const launch::NodeGroup& group, const nlohmann::json& resume,
                              double previous_resumed_s, const std::vector<core::Trace>& earlier,
                              Incarnation& ended) {
    const int coordinator = map_.coordinator_task;
    if (coordinator < 0 || !group.nodes[size_t(coordinator)].died_unplanned()) return;
    core::Trace* part = nullptr;
    for (core::Trace& p : ended.parts) {
      if (core::part_place(p).coordinator) part = &p;
    }
    if (part == nullptr) return;
    core::RestartRecord k;
    k.cause = resume.contains("cause") ? resume.at("cause").get<std::string>()
                                       : plan_.faults[resume.at("fault").get<size_t>()].description;
    k.fault_s = resume.at("fault_s").get<double>();
    k.detected_s = resume.at("detected_s").get<double>();
    k.restart_s = resume.at("restart_s").get<double>();
    const double died_s = part->outcome.end_s;
    k.resumed_s = k.interrupted_s = std::max(died_s, k.restart_s);  // unless the chief restored
    for (const core::Trace& p : ended.parts) {
      for (const core::TraceEvent& e : p.events) {
        if (e.kind != core::EventKind::kRecovery || std::abs(e.start_s - k.fault_s) > 1e-9)
          continue;
        k.resumed_s = e.end_s;
        k.checkpoint_global_step = e.global_step_read;
        k.interrupted_s = e.end_s <= died_s ? -1 : died_s;
      }
    }
    k.workers_resumed_s = k.resumed_s;
    k.checkpoint_start_s = k.fault_s;
    for (const core::Trace& p : earlier) {
      for (const core::TraceEvent& e : p.events) {
        if (e.kind == core::EventKind::kCheckpoint && (e.flags & core::kEventSummaries) == 0 &&
            e.global_step_after == k.checkpoint_global_step && e.start_s < k.fault_s) {
          k.checkpoint_start_s = std::min(k.checkpoint_start_s, e.start_s);
        }
      }
    }
    if (k.checkpoint_global_step == 0) k.checkpoint_start_s = 0;  // a fresh start
    k.lost_work_s =
        std::clamp(k.fault_s - std::max(k.checkpoint_start_s, previous_resumed_s), 0.0, k.fault_s);
    k.global_step_at_failure =
        std::max(resume.at("global_step_at_failure").get<int64_t>(), k.checkpoint_global_step);
    k.lost_global_steps = k.global_step_at_failure - k.checkpoint_global_step;
    part->outcome.restarts.push_back(k);
    notes_.push_back("the restart after \"" + k.cause +
                     "\" is recorded by the launcher: its coordinator died (no fault of the plan) "
                     "before it wrote the record");
  }

  // A task stopped (SIGSTOP) and resumed after its peers declared it lost finds them silent in
  // turn and records a job failure of its own; when no task of the incarnation died from outside,
  // no such failure happened: its record goes, and a note says so.
  void drop_failures_without_a_death(const launch::NodeGroup& group, Incarnation& ended) {
    if (std::any_of(group.nodes.begin(), group.nodes.end(),
                    [](const launch::NodeProcess& n) { return n.died_unplanned(); })) {
      return;
    }
    for (size_t t = 0; t < ended.parts.size() && t < group.nodes.size(); ++t) {
      std::optional<core::JobFailureRecord>& f = ended.parts[t].outcome.job_failure;
      if (!f || !f->unplanned) continue;
      notes_.push_back(group.nodes[t].role + " (task " + group.nodes[t].task +
                       ") found its peers silent and recorded \"" + f->cause +
                       "\", but every task ended well: it had been stopped itself (SIGSTOP) "
                       "while they went on; no job failure");
      f.reset();
    }
  }

  // A death from outside that the job could not survive: the fault it is (core::death_of_roles of
  // the dead task's roles) at the failure the surviving tasks recorded first. None when a planned
  // job fault came first, or when no task recorded the failure (every one died).
  void find_unplanned_job_fault(const launch::NodeGroup& group, Incarnation& ended) const {
    if (ended.job_fault >= 0) return;
    const core::JobFailureRecord* first = nullptr;
    for (const core::Trace& part : ended.parts) {
      const std::optional<core::JobFailureRecord>& f = part.outcome.job_failure;
      if (f && f->unplanned && (first == nullptr || f->time_s < first->time_s)) first = &*f;
    }
    if (first == nullptr) return;
    for (size_t t = 0; t < group.nodes.size(); ++t) {
      if (!group.nodes[t].died_unplanned()) continue;
      core::PlanFault f =
          core::death_of_roles(plan_, map_.roles_of_task[t], first->time_s, first->cause);
      if (f.kind != core::PlanFaultKind::kJob) continue;
      ended.unplanned_job_fault = std::move(f);
      return;
    }
  }

  // A task killed from outside (its peers went on, or failed the job, as TF's do): its part as
  // far as it was flushed (a quarter second at most is lost), said in the run's notes.
  void salvage(const launch::NodeProcess& node, Incarnation& ended) {
    std::optional<core::Trace> part = core::read_trace_prefix(node.partial_trace().string());
    const std::string who = node.role + " (task " + node.task + " on " + node.host + ")";
    const std::string how =
        node.lingered
            ? " was stopped (a signal such as SIGSTOP) and outlived the others: the launcher "
              "killed it; no fault of the plan"
            : " was killed by signal " + std::to_string(WTERMSIG(node.status)) + " (" +
                  ::strsignal(WTERMSIG(node.status)) + "), no fault of the plan";
    if (!part) {
      notes_.push_back(who + how + ", before it wrote any of its part of the trace");
      return;
    }
    double last_s = 0;
    for (const core::TraceEvent& e : part->events) last_s = std::max(last_s, e.end_s);
    // Not the run's reference outcome (core::part_place): its task died.
    part->outcome = core::RunOutcome{};
    part->outcome.end_s = last_s;
    part->outcome.killed_s = last_s;
    part->outcome.notes.push_back(
        who + how + "; its part of the trace is what it had written by then (" +
        std::to_string(part->events.size()) + " events, the last ending at " +
        core::format_quantity(last_s, core::Dimension::kTime) + ")");
    ended.parts.push_back(std::move(*part));
  }

  void wait_until(double clock_s) const {
    while (monotonic_s() < clock_s) {
      if (options_.cancelled && options_.cancelled()) throw core::RunCancelled();
      std::this_thread::sleep_for(
          std::chrono::duration<double>(std::min(0.05, clock_s - monotonic_s())));
    }
  }

  // The machine whose namespace task t runs in: its first role's device's.
  int machine_of_task(size_t t) const {
    const core::Role& role = plan_.roles[size_t(map_.roles_of_task[t].front())];
    return plan_.platform.devices[size_t(role.device)].machine;
  }

  const core::Plan& plan_;
  const Settings& settings_;
  const core::RunOptions& options_;
  std::unique_ptr<isolate::ShapedLinks> network_;  // with isolate "netns"; removed last
  launch::RunDir dir_;  // the plan, the cluster spec, each node's log and trace

 public:
  launch::RunDir take_dir() { return std::move(dir_); }
  // What the run's notes say beyond its parts' (a killed task's part that was lost).
  const std::vector<std::string>& notes() const { return notes_; }
  // A restart that could not start: the job failure that ended the run there.
  const std::optional<core::JobFailureRecord>& failed_restart() const { return failed_restart_; }

 private:
  ClusterSpec spec_;
  std::vector<int> listeners_;
  fs::path plan_file_, cluster_file_;
  TaskMap map_;
  std::vector<std::set<int>> victims_;
  std::unique_ptr<launch::ProgressPipe> progress_;
  int progress_fd_ = -1;
  std::vector<std::string> notes_;
  std::optional<core::JobFailureRecord> failed_restart_;
  std::vector<std::vector<int>> cpus_of_task_;  // per task: its cores (empty: not pinned)
  std::string cores_note_;
};

}  // namespace

core::RunOutcome RealBackend::do_run(const core::Plan& plan, core::TraceSink& sink,
                                     const core::RunOptions& options) {
  const Settings settings = read_settings(options.settings);
  if (settings.isolate == "netns") {
    isolate::check_one_nic_per_machine(plan, "");
    isolate::check_can_isolate();
    isolate::check_link_faults(plan, "");
  } else {
    check_faults(plan, "");
  }
  // The proxy's fit is the scenario's matter: named by its file when the caller said which.
  const auto scenario_file = options.provenance.find("scenario_file");
  detail::ObjectiveValues::check(
      plan, scenario_file != options.provenance.end() && scenario_file->is_string()
                ? scenario_file->get<std::string>()
                : std::string());
  const bool writes = plan.checkpoints.every_s > 0 || plan.checkpoints.summary_every_steps > 0;
  if (writes && settings.checkpoint_dir.empty()) {
    throw InputError("", "--checkpoint-dir",
                     "the plan's chief writes checkpoints or summaries: give a directory");
  }
  Launch launch(plan, settings, options);
  std::vector<core::Trace> parts = launch.run();
  finished_.push_back(launch.take_dir());  // until the caller's outputs are written
  core::RunOutcome outcome = core::emit_merged_parts(std::move(parts), sink);
  outcome.notes.insert(outcome.notes.end(), launch.notes().begin(), launch.notes().end());
  if (launch.failed_restart()) outcome.job_failure = launch.failed_restart();
  outcome.notes.push_back(launch.cores_note());
  return outcome;
}

bool RealBackend::records_objective(const core::Plan& plan) const {
  return core::objective_evaluated_by_real_run(plan);
}

std::vector<std::string> RealBackend::keep_measurements() {
  std::vector<std::string> kept;
  for (launch::RunDir& dir : finished_) {
    if (dir.path.empty()) continue;
    dir.keep = true;
    kept.push_back(dir.path.string());
  }
  return kept;
}

void register_real_backend() {
  core::register_backend({RealBackend::kName, "real processes over loopback TCP",
                          [] { return std::make_unique<RealBackend>(); }});
}

}  // namespace replisim::real
