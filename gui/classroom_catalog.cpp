#include "gui/classroom_catalog.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/metrics/critical_path.h"
#include "core/strategy/strategy_names.h"

namespace replisim::gui {

namespace {

// Placeholder names, and whether they take an argument ({link:pc1/nic/up}).
const std::map<std::string, bool>& placeholders() {
  static const std::map<std::string, bool> names = {{"throughput", false},
                                                    {"step_ms", false},
                                                    {"update_ms", false},
                                                    {"link", true},
                                                    {"device", true},
                                                    {"bottleneck", false},
                                                    {"bottleneck_pct", false},
                                                    {"fastest_client", false},
                                                    {"slowest_client", false},
                                                    {"fastest_rate", false},
                                                    {"slowest_rate", false},
                                                    {"client_rate", true},
                                                    {"dropped", false},
                                                    {"computed_vs_applied", false},
                                                    {"lost_steps", false},
                                                    {"lost_work_s", false},
                                                    {"recovery_s", false},
                                                    {"fault_s", false},
                                                    {"wait", true},
                                                    {"bound_by", false},
                                                    {"bound_by_pct", false},
                                                    {"bound_by_path", false},
                                                    {"waiting_most", true},
                                                    {"waiting_most_pct", true},
                                                    {"workers", false},
                                                    {"staleness", false},
                                                    {"target", false},
                                                    {"time_to_target_ms", false},
                                                    {"steps_to_target", false},
                                                    {"final_accuracy", false}};
  return names;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// Calls `each(name, argument)` for every {placeholder}; returns the text with them replaced.
template <typename Each>
std::string substitute(const std::string& text, Each each) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t open = text.find('{', at);
    if (open == std::string::npos) {
      out += text.substr(at);
      break;
    }
    const size_t close = text.find('}', open);
    if (close == std::string::npos) throw std::invalid_argument("a '{' without its '}'");
    out += text.substr(at, open - at);
    const std::string inside = text.substr(open + 1, close - open - 1);
    const size_t colon = inside.find(':');
    const std::string name = inside.substr(0, colon);
    const std::string argument = colon == std::string::npos ? "" : inside.substr(colon + 1);
    const auto known = placeholders().find(name);
    if (known == placeholders().end())
      throw std::invalid_argument("unknown figure {" + inside + "}");
    if (known->second == argument.empty())
      throw std::invalid_argument("{" + inside + "}: " + (known->second ? "needs" : "takes no") +
                                  " argument");
    out += each(name, argument);
    at = close + 1;
  }
  return out;
}

double use_of(const std::vector<core::ResourceUse>& uses, const std::string& name) {
  for (const core::ResourceUse& use : uses)
    if (use.name == name) return use.utilization;
  throw std::invalid_argument("the run has no " + name);
}

// The part of a WaitBreakdown named `part` (compute, network, peers, client, ps, token, other).
double wait_part(const core::WaitBreakdown& w, const std::string& part) {
  const std::map<std::string, double> parts = {{"compute", w.compute},       {"network", w.network},
                                               {"collective", w.collective}, {"peers", w.peers},
                                               {"client", w.client},         {"ps", w.ps},
                                               {"token", w.token},           {"other", w.other}};
  const auto it = parts.find(part);
  if (it == parts.end()) throw std::invalid_argument("no wait part " + part);
  return it->second;
}

double wait_share(const core::RunMetrics& m, const std::string& argument) {
  const std::string kind = argument.substr(0, argument.find('.'));
  const std::string part = argument.substr(argument.find('.') + 1);
  for (const core::WaitBreakdown& w : core::average_waits_by_kind(m.waits)) {
    if (w.role_kind == kind) return wait_part(w, part);
  }
  throw std::invalid_argument("the run has no " + kind + " waits");
}

// {waiting_most:KIND.PART}: the role of KIND whose steps spent the largest share waiting on PART
// (the per-role rows behind the report's "time of ..." averages), and that share.
const core::WaitBreakdown& waiting_most(const core::RunMetrics& m, const std::string& argument) {
  const std::string kind = argument.substr(0, argument.find('.'));
  const std::string part = argument.substr(argument.find('.') + 1);
  const core::WaitBreakdown* most = nullptr;
  for (const core::WaitBreakdown& w : m.waits) {
    if (w.role_kind == kind && (!most || wait_part(w, part) > wait_part(*most, part))) most = &w;
  }
  if (!most) throw std::invalid_argument("the run has no " + kind + " waits");
  return *most;
}

// The run's critical path (the report's "bound by" row); throws when the trace has none.
const core::CriticalPath& bound_by(const core::RunMetrics& m) {
  if (m.bound_by.shares.empty()) throw std::invalid_argument("the run has no critical path");
  return m.bound_by;
}

std::string client_figure(const core::RunMetrics& m, const std::string& name,
                          const std::string& argument) {
  std::vector<core::ClientMetrics> clients;
  for (const core::ClientMetrics& c : m.clients)
    if (c.measured_steps > 0) clients.push_back(c);
  if (clients.empty()) throw std::invalid_argument("the run measured no client");
  if (name == "client_rate") {
    for (const core::ClientMetrics& c : clients)
      if (c.name == argument) return fixed(c.step_rate_per_s, 2);
    throw std::invalid_argument("the run measured no client " + argument);
  }
  const auto by_rate = [](const auto& a, const auto& b) {
    return a.step_rate_per_s < b.step_rate_per_s;
  };
  const core::ClientMetrics& c = name.rfind("fastest", 0) == 0
                                     ? *std::max_element(clients.begin(), clients.end(), by_rate)
                                     : *std::min_element(clients.begin(), clients.end(), by_rate);
  return name.find("_rate") != std::string::npos ? fixed(c.step_rate_per_s, 2) : c.name;
}

std::string recovery_figure(const core::RunMetrics& m, const std::string& name) {
  if (m.recoveries.empty()) throw std::invalid_argument("the run has no restart");
  const core::RecoveryRecord& r = m.recoveries.front();
  if (name == "lost_steps") return std::to_string(r.lost_global_steps);
  if (name == "lost_work_s") return fixed(r.lost_work_s, 1);
  if (name == "recovery_s") return fixed(r.recovery_time_s, 1);
  return fixed(r.fault_s, 1);
}

// training.objective's figures: {target} (its value), {time_to_target_ms}, {steps_to_target}
// (global steps), {final_accuracy} (%).
std::string objective_figure(const core::RunMetrics& m, const std::string& name) {
  if (!m.objective || m.objective->evaluations == 0) {
    throw std::invalid_argument("the run computed no objective");
  }
  const core::ObjectiveMetrics& o = *m.objective;
  if (name == "target") return fixed(o.target_value, o.target == "accuracy" ? 2 : 3);
  if (name == "final_accuracy") return fixed(100 * o.final_accuracy, 1);
  if (!o.reached()) throw std::invalid_argument("the run did not reach its target");
  if (name == "time_to_target_ms") return fixed(1e3 * o.time_to_target_s, 0);
  return std::to_string(o.global_steps_to_target);
}

std::string figure(const core::RunMetrics& m, const std::string& name, const std::string& arg) {
  if (name == "throughput") return fixed(m.throughput_samples_per_s, 0);
  if (name == "step_ms") return fixed(m.step_time_s.mean * 1e3, 0);
  if (name == "update_ms") return fixed(m.update_interval_s * 1e3, 0);
  if (name == "link") return fixed(100 * use_of(m.links, arg), 0);
  if (name == "device") return fixed(100 * use_of(m.devices, arg), 0);
  if (name == "bottleneck") return m.bottleneck.name;
  if (name == "bottleneck_pct") return fixed(100 * m.bottleneck.utilization, 0);
  if (name == "dropped") return std::to_string(m.dropped_gradients);
  if (name == "computed_vs_applied") {
    if (m.computed_samples_per_s <= 0) throw std::invalid_argument("the run is not synchronous");
    return fixed(100 * m.throughput_samples_per_s / m.computed_samples_per_s, 0);
  }
  if (name == "wait") return fixed(100 * wait_share(m, arg), 0);
  if (name == "workers") return std::to_string(m.clients.size());
  if (name == "staleness") return fixed(m.staleness_mean, 1);
  if (name == "target" || name == "time_to_target_ms" || name == "steps_to_target" ||
      name == "final_accuracy") {
    return objective_figure(m, name);
  }
  if (name == "bound_by") return bound_by(m).shares.front().name;
  if (name == "bound_by_pct") {
    const core::CriticalPath& path = bound_by(m);
    return fixed(100 * path.shares.front().seconds / path.seconds, 0);
  }
  if (name == "bound_by_path") return core::describe_path(bound_by(m), 2, false);
  if (name == "waiting_most") return waiting_most(m, arg).role;
  if (name == "waiting_most_pct") {
    return fixed(100 * wait_part(waiting_most(m, arg), arg.substr(arg.find('.') + 1)), 0);
  }
  if (name.find("client") != std::string::npos || name.find("rate") != std::string::npos)
    return client_figure(m, name, arg);
  return recovery_figure(m, name);
}

std::string text_of(const nlohmann::json& entry, const char* key, const std::string& where) {
  if (!entry.contains(key) || !entry[key].is_string() || entry[key].get<std::string>().empty())
    throw std::runtime_error(where + ": \"" + key + "\" missing or empty");
  return entry[key].get<std::string>();
}

// "rows": {strategy: [actor, ...]}.
std::map<std::string, std::vector<std::string>> read_rows(const nlohmann::json& rows,
                                                          const std::string& where) {
  std::map<std::string, std::vector<std::string>> out;
  const std::string what = where + ": \"rows\" is an object: strategy -> [actor names]";
  if (!rows.is_object()) throw std::runtime_error(what);
  for (const auto& [strategy, actors] : rows.items()) {
    if (!actors.is_array() || actors.empty()) throw std::runtime_error(what);
    for (const nlohmann::json& actor : actors) {
      if (!actor.is_string()) throw std::runtime_error(what);
      out[strategy].push_back(actor.get<std::string>());
    }
  }
  return out;
}

ClassroomEntry read_entry(const nlohmann::json& e, const std::string& where) {
  ClassroomEntry entry;
  entry.file = text_of(e, "file", where);
  entry.title = text_of(e, "title", where);
  entry.claim = text_of(e, "claim", where);
  entry.look = text_of(e, "look", where);
  entry.strategy = text_of(e, "strategy", where);
  try {
    core::parse_strategy_list(entry.strategy, "strategy");
  } catch (const core::InputError& e) {
    throw std::runtime_error(where + ": " + e.message());
  }
  entry.interactive_steps = e.value("interactive_steps", 0);
  entry.interactive_granularity = e.value("interactive_granularity", 0);
  entry.steps_note = e.value("steps_note", std::string());
  if (!e.contains("captions") || !e["captions"].is_object() || e["captions"].empty())
    throw std::runtime_error(where + ": \"captions\" missing (an object: strategy -> text)");
  for (const auto& [strategy, text] : e["captions"].items()) {
    if (!text.is_string()) throw std::runtime_error(where + ": caption " + strategy + " not text");
    if (const std::string why = check_caption(text.get<std::string>()); !why.empty())
      throw std::runtime_error(where + ": caption " + strategy + ": " + why);
    if (text.get<std::string>().find("{bound_by") == std::string::npos) {
      throw std::runtime_error(where + ": caption " + strategy +
                               ": names no cause ({bound_by} or {bound_by_path}: the run's "
                               "critical path)");
    }
    entry.captions[strategy] = text.get<std::string>();
  }
  if (e.contains("rows")) entry.rows = read_rows(e["rows"], where);
  return entry;
}

}  // namespace

std::string check_caption(const std::string& text) {
  try {
    substitute(text, [](const std::string&, const std::string&) { return std::string(); });
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string fallback_caption(const core::RunMetrics& m) {
  const std::string cause = m.bound_by.shares.empty()
                                ? "the busiest resource is " + m.bottleneck.name + " at " +
                                      fixed(100 * m.bottleneck.utilization, 0) + "%"
                                : "bound by " + core::describe_path(m.bound_by, 2, false);
  return cause + ": " + fixed(m.throughput_samples_per_s, 0) + " samples/s, a step every " +
         fixed(m.step_time_s.mean * 1e3, 0) + " ms.";
}

std::string render_caption(const std::string& text, const core::RunMetrics& metrics) {
  return substitute(text, [&metrics](const std::string& name, const std::string& argument) {
    return figure(metrics, name, argument);
  });
}

std::vector<ClassroomEntry> load_classroom_catalog(const std::string& scenarios_dir) {
  const std::string path = scenarios_dir + "/classroom.catalog";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the classroom catalog");
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("scenarios") ||
      !json["scenarios"].is_array())
    throw std::runtime_error(path + ": not a catalog (a JSON object with a \"scenarios\" list)");
  std::vector<ClassroomEntry> out;
  for (size_t i = 0; i < json["scenarios"].size(); ++i) {
    out.push_back(read_entry(json["scenarios"][i], path + ": /scenarios/" + std::to_string(i)));
  }
  return out;
}

QString default_scenarios_dir() {
  const QString from_environment = qEnvironmentVariable("REPLISIM_SCENARIOS");
  if (!from_environment.isEmpty()) return from_environment;
  QDir dir(QCoreApplication::applicationDirPath());
  for (int up = 0; up < 4 && dir.cdUp(); ++up) {
    if (QFileInfo(dir.filePath("scenarios/classroom.catalog")).isFile())
      return dir.filePath("scenarios");
  }
  return "scenarios";
}

}  // namespace replisim::gui
