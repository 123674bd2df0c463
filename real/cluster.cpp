#include "real/cluster.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::real {
namespace {

using core::InputError;
using core::JsonCursor;

const std::vector<std::string> kJobs = {"ps", "worker", "client"};

// "host:port" (an IPv6 host in brackets: "[::1]:4000").
ClusterTask parse_address(const JsonCursor& at, const std::string& job, int index) {
  const std::string text = at.as_string();
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    at.fail("expected \"host:port\", got \"" + text + "\"");
  }
  std::string host = text.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = text.substr(colon + 1);
  char* end = nullptr;
  const long value = std::strtol(port.c_str(), &end, 10);
  if (port.find_first_not_of("0123456789") != std::string::npos || *end != '\0' || value < 1 ||
      value > 65535) {
    at.fail("port \"" + port + "\" is not from 1 to 65535");
  }
  if (host.empty() || host.size() > 255) at.fail("expected a host name or address before the port");
  return {job, index, host, uint16_t(value)};
}

}  // namespace

int ClusterSpec::find(const std::string& job, int index) const {
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (tasks[t].job == job && tasks[t].index == index) return int(t);
  }
  return -1;
}

ClusterSpec parse_cluster_spec(const nlohmann::json& json, const std::string& file) {
  const JsonCursor root(json, file);
  root.expect_object();
  root.check_keys({"cluster", "token", "task", "environment"});
  const JsonCursor cluster = root.at("cluster");
  cluster.expect_object();
  cluster.check_keys(kJobs);
  ClusterSpec spec;
  std::map<std::string, std::string> seen;  // address -> task
  for (const std::string& job : kJobs) {
    if (!cluster.has(job)) continue;
    const JsonCursor list = cluster.at(job);
    list.expect_array();
    if (list.size() > 4096) list.fail("more than 4096 tasks");
    for (size_t i = 0; i < list.size(); ++i) {
      ClusterTask task = parse_address(list.at(i), job, int(i));
      const auto [it, added] = seen.emplace(task.address(), task.name());
      if (!added) list.at(i).fail(task.address() + " is already " + it->second + "'s address");
      spec.tasks.push_back(std::move(task));
    }
  }
  if (spec.tasks.empty()) cluster.fail("lists no task");
  if (root.has("token")) {
    spec.token = root.at("token").as_string();
    if (spec.token.size() < kMinTokenBytes) {
      root.at("token").fail("a token needs at least " + std::to_string(kMinTokenBytes) + " bytes");
    }
  } else if (const char* env = std::getenv(kClusterTokenVariable); env != nullptr) {
    spec.token = env;
    if (spec.token.size() < kMinTokenBytes) {
      throw InputError(file, "",
                       std::string(kClusterTokenVariable) + " needs at least " +
                           std::to_string(kMinTokenBytes) + " bytes");
    }
  } else {
    throw InputError(
        file, "/token",
        std::string("no cluster token: give \"token\" here or set ") + kClusterTokenVariable);
  }
  return spec;
}

ClusterSpec read_cluster_file(const std::string& file) {
  return parse_cluster_spec(core::read_json_file(file), file);
}

nlohmann::json cluster_spec_to_json(const ClusterSpec& spec, bool with_token) {
  nlohmann::json cluster = nlohmann::json::object();
  for (const ClusterTask& task : spec.tasks) {
    const bool v6 = task.host.find(':') != std::string::npos;
    cluster[task.job].push_back((v6 ? "[" + task.host + "]" : task.host) + ":" +
                                std::to_string(task.port));
  }
  nlohmann::json j = {{"cluster", cluster}};
  if (with_token) j["token"] = spec.token;
  return j;
}

namespace {

// Per role: its (job, index).
std::vector<std::pair<std::string, int>> role_tasks(const core::Plan& plan) {
  std::vector<std::pair<std::string, int>> out(plan.roles.size(), {"", -1});
  int workers = 0, towers = 0;
  int chief_worker = -1;
  for (size_t j = 0; j < plan.ps_roles.size(); ++j) out[size_t(plan.ps_roles[j])] = {"ps", int(j)};
  for (size_t r = 0; r < plan.roles.size(); ++r) {
    switch (plan.roles[r].kind) {
      case core::RoleKind::kWorker:
        if (plan.roles[r].chief) chief_worker = workers;
        out[r] = {"worker", workers++};
        break;
      case core::RoleKind::kTower:
        out[r] = {"worker", towers++};
        break;
      case core::RoleKind::kClient:
        out[r] = {"client", 0};
        break;
      default:
        break;
    }
  }
  for (size_t r = 0; r < plan.roles.size(); ++r) {
    if (plan.roles[r].kind == core::RoleKind::kSyncQueueRunner) {
      out[r] = {"worker", chief_worker < 0 ? 0 : chief_worker};
    }
  }
  return out;
}

}  // namespace

std::vector<ClusterTask> tasks_of_plan(const core::Plan& plan) {
  std::map<std::string, int> count;
  for (const auto& [job, index] : role_tasks(plan)) {
    if (index >= 0) count[job] = std::max(count[job], index + 1);
  }
  std::vector<ClusterTask> tasks;
  for (const std::string& job : kJobs) {
    for (int i = 0; i < count[job]; ++i) tasks.push_back({job, i, "", 0});
  }
  return tasks;
}

TaskMap map_roles(const core::Plan& plan, const ClusterSpec& spec, const std::string& file) {
  TaskMap map;
  map.roles_of_task.assign(spec.tasks.size(), {});
  const auto tasks = role_tasks(plan);
  for (size_t r = 0; r < plan.roles.size(); ++r) {
    const std::string& job = tasks[r].first;
    const int index = tasks[r].second;
    if (index < 0) {
      throw InputError("", "/roles/" + std::to_string(r),
                       "role " + plan.roles[r].name + " (" +
                           core::role_kind_name(plan.roles[r].kind) +
                           ") has no task in this plan's shape");
    }
    const int t = spec.find(job, index);
    if (t < 0) {
      const std::vector<ClusterTask> needed = tasks_of_plan(plan);
      const auto of_job = [&job](const auto& list) {
        return std::count_if(list.begin(), list.end(),
                             [&job](const ClusterTask& x) { return x.job == job; });
      };
      throw InputError(file, "/cluster/" + job,
                       "no task " + job + std::to_string(index) + " for role " +
                           plan.roles[r].name + ": the plan needs " +
                           std::to_string(of_job(needed)) + " " + job +
                           " task(s), this spec lists " + std::to_string(of_job(spec.tasks)));
    }
    map.task_of_role.push_back(t);
    map.roles_of_task[size_t(t)].push_back(int(r));
    if (plan.roles[r].chief) map.chief_task = t;
  }
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    if (map.roles_of_task[t].empty()) {
      throw InputError(file,
                       "/cluster/" + spec.tasks[t].job + "/" + std::to_string(spec.tasks[t].index),
                       "task " + spec.tasks[t].name() + " runs no role of the plan");
    }
  }
  if (map.chief_task < 0) map.chief_task = map.task_of_role.empty() ? 0 : map.task_of_role.front();
  map.coordinator_task = map.chief_task;
  if (!plan.variables.empty() && plan.variables.front().ps >= 0 &&
      size_t(plan.variables.front().ps) < plan.ps_roles.size()) {
    map.coordinator_task =
        map.task_of_role[size_t(plan.ps_roles[size_t(plan.variables.front().ps)])];
  }
  return map;
}

}  // namespace replisim::real
