// The cluster a real run spans, in TensorFlow's ClusterSpec / TF_CONFIG shape
// ({"cluster": {"ps": ["host:port", ...], "worker": [...], "client": [...]}, "token": "..."}),
// and how the plan's roles map onto its tasks. Tasks are numbered in the order ps, worker, client
// (each job's list in order): frames name tasks by that number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan/plan.h"

namespace replisim::real {

// One task of the job: TF's (job name, task index) and where it listens.
struct ClusterTask {
  std::string job;  // "ps", "worker" or "client"
  int index = 0;    // within its job
  std::string host;
  uint16_t port = 0;
  std::string name() const { return job + std::to_string(index); }  // "worker1"
  std::string address() const { return host + ":" + std::to_string(port); }
};

struct ClusterSpec {
  std::vector<ClusterTask> tasks;  // ps, then worker, then client
  std::string token;               // the cluster token (the handshake's HMAC key); may be empty
  int find(const std::string& job, int index) const;  // task number, or -1
};

// The environment variable a token comes from when the spec has none.
inline constexpr const char* kClusterTokenVariable = "REPLISIM_CLUSTER_TOKEN";
// Tokens must carry at least this many bits (a run makes 64 hex digits: 256 bits).
inline constexpr double kMinTokenBits = 128;
// The bits a token can carry at most, from the characters it is written with: hex digits 4 each,
// base64's alphabet 6, printable ASCII log2(95), anything else 8; a token of fewer than 4
// distinct characters counts 0 ("aaaa...": a placeholder, not a secret). So 32 hex digits, 22
// base64 characters or 16 random bytes reach 128 bits.
double token_bits(const std::string& token);

// Reads a cluster spec. The token comes from "token", else from REPLISIM_CLUSTER_TOKEN; none, or
// one under kMinTokenBits, is an error. Throws core::InputError(file, JSON path, ...) on a missing
// "cluster", an unknown job or member, an address that is not "host:port" with a port in
// 1..65535, or a task listed twice.
ClusterSpec parse_cluster_spec(const nlohmann::json& json, const std::string& file);
// As parse_cluster_spec over the file; a file that holds the token and that its group or others
// may read is refused (chmod 600: the token is the cluster's only secret).
ClusterSpec read_cluster_file(const std::string& file);
// The spec as JSON; the token only when `with_token` (run passes it through the environment).
nlohmann::json cluster_spec_to_json(const ClusterSpec& spec, bool with_token);

// Roles onto tasks: ps<j> -> (ps, j) with j its shard (Plan::ps_roles order); the i-th worker
// role -> (worker, i), the chief's sync queue runner with worker 0; the i-th tower ->
// (worker, i); the in-graph client -> (client, 0).
struct TaskMap {
  std::vector<int> task_of_role;                // per plan role: its task number
  std::vector<std::vector<int>> roles_of_task;  // per task: its roles, in plan order
  int chief_task = -1;                          // the task of the chief role
  // The task that runs the job's control (clocks, start, progress, quiescence, the end): the task
  // of the parameter server holding global_step, else the chief's. A fault cannot kill it without
  // failing the whole job, so a dead chief (a worker) leaves the control running.
  int coordinator_task = -1;
};

// The tasks (job, index) a plan needs, in task order.
std::vector<ClusterTask> tasks_of_plan(const core::Plan& plan);
// Maps the plan's roles onto `spec`. Throws core::InputError(file, "/cluster/<job>", ...) when
// the spec lacks a task a role needs or has one that no role runs.
TaskMap map_roles(const core::Plan& plan, const ClusterSpec& spec, const std::string& file);

// --- Cluster launchers (docs/real-runs.md, "On a cluster") -----------------------------------

// The roles a launcher's ranks run, rank r the r-th: the plan's roles in plan order, but for the
// chief's sync queue runner (it runs inside worker 0's process). As many as the plan has tasks.
std::vector<int> ranked_roles(const core::Plan& plan);

// A process's rank from its launcher: the first set of OMPI_COMM_WORLD_RANK (Open MPI's mpirun),
// PMI_RANK (MPICH's and Intel MPI's mpiexec) and SLURM_PROCID (srun): the MPI launchers' first,
// since mpirun inside a Slurm allocation passes the allocation's SLURM_PROCID on to every rank.
// Throws core::InputError naming the variable when it is not a whole number from 0.
struct LauncherRank {
  std::string variable;
  int rank = 0;
};
std::optional<LauncherRank> rank_from_environment();

// Slurm's compressed host list ("node[01-03,07],gpu-[1-2]a"), expanded in order, zero padding
// kept. Throws core::InputError("", variable, ...) naming the variable it came from.
std::vector<std::string> expand_host_list(const std::string& list,
                                          const std::string& variable = "SLURM_STEP_NODELIST");
// Tasks per node ("2(x3),1": 2, 2, 2, 1), one count per node. Throws core::InputError.
std::vector<int> expand_tasks_per_node(const std::string& text,
                                       const std::string& variable = "SLURM_STEP_TASKS_PER_NODE");

// A Slurm step's nodes and tasks per node, and the variables they came from: the step's own
// (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE), else the job's (SLURM_JOB_NODELIST,
// SLURM_TASKS_PER_NODE: the whole allocation).
struct SlurmStep {
  std::string nodes, nodes_variable;
  std::string tasks, tasks_variable;
};

// The cluster spec of a Slurm step: ranks go to the nodes in order, each node's share in a row
// (srun's default block distribution); rank r runs ranked_roles(plan)[r], on its node, at
// base_port + its index among that node's ranks. The token comes from REPLISIM_CLUSTER_TOKEN.
// Throws core::InputError naming the variable when the step's tasks are not the plan's.
ClusterSpec slurm_cluster_spec(const core::Plan& plan, const SlurmStep& step, int base_port);

}  // namespace replisim::real
