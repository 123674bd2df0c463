// One task of a real run: `replisim node --plan PLAN.json --role NAME --cluster CLUSTER.json`
// runs the ops of the plan whose roles map to that task (cluster.h), talking to the other tasks
// over authenticated TCP, and writes its part of the trace. `replisim run` starts one per task.
#pragma once

#include <functional>
#include <string>

#include "core/plan/plan.h"

namespace replisim::real {

struct NodeOptions {
  std::string plan_path;     // a plan file holding one plan (plan --json --strategy X)
  std::string role;          // a role of the plan: the node runs that role's task
  std::string cluster_path;  // the cluster spec (cluster.h)
  int listen_fd = -1;        // a listening socket opened by the launcher; -1: bind the spec's port
  std::string trace_out;     // this task's native trace (written whole at the end, or not at all)
  bool force = false;        // replace an existing trace_out
  std::string checkpoint_dir;     // where checkpoints go (an existing directory); "" when none
  int threads = 1;                // SGEMM threads per op
  double connect_timeout_s = 30;  // every peer connected and authenticated by then
  int progress_fd = -1;           // the chief writes progress JSON lines here (-1: none)
  // The launcher's notice that it started this node (keeps the node from outliving it).
  bool launched = false;
  // Polled every 100 ms; true (SIGINT, SIGTERM) stops the node: its peers hear it, no trace is
  // written, run_node throws core::RunCancelled. Null: never.
  std::function<bool()> cancelled;
};

// Reads the plan file: exactly one plan. Throws core::InputError(file, ...) for a file holding
// several (naming plan --json --strategy) or a bad plan.
core::Plan read_plan_file(const std::string& path);

// Runs the task until the job ends. Returns 0 when the task's part ended as the plan says.
// Throws core::InputError for bad options, plan, cluster or role (exit 2) and
// core::BackendError when the run failed (one line naming the role, host and step).
int run_node(const NodeOptions& options);

}  // namespace replisim::real
