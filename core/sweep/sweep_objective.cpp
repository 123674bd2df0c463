#include "core/sweep/sweep_objective.h"

#include <cstdio>
#include <cstdlib>

#include "core/base/error.h"

namespace replisim::core {
namespace {

using nlohmann::json;

std::string objective_csv_number(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.12g", v);
  return buffer;
}

// The target's kind and value from {"accuracy": v} or {"loss": v} (a summary's or a row's).
void read_target(const JsonCursor& o, SweepObjective& out) {
  out.target = o.at("target").as_string();
  if (out.target != "accuracy" && out.target != "loss") {
    o.at("target").fail("expected \"accuracy\" or \"loss\", found \"" + out.target + "\"");
  }
  out.target_value = o.at("target_value").as_number_in(0, 1e6);
  out.evaluations = int(o.at("evaluations").as_int(0, int64_t(1) << 40));
  out.final_accuracy = o.at("final_accuracy").as_number_in(0, 1);
  out.final_loss = o.at("final_loss").as_number_in(0, 1e300);
}

}  // namespace

std::optional<SweepObjective> sweep_objective_from_summary(const JsonCursor& run) {
  if (!run.has("objective") || run.at("objective").value().is_null()) return std::nullopt;
  const JsonCursor o = run.at("objective");
  SweepObjective out;
  read_target(o, out);
  // The summary writes -1 for "not reached" (core/metrics/report.cpp).
  const double time_s = o.at("time_to_target_s").as_number();
  if (time_s >= 0) {
    out.time_to_target_s = time_s;
    out.global_steps_to_target = o.at("global_steps_to_target").as_int(0, int64_t(1) << 53);
  }
  return out;
}

json sweep_objective_to_json(const std::optional<SweepObjective>& objective) {
  if (!objective) return json();
  const SweepObjective& o = *objective;
  return {{"target", o.target},
          {"target_value", o.target_value},
          {"evaluations", o.evaluations},
          {"time_to_target_s", o.time_to_target_s ? json(*o.time_to_target_s) : json()},
          {"global_steps_to_target",
           o.global_steps_to_target ? json(*o.global_steps_to_target) : json()},
          {"final_accuracy", o.final_accuracy},
          {"final_loss", o.final_loss}};
}

std::optional<SweepObjective> sweep_objective_from_json(const JsonCursor& row) {
  if (!row.has("objective") || row.at("objective").value().is_null()) return std::nullopt;
  const JsonCursor o = row.at("objective");
  SweepObjective out;
  read_target(o, out);
  if (!o.at("time_to_target_s").value().is_null()) {
    out.time_to_target_s = o.at("time_to_target_s").as_number_in(0, 1e300);
    out.global_steps_to_target = o.at("global_steps_to_target").as_int(0, int64_t(1) << 53);
  }
  return out;
}

std::string sweep_objective_csv_cells(const std::optional<SweepObjective>& objective) {
  if (!objective) return std::string(kSweepObjectiveCsvColumns, ',');
  const SweepObjective& o = *objective;
  std::string cells = ",";
  if (o.time_to_target_s) cells += objective_csv_number(*o.time_to_target_s);
  cells += ",";
  if (o.global_steps_to_target) cells += std::to_string(*o.global_steps_to_target);
  cells += ",";
  if (o.evaluations > 0) cells += objective_csv_number(o.final_accuracy);
  return cells;
}

json parse_objective_target(const std::string& text, const std::string& flag) {
  const size_t equals = text.find('=');
  const std::string kind = text.substr(0, equals);
  if (equals == std::string::npos || (kind != "accuracy" && kind != "loss")) {
    throw InputError(
        "", flag, "expected accuracy=FRACTION or loss=NATS (accuracy=0.8), found \"" + text + "\"");
  }
  const std::string number = text.substr(equals + 1);
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  const bool parsed = !number.empty() && end == number.c_str() + number.size();
  if (kind == "accuracy" && !(parsed && value > 0 && value <= 1)) {
    throw InputError("", flag,
                     "expected a fraction in (0, 1] after accuracy=, found \"" + number + "\"");
  }
  if (kind == "loss" && !(parsed && value > 0 && value <= 1e6)) {
    throw InputError(
        "", flag,
        "expected a mean cross-entropy in (0, 1e6] nats after loss=, found \"" + number + "\"");
  }
  return {{kind, value}};
}

void set_objective_target(json& document, const json& target, const std::string& file,
                          const std::string& flag) {
  json* training =
      document.is_object() && document.contains("training") ? &document["training"] : nullptr;
  if (training == nullptr || !training->is_object() || !training->contains("objective") ||
      !(*training)["objective"].is_object()) {
    throw InputError(file, "/training/objective",
                     flag + " needs a training.objective in the scenario (it has none)");
  }
  (*training)["objective"]["target"] = target;
}

}  // namespace replisim::core
