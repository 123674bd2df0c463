#include "core/sweep/recommend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/sweep/sweep_knobs.h"

namespace replisim::core {
namespace {

using nlohmann::json;

// "  2000 images/s " -> number 2000 and the rest "images/s"; false when no number leads.
bool split_number(const std::string& text, double* number, std::string* rest) {
  const char* begin = text.c_str();
  while (*begin == ' ' || *begin == '\t') ++begin;
  char* end = nullptr;
  *number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(*number)) return false;
  std::string r(end);
  const size_t first = r.find_first_not_of(" \t");
  const size_t last = r.find_last_not_of(" \t");
  *rest = first == std::string::npos ? "" : r.substr(first, last - first + 1);
  return true;
}

std::string sync_label(const std::string& sync) {
  return sync.empty() ? "" : " " + sync;
}

}  // namespace

double parse_throughput_text(const std::string& text, const std::string& flag) {
  double value = 0;
  std::string unit;
  if (split_number(text, &value, &unit) && value > 0 &&
      (unit == "images/s" || unit == "samples/s" || unit == "/s")) {
    return value;
  }
  throw InputError(
      "", flag,
      "expected a throughput above 0 such as \"2000 images/s\" (or samples/s), got \"" + text +
          "\"");
}

double parse_duration_text(const std::string& text, const std::string& flag) {
  double value = 0;
  std::string unit;
  if (split_number(text, &value, &unit) && value > 0) {
    if (unit == "s") return value;
    if (unit == "ms") return value / 1000;
    if (unit == "min") return value * 60;
    if (unit == "h") return value * 3600;
    if (unit == "d") return value * 86400;
  }
  throw InputError(
      "", flag,
      "expected a duration above 0 with a unit (s, min, h, d) such as \"72 h\", got \"" + text +
          "\"");
}

double parse_usd_text(const std::string& text, const std::string& flag) {
  std::string t = text;
  const size_t dollar = t.find('$');
  if (dollar != std::string::npos && t.find_first_not_of(" \t") == dollar) t.erase(dollar, 1);
  double value = 0;
  std::string unit;
  if (split_number(t, &value, &unit) && value > 0 && (unit.empty() || unit == "USD")) return value;
  throw InputError(
      "", flag,
      "expected an amount of dollars above 0 such as \"3000\" or \"$3000\", got \"" + text + "\"");
}

double training_flop_per_sample(const Model& model) {
  double total = 0;
  for (const Layer& l : model.layers) {
    total +=
        l.forward_flop_per_sample + (l.backward_flop_per_sample > 0
                                         ? l.backward_flop_per_sample
                                         : kBackwardToForwardFlopRatio * l.forward_flop_per_sample);
  }
  return total;
}

void check_catalog_presets(const Catalog& catalog) {
  for (const CatalogGpu& g : catalog.gpus) {
    for (const GpuSpeed& s : g.speeds) {
      if (find_model_preset(s.preset) != nullptr) continue;
      std::vector<std::string> names;
      for (const ModelPreset& p : model_presets()) names.push_back(p.name);
      throw InputError(
          catalog.file, s.json_path,
          "no model preset \"" + s.preset + "\"; the presets are: " + join_names(names));
    }
  }
}

double SpotRecovery::lost_per_interruption_s() const {
  return detect_timeout_s + restart_delay_s + restore_s + recovery_wait_s + checkpoint_every_s / 2;
}

SpotRecovery default_spot_recovery() {
  SpotRecovery r;
  r.detect_timeout_s = 60;
  r.restart_delay_s = 300;
  r.recovery_wait_s = 30;
  r.checkpoint_every_s = 3600;
  return r;
}

std::vector<std::pair<std::string, std::string>> Configuration::knobs() const {
  std::vector<std::pair<std::string, std::string>> k = {{"machines", std::to_string(machines)},
                                                        {"strategy", strategy}};
  if (ps > 0) k.emplace_back("ps", std::to_string(ps));
  if (!sync.empty()) k.emplace_back("sync", sync);
  return k;
}

std::string Configuration::label(const Catalog& catalog) const {
  std::string text = catalog.instances[instance].name + " x" + std::to_string(machines);
  if (ps_machines > 0) text += " (+" + std::to_string(ps_machines) + " PS)";
  text += " " + strategy;
  if (ps > 0) text += " ps=" + std::to_string(ps);
  return text + sync_label(sync);
}

json instance_scenario(const json& base, const std::string& file, const CatalogInstance& instance,
                       double gpu_speed_flop_per_s, double gpu_memory_bytes) {
  json document = base;
  const size_t index = replicas_machine_template(document, file);
  json& machine = document["cluster"]["machines"][index];
  machine["gpus"] = {{"count", instance.gpu_count},
                     {"speed", std::to_string(gpu_speed_flop_per_s) + " FLOPS"},
                     {"memory", std::to_string(int64_t(gpu_memory_bytes)) + " B"}};
  json& nic = machine["nic"];
  if (!nic.is_object()) nic = json::object();
  nic["bandwidth"] = std::to_string(instance.nic_bandwidth_bytes_per_s) + " Bps";
  nic["count"] = instance.nic_count;
  if (!nic.contains("latency")) nic["latency"] = "25 us";
  if (instance.pcie_bandwidth_bytes_per_s > 0) {
    json& pcie = machine["pcie"];
    if (!pcie.is_object()) pcie = json::object();
    pcie["bandwidth"] = std::to_string(instance.pcie_bandwidth_bytes_per_s) + " Bps";
  }
  json& cpu = machine["cpu"];
  if (cpu.is_object()) cpu["cores"] = instance.cpu_cores;
  return document;
}

std::vector<Configuration> recommend_configurations(const Catalog& catalog, const BoundInputs& in,
                                                    const RecommendSpace& space,
                                                    std::vector<SkippedInstance>* skipped) {
  const std::string& preset = in.preset;
  std::vector<Configuration> out;
  for (size_t i = 0; i < catalog.instances.size(); ++i) {
    const CatalogInstance& t = catalog.instances[i];
    const GpuSpeed* speed = catalog.gpu(t.gpu)->speed_for(preset);
    if (speed == nullptr) {
      skipped->push_back({i, "the catalog gives " + t.gpu + " no speed for model preset " + preset +
                                 " (give one from a benchmark or replisim calibrate)"});
      continue;
    }
    if (t.price(PriceKind::kOnDemand, space.as_of) == nullptr &&
        (!space.spot || t.price(PriceKind::kSpot, space.as_of) == nullptr)) {
      skipped->push_back(
          {i, space.as_of.empty() ? "no price" : "no price stated by " + space.as_of});
      continue;
    }
    for (int n = 1; n <= space.max_machines; n *= 2) {
      for (const std::string& strategy : space.strategies) {
        Configuration c;
        c.instance = i;
        c.machines = n;
        c.strategy = strategy;
        c.gpu_speed_flop_per_s = speed->speed_flop_per_s;
        c.gpu_bound_samples_per_s =
            double(n) * t.gpu_count * speed->speed_flop_per_s / std::max(in.flop_per_sample, 1.0);
        c.bound_samples_per_s = c.gpu_bound_samples_per_s;
        if (strategy == "allreduce") {
          out.push_back(c);
          continue;
        }
        for (int ps : space.ps_counts) {
          c.ps = ps;
          c.ps_machines = in.dedicated_ps ? ps : 0;
          c.ps_nic_bound_samples_per_s = 0;
          c.bound_samples_per_s = c.gpu_bound_samples_per_s;
          if (strategy == "between_graph" && in.dedicated_ps && in.parameter_bytes > 0) {
            const double per_worker_step =
                in.batch_per_replica * (in.worker_per_machine ? t.gpu_count : 1);
            c.ps_nic_bound_samples_per_s = per_worker_step * ps * t.nic_count *
                                           t.nic_bandwidth_bytes_per_s / in.parameter_bytes;
            c.bound_samples_per_s = std::min(c.bound_samples_per_s, c.ps_nic_bound_samples_per_s);
          }
          if (strategy != "between_graph") {
            c.sync.clear();
            out.push_back(c);
            continue;
          }
          for (const std::string& sync : space.sync_modes) {
            c.sync = sync;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

std::vector<PricedOption> priced_options(const Catalog& catalog,
                                         const std::vector<Configuration>& configurations,
                                         const RecommendSpace& space,
                                         const SpotRecovery& recovery) {
  std::vector<PricedOption> out;
  for (size_t i = 0; i < configurations.size(); ++i) {
    const Configuration& c = configurations[i];
    const CatalogInstance& t = catalog.instances[c.instance];
    for (PriceKind kind : {PriceKind::kOnDemand, PriceKind::kSpot}) {
      if (kind == PriceKind::kSpot && !space.spot) continue;
      const CatalogPrice* price = t.price(kind, space.as_of);
      if (price == nullptr) continue;
      PricedOption o;
      o.configuration = i;
      o.kind = kind;
      o.price = price;
      o.usd_per_hour = price->usd_per_hour * c.priced_machines();
      if (kind == PriceKind::kSpot) {
        o.interruptions_per_hour =
            interruption_band_rate_per_hour(*price->interruption) * c.priced_machines();
        o.lost_per_interruption_s = recovery.lost_per_interruption_s();
      }
      out.push_back(o);
    }
  }
  return out;
}

double expected_job_time_s(double samples, double throughput_samples_per_s, const PricedOption& o) {
  if (!(throughput_samples_per_s > 0)) return std::numeric_limits<double>::infinity();
  const double t = samples / throughput_samples_per_s;
  return t * (1 + o.interruptions_per_hour / 3600 * o.lost_per_interruption_s);
}

std::string prune_reason(const Configuration& c, const PricedOption& o,
                         const RecommendTarget& target, double budget_usd) {
  const std::string bound =
      c.bound_samples_per_s < c.gpu_bound_samples_per_s ? "PS NIC bound" : "GPU bound";
  if (target.kind == RecommendTarget::Kind::kThroughput &&
      c.bound_samples_per_s < target.throughput_samples_per_s) {
    return bound + " below the target";
  }
  const double fastest_s = expected_job_time_s(target.job_samples(), c.bound_samples_per_s, o);
  if (target.kind == RecommendTarget::Kind::kSamples && fastest_s > target.deadline_s) {
    return bound + " past the deadline";
  }
  if (budget_usd > 0) {
    const double lowest = target.kind == RecommendTarget::Kind::kThroughput
                              ? o.usd_per_hour
                              : o.usd_per_hour * fastest_s / 3600;
    if (lowest > budget_usd) return "lowest cost above the budget";
  }
  return "";
}

RecommendPoint price_point(size_t option, const PricedOption& o, double throughput_samples_per_s,
                           const RecommendTarget& target, double budget_usd) {
  RecommendPoint p;
  p.option = option;
  p.throughput_samples_per_s = throughput_samples_per_s;
  p.job_time_s = expected_job_time_s(target.job_samples(), throughput_samples_per_s, o);
  p.job_cost_usd = o.usd_per_hour * p.job_time_s / 3600;
  p.meets_target = target.kind == RecommendTarget::Kind::kThroughput
                       ? throughput_samples_per_s >= target.throughput_samples_per_s
                       : p.job_time_s <= target.deadline_s;
  const double spend =
      target.kind == RecommendTarget::Kind::kThroughput ? o.usd_per_hour : p.job_cost_usd;
  p.within_budget = budget_usd <= 0 || spend <= budget_usd;
  return p;
}

std::vector<size_t> pareto_front(const std::vector<RecommendPoint>& points) {
  std::vector<size_t> order;
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isfinite(points[i].job_time_s)) order.push_back(i);
  }
  // Fastest first, then cheapest; a point is on the front when it is cheaper than every point
  // before it (each of those is at least as fast).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].job_time_s != points[b].job_time_s) {
      return points[a].job_time_s < points[b].job_time_s;
    }
    return points[a].job_cost_usd < points[b].job_cost_usd;
  });
  std::vector<size_t> front;
  double cheapest = std::numeric_limits<double>::infinity();
  for (size_t i : order) {
    if (points[i].job_cost_usd < cheapest) {
      front.push_back(i);
      cheapest = points[i].job_cost_usd;
    }
  }
  return front;
}

std::optional<size_t> cheapest_meeting_target(const std::vector<RecommendPoint>& points) {
  std::optional<size_t> best;
  for (size_t i = 0; i < points.size(); ++i) {
    const RecommendPoint& p = points[i];
    if (!p.meets_target || !p.within_budget) continue;
    if (!best || p.job_cost_usd < points[*best].job_cost_usd ||
        (p.job_cost_usd == points[*best].job_cost_usd && p.job_time_s < points[*best].job_time_s)) {
      best = i;
    }
  }
  return best;
}

std::optional<size_t> fastest_within_budget(const std::vector<RecommendPoint>& points) {
  std::optional<size_t> best;
  for (size_t i = 0; i < points.size(); ++i) {
    const RecommendPoint& p = points[i];
    if (!p.within_budget || !std::isfinite(p.job_time_s)) continue;
    if (!best || p.job_time_s < points[*best].job_time_s ||
        (p.job_time_s == points[*best].job_time_s && p.job_cost_usd < points[*best].job_cost_usd)) {
      best = i;
    }
  }
  return best;
}

}  // namespace replisim::core
