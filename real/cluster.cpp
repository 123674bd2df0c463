#include "real/cluster.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include <sys/stat.h>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::real {
namespace {

using core::InputError;
using core::JsonCursor;

const std::vector<std::string> kJobs = {"ps", "worker", "client"};

// Why `token` is refused ("" when it is strong enough).
std::string weak_token(const std::string& token) {
  const double bits = token_bits(token);
  if (bits >= kMinTokenBits) return "";
  char text[160];
  std::snprintf(text, sizeof text,
                "a token needs at least %.0f bits: 32 hex digits, 22 base64 characters or 16 "
                "random bytes (this one: about %.0f)",
                kMinTokenBits, bits);
  return text;
}

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

double token_bits(const std::string& token) {
  std::set<char> distinct(token.begin(), token.end());
  if (distinct.size() < 4) return 0;
  const auto all = [&](auto in_alphabet) {
    return std::all_of(token.begin(), token.end(),
                       [&](char c) { return in_alphabet(static_cast<unsigned char>(c)); });
  };
  double per_char = 8;
  if (all([](unsigned char c) { return std::isxdigit(c) != 0; })) {
    per_char = 4;
  } else if (all([](unsigned char c) {
               return std::isalnum(c) != 0 || c == '+' || c == '/' || c == '-' || c == '_' ||
                      c == '=';
             })) {
    per_char = 6;
  } else if (all([](unsigned char c) { return c >= 0x20 && c < 0x7F; })) {
    per_char = std::log2(95.0);
  }
  return per_char * double(token.size());
}

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
    const std::string weak = weak_token(spec.token);
    if (!weak.empty()) root.at("token").fail(weak);
  } else if (const char* env = std::getenv(kClusterTokenVariable); env != nullptr) {
    spec.token = env;
    const std::string weak = weak_token(spec.token);
    if (!weak.empty()) throw InputError(file, "", std::string(kClusterTokenVariable) + ": " + weak);
  } else {
    throw InputError(
        file, "/token",
        std::string("no cluster token: give \"token\" here or set ") + kClusterTokenVariable);
  }
  return spec;
}

ClusterSpec read_cluster_file(const std::string& file) {
  const nlohmann::json json = core::read_json_file(file);
  struct stat info {};
  if (json.is_object() && json.contains("token") && ::stat(file.c_str(), &info) == 0 &&
      (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    // Read: the token leaks; written: another user changes the token or the tasks' addresses.
    throw InputError(file, "/token",
                     "holds the cluster token but its group or others may read or change it: "
                     "chmod 600 " +
                         file);
  }
  return parse_cluster_spec(json, file);
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

std::vector<int> ranked_roles(const core::Plan& plan) {
  std::vector<int> roles;
  for (size_t r = 0; r < plan.roles.size(); ++r) {
    if (plan.roles[r].kind != core::RoleKind::kSyncQueueRunner) roles.push_back(int(r));
  }
  return roles;
}

std::optional<LauncherRank> rank_from_environment() {
  // The MPI launchers' first: mpirun inside a Slurm allocation passes the allocation's
  // SLURM_PROCID on to every rank (srun sets SLURM_PROCID, and PMI_RANK equal to it with PMI).
  for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(variable);
    if (value == nullptr) continue;
    const std::string text = value;
    char* end = nullptr;
    const long rank = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || *end != '\0' ||
        rank > (1 << 20)) {
      throw InputError("", variable, "\"" + text.substr(0, 40) + "\" is not a rank (0, 1, ...)");
    }
    return LauncherRank{variable, int(rank)};
  }
  return std::nullopt;
}

namespace {

constexpr size_t kMaxHosts = 1 << 16;

// "01-03,7" inside brackets: the numbers, each at the width it was written with.
std::vector<std::string> expand_ranges(const std::string& ranges, const std::string& list,
                                       const std::string& variable) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= ranges.size()) {
    const size_t comma = std::min(ranges.find(',', at), ranges.size());
    const std::string range = ranges.substr(at, comma - at);
    const size_t dash = range.find('-');
    const std::string first = range.substr(0, dash);
    const std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
    if (first.empty() || last.empty() ||
        first.find_first_not_of("0123456789") != std::string::npos ||
        last.find_first_not_of("0123456789") != std::string::npos || first.size() > 9 ||
        last.size() > 9) {
      throw InputError("", variable,
                       "\"" + range + "\" in \"" + list.substr(0, 200) + "\" is not N or N-M");
    }
    const long from = std::stol(first), to = std::stol(last);
    if (to < from || size_t(to - from) >= kMaxHosts) {
      throw InputError("", variable, "the range \"" + range + "\" runs backwards or is too long");
    }
    for (long n = from; n <= to; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < first.size()) number.insert(0, first.size() - number.size(), '0');
      out.push_back(number);
    }
    at = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> expand_host_list(const std::string& list, const std::string& variable) {
  std::vector<std::string> hosts;
  size_t at = 0;
  while (at < list.size()) {
    // One item: up to the next comma outside brackets.
    size_t end = at;
    int depth = 0;
    for (; end < list.size() && !(list[end] == ',' && depth == 0); ++end) {
      depth += list[end] == '[' ? 1 : list[end] == ']' ? -1 : 0;
      if (depth < 0 || depth > 1) {
        throw InputError("", variable, "unbalanced brackets in \"" + list.substr(0, 200) + "\"");
      }
    }
    if (depth != 0) {
      throw InputError("", variable, "unbalanced brackets in \"" + list.substr(0, 200) + "\"");
    }
    const std::string item = list.substr(at, end - at);
    if (item.empty())
      throw InputError("", variable, "an empty host in \"" + list.substr(0, 200) + "\"");
    // Every bracket group multiplies: "r[1-2]n[1-2]" is r1n1 r1n2 r2n1 r2n2.
    std::vector<std::string> names = {""};
    size_t i = 0;
    while (i < item.size()) {
      const size_t open = item.find('[', i);
      const std::string text =
          item.substr(i, open == std::string::npos ? std::string::npos : open - i);
      for (std::string& n : names) n += text;
      if (open == std::string::npos) break;
      const size_t close = item.find(']', open);
      const std::vector<std::string> numbers =
          expand_ranges(item.substr(open + 1, close - open - 1), list, variable);
      std::vector<std::string> next;
      for (const std::string& n : names) {
        for (const std::string& number : numbers) next.push_back(n + number);
      }
      if (next.size() > kMaxHosts) throw InputError("", variable, "more than 65536 hosts");
      names = std::move(next);
      i = close + 1;
    }
    for (std::string& n : names) {
      if (n.size() > 255) throw InputError("", variable, "a host name over 255 bytes");
      hosts.push_back(std::move(n));
    }
    if (hosts.size() > kMaxHosts) {
      throw InputError("", variable, "more than 65536 hosts");
    }
    if (end + 1 == list.size()) {
      throw InputError("", variable, "an empty host at the end of \"" + list.substr(0, 200) + "\"");
    }
    at = end + 1;
  }
  if (hosts.empty()) throw InputError("", variable, "lists no host");
  return hosts;
}

std::vector<int> expand_tasks_per_node(const std::string& text, const std::string& variable) {
  std::vector<int> counts;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t paren = item.find("(x");
    const std::string count = item.substr(0, paren);
    std::string times = "1";
    if (paren != std::string::npos) {
      if (item.back() != ')') throw InputError("", variable, "\"" + item + "\" is not N or N(xM)");
      times = item.substr(paren + 2, item.size() - paren - 3);
    }
    for (const std::string* n : {&count, static_cast<const std::string*>(&times)}) {
      if (n->empty() || n->size() > 6 || n->find_first_not_of("0123456789") != std::string::npos) {
        throw InputError("", variable, "\"" + item.substr(0, 40) + "\" is not N or N(xM)");
      }
    }
    if (std::stoi(times) == 0) {
      throw InputError("", variable, "\"" + item + "\" counts no node");
    }
    if (counts.size() + size_t(std::stoi(times)) > kMaxHosts) {
      throw InputError("", variable, "more than 65536 nodes");
    }
    counts.insert(counts.end(), size_t(std::stoi(times)), std::stoi(count));
    at = comma + 1;
  }
  if (!text.empty() && text.back() == ',') {
    throw InputError("", variable, "an empty count at the end of \"" + text + "\"");
  }
  if (counts.empty()) throw InputError("", variable, "is empty");
  return counts;
}

ClusterSpec slurm_cluster_spec(const core::Plan& plan, const SlurmStep& step, int base_port) {
  const std::vector<std::string> hosts = expand_host_list(step.nodes, step.nodes_variable);
  const std::vector<int> counts = expand_tasks_per_node(step.tasks, step.tasks_variable);
  if (counts.size() != hosts.size()) {
    throw InputError("", step.tasks_variable,
                     std::to_string(counts.size()) + " nodes' counts for the " +
                         std::to_string(hosts.size()) + " hosts of " + step.nodes_variable);
  }
  const std::vector<int> roles = ranked_roles(plan);
  const auto tasks = role_tasks(plan);
  ClusterSpec spec;
  spec.tasks = tasks_of_plan(plan);
  size_t rank = 0;
  for (size_t node = 0; node < hosts.size(); ++node) {
    for (int local = 0; local < counts[node]; ++local, ++rank) {
      if (rank >= roles.size()) continue;  // counted below
      const int port = base_port + local;
      if (port > 65535) throw InputError("", "--base-port", "ports past 65535 on " + hosts[node]);
      const auto& [job, index] = tasks[size_t(roles[rank])];
      const int t = spec.find(job, index);
      spec.tasks[size_t(t)].host = hosts[node];
      spec.tasks[size_t(t)].port = uint16_t(port);
    }
  }
  if (rank != roles.size()) {
    throw InputError("", step.tasks_variable,
                     "the step has " + std::to_string(rank) + " tasks; the plan needs " +
                         std::to_string(roles.size()) + " (srun --ntasks " +
                         std::to_string(roles.size()) + ")");
  }
  // The token from the environment (a Slurm step has no spec file to hold one).
  const char* token = std::getenv(kClusterTokenVariable);
  if (token == nullptr || !weak_token(token).empty()) {
    throw InputError("", kClusterTokenVariable,
                     (token == nullptr ? std::string("not set") : weak_token(token)) +
                         ": under srun without --cluster the cluster token comes from it");
  }
  nlohmann::json json = cluster_spec_to_json(spec, false);
  return parse_cluster_spec(json, step.nodes_variable);
}

}  // namespace replisim::real
