#include "core/pipeline/run_pipeline.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/base/error.h"
#include "core/base/hash.h"
#include "core/base/json_cursor.h"
#include "core/base/units.h"
#include "core/model/data_set.h"

namespace replisim::core {

LoadedScenario load_run_scenario(const std::string& file) {
  const ScenarioDocument document = load_scenario_document(file);
  return {parse_scenario(document.json, file, &document.sources),
          fnv1a_hex(dump_json(document.json)), document.files};
}

std::vector<Plan> prepare_plans(const LoadedScenario& loaded, const PlanRequest& request) {
  Scenario scenario = loaded.scenario;
  if (request.steps > 0) {
    if (request.steps <= scenario.training.warmup_steps) {
      throw InputError("", request.steps_flag,
                       "must be greater than the scenario's warmup_steps (" +
                           std::to_string(scenario.training.warmup_steps) + ")");
    }
    scenario.training.steps = request.steps;
    scenario.training.steady_state.enabled = false;  // a fixed count instead of "auto"
  }
  std::vector<Plan> plans;
  for (const std::string& strategy : request.strategies) {
    plans.push_back(compile_plan(scenario, strategy, request.compile));
  }
  if (request.runs) require_objective_data(scenario);
  if (request.real) refuse_what_real_runs_cannot_do(loaded, request.shaped_links, plans);
  if (request.require_memory) {
    for (const Plan& plan : plans) require_memory_fits(loaded.scenario, plan);
  }
  return plans;
}

void refuse_what_real_runs_cannot_do(const LoadedScenario& loaded, bool shaped_links,
                                     const std::vector<Plan>& plans) {
  // training.steps "auto" runs online (real/node/node_steady.cpp), but a restarted incarnation
  // would start its estimate again.
  for (const Plan& plan : plans) {
    if (plan.steady_tolerance <= 0 || !plan.recovery.enabled) continue;
    for (const PlanFault& fault : plan.faults) {
      if (fault.kind != PlanFaultKind::kJob) continue;
      throw InputError(loaded.scenario.file_of("/training/recovery"), "/training/recovery",
                       "a real run whose steps are \"auto\" cannot restart after a job "
                       "failure (its steady-state estimate would start again): give it "
                       "--steps N, or simulate it");
    }
  }
  // A shaped network (real/isolate/netns.h) gives each machine's namespace one shaped veth: a
  // machine's several NICs (nic.count) would need a veth each and a route per peer
  // (Platform::nic_toward), which it does not build. On loopback nothing is shaped: they run.
  if (shaped_links) {
    for (const MachineSpec& m : loaded.scenario.cluster.machines) {
      if (m.nic_count <= 1) continue;
      throw InputError(loaded.scenario.file_of(m.nic_count_json_path), m.nic_count_json_path,
                       "--isolate netns: several NICs per machine are not emulated yet (machine "
                       "\"" +
                           m.name + "\" has " + std::to_string(m.nic_count) +
                           "): simulate it, or run it on loopback");
    }
  }
  // A shaped network (real/isolate/netns.h) shapes NICs and racks' uplinks; its switches are
  // bridges, never the bottleneck.
  for (const Plan& plan : plans) {
    const Platform& p = plan.platform;
    if (!shaped_links || p.racks.empty()) break;
    if (!p.pods.empty()) {
      throw InputError(loaded.scenario.file_of("/cluster/topology"), "/cluster/topology",
                       "a shaped network (--isolate netns) builds racks behind one core bridge, "
                       "not a fat tree's pods: simulate it, or give the cluster racks");
    }
    std::vector<int> switches = {p.switch_link};
    for (const PlatformRack& r : p.racks) switches.push_back(r.tor_link);
    for (int link : switches) {
      if (!p.switch_can_bind(link)) continue;
      throw InputError(loaded.scenario.file_of("/cluster/topology"), "/cluster/topology",
                       "\"" + p.links[size_t(link)].name +
                           "\" can limit flows, and a shaped network's switches are bridges it "
                           "does not shape (it shapes NICs and uplinks): leave the top-of-rack "
                           "and core bandwidths out (non-blocking), or simulate it");
    }
  }
  if (shaped_links) return;
  for (const FaultSpec& fault : loaded.scenario.faults) {
    if (fault.kind != FaultKind::kLink) continue;
    throw InputError(loaded.scenario.file_of(fault.json_path), fault.json_path,
                     "a real run on loopback cannot degrade or cut a link: run it with "
                     "--isolate netns (shaped links), simulate it, or leave the link fault "
                     "out");
  }
}

void require_objective_data(const Scenario& scenario) {
  const ObjectiveSpec& o = scenario.training.objective;
  if (!o.enabled || o.data.set != ObjectiveDataSpec::Set::kFashionMnist) return;
  for (const std::string& file : fashion_mnist_files(o.data.dir)) {
    std::ifstream in(file, std::ios::binary);
    if (in) continue;
    const std::string path = "/training/objective/data";
    throw InputError(scenario.file_of(path), path,
                     file + ": cannot open (" + std::strerror(errno) +
                         "): install Debian's dataset-fashion-mnist (scripts/setup does) or give "
                         "data.dir the folder of the four IDX files");
  }
}

void require_memory_fits(const Scenario& scenario, const Plan& plan) {
  for (const MemoryCheck& m : memory_checks(plan)) {
    if (m.fits()) continue;
    DeviceRef ref;
    parse_device_ref(m.device, &ref);
    const MachineSpec* machine = scenario.cluster.find_machine(ref.machine);
    // Where the memory was given: the GPU's own entry, the identical-GPUs shorthand or a default.
    std::string path;
    if (machine != nullptr && ref.gpu_index >= 0 && size_t(ref.gpu_index) < machine->gpus.size()) {
      path = machine->gpus[size_t(ref.gpu_index)].memory_json_path;
    }
    auto bytes = [](double b) { return format_quantity(b, Dimension::kBytes, 3); };
    throw InputError(scenario.file_of(path), path,
                     m.device + " cannot hold the " + plan.strategy + " plan: it needs " +
                         bytes(m.need.total_bytes()) + " (weights " + bytes(m.need.weights_bytes) +
                         ", gradients " + bytes(m.need.gradients_bytes) + ", optimizer state " +
                         bytes(m.need.optimizer_bytes) + ", activations " +
                         bytes(m.need.activations_bytes) + ") and has " + bytes(m.capacity_bytes) +
                         " (--strict)");
  }
}

Trace run_prepared(Backend& backend, const Plan& plan, const RunOptions& options,
                   const LoadedScenario& loaded) {
  try {
    return run_to_trace(backend, plan, options);
  } catch (const InputError& e) {
    const std::string prefix = "/faults/";
    if (!e.file().empty() || e.json_path().rfind(prefix, 0) != 0) throw;
    const size_t i = size_t(std::strtoul(e.json_path().c_str() + prefix.size(), nullptr, 10));
    if (i >= plan.faults.size()) throw;
    // Link and slowdown faults keep the scenario's order among their kind.
    const PlanFaultKind kind = plan.faults[i].kind;
    const FaultKind spec_kind =
        kind == PlanFaultKind::kLink ? FaultKind::kLink : FaultKind::kSlowdown;
    if (kind != PlanFaultKind::kLink && kind != PlanFaultKind::kSlowdown) throw;
    size_t nth = 0;
    for (size_t f = 0; f < i; ++f) nth += plan.faults[f].kind == kind;
    for (const FaultSpec& spec : loaded.scenario.faults) {
      if (spec.kind != spec_kind) continue;
      if (nth-- == 0) {
        throw InputError(loaded.scenario.file_of(spec.json_path), spec.json_path, e.message());
      }
    }
    throw;
  }
}

namespace {

// "raise training.steps" in `text` says "raise --steps (N now)" when the steps came from the flag.
std::string naming_the_steps_flag(std::string text, const PlanRequest& request) {
  const std::string field = "raise training.steps";
  const size_t at = text.find(field);
  if (request.steps > 0 && at != std::string::npos) {
    text.replace(at, field.size(),
                 "raise " + request.steps_flag + " (" + std::to_string(request.steps) + " now)");
  }
  return text;
}

}  // namespace

InputError measurement_input_error(const MeasurementError& e, const LoadedScenario& loaded,
                                   const PlanRequest& request) {
  const std::string& path = e.scenario_path();
  if (request.steps > 0 && path == "/training/steps") {  // the steps came from the flag
    return InputError("", request.steps_flag, naming_the_steps_flag(e.message(), request));
  }
  return InputError(loaded.scenario.file_of(path), path, e.message());
}

namespace {

// Whether a death no fault of the plan caused (a real run's task killed from outside) struck.
bool cut_short_from_outside(const Trace& trace) {
  if (trace.outcome.job_failure && trace.outcome.job_failure->unplanned) return true;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kFault && (e.flags & kEventUnplanned) != 0) return true;
  }
  return false;
}

}  // namespace

RunMetrics measure_trace(const Trace& trace, const std::string& source) {
  try {
    return compute_metrics(trace, source);
  } catch (const MeasurementError& e) {
    // A real run that a death from outside cut short (kill -9 of a task during its warm-up, or of
    // every worker) measured what it could: the whole run is the window, and the report says so.
    // The scenario is not at fault there.
    if (!cut_short_from_outside(trace)) throw;
    // A death at the very start (before t = 0 on the run's clock) can leave nothing to measure
    // at all: the run failed, as its job did (run's exit 1), not the scenario.
    const std::string cause =
        trace.outcome.job_failure ? trace.outcome.job_failure->cause : std::string(e.message());
    if (!(trace.outcome.end_s > 0))
      throw BackendError(cause + ", at the run's start: nothing was measured");
    RunMetrics metrics;
    try {
      metrics = compute_window_metrics(trace, 0, trace.outcome.end_s, source);
    } catch (const InputError& empty) {
      throw BackendError(cause + ": nothing was measured (" + empty.message() + ")");
    }
    metrics.warnings.push_back(
        std::string("a death no fault of the plan cut the run short before its window (") +
        e.message() + "): these figures are of the whole run, warm-up included");
    return metrics;
  }
}

RunMetrics measure_run(const Trace& trace, const LoadedScenario& loaded, const PlanRequest& request,
                       const std::string& source) {
  RunMetrics metrics;
  try {
    metrics = measure_trace(trace, source);
  } catch (const MeasurementError& e) {
    throw measurement_input_error(e, loaded, request);
  }
  // The warnings too name the flag the steps came from.
  for (std::string& w : metrics.warnings) w = naming_the_steps_flag(std::move(w), request);
  return metrics;
}

}  // namespace replisim::core
