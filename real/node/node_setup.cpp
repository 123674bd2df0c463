// A task's set-up: the plan file, the parts of each step graph it runs, its peers, engines and
// trace; run_node.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include <sys/socket.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/version.h"
#include "core/trace/trace_format.h"
#include "core/values/gradient_flow.h"
#include "real/node/node_hooks.h"

namespace replisim::real {
namespace detail {

namespace {
// How often a launched node flushes its trace part to its file (flush_trace_every): what a task
// killed from outside loses of its measurement, at most (a few writes a second cost nothing).
constexpr double kTraceFlushS = 0.25;
}  // namespace

using core::gradient_flow;
using core::Op;
using core::OpKind;

std::string pack_i64(std::initializer_list<int64_t> values) {
  std::string out;
  for (int64_t v : values) {
    for (int i = 0; i < 8; ++i) out += char(uint8_t(uint64_t(v) >> (8 * i)));
  }
  return out;
}

int64_t unpack_i64(const uint8_t* payload, size_t size, size_t index) {
  if (size < 8 * (index + 1)) {
    throw FrameError("a payload of " + std::to_string(size) + " bytes where " +
                     std::to_string(8 * (index + 1)) + " were due");
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(payload[8 * index + size_t(i)]) << (8 * i);
  return int64_t(v);
}

std::string pack_f64(std::initializer_list<double> values) {
  std::string out;
  for (double d : values) {
    uint64_t bits = 0;
    std::memcpy(&bits, &d, 8);
    out += pack_i64({int64_t(bits)});
  }
  return out;
}

double unpack_f64(const uint8_t* payload, size_t size, size_t index) {
  const uint64_t bits = uint64_t(unpack_i64(payload, size, index));
  double d = 0;
  std::memcpy(&d, &bits, 8);
  if (!std::isfinite(d)) throw FrameError("a time that is not finite");
  return d;
}

// The task's listening socket: the launcher's (an inherited descriptor) or bound here.
static asio::ip::tcp::acceptor make_acceptor(asio::io_context& io, const NodeSetup& setup) {
  const ClusterTask& task = setup.spec.tasks[setup.self];
  const std::string where = "/cluster/" + task.job + "/" + std::to_string(task.index);
  if (setup.options.listen_fd >= 0) {
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    int listening = 0;
    socklen_t flag_size = sizeof listening;
    if (::getsockname(setup.options.listen_fd, reinterpret_cast<sockaddr*>(&address), &size) != 0 ||
        ::getsockopt(setup.options.listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &flag_size) !=
            0 ||
        !listening) {
      throw core::InputError(
          "", "--listen-fd",
          std::to_string(setup.options.listen_fd) + " is not a listening socket");
    }
    asio::ip::tcp::acceptor acceptor(io);
    acceptor.assign(address.ss_family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(),
                    setup.options.listen_fd);
    return acceptor;
  }
  try {
    return listen_on(io, task.host, task.port);
  } catch (const std::system_error& e) {
    throw core::InputError(setup.cluster_file, where,
                           "cannot listen on " + task.address() + ": " + e.code().message());
  }
}

Node::Node(const NodeSetup& setup)
    : plan_(*setup.plan),
      spec_(setup.spec),
      map_(setup.map),
      self_(setup.self),
      options_(setup.options),
      plan_hash_(core::plan_hash(plan_)),
      hooks_(std::make_unique<Hooks>(*this)),
      clock_sync_(hooks_->clock, setup.self, uint32_t(setup.map.coordinator_task)) {
  clock_sync_.own_frames(router_);
  asio::ip::tcp::acceptor acceptor = make_acceptor(io_, setup);
  steps_.emplace(hooks_->steps, StepRunner::Setup{&plan_, &map_, self_, options_.threads});
  steps_->own_frames(router_);
  const size_t graphs = steps_->parts().size();
  quiescence_.emplace(hooks_->waves, self_, uint32_t(map_.coordinator_task), spec_.tasks.size(),
                      graphs);
  quiescence_->own_frames(router_);
  task_dead_.assign(spec_.tasks.size(), false);
  graph_dead_.assign(graphs, false);
  if (!options_.launched) {
    gather_.emplace(hooks_->gather, spec_, self_, uint32_t(map_.coordinator_task),
                    options_.trace_out);
    gather_->own_frames(router_);
  }
  if (!options_.resume_path.empty()) {
    resume_ = read_resume_file(options_.resume_path);
    incarnation_start_s_ = resume_->restart_s;
  }
  job_.emplace(
      hooks_->job, steps_->parts(),
      JobControl::Setup{&plan_, &spec_, self_, uint32_t(map_.coordinator_task),
                        resume_ ? std::optional<double>(resume_->origin_clock_s) : std::nullopt,
                        options_.progress_fd});
  job_->own_frames(router_);
  int ps_shard = -1;
  for (int r : map_.roles_of_task[self_]) {
    if (plan_.roles[size_t(r)].kind != core::RoleKind::kParameterServer) continue;
    for (size_t j = 0; j < plan_.ps_roles.size(); ++j) {
      if (plan_.ps_roles[j] == r) ps_shard = int(j);
    }
  }
  // An all-reduce plan: every rank's task holds its own copy of the variables (no PS), and its
  // checkpoints are every rank's copy ("<name>.rank<r>").
  const bool allreduce = plan_.sync == core::kAllReduceSync;
  int rank = -1;
  std::set<uint32_t> ps_tasks;
  for (int r : plan_.ps_roles) ps_tasks.insert(uint32_t(map_.task_of_role[size_t(r)]));
  if (allreduce) {
    collectives_.emplace(hooks_->collectives, CollectiveOps::Setup{&plan_, &map_, self_},
                         steps_->loop(), steps_->parts());
    collectives_->own_frames(router_);
    for (size_t k = 0; k < plan_.collective.ranks.size(); ++k) {
      const uint32_t task = collectives_->task_of_rank(int(k));
      ps_tasks.insert(task);
      if (task == self_ && rank < 0) rank = int(k);
    }
  }
  vars_.emplace(hooks_->values, plan_, steps_->loop(), steps_->parts(), ps_shard, rank >= 0);
  const std::vector<uint32_t> ps_task_list(ps_tasks.begin(), ps_tasks.end());
  saver_.emplace(hooks_->saver,
                 CheckpointSaver::Setup{&plan_, options_.checkpoint_dir, plan_hash_, vars_->store(),
                                        ps_shard, self_, ps_task_list, uint32_t(map_.chief_task),
                                        uint32_t(map_.coordinator_task), rank});
  saver_->own_frames(router_);
  // training.steps "auto": the coordinator runs the rule (it holds global_step). A restarted
  // incarnation has lost the estimate and runs to max_steps (run refuses the combination).
  steady_stop_.emplace(hooks_->stop, steps_->loop(), steps_->parts(),
                       SteadyStop::Setup{&plan_, plan_.steady_tolerance > 0 && !resume_, self_,
                                         uint32_t(map_.coordinator_task)});
  steady_stop_->own_frames(router_);
  if (resume_) {
    restorer_.emplace(hooks_->restore, steps_->loop(), steps_->parts(), *saver_,
                      Restorer::Setup{&plan_, *resume_, options_.checkpoint_dir, plan_hash_,
                                      vars_->store(), ps_shard, self_, uint32_t(map_.chief_task),
                                      uint32_t(map_.coordinator_task), ps_task_list, rank});
    restorer_->own_frames(router_);
  }
  open_trace();
  open_objective();
  vars_->open_sync_queues(*recorder_);
  if (collectives_) collectives_->open(*recorder_);
  configure_blas();
  for (std::string& note : steps_->open_engines()) outcome_.notes.push_back(std::move(note));
  vars_->place_on_devices(steps_->device_values());
  MeshConfig config;
  config.handshake = {spec_.token, plan_hash_, self_};
  config.frame_macs = !options_.insecure_frames;
  config.tasks = spec_.tasks;
  config.peers = peers();
  config.connections_per_peer = std::max(1, plan_.platform.transport.connections_per_peer);
  config.connect_timeout_s = options_.connect_timeout_s;
  mesh_ = std::make_unique<Mesh>(io_, config, std::move(acceptor), *this);
}

Node::~Node() {
  *alive_ = false;
  mesh_.reset();
  steps_.reset();  // joins the engines' threads before the state they use goes
}

// The tasks this one exchanges frames with: the coordinator (job control), the chief (checkpoints)
// and, per graph, its client's
// task with every task that runs its ops, and the two ends of every tensor and direct edge.
std::vector<uint32_t> Node::peers() const {
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  auto link = [&pairs](uint32_t a, uint32_t b) {
    if (a != b) pairs.insert({std::min(a, b), std::max(a, b)});
  };
  for (uint32_t t = 0; t < spec_.tasks.size(); ++t) {
    link(t, uint32_t(map_.chief_task));
    link(t, uint32_t(map_.coordinator_task));
  }
  for (const Part& p : steps_->parts()) {
    const core::ClientGraph& graph = *p.graph;
    for (size_t k = 0; k < graph.ops.size(); ++k) {
      link(p.owner_task, p.task_of_op[k]);
      for (int in : graph.ops[k].inputs) link(p.task_of_op[size_t(in)], p.task_of_op[k]);
    }
  }
  // All-reduce: every rank's task with every other (the algorithms' peers, which a rank's
  // death changes when the job is elastic).
  if (collectives_) {
    const size_t ranks = plan_.collective.ranks.size();
    for (size_t a = 0; a < ranks; ++a) {
      for (size_t b = a + 1; b < ranks; ++b) {
        link(collectives_->task_of_rank(int(a)), collectives_->task_of_rank(int(b)));
      }
    }
  }
  std::vector<uint32_t> out;
  for (const auto& [a, b] : pairs) {
    if (a == self_) out.push_back(b);
    if (b == self_) out.push_back(a);
  }
  return out;
}

void Node::open_trace() {
  trace_file_ = options_.launched ? std::make_unique<core::UnnamedFile>(
                                        options_.trace_out, options_.trace_out + ".partial")
                                  : std::make_unique<core::UnnamedFile>(options_.trace_out);
  writer_ = std::make_unique<core::NativeTraceWriter>(trace_file_->stream());
  core::TraceMeta meta = core::trace_meta_from_plan(plan_);
  meta.backend = "real";
  // The time to target comes from the evaluations, which only some real runs record.
  if (!core::objective_evaluated_by_real_run(plan_)) {
    meta.objective_target.clear();
    meta.objective_target_value = 0;
  }
  meta.provenance = {{"task", spec_.tasks[self_].name()},
                     {"host", spec_.tasks[self_].host},
                     {"chief", chief()},
                     {"coordinator", coordinator()},
                     {"plan_file", options_.plan_path},
                     {"replisim", std::string(core::kVersion) + " (" + core::kGitDescribe + ")"}};
  if (resume_) meta.provenance["incarnation"] = resume_->incarnation;
  writer_->begin(meta);
  recorder_.emplace(plan_, *writer_);
  if (options_.launched) {
    writer_->flush_now();
    flush_trace_every(kTraceFlushS);
  }
}

// The objective's arithmetic runs in the processes of the workers and PSes that compute it
// (ObjectiveValues::computed), never in another (a coordinator alone reads no data).
void Node::open_objective() {
  if (!ObjectiveValues::computed(plan_)) return;
  std::vector<int> graphs;  // the client graphs whose gradients are computed here
  for (const Part& p : steps_->parts()) {
    if (p.index < int(plan_.clients.size()) && StepRunner::computes_objective(plan_, p)) {
      graphs.push_back(p.index);
    }
  }
  if (graphs.empty() && !vars_->store()) return;
  objective_ = std::make_unique<ObjectiveValues>(plan_, graphs);
  // An all-reduce rank computes at its own copy's values.
  if (collectives_) objective_->compute_at(vars_->store());
  steps_->set_objective(objective_.get());
  vars_->set_objective(objective_.get(), ObjectiveValues::evaluated(plan_));
  if (collectives_) collectives_->set_objective(objective_.get());
  if (!ObjectiveValues::evaluated(plan_)) return;
  // The evaluator (the task that holds global_step) and the parameter servers that answer it.
  ObjectiveGather::Setup gather{
      &plan_, objective_.get(), vars_->store(), self_, uint32_t(map_.coordinator_task), {}};
  gather.holder_of.assign(plan_.variables.size(), -1);
  for (size_t v = 1; v < plan_.variables.size(); ++v) {
    if (objective_->layout().slice(int(v)).size == 0) continue;
    const int ps = plan_.variables[v].ps;
    gather.holder_of[v] = ps >= 0 ? map_.task_of_role[size_t(plan_.ps_roles[size_t(ps)])]
                                  : int(gather.evaluator);  // all-reduce: the chief rank's copy
  }
  const bool holds = std::find(gather.holder_of.begin(), gather.holder_of.end(), int(self_)) !=
                     gather.holder_of.end();
  if (!vars_->evaluates() && !holds) return;
  objective_gather_.emplace(hooks_->objective, std::move(gather));
  objective_gather_->own_frames(router_);
  // The initial values at the run's t = 0, as the simulation records them (not a restart's).
  if (vars_->evaluates() && !resume_) objective_gather_->evaluate_initial();
}

std::string Node::describe() const {
  std::string role = spec_.tasks[self_].name();
  for (int r : map_.roles_of_task[self_]) {
    if (plan_.roles[size_t(r)].kind != core::RoleKind::kSyncQueueRunner) {
      role = plan_.roles[size_t(r)].name;
      break;
    }
  }
  // A client's step; a task that runs no client (a parameter server, a tower): global_step
  // where it lives, else the latest step of the graphs it takes part in.
  int64_t step = -1;
  bool owns = false;
  for (const Part& p : steps_->parts()) {
    if (p.owner && steps_->loop().client(p.index).loop != core::LoopKind::kChiefSyncOp) {
      step = std::max(step, int64_t(steps_->loop().client(p.index).step));
      owns = true;
    } else if (!owns && p.active) {
      step = std::max(step, p.step);
    }
  }
  std::string where =
      role + " (task " + spec_.tasks[self_].name() + " on " + spec_.tasks[self_].host + ")";
  if (!job_->started()) return where + " before the first step";
  if (!owns && vars_->global_step_here() >= 0) {
    return where + " at global_step " + std::to_string(vars_->global_step_here());
  }
  return where + " at step " + std::to_string(std::max<int64_t>(step, 0));
}

double Node::clock_s() const {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

void Node::post(std::function<void()> work) {
  asio::post(io_, [alive = std::weak_ptr<bool>(alive_), work = std::move(work)] {
    if (!alive.expired()) work();
  });
}

void Node::after(double delay_s, bool busy, std::function<void()> work) {
  auto timer = std::make_shared<asio::steady_timer>(io_);
  timer->expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, delay_s))));
  if (busy) ++timers_pending_;
  timer->async_wait([this, timer, busy, work = std::move(work),
                     alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
    if (alive.expired()) return;
    if (busy) --timers_pending_;
    if (!ec && !stopping_) work();
  });
}

// A launched node's trace, flushed to its file every `period_s` until the node stops: a task
// killed from outside (kill -9, the OOM killer) leaves what it measured up to then.
void Node::flush_trace_every(double period_s) {
  after(period_s, false, [this, period_s] {
    writer_->flush_now();
    flush_trace_every(period_s);
  });
}

void Node::run() {
  mesh_->start();
  if (options_.cancelled) watch_cancel();
  for (;;) {
    try {
      io_.run();
      break;
    } catch (const core::OutputError& e) {
      fail(e.what());
    } catch (const std::bad_alloc&) {
      fail("out of memory");
    } catch (const std::exception& e) {
      fail(std::string("internal error: ") + e.what());
    }
    io_.restart();
  }
  // Strangers this task turned away (each was logged when it happened, once per reason): said
  // again in one line at the end, where the run's own lines are.
  const std::string refused = mesh_->refusal_summary();
  if (!refused.empty()) on_refused(refused);
  if (cancelled_) throw core::RunCancelled();
  if (failed_) throw core::BackendError(error_line_);
}

// SIGINT or SIGTERM: the node stops as a failed one would (its peers hear why), and exits 130.
void Node::watch_cancel() {
  auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
  timer->async_wait([this, timer, alive = std::weak_ptr<bool>(alive_)](const asio::error_code& ec) {
    if (ec || alive.expired() || failed_) return;
    if (options_.cancelled()) {
      cancelled_ = true;
      fail("interrupted (SIGINT or SIGTERM)");
      return;
    }
    watch_cancel();
  });
}

}  // namespace detail

}  // namespace replisim::real
