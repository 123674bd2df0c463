// recommend: what to buy. Every configuration a price catalog allows (instance type, machine
// count, strategy, PS count, sync mode; on demand or spot) is priced; those whose closed-form
// bounds rule them out are not simulated; the rest run as sweep points (cached, --jobs at once,
// --shard), and the job's cost and time of each give the Pareto front, the cheapest point meeting
// the target and the fastest within budget (docs/capacity-planning.md#what-to-buy).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/sweep_engine.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/output_file.h"
#include "core/plan/plan.h"
#include "core/runtime/recovery_timeline.h"
#include "core/strategy/strategy.h"
#include "core/sweep/recommend.h"

namespace replisim::cli {
namespace {

using nlohmann::json;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  return items;
}

int parse_count(const std::string& text, const std::string& flag, int min_value, int max_value) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < min_value || value > max_value) {
    throw core::InputError("", flag,
                           "expected an integer from " + std::to_string(min_value) + " to " +
                               std::to_string(max_value) + ", got \"" + text + "\"");
  }
  return int(value);
}

core::RecommendTarget parse_target(const CliArgs& args) {
  if (!args.target_accuracy.empty()) {
    throw core::InputError(
        "", "--accuracy",
        "an accuracy target is not supported by recommend yet: the time to accuracy of a "
        "configuration needs its objective simulated to the target at the catalog's scale; give "
        "--samples N --deadline TIME (e.g. the samples of the epochs you train) or --throughput");
  }
  core::RecommendTarget t;
  if (!args.target_throughput.empty()) {
    if (!args.target_samples.empty() || !args.deadline.empty()) {
      throw core::InputError("", args.target_samples.empty() ? "--deadline" : "--samples",
                             "give either --throughput or --samples with --deadline, not both");
    }
    t.kind = core::RecommendTarget::Kind::kThroughput;
    t.throughput_samples_per_s =
        core::parse_throughput_text(args.target_throughput, "--throughput");
    return t;
  }
  if (args.target_samples.empty() || args.deadline.empty()) {
    throw core::InputError("", args.target_samples.empty() ? "--samples" : "--deadline",
                           "recommend needs a target: --throughput \"2000 images/s\", or "
                           "--samples N with --deadline \"72 h\"");
  }
  t.kind = core::RecommendTarget::Kind::kSamples;
  char* end = nullptr;
  t.samples = std::strtod(args.target_samples.c_str(), &end);
  if (*end != '\0' || !std::isfinite(t.samples) || t.samples < 1 || t.samples > 1e15) {
    throw core::InputError(
        "", "--samples",
        "expected a number of samples from 1 to 1e15, got \"" + args.target_samples + "\"");
  }
  t.deadline_s = core::parse_duration_text(args.deadline, "--deadline");
  return t;
}

core::RecommendSpace parse_space(const CliArgs& args) {
  core::RecommendSpace s;
  if (!args.max_machines.empty()) {
    s.max_machines = parse_count(args.max_machines, "--max-machines", 1, 4096);
  }
  s.strategies = core::parse_strategy_list(args.strategy);
  if (!args.ps_counts.empty()) {
    s.ps_counts.clear();
    for (const std::string& p : split_list(args.ps_counts)) {
      s.ps_counts.push_back(parse_count(p, "--ps", 1, 1024));
    }
    if (s.ps_counts.empty()) throw core::InputError("", "--ps", "expected counts: 1,2,4");
  }
  if (!args.sync_modes.empty()) {
    s.sync_modes = split_list(args.sync_modes);
    for (const std::string& m : s.sync_modes) {
      if (m != "async" && m != "sync") {
        throw core::InputError("", "--sync", "expected async, sync or both, got \"" + m + "\"");
      }
    }
    if (s.sync_modes.empty()) throw core::InputError("", "--sync", "expected async,sync");
  }
  if (!args.as_of.empty() && !core::valid_catalog_date(args.as_of)) {
    throw core::InputError("", "--as-of",
                           "expected YYYY-MM or YYYY-MM-DD, got \"" + args.as_of + "\"");
  }
  s.as_of = args.as_of;
  s.spot = !args.no_spot;
  return s;
}

// What a preemption costs, on the recovery timeline the simulator and the real runs follow
// (core/runtime/recovery_timeline.h): detected after detect_timeout, every task relaunched
// restart_delay later, the chief restoring the checkpoint (its bytes / disk bandwidth), the other
// workers back at their first poll for the restored model; plus half a checkpoint interval of
// lost work. The scenario's training.recovery and training.checkpoint when it gives both, else
// recommend's defaults (core::default_spot_recovery).
core::SpotRecovery spot_recovery(const core::Scenario& scenario) {
  core::SpotRecovery r = core::default_spot_recovery();
  const core::TrainingSpec& t = scenario.training;
  if (t.recovery.enabled && t.checkpoint.enabled) {
    r.from_scenario = true;
    r.checkpoint_every_s = t.checkpoint.every_s;
    const double state_bytes = scenario.model.parameter_bytes() * (1 + t.optimizer.slots_per_param);
    r.restore_s = t.checkpoint.disk_bandwidth_bytes_per_s > 0
                      ? state_bytes / t.checkpoint.disk_bandwidth_bytes_per_s
                      : 0;
    core::RecoveryPolicy policy;
    policy.enabled = true;
    policy.detect_timeout_s = t.recovery.detect_timeout_s;
    policy.restart_delay_s = t.recovery.restart_delay_s;
    policy.recovery_wait_s = t.recovery.recovery_wait_s;
    const core::RecoveryTimeline timeline(policy);
    const double detected = timeline.detected_s(0);
    const double restarted = timeline.restart_s(detected);
    const double back = timeline.worker_back_s(restarted, restarted + r.restore_s);
    r.detect_timeout_s = detected;
    r.restart_delay_s = restarted - detected;
    // The wait beyond the restore: the workers' poll.
    r.recovery_wait_s = std::max(0.0, back - restarted - r.restore_s);
  }
  return r;
}

std::string money(double usd) {
  if (!std::isfinite(usd)) return "-";
  return "$" + fixed_decimals(usd, usd < 100 ? 2 : 0);
}

std::string hours(double s) {
  return std::isfinite(s) ? fixed_decimals(s / 3600, 2) : "-";
}

std::string pricing_text(const core::PricedOption& o) {
  if (o.kind == core::PriceKind::kOnDemand) return "on demand";
  return "spot (" + std::string(core::interruption_band_name(*o.price->interruption)) + "/month, " +
         fixed_decimals(o.interruptions_per_hour, 4) + " preemptions/h)";
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

struct Simulated {
  std::optional<size_t> row;  // into the rows; unset: not simulated (pruned, not applicable)
  std::string not_simulated;  // why
};

struct Report {
  const core::Catalog* catalog = nullptr;
  std::string preset;  // the scenario's model preset
  std::vector<core::Configuration> configurations;
  std::vector<core::PricedOption> options;
  std::vector<std::string> prune;    // per option: its bound's reason, or ""
  std::vector<Simulated> simulated;  // per configuration
  std::vector<core::SweepRow> rows;
  std::vector<core::RecommendPoint> points;  // the priced points simulated
  std::vector<size_t> front;                 // into points
  std::optional<size_t> cheapest, fastest;   // into points
  // What was asked and what happened, for the summary and the JSON.
  core::RecommendTarget target;
  double budget = 0;  // 0: none
  core::RecommendSpace space;
  core::SpotRecovery recovery;
  std::vector<core::SkippedInstance> skipped;
  double flop_per_sample = 0;
  size_t pruned = 0;
  std::map<std::string, size_t> pruned_by;  // why -> priced points
  size_t simulated_configurations = 0;
  SweepCounts counts;
  size_t not_applicable = 0;
  std::map<std::string, size_t> not_applicable_by;  // why -> configurations
};

const core::Configuration& configuration_of(const Report& r, const core::RecommendPoint& p) {
  return r.configurations[r.options[p.option].configuration];
}
const core::SweepRow& row_of(const Report& r, const core::RecommendPoint& p) {
  return r.rows[*r.simulated[r.options[p.option].configuration].row];
}

json point_json(const Report& r, size_t i) {
  const core::RecommendPoint& p = r.points[i];
  const core::PricedOption& o = r.options[p.option];
  const core::Configuration& c = configuration_of(r, p);
  const core::SweepRow& row = row_of(r, p);
  const core::CatalogInstance& t = r.catalog->instances[c.instance];
  json j = {
      {"label", c.label(*r.catalog)},
      {"instance", t.name},
      {"machines", c.machines},
      {"ps_machines", c.ps_machines},
      {"strategy", c.strategy},
      {"ps", c.ps},
      {"sync", c.sync},
      {"pricing", core::price_kind_name(o.kind)},
      {"usd_per_hour", o.usd_per_hour},
      {"price_usd_per_hour_per_machine", o.price->usd_per_hour},
      {"price_date", o.price->date},
      {"price_source", o.price->source},
      {"interruption_band",
       o.price->interruption ? json(core::interruption_band_name(*o.price->interruption)) : json()},
      {"interruptions_per_hour", o.interruptions_per_hour},
      {"lost_per_interruption_s", o.lost_per_interruption_s},
      {"gpu_bound_samples_per_s", c.bound_samples_per_s},
      {"throughput_samples_per_s", p.throughput_samples_per_s},
      {"job_time_s", p.job_time_s},
      {"job_cost_usd", p.job_cost_usd},
      {"meets_target", p.meets_target},
      {"within_budget", p.within_budget},
      {"on_front", std::find(r.front.begin(), r.front.end(), i) != r.front.end()},
      {"bound_by", {{"text", row.bound_by}, {"kind", row.bound_by_kind}}},
      {"bottleneck",
       {{"resource", row.bottleneck},
        {"kind", row.bottleneck_kind},
        {"utilization", row.bottleneck_utilization}}},
      {"cache_key", row.key}};
  return j;
}

std::string json_cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_cell(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    return std::isfinite(v.get<double>()) ? core::dump_json(v) : std::string("");
  }
  return csv_cell(core::dump_json(v));
}

void write_csv(const Report& r, std::ostream& o) {
  const std::vector<std::string> columns = {"label",
                                            "instance",
                                            "machines",
                                            "ps_machines",
                                            "strategy",
                                            "ps",
                                            "sync",
                                            "pricing",
                                            "usd_per_hour",
                                            "price_date",
                                            "interruption_band",
                                            "interruptions_per_hour",
                                            "lost_per_interruption_s",
                                            "gpu_bound_samples_per_s",
                                            "throughput_samples_per_s",
                                            "job_time_s",
                                            "job_cost_usd",
                                            "meets_target",
                                            "within_budget",
                                            "on_front"};
  for (const std::string& c : columns) o << c << ",";
  o << "bound_by,bottleneck\n";
  for (size_t i = 0; i < r.points.size(); ++i) {
    const json j = point_json(r, i);
    for (const std::string& c : columns) o << json_cell(j[c]) << ",";
    o << csv_cell(j["bound_by"]["text"].get<std::string>()) << ","
      << csv_cell(j["bottleneck"]["resource"].get<std::string>()) << "\n";
  }
}

// One line on a chosen point: what it is, its price with date and source, its time and cost,
// what binds it.
void print_choice(const Report& r, const char* title, size_t i, const core::RecommendTarget& target,
                  std::ostream& out) {
  const core::RecommendPoint& p = r.points[i];
  const core::PricedOption& o = r.options[p.option];
  const core::Configuration& c = configuration_of(r, p);
  const core::SweepRow& row = row_of(r, p);
  out << title << ": " << c.label(*r.catalog) << ", " << pricing_text(o) << "\n"
      << "  " << money(o.price->usd_per_hour) << "/h per machine (" << o.price->date << ", "
      << o.price->source << ") x " << c.priced_machines() << " = " << money(o.usd_per_hour)
      << "/h\n"
      << "  " << fixed_decimals(p.throughput_samples_per_s, 1) << " samples/s (GPU bound "
      << fixed_decimals(c.gpu_bound_samples_per_s, 1)
      << (c.ps_nic_bound_samples_per_s > 0
              ? ", PS NIC bound " + fixed_decimals(c.ps_nic_bound_samples_per_s, 1)
              : std::string())
      << "): ";
  if (target.kind == core::RecommendTarget::Kind::kSamples) {
    out << hours(p.job_time_s) << " h, " << money(p.job_cost_usd) << "\n";
  } else {
    out << money(p.job_cost_usd) << " per 1M samples\n";
  }
  out << "  bound by " << bound_by_text(row) << " (busiest: " << bottleneck_text(row) << ")\n";
  const core::CatalogInstance& t = r.catalog->instances[c.instance];
  if (const core::GpuSpeed* speed = r.catalog->gpu(t.gpu)->speed_for(r.preset)) {
    out << "  GPU speed: " << t.gpu << " " << fixed_decimals(speed->speed_flop_per_s / 1e12, 4)
        << " TFLOPS on " << r.preset << " (" << core::speed_basis_name(speed->basis) << ": "
        << speed->source << ")\n";
  }
  // The next thing to buy: the next faster point on the front, what it costs more and saves.
  const auto at = std::find(r.front.begin(), r.front.end(), i);
  if (at == r.front.end() || at == r.front.begin()) {
    out << "  next thing to buy: nothing faster on the front"
        << (at == r.front.end() ? " (this point is not on it)" : "") << "\n";
    return;
  }
  const core::RecommendPoint& next = r.points[*(at - 1)];
  out << "  next thing to buy: " << configuration_of(r, next).label(*r.catalog) << ", "
      << pricing_text(r.options[next.option]) << ": "
      << (target.kind == core::RecommendTarget::Kind::kSamples
              ? hours(next.job_time_s) + " h for " + money(next.job_cost_usd) + " (+" +
                    money(next.job_cost_usd - p.job_cost_usd) + ", -" +
                    hours(p.job_time_s - next.job_time_s) + " h)"
              : fixed_decimals(next.throughput_samples_per_s, 1) + " samples/s for " +
                    money(r.options[next.option].usd_per_hour) + "/h")
      << "\n";
}

void print_front(const Report& r, const core::RecommendTarget& target, std::ostream& out) {
  const bool samples = target.kind == core::RecommendTarget::Kind::kSamples;
  std::vector<std::vector<std::string>> table = {
      {"configuration", "pricing", "$/h", "samples/s", samples ? "job (h)" : "per 1M samples (h)",
       samples ? "job cost" : "cost per 1M", "meets target", "bound by (critical path)",
       "busiest resource"}};
  for (size_t i : r.front) {
    const core::RecommendPoint& p = r.points[i];
    const core::PricedOption& o = r.options[p.option];
    const core::SweepRow& row = row_of(r, p);
    table.push_back({configuration_of(r, p).label(*r.catalog), pricing_text(o),
                     money(o.usd_per_hour), fixed_decimals(p.throughput_samples_per_s, 1),
                     hours(p.job_time_s), money(p.job_cost_usd),
                     p.meets_target ? (p.within_budget ? "yes" : "yes, over budget")
                                    : (p.within_budget ? "no" : "no, over budget"),
                     bound_by_text(row), bottleneck_text(row)});
  }
  print_columns(table, out);
}

// What the bounds need of the scenario: its model and batch, where its PS run, how its replicas
// make workers.
core::BoundInputs bound_inputs(const LoadedScenario& loaded, const json& document) {
  core::BoundInputs bounds;
  const core::Model& model = loaded.scenario.model;
  bounds.preset = model.name;
  bounds.flop_per_sample = core::training_flop_per_sample(model);
  bounds.parameter_bytes = model.parameter_bytes();
  bounds.batch_per_replica = loaded.scenario.training.batch_per_replica;
  const json& ps = document["training"].value("ps", json());
  bounds.dedicated_ps = ps.is_object() && ps.value("on", "") == "dedicated";
  const json& replicas = document["training"].value("replicas", json());
  const auto per_machine = [](const json& e) {
    return e.is_object() && e.value("per", "") == "machine";
  };
  bounds.worker_per_machine =
      per_machine(replicas) ||
      (replicas.is_array() && std::any_of(replicas.begin(), replicas.end(), per_machine));
  return bounds;
}

// Each priced option's bound (none with --no-prune); returns which configurations survive (one
// of their options does).
std::vector<bool> prune_options(Report& r, bool no_prune) {
  std::vector<bool> survives(r.configurations.size(), false);
  for (const core::PricedOption& o : r.options) {
    const std::string why =
        no_prune ? ""
                 : core::prune_reason(r.configurations[o.configuration], o, r.target, r.budget);
    r.prune.push_back(why);
    if (why.empty()) {
      survives[o.configuration] = true;
    } else {
      ++r.pruned;
      ++r.pruned_by[why];
    }
  }
  return survives;
}

// The survivors of this shard as sweep points over each instance type's scenario, one per
// distinct simulation; a configuration the scenario refuses is counted as not applicable.
std::vector<PreparedPoint> prepare_survivors(Report& r, const std::vector<bool>& survives,
                                             const CliArgs& args, const LoadedScenario& loaded,
                                             const json& document, const SweepSettings& settings) {
  std::map<size_t, json> instance_documents;
  std::vector<PreparedPoint> prepared;
  std::map<std::string, size_t> prepared_of_key;
  size_t survivors = 0;
  for (size_t i = 0; i < r.configurations.size(); ++i) {
    if (!survives[i]) {
      r.simulated[i].not_simulated = "pruned";
      continue;
    }
    if (survivors++ % size_t(args.shard_count) != size_t(args.shard_index)) {
      r.simulated[i].not_simulated = "another shard";
      continue;
    }
    const core::Configuration& c = r.configurations[i];
    if (interrupted()) throw core::RunCancelled("no output was written");
    auto doc = instance_documents.find(c.instance);
    if (doc == instance_documents.end()) {
      const core::CatalogInstance& t = r.catalog->instances[c.instance];
      doc = instance_documents
                .emplace(c.instance,
                         core::instance_scenario(document, args.scenario, t, c.gpu_speed_flop_per_s,
                                                 r.catalog->gpu(t.gpu)->memory_bytes))
                .first;
    }
    try {
      PreparedPoint p = prepare_point(loaded, doc->second, settings, {i, c.knobs()});
      const auto [it, added] = prepared_of_key.emplace(p.key, prepared.size());
      if (added) prepared.push_back(std::move(p));
      r.simulated[i].row = it->second;
    } catch (const core::InputError& e) {
      ++r.not_applicable;
      std::string why = e.message();
      const std::string prefix = "point " + core::SweepPoint{i, c.knobs()}.label() + ": ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      r.simulated[i].not_simulated = why;
      ++r.not_applicable_by[why];
    }
  }
  r.simulated_configurations = prepared.size();
  return prepared;
}

// The lines above the front: the question, what was not offered, pruned, simulated, spot.
void print_summary(const Report& r, const CliArgs& args, const LoadedScenario& loaded,
                   std::ostream& out) {
  const bool samples = r.target.kind == core::RecommendTarget::Kind::kSamples;
  out << "replisim recommend: scenario \"" << loaded.scenario.name << "\" (" << args.scenario
      << "), catalog \"" << r.catalog->name << "\" (" << args.catalog_path << ")\n"
      << "model " << r.preset << ": " << fixed_decimals(r.flop_per_sample / 1e9, 2)
      << " GFLOP per sample (training); target: ";
  if (samples) {
    out << fixed_decimals(r.target.samples, 0) << " samples within "
        << fixed_decimals(r.target.deadline_s / 3600, 2) << " h ("
        << fixed_decimals(r.target.samples / r.target.deadline_s, 1) << " samples/s)";
  } else {
    out << fixed_decimals(r.target.throughput_samples_per_s, 1) << " samples/s";
  }
  out << "; budget " << (r.budget > 0 ? money(r.budget) + (samples ? "" : "/h") : "none")
      << (r.space.as_of.empty() ? "" : "; prices as of " + r.space.as_of) << "\n";
  for (const core::SkippedInstance& s : r.skipped) {
    out << "not offered: " << r.catalog->instances[s.instance].name << ": " << s.why << "\n";
  }
  out << "searched " << r.options.size() << " priced points (" << r.configurations.size()
      << " configurations, each on demand" << (r.space.spot ? " and on spot where priced" : "")
      << ")\n";
  if (args.no_prune) {
    out << "pruned: none (--no-prune)\n";
  } else {
    out << "pruned by closed-form bounds before simulating: " << r.pruned << " of "
        << r.options.size();
    std::string sep = " (";
    for (const auto& [why, n] : r.pruned_by) {
      out << sep << why << ": " << n;
      sep = ", ";
    }
    out << (r.pruned_by.empty() ? "" : ")") << "\n";
  }
  out << "simulated " << r.simulated_configurations << " configuration(s)";
  if (args.shard_count > 1) {
    out << " (shard " << args.shard_index << "/" << args.shard_count << ")";
  }
  out << ": " << r.counts.computed << " simulated, " << r.counts.cached << " from the cache, "
      << r.counts.failed << " failed; " << r.not_applicable << " not applicable to the scenario\n";
  for (const auto& [why, n] : r.not_applicable_by) {
    out << "  not applicable (" << n << "): " << why << "\n";
  }
  const bool any_spot =
      std::any_of(r.options.begin(), r.options.end(),
                  [](const core::PricedOption& o) { return o.kind == core::PriceKind::kSpot; });
  if (r.space.spot && !any_spot) {
    out << "spot: no instance type offered has a spot price in the catalog\n";
  } else if (r.space.spot) {
    const core::SpotRecovery& recovery = r.recovery;
    out << "spot: each machine's preemption rate from its Spot Instance Advisor band (the band's "
           "upper bound p as the chance of a preemption in a 30-day month: -ln(1-p)/720 per hour; "
           "any machine's preemption restarts the job); each preemption loses "
        << fixed_decimals(recovery.lost_per_interruption_s(), 0) << " s (detect "
        << fixed_decimals(recovery.detect_timeout_s, 0) << " + restart "
        << fixed_decimals(recovery.restart_delay_s, 0) << " + restore "
        << fixed_decimals(recovery.restore_s, 0) << " + first poll "
        << fixed_decimals(recovery.recovery_wait_s, 0) << " + half a checkpoint interval "
        << fixed_decimals(recovery.checkpoint_every_s / 2, 0) << ": "
        << (recovery.from_scenario ? "the scenario's training.recovery and checkpoint"
                                   : "recommend's defaults; the scenario gives no "
                                     "training.recovery with a checkpoint")
        << ")\n";
  }
}

// The front and the two choices.
void print_choices(const Report& r, std::ostream& out) {
  const bool samples = r.target.kind == core::RecommendTarget::Kind::kSamples;
  out << "\nPareto front (job cost against job time" << (samples ? "" : " per 1M samples") << ", "
      << r.front.size() << " point(s), fastest first):\n";
  print_front(r, r.target, out);
  out << "\n";
  if (r.cheapest) {
    print_choice(r, "cheapest meeting the target", *r.cheapest, r.target, out);
  } else {
    out << "cheapest meeting the target: none of the simulated points meets it"
        << (r.budget > 0 ? " within the budget" : "") << "\n";
  }
  if (r.fastest) {
    print_choice(r, "fastest within budget", *r.fastest, r.target, out);
  } else {
    out << "fastest within budget: none\n";
  }
}

json report_json(const Report& r, const CliArgs& args, const LoadedScenario& loaded) {
  const bool samples = r.target.kind == core::RecommendTarget::Kind::kSamples;
  json report = {{"format", "replisim-recommend"},
                 {"version", 1},
                 {"scenario", loaded.scenario.name},
                 {"catalog", r.catalog->name},
                 {"catalog_file", args.catalog_path},
                 {"model", r.preset},
                 {"training_flop_per_sample", r.flop_per_sample},
                 {"target", samples ? json{{"kind", "samples"},
                                           {"samples", r.target.samples},
                                           {"deadline_s", r.target.deadline_s}}
                                    : json{{"kind", "throughput"},
                                           {"samples_per_s", r.target.throughput_samples_per_s}}},
                 {"budget_usd", r.budget > 0 ? json(r.budget) : json()},
                 {"as_of", r.space.as_of},
                 {"shard", {{"index", args.shard_index}, {"count", args.shard_count}}},
                 {"priced_points", r.options.size()},
                 {"configurations", r.configurations.size()},
                 {"pruned", r.pruned},
                 {"pruned_by", r.pruned_by},
                 {"simulated_configurations", r.simulated_configurations},
                 {"not_applicable", r.not_applicable},
                 {"spot_recovery",
                  {{"lost_per_interruption_s", r.recovery.lost_per_interruption_s()},
                   {"from_scenario", r.recovery.from_scenario}}},
                 {"points", json::array()},
                 {"front", r.front},
                 {"cheapest_meeting_target", r.cheapest ? json(*r.cheapest) : json()},
                 {"fastest_within_budget", r.fastest ? json(*r.fastest) : json()},
                 {"provenance", provenance(args, loaded)}};
  for (size_t i = 0; i < r.points.size(); ++i) report["points"].push_back(point_json(r, i));
  report["skipped_instances"] = json::array();
  for (const core::SkippedInstance& s : r.skipped) {
    report["skipped_instances"].push_back(
        {{"instance", r.catalog->instances[s.instance].name}, {"why", s.why}});
  }
  return report;
}

}  // namespace

int run_recommend(const CliArgs& args, std::ostream& out) {
  const auto started = std::chrono::steady_clock::now();
  Report r;
  r.target = parse_target(args);
  r.budget = args.budget.empty() ? 0 : core::parse_usd_text(args.budget, "--budget");
  r.space = parse_space(args);
  const LoadedScenario loaded = load(args.scenario);
  const core::ScenarioDocument document = core::load_scenario_document(args.scenario);
  const core::Catalog catalog = core::load_catalog(args.catalog_path);
  core::check_catalog_presets(catalog);
  const SweepSettings settings = sweep_settings(args);
  core::OutputFiles files(args.force);
  files.protect(args.scenario, "the scenario");
  files.protect(args.catalog_path, "the catalog");
  json report;
  if (!args.csv_path.empty()) {
    files.add("--csv", args.csv_path, [&r](std::ostream& o) { write_csv(r, o); });
  }
  if (!args.json_path.empty()) {
    files.add("--json", args.json_path,
              [&report](std::ostream& o) { o << report.dump(1) << "\n"; });
  }

  r.catalog = &catalog;
  r.preset = loaded.scenario.model.name;
  r.recovery = spot_recovery(loaded.scenario);
  const core::BoundInputs bounds = bound_inputs(loaded, document.json);
  r.flop_per_sample = bounds.flop_per_sample;
  r.configurations = core::recommend_configurations(catalog, bounds, r.space, &r.skipped);
  if (r.configurations.empty()) {
    throw core::InputError(args.catalog_path, "/instances",
                           "no instance type of the catalog can train model " + r.preset +
                               (r.skipped.empty() ? "" : ": " + r.skipped.front().why));
  }
  r.options = core::priced_options(catalog, r.configurations, r.space, r.recovery);
  r.simulated.resize(r.configurations.size());
  const std::vector<bool> survives = prune_options(r, args.no_prune);
  const std::vector<PreparedPoint> prepared =
      prepare_survivors(r, survives, args, loaded, document.json, settings);
  try {
    r.rows = run_prepared_points(prepared, settings, &r.counts);
  } catch (const core::RunCancelled&) {
    throw core::RunCancelled("no output was written; the points done are cached in " +
                             settings.cache_dir + ": run the same command again to finish");
  }
  for (size_t i = 0; i < r.options.size(); ++i) {
    const Simulated& s = r.simulated[r.options[i].configuration];
    if (!r.prune[i].empty() || !s.row || !r.rows[*s.row].error.empty()) continue;
    r.points.push_back(core::price_point(i, r.options[i], r.rows[*s.row].throughput_samples_per_s,
                                         r.target, r.budget));
  }
  r.front = core::pareto_front(r.points);
  r.cheapest = core::cheapest_meeting_target(r.points);
  r.fastest = core::fastest_within_budget(r.points);

  print_summary(r, args, loaded, out);
  print_choices(r, out);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out << "\n" << fixed_decimals(wall_s, 1) << " s\n";
  report = report_json(r, args, loaded);
  files.set_cancel(interrupted);
  files.write_all();
  if (r.counts.failed > 0) {
    std::cerr << "replisim recommend: " << r.counts.failed
              << " configuration(s) failed to simulate; they are left out of the front\n";
    return 1;
  }
  return 0;
}

}  // namespace replisim::cli
