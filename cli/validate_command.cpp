// replisim validate: the simulation and `--repeat` real runs of the same plan (or, with --measured,
// the real runs of a trace made before), compared per metric and per phase
// (core/metrics/validation.h; docs/validation-real.md).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>

#include "cli/calibration_stability.h"
#include "cli/commands.h"
#include "cli/host_load.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/run_outputs.h"
#include "cli/scenario_plans.h"
#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/output_file.h"
#include "core/base/temp_dir.h"
#include "core/metrics/validation.h"
#include "core/trace/chrome_trace.h"
#include "core/trace/trace_format.h"

namespace replisim::cli {
namespace {

namespace fs = std::filesystem;

// The validation format `--json` writes and `--baseline` reads.
constexpr const char* kValidationFormat = "replisim-validation";
constexpr int kValidationVersion = 1;

// --baseline: an earlier `validate --json`; the entry of each strategy.
nlohmann::json read_baseline(const std::string& file) {
  const nlohmann::json j = core::read_json_file(file);
  if (!j.is_object() || j.value("format", "") != kValidationFormat) {
    throw core::InputError(file, "/format",
                           std::string("not a validation file (validate --json writes \"format\": "
                                       "\"") +
                               kValidationFormat + "\")");
  }
  if (!j.contains("version") || j["version"] != kValidationVersion) {
    throw core::InputError(file, "/version",
                           "a validation of another version (this replisim reads version " +
                               std::to_string(kValidationVersion) + ")");
  }
  if (!j.contains("validations") || !j["validations"].is_array()) {
    throw core::InputError(file, "/validations", "missing, or not a list");
  }
  // What --baseline reads of each validation: its scenario and strategy, and each row's name and
  // relative error (a number, or null where there was none).
  const nlohmann::json& all = j["validations"];
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string at = "/validations/" + std::to_string(i);
    const nlohmann::json& v = all[i];
    if (!v.is_object() || !v.contains("scenario") || !v["scenario"].is_string() ||
        !v.contains("strategy") || !v["strategy"].is_string()) {
      throw core::InputError(file, at, "not a validation (it needs \"scenario\" and \"strategy\")");
    }
    for (const char* list : {"metrics", "phases"}) {
      if (!v.contains(list) || !v[list].is_array()) {
        throw core::InputError(file, at + "/" + list, "missing, or not a list");
      }
      for (size_t r = 0; r < v[list].size(); ++r) {
        const nlohmann::json& row = v[list][r];
        const std::string row_at = at + "/" + list + "/" + std::to_string(r);
        const nlohmann::json* figures =
            row.is_object() && row.contains("time_per_step_s") ? &row["time_per_step_s"] : &row;
        if (!row.is_object() || !row.contains("name") || !row["name"].is_string() ||
            !figures->is_object() || !figures->contains("relative_error") ||
            !((*figures)["relative_error"].is_number() || (*figures)["relative_error"].is_null())) {
          throw core::InputError(file, row_at,
                                 "a row needs \"name\" and a numeric (or null) \"relative_error\"");
        }
      }
    }
  }
  return j;
}

// The baseline's validation of `strategy`, which must be of `scenario`; null when it has none.
const nlohmann::json* baseline_of(const nlohmann::json& baseline, const std::string& file,
                                  const std::string& scenario, const std::string& strategy) {
  if (baseline.is_null()) return nullptr;
  for (const nlohmann::json& v : baseline["validations"]) {
    if (v["strategy"] != strategy) continue;
    if (v["scenario"] != scenario) {
      throw core::InputError(file, "--baseline",
                             "a validation of scenario \"" + v["scenario"].get<std::string>() +
                                 "\", not \"" + scenario + "\": compare a scenario with itself");
    }
    return &v;
  }
  return nullptr;
}

std::string one_decimal(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", x);
  return buffer;
}

// The validation's lines about the host (core::Validation::host): how the real runs' tasks shared
// the cores (the real backend's "cores: " note), the host's load during the runs, and a compute
// phase off while the transfers match, with the load that may explain it.
// `host`: null for runs made before (--measured `measured_path`), whose host load is not known.
void describe_host(core::Validation& v, const core::Trace& measured, const HostLoad* host,
                   const std::string& measured_path) {
  for (const std::string& note : measured.notes()) {
    if (note.rfind("cores: ", 0) == 0)
      v.host.push_back("cores of the real runs: " + note.substr(7));
  }
  v.host.push_back(host ? "over the real runs: " + host_load_text(*host) +
                              (host_was_busy(*host)
                                   ? " (a busy host: the measured times include what other "
                                     "work took of the cores; compare on a quiet one)"
                                   : "")
                        : "the real runs of " + measured_path +
                              " were made before (--measured): "
                              "their host's load is not known");
  const std::string mismatch = core::compute_mismatch(v);
  if (mismatch.empty()) return;
  std::string line = mismatch + " while the transfers matched";
  if (host && host->readable) {
    line += "; the host's load average was " + one_decimal(host->load_average_after) +
            " during the runs (other processes used " + one_decimal(host->other_cores) + " of " +
            std::to_string(host->cores) + " cores, steal " +
            one_decimal(100 * host->steal_fraction) + "%)";
  }
  v.host.push_back(line);
}

// --measured's file as errors name it ("-": "<standard input>").
std::string measured_name(const std::string& path) {
  return path == "-" ? "<standard input>" : path;
}

// --measured: the real runs of a trace made before (run --trace-out), each of a plan in `plans`
// (the same hash), and a run of each. Throws InputError naming the file: a simulation's runs, a
// node's part, a plan these flags do not give, a plan without a run (the trace's own read errors
// name it too).

std::vector<core::Trace> measured_runs(const std::string& path,
                                       const std::vector<core::Plan>& plans) {
  // "-": the trace piped in (`replisim run s.json --trace-out - | replisim validate s.json
  // --measured -`), named "<standard input>" in errors.
  const std::string name = measured_name(path);
  std::vector<core::Trace> runs =
      path == "-" ? read_piped_traces(name) : core::read_trace_file(path);
  if (runs.empty()) throw core::InputError(name, "", "holds no run to compare with");
  std::string ours;
  for (const core::Plan& p : plans) {
    ours += (ours.empty() ? "" : ", ") + p.strategy + " " + core::plan_hash(p);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const core::TraceMeta& m = runs[i].meta;
    const std::string which = "run " + std::to_string(i + 1) + " of " + std::to_string(runs.size());
    if (m.backend != "real") {
      throw core::InputError(name, "",
                             which + " was made by the \"" + m.backend +
                                 "\" backend: --measured takes real runs (replisim run "
                                 "--trace-out)");
    }
    if (m.provenance.contains("task") && m.provenance["task"].is_string()) {
      throw core::InputError(name, "",
                             which + " is task " + m.provenance["task"].get<std::string>() +
                                 "'s part of a real run: give the run's trace (run --trace-out, "
                                 "node --run-trace-out, or report --merge of every node's part)");
    }
    const bool ours_too = std::any_of(plans.begin(), plans.end(), [&m](const core::Plan& p) {
      return core::plan_hash(p) == m.plan_hash;
    });
    if (!ours_too) {
      throw core::InputError(name, "",
                             which + " ran plan " + m.plan_hash + " (" + m.strategy +
                                 "); this scenario with these flags gives " + ours +
                                 ": give validate the scenario and the flags the run had "
                                 "(--strategy, --steps, --scale-compute, --seed)");
    }
  }
  // Before any simulation: every plan asked for has a run to compare with.
  for (const core::Plan& p : plans) {
    const std::string hash = core::plan_hash(p);
    if (std::none_of(runs.begin(), runs.end(),
                     [&hash](const core::Trace& t) { return t.meta.plan_hash == hash; })) {
      throw core::InputError(name, "",
                             "has no run of the " + p.strategy +
                                 " plan --strategy asks for: give --strategy the strategies it "
                                 "ran");
    }
  }
  return runs;
}

// The network the runs of `measured` were made on, as run recorded it.
std::string measured_network(const std::vector<core::Trace>& measured) {
  const nlohmann::json& p = measured.front().meta.provenance;
  return p.contains("network") && p["network"].is_string() ? p["network"].get<std::string>()
                                                           : "an unrecorded network";
}

}  // namespace

int run_validate(const CliArgs& args, std::ostream& out) {
  core::OutputFiles outputs(args.force, &out);
  outputs.protect(args.scenario);
  const LoadedScenario loaded = load(args.scenario);
  for (const std::string& file : loaded.files) outputs.protect(file);
  nlohmann::json baseline;
  if (!args.baseline_path.empty()) {
    outputs.protect(args.baseline_path, "--baseline");
    baseline = read_baseline(args.baseline_path);
  }
  const core::PlanRequest request = plan_request(args, /*real=*/true);
  const std::vector<core::Plan> plans = core::prepare_plans(loaded, request);
  std::vector<core::Trace> given;  // --measured
  if (!args.measured_path.empty()) {
    // Standard input redirected from a file: that file is an input too.
    if (args.measured_path == "-") {
      outputs.protect("/proc/self/fd/0", "read from standard input");
    } else {
      outputs.protect(args.measured_path, "--measured");
    }
    given = measured_runs(args.measured_path, plans);
  }
  const bool measured_before = !given.empty();
  // A baseline made on the other kind of network measured other links.
  const std::string network = measured_before        ? measured_network(given)
                              : args.isolate.empty() ? "loopback"
                                                     : "netns, tc-shaped NICs";
  if (baseline.is_object() && baseline.contains("network") && baseline["network"].is_string() &&
      baseline["network"] != network) {
    throw core::InputError(args.baseline_path, "/network",
                           "a validation on " + baseline["network"].get<std::string>() +
                               ", these runs are on " + network +
                               ": compare validations of the same network");
  }
  for (const core::Plan& plan : plans) {
    baseline_of(baseline, args.baseline_path, loaded.scenario.name, plan.strategy);
  }
  // Before any simulation: a shaped network this machine cannot make is bad input now.
  if (!measured_before && !args.isolate.empty() && calibration_probes().check_isolation) {
    calibration_probes().check_isolation();
  }
  const std::unique_ptr<core::Backend> sim = core::create_backend("sim");
  const std::unique_ptr<core::Backend> real = core::create_backend("real");
  nlohmann::json prov = provenance(args, loaded);
  for (const core::Plan& plan : plans) prov["plan_hashes"][plan.strategy] = core::plan_hash(plan);

  struct Result {
    std::vector<core::Trace> predicted;  // one per seed; the first is the real runs' plan
    std::vector<core::Trace> measured;
    core::Validation validation;
    const nlohmann::json* baseline = nullptr;  // into `baseline`
    HostLoad host;                             // over the real runs
  };
  std::vector<Result> results;
  if (!args.json_path.empty()) {
    outputs.add("--json", args.json_path,
                [&results, &prov, &network, measured_before](std::ostream& file) {
                  nlohmann::json j = {{"format", kValidationFormat},
                                      {"version", kValidationVersion},
                                      {"network", network},
                                      {"provenance", prov},
                                      {"validations", nlohmann::json::array()}};
                  for (const Result& r : results) {
                    j["validations"].push_back(core::validation_to_json(r.validation));
                    j["validations"].back()["host_load"] =
                        measured_before
                            ? nlohmann::json("not known: the runs were made before (--measured)")
                            : host_load_to_json(r.host);
                  }
                  file << core::dump_json(j, 2) << "\n";
                });
  }
  if (!args.markdown_path.empty()) {
    outputs.add("--markdown", args.markdown_path, [&results](std::ostream& file) {
      for (const Result& r : results) {
        file << core::format_validation_markdown(r.validation, r.baseline) << "\n";
      }
    });
  }
  if (!args.trace_path.empty()) {
    outputs.add("--trace", args.trace_path, [&results, &prov](std::ostream& file) {
      std::vector<core::ChromeTraceInput> inputs;
      for (const Result& r : results) {
        const std::string strategy =
            results.size() > 1 ? r.predicted.front().meta.strategy + " " : "";
        inputs.push_back({&r.predicted.front(), "predicted " + strategy});
        inputs.push_back({&r.measured.front(), "measured " + strategy});
      }
      core::write_chrome_trace(file, inputs, prov);
    });
  }

  core::RunOptions options;
  options.provenance = prov;
  options.cancelled = interrupted;
  outputs.set_cancel(interrupted);
  ProgressDisplay progress(parse_progress_mode(args.progress), std::cerr,
                           ::isatty(STDERR_FILENO) == 1);
  if (progress.active()) {
    options.progress = [&progress](const core::RunProgress& p) { progress.update(p); };
  }
  // The prediction over --seeds seeds (the plan of the first is the one run for real): the
  // start-up stagger and jitter draws move async runs' predictions by tens of percent.
  std::vector<std::vector<core::Plan>> seed_plans;
  for (int k = 1; k < args.seeds; ++k) {
    CliArgs other = args;
    other.seed = args.seed + uint64_t(k);
    seed_plans.push_back(compile_plans(loaded, other, /*real=*/true));
  }
  const size_t runs = plans.size() * size_t(args.seeds + (!measured_before ? args.repeat : 0));
  size_t run = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    const core::Plan& plan = plans[i];
    const std::string hash = core::plan_hash(plan);
    Result result;
    for (core::Trace& t : given) {
      if (t.meta.plan_hash == hash) result.measured.push_back(std::move(t));
    }
    REPLISIM_ASSERT(!measured_before || !result.measured.empty(),
                    "measured_runs found a run of every plan");
    options.settings = nlohmann::json::object();
    for (int k = 0; k < args.seeds; ++k) {
      const core::Plan& seeded = k == 0 ? plan : seed_plans[size_t(k - 1)][i];
      progress.start(run++, runs, seeded);
      result.predicted.push_back(core::run_prepared(*sim, seeded, options, loaded));
      progress.done();
      // A prediction with nothing to measure fails here, before any real run.
      core::measure_run(result.predicted.back(), loaded, request, args.scenario);
    }
    core::RunOptions real_options = options;
    real_options.provenance["network"] = network;
    const HostSnapshot host_before = host_snapshot();
    for (int r = 0; r < (!measured_before ? args.repeat : 0); ++r) {
      nlohmann::json settings = {{"threads", args.threads},
                                 {"connect_timeout_s", args.connect_timeout_s}};
      if (!args.isolate.empty()) settings["isolate"] = args.isolate;
      if (args.insecure_frames) settings["insecure_frames"] = true;
      std::optional<core::ScopedTempDir> checkpoints;
      if (plan.checkpoints.every_s > 0 || plan.checkpoints.summary_every_steps > 0) {
        checkpoints.emplace("replisim-validate");
        settings["checkpoint_dir"] = checkpoints->path();
      }
      real_options.settings = settings;
      progress.start(run++, runs, plan);
      result.measured.push_back(core::run_prepared(*real, plan, real_options, loaded));
      progress.done();
    }
    std::vector<const core::Trace*> measured, predicted;
    for (const core::Trace& t : result.measured) measured.push_back(&t);
    for (const core::Trace& t : result.predicted) predicted.push_back(&t);
    if (!measured_before) result.host = host_load_between(host_before, host_snapshot());
    try {
      result.validation = core::validate_runs(predicted, measured, args.tolerance, args.scenario);
    } catch (const core::MeasurementError& e) {
      // The predictions were measured above: what fails here is the runs made before.
      if (measured_before) throw core::InputError(measured_name(args.measured_path), "", e.what());
      throw core::measurement_input_error(e, loaded, request);
    }
    describe_host(result.validation, result.measured.front(),
                  !measured_before ? &result.host : nullptr, measured_name(args.measured_path));
    result.baseline = baseline_of(baseline, args.baseline_path, result.validation.scenario,
                                  result.validation.strategy);
    results.push_back(std::move(result));
  }

  std::ostream& text = outputs.writes_standard_output() ? std::cerr : out;
  // A calibration measured on the other kind of network describes other links.
  const nlohmann::json& calibration = loaded.scenario.calibration;
  std::string mismatch;
  if (calibration.is_object() && calibration.contains("network") &&
      calibration["network"].is_string() && calibration["network"] != network) {
    mismatch = "warning: the scenario's calibration was measured on " +
               calibration["network"].get<std::string>() + ", these runs are on " + network +
               ": its link figures do not describe them" +
               (measured_before        ? std::string(" (make the runs with run --isolate netns, or "
                                                            "calibrate on their network)")
                : args.isolate.empty() ? std::string(" (validate with --isolate netns)")
                                       : std::string(" (run calibrate --isolate netns)")) +
               "\n";
  }
  text << "replisim validate: scenario \"" << loaded.scenario.name << "\" (" << args.scenario
       << "), seed " << args.seed << ", " << network << "\n"
       << mismatch;
  bool within = true;
  for (const Result& r : results) {
    text << "\n" << core::format_validation(r.validation, r.baseline);
    if (!baseline.is_null() && r.baseline == nullptr) {
      text << "(the baseline " << args.baseline_path << " has no " << r.validation.strategy
           << " validation to compare with)\n";
    }
    within = within && r.validation.within_tolerance;
  }
  outputs.write_all();
  return within ? 0 : kExitOutsideTolerance;
}

}  // namespace replisim::cli
