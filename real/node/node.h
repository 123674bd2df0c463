// One task of a real run: `replisim node --plan PLAN.json --role NAME --cluster CLUSTER.json`
// runs the ops of the plan whose roles map to that task (cluster.h), talking to the other tasks
// over authenticated TCP, and writes its part of the trace. `replisim run` starts one per task.
#pragma once

#include <functional>
#include <string>

#include "core/plan/plan.h"
#include "core/trace/trace.h"

namespace replisim::real {

struct NodeOptions {
  std::string plan_path;  // a plan file holding one plan (plan --json --strategy X)
  // A role of the plan: the node runs that role's task. "": the role the launcher's rank runs
  // (rank_from_environment, ranked_roles in cluster.h).
  std::string role;
  // The cluster spec (cluster.h). "": a Slurm step's (SLURM_JOB_NODELIST, each node's tasks at
  // base_port and up).
  std::string cluster_path;
  int base_port = 43000;
  int listen_fd = -1;  // a listening socket opened by the launcher; -1: bind the spec's port
  // This task's native trace (written whole at the end, or not at all; a launched node writes it
  // under trace_out + ".partial" as it goes, flushed every quarter second, so that what a task
  // killed from outside measured stays readable for the launcher).
  std::string trace_out;
  bool force = false;             // replace an existing trace_out
  std::string checkpoint_dir;     // where checkpoints go (an existing directory); "" when none
  int threads = 1;                // SGEMM threads per op
  double connect_timeout_s = 30;  // every peer connected and authenticated by then
  int progress_fd = -1;           // the chief writes progress JSON lines here (-1: none)
  // The launcher's notice that it started this node (keeps the node from outliving it).
  bool launched = false;
  // A restart after a job failure: the launcher's file of facts (Resume, runtime.h); "" for
  // the first start.
  std::string resume_path;
  // Started by `run --isolate netns`: the launcher plays the plan's link faults on the shaped
  // links (real/isolate), so they are accepted; the coordinator records their windows.
  bool shaped_links = false;
  // --insecure-frames: frames after the handshake carry no MAC (every task of the run the same).
  bool insecure_frames = false;
  // Not launched by `run`: the coordinator gathers every node's part at the end (over the
  // transport) into the run's trace, writes it here ("": replisim-run.trace; checked before the
  // run) and hands it to `report` with that name.
  std::string run_trace_out;
  std::function<void(const core::Trace& run, const std::string& file)> report;
  // Polled every 100 ms; true (SIGINT, SIGTERM) stops the node: its peers hear it, no trace is
  // written, run_node throws core::RunCancelled. Null: never.
  std::function<bool()> cancelled;
};

// Real runs inject the plan's role, machine and slowdown faults; a link fault needs shaped links
// (`run --isolate netns`): without them, throws core::InputError(file, "/faults/<i>", ...) naming
// it.
void check_faults(const core::Plan& plan, const std::string& file);

// Reads the plan file: exactly one plan. Throws core::InputError(file, ...) for a file holding
// several (naming plan --json --strategy) or a bad plan.
core::Plan read_plan_file(const std::string& path);

// Runs the task until the job ends. Returns 0 when the task's part ended as the plan says.
// Throws core::InputError for bad options, plan, cluster or role (exit 2) and
// core::BackendError when the run failed (one line naming the role, host and step).
int run_node(const NodeOptions& options);

}  // namespace replisim::real
