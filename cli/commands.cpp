#include "cli/commands.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <ostream>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include "cli/calibration_stability.h"
#include "cli/interrupt.h"
#include "cli/progress.h"

#include "cli/run_outputs.h"
#include "cli/scenario_plans.h"
#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/base/version.h"
#include "core/metrics/metrics.h"
#include "core/metrics/report.h"
#include "core/plan/plan_text.h"
#include "core/strategy/strategy.h"

namespace replisim::cli {

nlohmann::json provenance(const CliArgs& args, const LoadedScenario& loaded) {
  return {{"replisim", std::string(core::kVersion) + " (" + core::kGitDescribe + ")"},
          {"scenario_file", args.scenario},
          {"scenario_hash", loaded.hash},
          {"seed", args.seed},
          {"command_line", args.command_line}};
}

core::PlanRequest plan_request(const CliArgs& args, bool real) {
  core::PlanRequest request;
  request.strategies = selected_strategies(args);
  request.steps = args.steps;
  request.compile = core::CompileOptions{args.seed, args.scale_compute, args.plan_budget};
  request.require_memory = args.strict;
  request.real = real;
  request.shaped_links = !args.isolate.empty();
  return request;
}

std::vector<core::Plan> compile_plans(const LoadedScenario& loaded, const CliArgs& args,
                                      bool real) {
  core::PlanRequest request = plan_request(args, real);
  request.runs = false;  // `plan` reads no data
  return core::prepare_plans(loaded, request);
}

std::string version_text() {
  std::string text = std::string("replisim ") + core::kVersion + " (" + core::kGitDescribe + ")";
  // Each backend's engine, as its traces record it ("SimGrid 3.32.0").
  for (const core::BackendEntry& entry : core::registered_backends()) {
    const nlohmann::json provenance = entry.create()->info().provenance;
    for (const auto& [key, value] : provenance.items()) {
      text += ", " + (value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return text;
}

namespace {

// Each plan's backend settings (RunOptions::settings), made once every input is checked.
using SettingsFor = std::function<nlohmann::json(const std::vector<core::Plan>&, size_t)>;

// simulate and run: compile, run each plan on `backend_name`, print the report, write the outputs.
int run_on_backend(const CliArgs& args, std::ostream& out, const std::string& backend_name,
                   const SettingsFor& settings_for) {
  RunSet runs;
  // Every output is checked before any simulation runs, and written all-or-nothing at the end.
  core::OutputFiles outputs(args.force, &out);
  outputs.protect(args.scenario);
  const LoadedScenario loaded = load(args.scenario);
  for (const std::string& file : loaded.files) outputs.protect(file);  // includes too
  add_run_outputs(outputs, args, runs, std::cerr);
  const std::unique_ptr<core::Backend> backend = core::create_backend(backend_name);
  // Every plan first (checked: memory under --strict, what a real run cannot do), so that each
  // run's provenance lists all of them.
  const core::PlanRequest request = plan_request(args, backend_name == "real");
  const std::vector<core::Plan> plans = core::prepare_plans(loaded, request);
  runs.provenance = provenance(args, loaded);
  // Where a real run's transfers went (the report's title, and report's from the trace).
  const std::string real_network = args.isolate == "netns" ? "netns, tc-shaped NICs" : "loopback";
  if (backend_name == "real") runs.provenance["network"] = real_network;
  for (const core::Plan& plan : plans) {
    runs.provenance["plan_hashes"][plan.strategy] = core::plan_hash(plan);
  }
  // The report's second line, kept with the runs so that `report` prints it from their traces.
  runs.provenance["workload"] = workload_line(loaded.scenario, plans.front());
  core::RunOptions options;
  options.provenance = runs.provenance;
  runs.provenance.update(backend->info().provenance);
  ProgressDisplay progress(parse_progress_mode(args.progress), std::cerr,
                           ::isatty(STDERR_FILENO) == 1);
  if (progress.active()) {
    options.progress = [&progress](const core::RunProgress& p) { progress.update(p); };
  }
  options.cancelled = interrupted;
  outputs.set_cancel(interrupted);
  const HostSnapshot host_before = host_snapshot();
  for (size_t i = 0; i < plans.size(); ++i) {
    if (settings_for) options.settings = settings_for(plans, i);
    progress.start(i, plans.size(), plans[i]);
    core::Trace trace = core::run_prepared(*backend, plans[i], options, loaded);
    // What the run's settings made of the backend (the simulator's engine and tolerance).
    for (const char* key : {"network_engine", "tolerance_s"}) {
      const auto found = trace.meta.provenance.find(key);
      if (found != trace.meta.provenance.end()) runs.provenance[key] = *found;
    }
    progress.done();
    runs.metrics.push_back(core::measure_run(trace, loaded, request, args.scenario));
    runs.traces.push_back(std::move(trace));
  }
  // A real run's network is this machine's loopback, whatever the scenario models.
  const RunTitle title{
      loaded.scenario.name,
      args.scenario,
      backend->info().name,
      backend_name == "real" ? real_network
                             : network_model_name(loaded.scenario.cluster.network_model),
      std::to_string(args.seed),
      engine_title(runs.provenance),
      backend_name == "real" ? "" : transport_title(loaded.scenario.cluster.transport)};
  // With an output on standard output ("-"), the text report goes to standard error.
  std::ostream& report = outputs.writes_standard_output() ? std::cerr : out;
  report << core::format_report(
      runs.metrics, title_line(title) + "\n" + runs.provenance["workload"].get<std::string>());
  if (backend_name == "real")
    report << real_run_host_line(host_load_between(host_before, host_snapshot()));
  try {
    outputs.write_all();
  } catch (const core::OutputError& e) {
    // A real run's node traces are the only copy of what it measured: kept, and named.
    const std::vector<std::string> kept = backend->keep_measurements();
    if (kept.empty()) throw;
    std::string where;
    for (const std::string& dir : kept) where += (where.empty() ? "" : ", ") + dir;
    throw core::OutputError(e.file(), e.reason() + "; the run's node traces are kept in " + where +
                                          " (replisim report --merge DIR/*.trace rebuilds it)");
  }
  // A real run whose job failed by a death from outside failed, as TF's would: its report and
  // outputs above hold what it measured up to there.
  // So did one whose every client died so (no worker left to train).
  int status = 0;
  for (const core::Trace& trace : runs.traces) {
    std::string why;
    const std::optional<core::JobFailureRecord>& failure = trace.outcome.job_failure;
    if (failure && failure->unplanned) {
      why = "the job failed at t = " +
            core::format_quantity(failure->time_s, core::Dimension::kTime) + " at global_step " +
            std::to_string(failure->global_step) + ": " + failure->cause;
    } else {
      std::set<uint32_t> dead;
      double last_s = 0;
      for (const core::TraceEvent& e : trace.events) {
        if (e.kind != core::EventKind::kFault || (e.flags & core::kEventUnplanned) == 0 ||
            e.client == core::kNoString) {
          continue;
        }
        dead.insert(e.client);
        last_s = std::max(last_s, e.start_s);
      }
      if (dead.empty() || dead.size() < trace.meta.clients.size()) continue;
      why = "every client died, no fault of the plan (the last at t = " +
            core::format_quantity(last_s, core::Dimension::kTime) + ")";
    }
    std::string logs;  // the failed run's directory, kept (docs/real-runs.md)
    for (const std::string& dir : backend->keep_measurements()) {
      logs += (logs.empty() ? "; logs: " : ", ") + dir;
    }
    std::cerr << "replisim: error: " << trace.meta.strategy << ": " << why
              << " (the report is the run up to there" << logs << ")\n";
    status = 1;
  }
  return status;
}

bool writes_checkpoints(const core::Plan& plan) {
  return plan.checkpoints.every_s > 0 || plan.checkpoints.summary_every_steps > 0;
}

// run's checkpoint directory: --checkpoint-dir (a new one), else, when a plan writes checkpoints
// or summaries, "<scenario stem>.checkpoints" here; with both strategies a subdirectory each.
// Created when the first run starts, never reused.
class CheckpointDirs {
 public:
  CheckpointDirs(const CliArgs& args)
      : given_(args.checkpoint_dir), isolate_(args.isolate), insecure_(args.insecure_frames) {
    std::string stem = args.scenario.substr(args.scenario.find_last_of('/') + 1);
    stem = stem.substr(0, stem.rfind('.'));
    fallback_ = (stem.empty() ? std::string("replisim") : stem) + ".checkpoints";
    outputs_ = {{"--json", args.json_path},
                {"--trace", args.trace_path},
                {"--trace-out", args.trace_out_path},
                {"--csv", args.csv_path}};
  }
  void check(const std::vector<core::Plan>& plans) {
    bool any = false;
    for (const core::Plan& p : plans) any |= writes_checkpoints(p);
    root_ = !given_.empty() ? given_ : any ? fallback_ : std::string();
    if (root_.empty()) return;
    // The directory the run makes is no output's file (found before the run, not after it).
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = fs::weakly_canonical(fs::absolute(root_), ec);
    for (const auto& [flag, path] : outputs_) {
      if (path.empty() || path == "-") continue;
      if (fs::weakly_canonical(fs::absolute(path), ec) == dir) {
        throw core::InputError("", "--checkpoint-dir",
                               root_ + " is also the " + flag + " file: give them different names");
      }
    }
    struct stat st {};
    if (::stat(root_.c_str(), &st) == 0) {
      throw core::InputError("", "--checkpoint-dir",
                             root_ + " exists" +
                                 (given_.empty() ? " (the default checkpoint directory of this "
                                                   "scenario's runs)"
                                                 : std::string()) +
                                 "; give a new directory (a run never writes into an old one) "
                                 "or remove it");
    }
    const size_t slash = root_.find_last_of('/');
    const std::string parent = slash == std::string::npos ? "." : root_.substr(0, slash + 1);
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        ::access(parent.c_str(), W_OK) != 0) {
      throw core::InputError("", "--checkpoint-dir",
                             root_ + ": " + parent + " is not a directory this user can write");
    }
  }
  // A cancelled run's checkpoints go with it ("no output was written").
  void remove_made() {
    std::error_code ec;
    if (made_) std::filesystem::remove_all(root_, ec);
  }
  nlohmann::json settings(const std::vector<core::Plan>& plans, size_t i, int threads,
                          double connect_timeout_s) {
    nlohmann::json s = {{"threads", threads}, {"connect_timeout_s", connect_timeout_s}};
    if (!isolate_.empty()) s["isolate"] = isolate_;
    if (insecure_) s["insecure_frames"] = true;
    if (root_.empty()) return s;
    if (!made_) {
      make(root_);
      made_ = true;
    }
    std::string dir = root_;
    if (plans.size() > 1) {
      dir += "/" + plans[i].strategy;
      make(dir);
    }
    s["checkpoint_dir"] = dir;
    return s;
  }

 private:
  static void make(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0755) != 0) throw core::OutputError(dir, std::strerror(errno));
  }
  std::string given_, isolate_, fallback_, root_;
  bool insecure_ = false;                                     // --insecure-frames
  std::vector<std::pair<std::string, std::string>> outputs_;  // (flag, path)
  bool made_ = false;
};

}  // namespace

int run_simulate(const CliArgs& args, std::ostream& out) {
  if (!args.seed_list.empty()) return run_seed_spread(args, out);
  return run_on_backend(args, out, "sim", [&args](const std::vector<core::Plan>&, size_t) {
    return nlohmann::json{{"network_engine", args.network_engine}};
  });
}

int run_real(const CliArgs& args, std::ostream& out) {
  auto dirs = std::make_shared<CheckpointDirs>(args);
  bool checked = false;
  try {
    return run_on_backend(args, out, "real",
                          [&args, dirs, &checked](const std::vector<core::Plan>& plans, size_t i) {
                            if (!checked) {
                              dirs->check(plans);
                              checked = true;
                            }
                            return dirs->settings(plans, i, args.threads, args.connect_timeout_s);
                          });
  } catch (const core::RunCancelled&) {
    dirs->remove_made();
    throw;
  }
}

int run_plan(const CliArgs& args, std::ostream& out) {
  const LoadedScenario loaded = load(args.scenario);
  const std::vector<core::Plan> plans = compile_plans(loaded, args);
  if (args.json_stdout) {
    // Streamed: as dump_json(plan_to_json(plan), 1), or an array of them, without the documents.
    const auto write = [&out](const std::string& piece) { out << piece; };
    if (plans.size() == 1) {
      core::write_plan_json(plans.front(), 1, write);
    } else {
      out << "[\n";
      for (size_t i = 0; i < plans.size(); ++i) {
        out << " ";
        core::write_plan_json(plans[i], 1, write, 1);
        out << (i + 1 < plans.size() ? ",\n" : "\n");
      }
      out << "]";
    }
    out << "\n";
    return 0;
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    if (i > 0) out << "\n";
    out << core::format_plan(plans[i]);
  }
  return 0;
}

}  // namespace replisim::cli
