// `replisim node`: the plan file, the role and the cluster (from flags, or from a cluster
// launcher's variables), the checks on the outputs and the checkpoint directory, then the task's
// run; a coordinator that gathered the run's trace writes it and has it reported.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/output_file.h"
#include "core/strategy/plan_rules.h"
#include "core/trace/trace_format.h"
#include "real/node/objective_values.h"
#include "real/node/runtime.h"

namespace replisim::real {

using core::float_count;

namespace {

// Keeps the memory of the task's tensors with the process once it has been touched, as
// TensorFlow's BFC allocator keeps its regions for the run. Without this, glibc serves every
// tensor-sized request (above its mmap threshold: 128 KiB, rising to at most 32 MiB) with fresh
// pages and hands them back on free, so every step pays a page fault per 4 KiB of every tensor it
// makes: on a paravirtualised host about 15 ms per 4 MB tensor, time no plan has (measured on
// scenarios/validation/racks_3to1.json over loopback: 138 ms a step, 36 ms with this; shaped, its
// validation went from +6..+12% step time to +0.5%). mallopt(3): M_MMAP_MAX 0 serves every request
// from the heap; M_TRIM_THRESHOLD -1 never gives its free top back; M_ARENA_MAX 1 keeps every
// thread on the main arena, the one heap that grows without bound (a thread's own arena is heaps
// of at most 64 MiB, and glibc maps a larger request afresh and unmaps it on free whatever
// M_MMAP_MAX says: a 68 MB tensor faulted 33,000 pages a step). The price: a task's memory stays
// at its high-water mark, as TensorFlow's does, and its threads share one arena's lock (a few
// allocations per tensor).
void keep_tensor_memory() {
#ifdef __GLIBC__
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

// What a node needs of a plan beyond check_plan_rules: role names once each, one chief.
void check_roles(const core::Plan& plan, const std::string& path) {
  int chiefs = 0;
  for (size_t r = 0; r < plan.roles.size(); ++r) {
    for (size_t q = 0; q < r; ++q) {
      if (plan.roles[q].name == plan.roles[r].name) {
        throw core::InputError(path, "/roles/" + std::to_string(r) + "/name",
                               "role " + plan.roles[r].name + " is also role " + std::to_string(q));
      }
    }
    chiefs += plan.roles[r].chief;
  }
  if (chiefs != 1) {
    throw core::InputError(path, "/roles",
                           std::to_string(chiefs) + " roles are the chief; a plan has one");
  }
}

}  // namespace

void check_faults(const core::Plan& plan, const std::string& file) {
  for (size_t f = 0; f < plan.faults.size(); ++f) {
    // Rank 0's task runs the job's control and Horovod's coordinator (no PS holds global_step):
    // an elastic job's survivors would go on without either.
    const std::vector<int>& lost = plan.faults[f].clients;
    if (plan.sync == core::kAllReduceSync && plan.collective.elastic &&
        !plan.collective.ranks.empty() &&
        std::find(lost.begin(), lost.end(), plan.collective.ranks.front()) != lost.end()) {
      throw core::InputError(
          file, "/faults/" + std::to_string(f),
          "\"" + plan.faults[f].description +
              "\" kills rank 0 of an elastic all-reduce job, whose task runs the real run's "
              "control and Horovod's coordinator: a real run cannot go on without it; simulate "
              "it, or let another rank die");
    }
    if (plan.faults[f].kind == core::PlanFaultKind::kLink) {
      throw core::InputError(file, "/faults/" + std::to_string(f),
                             "a link fault (\"" + plan.faults[f].description +
                                 "\") needs shaped links: run the scenario with replisim run "
                                 "--isolate netns, simulate it, or leave the link fault out");
    }
  }
}

core::Plan read_plan_file(const std::string& path) {
  const nlohmann::json j = core::read_json_file(path);
  if (j.is_array()) {
    if (j.size() != 1) {
      throw core::InputError(path, "",
                             "holds " + std::to_string(j.size()) +
                                 " plans; a node runs one: write it with replisim plan SCENARIO "
                                 "--json --strategy in_graph (or between_graph)");
    }
    core::Plan plan = core::plan_from_json(j[0], path);
    core::check_plan_rules(plan, path);
    check_roles(plan, path);
    return plan;
  }
  core::Plan plan = core::plan_from_json(j, path);
  core::check_plan_rules(plan, path);
  check_roles(plan, path);
  return plan;
}

namespace {

// The role: --role, else the one the launcher's rank runs (ranked_roles).
int role_of_node(const core::Plan& plan, const NodeOptions& options) {
  if (options.role.empty()) {
    const std::optional<LauncherRank> rank = rank_from_environment();
    if (!rank) {
      throw core::InputError("", "--role",
                             "give the role this node runs, or start it under srun or mpirun "
                             "(their rank, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID, "
                             "picks it)");
    }
    const std::vector<int> roles = ranked_roles(plan);
    if (size_t(rank->rank) >= roles.size()) {
      throw core::InputError("", rank->variable,
                             "rank " + std::to_string(rank->rank) + ", but " + options.plan_path +
                                 " has " + std::to_string(roles.size()) +
                                 " tasks: start as many (ranks 0.." +
                                 std::to_string(roles.size() - 1) + ")");
    }
    return roles[size_t(rank->rank)];
  }
  const int role = plan.role_index(options.role);
  if (role < 0) {
    std::vector<std::string> names;
    for (const core::Role& r : plan.roles) names.push_back(r.name);
    throw core::InputError("", "--role",
                           "no role \"" + options.role + "\" in " + options.plan_path +
                               " (its roles: " + core::join_names(names) + ")");
  }
  return role;
}

// The cluster: --cluster's spec, else a Slurm step's nodes.
ClusterSpec cluster_of_node(const core::Plan& plan, const NodeOptions& options,
                            std::string* source) {
  if (!options.cluster_path.empty()) {
    *source = options.cluster_path;
    return read_cluster_file(options.cluster_path);
  }
  // The step's nodes (srun sets them for each step), else the allocation's. Ranks an MPI launcher
  // numbered (mpirun in an allocation) take the allocation's: Open MPI maps its ranks by slot
  // over the allocation's nodes (SLURM_TASKS_PER_NODE), and the step variables its ranks may
  // inherit are those of the step that started its daemons, one task per node, or none on the
  // node mpirun runs on.
  const std::optional<LauncherRank> rank =
      options.role.empty() ? rank_from_environment() : std::nullopt;
  const bool mpi_rank = rank && rank->variable != "SLURM_PROCID";
  SlurmStep step;
  for (const auto& [nodes, tasks] :
       {std::pair<const char*, const char*>{"SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE"},
        {"SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE"}}) {
    if (mpi_rank && std::string(nodes) == "SLURM_STEP_NODELIST") continue;
    const char* n = std::getenv(nodes);
    if (n == nullptr) continue;
    step.nodes = n;
    step.nodes_variable = nodes;
    const char* t = std::getenv(tasks);
    if (t == nullptr) {
      throw core::InputError("", tasks, std::string("not set: srun sets it beside ") + nodes);
    }
    step.tasks = t;
    step.tasks_variable = tasks;
    break;
  }
  if (step.nodes_variable.empty()) {
    throw core::InputError("", "--cluster",
                           "give the cluster spec, or start the node under srun "
                           "(SLURM_STEP_NODELIST then names the step's nodes) or under mpirun in "
                           "a Slurm allocation (SLURM_JOB_NODELIST)");
  }
  *source = step.nodes_variable;
  return slurm_cluster_spec(plan, step, options.base_port);
}

}  // namespace

int run_node(const NodeOptions& options) {
  keep_tensor_memory();
  const core::Plan plan = read_plan_file(options.plan_path);
  const int role = role_of_node(plan, options);
  if (!options.shaped_links) check_faults(plan, options.plan_path);
  detail::ObjectiveValues::check(plan, options.plan_path);
  if (!options.resume_path.empty()) {
    const detail::Resume resume = detail::read_resume_file(options.resume_path);
    // -1: a death from outside (read_resume_file requires its cause and actor).
    if (resume.fault >= 0 &&
        (size_t(resume.fault) >= plan.faults.size() ||
         plan.faults[size_t(resume.fault)].kind != core::PlanFaultKind::kJob)) {
      throw core::InputError(
          options.resume_path, "/fault",
          "fault " + std::to_string(resume.fault) + " is no job fault of the plan");
    }
  }
  detail::NodeSetup setup;
  setup.plan = &plan;
  setup.spec = cluster_of_node(plan, options, &setup.cluster_file);
  setup.map = map_roles(plan, setup.spec, setup.cluster_file);
  setup.self = uint32_t(setup.map.task_of_role[size_t(role)]);
  setup.options = options;
  if (setup.options.trace_out.empty()) {
    setup.options.trace_out = "replisim-" + setup.spec.tasks[setup.self].name() + ".trace";
  }
  // The trace is checked as every output is (a regular file or none, --force to replace it, not
  // an input, in a writable directory); it is written by the node itself.
  core::OutputFiles outputs(options.force);
  outputs.protect(options.plan_path);
  if (!options.cluster_path.empty()) outputs.protect(options.cluster_path);
  outputs.add("--trace-out", setup.options.trace_out, [](std::ostream&) {});
  // Started by a cluster's launcher, the coordinator gathers the run's trace: checked now,
  // written at the end.
  const bool gathers = !options.launched && int(setup.self) == setup.map.coordinator_task;
  const std::string run_trace_out =
      options.run_trace_out.empty() ? "replisim-run.trace" : options.run_trace_out;
  core::OutputFiles run_outputs(options.force);
  const core::Trace* run_trace = nullptr;
  if (gathers) {
    run_outputs.protect(options.plan_path);
    if (!options.cluster_path.empty()) run_outputs.protect(options.cluster_path);
    run_outputs.protect(setup.options.trace_out, "--trace-out");
    run_outputs.add("--run-trace-out", run_trace_out,
                    [&run_trace](std::ostream& out) { core::write_trace_binary(out, *run_trace); });
  }
  // Checkpoints are written by the chief (indexes, summaries) and the parameter servers
  // (shards), into a directory without a run's files in it: nothing there is replaced.
  const bool writes = plan.checkpoints.every_s > 0 || plan.checkpoints.summary_every_steps > 0;
  bool writer =
      int(setup.self) == setup.map.chief_task || int(setup.self) == setup.map.coordinator_task;
  for (int r : setup.map.roles_of_task[setup.self]) {
    writer |= plan.roles[size_t(r)].kind == core::RoleKind::kParameterServer;
  }
  if (!options.checkpoint_dir.empty()) {
    struct stat st {};
    if (::stat(options.checkpoint_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw core::InputError("", "--checkpoint-dir",
                             options.checkpoint_dir + " is not a directory");
    }
    if (writer && options.resume_path.empty()) {  // a restart reads the run's checkpoints
      for (const auto& entry : std::filesystem::directory_iterator(options.checkpoint_dir)) {
        const std::string name = entry.path().filename().string();
        if (name == "events.summaries" || name.rfind("model.ckpt-", 0) == 0 ||
            name.rfind("final.", 0) == 0) {
          throw core::InputError("", "--checkpoint-dir",
                                 options.checkpoint_dir + " holds a run's " + name +
                                     ": give a directory without one (nothing is replaced)");
        }
      }
    }
  } else if (writes && writer) {
    throw core::InputError("", "--checkpoint-dir",
                           "the plan's chief writes checkpoints or summaries: give a directory");
  }
  // Every variable and optimizer slot of this task's shard, in memory: refused before anything
  // starts when this machine does not have it.
  if (const int ps =
          [&] {
            for (int r : setup.map.roles_of_task[setup.self]) {
              for (size_t j = 0; j < plan.ps_roles.size(); ++j) {
                if (plan.ps_roles[j] == r) return int(j);
              }
            }
            return -1;
          }();
      ps >= 0) {
    double bytes = 0;
    for (const core::Variable& v : plan.variables) {
      if (v.ps == ps) bytes += 4.0 * double(float_count(v.bytes)) * (1 + plan.optimizer.slots);
    }
    const double memory = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
    if (memory > 0 && bytes > memory) {
      throw core::InputError(options.plan_path, "/variables",
                             "ps" + std::to_string(ps) + "'s variables and optimizer slots need " +
                                 std::to_string(int64_t(bytes / 1e6)) + " MB; this machine has " +
                                 std::to_string(int64_t(memory / 1e6)) + " MB");
    }
  }
  detail::Node node(setup);
  node.run();
  if (gathers && node.run_trace()) {
    run_trace = &*node.run_trace();
    run_outputs.write_all();
    if (options.report) options.report(*run_trace, run_trace_out);
  }
  return 0;
}

}  // namespace replisim::real
