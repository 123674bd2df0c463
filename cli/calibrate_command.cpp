// replisim calibrate: measures this machine for the scenarios that describe it (docs/
// validation-real.md, "Calibrate") and writes a file they `include`. Three parts:
//   1. in-process microbenchmarks (real/calibrate/microbench.h): SGEMM flop/s of one core, alone
//      and with every core busy; a PS's SGD apply per parameter; memory copy;
//   2. two real runs of microbenchmark plans (one PS, one worker; shaped with --isolate netns):
//      one 16 MB variable (the link's rate as the transport achieves it) and 64 variables of 16
//      bytes (each message's cost on a busy connection); and a byte's TCP round trip;
//   3. the check: calibrate's two reference plans (one transfer-bound, one compute-bound),
//      predicted by scenarios that include the new file and run for real; their throughput
//      errors are printed and kept in the file;
//   4. its stability (cli/calibration_stability.h): the SGEMM windows' spread, the all-busy/alone
//      ratio, the host's load average, steal and other processes' CPU, the reference errors;
//      a host that fails a check is refused (exit 3, nothing written) unless --accept-unstable.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <thread>

#include "cli/calibration_stability.h"
#include "cli/commands.h"
#include "cli/host_load.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/scenario_plans.h"
#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/output_file.h"
#include "core/base/temp_dir.h"
#include "core/base/units.h"
#include "core/base/version.h"
#include "core/metrics/metrics.h"
#include "core/scenario/scenario.h"
#include "core/trace/trace.h"

namespace replisim::cli {

// The microbenchmarks (real/calibrate/microbench.h), handed in by main(): the CLI library does not
// link the real backend.
CalibrationProbes& calibration_probes() {
  static CalibrationProbes probes;
  return probes;
}

namespace {

// The nominal NIC of the calibration runs when shaped (a 1 Gbit/s NIC, as validation scenarios
// have), and of loopback runs (not a limit: loopback is faster).
constexpr double kShapedNicBytesPerS = 125e6;
constexpr const char* kShapedNic = "1 Gbps";
constexpr const char* kLoopbackNic = "100 Gbps";
// Variables of the two network runs: one of 4 Mi floats (16 MiB), and 64 of 4 floats.
constexpr int kBigParams = 4 << 20;
constexpr int kTinyVariables = 64;

// Why a calibrated scenario charges no serialisation (cluster.transport.copy_bandwidth "0 Bps"),
// where the `tcp` preset charges a copy of every tensor on each end as CPU ops ("serialise/",
// "deserialise/"): replisim's real transport has no such step. It writes a tensor's frames
// straight from the tensor's own buffer and reads each arriving chunk into the buffer the recv
// gets (real/node/tensor_transfers.cpp: send_chunks, tensor_destination); its only per-byte CPU
// work, the kernel's socket copies and the frames' HMAC, is done by the connection's I/O thread
// while the bytes move, so it is inside each transfer's measured time and the link rate this
// calibration measures. A serialise op before the transfer and a deserialise op after it would
// charge that time a second time, on the CPU device the ops use, and leave the `other` phase of
// every validation at -100% (issue 38). The memory copy rate is still measured and reported.
constexpr const char* kNoSerialisation = "0 Bps";

// Quantities as scenarios write them (parse_quantity reads them back).
std::string quantity(double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4g %s", value, unit);
  return buffer;
}
std::string rate_text(double flop_per_s) {
  return quantity(flop_per_s / 1e9, "GFLOPS");
}
std::string bandwidth_text(double bytes_per_s) {
  return quantity(bytes_per_s / 1e6, "MBps");
}
std::string time_text(double s) {
  return quantity(s * 1e6, "us");
}

// One PS and one worker, compute on their CPUs; `layers` the model's.
nlohmann::json two_machine_scenario(const std::string& name, const nlohmann::json& layers,
                                    const std::string& nic, const std::string& cpu_speed, int batch,
                                    int steps) {
  nlohmann::json machine = {{"cpu", {{"speed", cpu_speed}}},
                            {"nic", {{"bandwidth", nic}, {"latency", "10 us"}}}};
  nlohmann::json ps = machine, worker = machine;
  ps["name"] = "ps";
  worker["name"] = "w0";
  return {{"name", name},
          {"cluster", {{"machines", {ps, worker}}, {"network_model", "ideal"}}},
          {"model", {{"layers", layers}}},
          {"training",
           {{"batch_per_replica", batch},
            {"steps", steps},
            {"warmup_steps", 2},
            {"replicas", {"w0/cpu"}},
            {"client", "w0"},
            {"ps", {"ps/cpu"}},
            {"jitter", 0},
            {"costs", "none"}}}};
}

nlohmann::json layer(const std::string& name, double params, const std::string& flop) {
  return {{"name", name},
          {"params", params},
          {"forward_flops_per_sample", flop},
          {"activation_bytes_per_sample", "4 B"}};
}

// `document` written into `dir` (next to the calibration it may include), loaded and compiled
// through the run pipeline, between-graph, with the scenario's own steps and compute.
struct Reference {
  core::LoadedScenario loaded;
  core::PlanRequest request;
  core::Plan plan;
};
Reference reference_of(const nlohmann::json& document, const CliArgs& args,
                       const std::string& dir) {
  const std::string file = dir + "/" + document["name"].get<std::string>() + ".json";
  std::ofstream(file) << document.dump(1) << "\n";
  CliArgs a = args;
  a.strategy = "between_graph";
  a.steps = 0;
  a.scale_compute = 1;
  Reference r{load(file), plan_request(a, /*real=*/true), {}};
  r.plan = core::prepare_plans(r.loaded, r.request).front();
  return r;
}

// The real backend's settings of calibrate's runs.
core::RunOptions real_options(const CliArgs& args) {
  core::RunOptions options;
  options.cancelled = interrupted;
  options.settings = {{"threads", 1}, {"connect_timeout_s", args.connect_timeout_s}};
  if (!args.isolate.empty()) options.settings["isolate"] = args.isolate;
  return options;
}

// The runs calibrate makes (the link's, the messages', each reference plan simulated and run), one
// after the other under --progress; and the core sharing the real runs' launcher reported.
struct Runs {
  ProgressDisplay& progress;
  ProgressMode mode;
  size_t next = 0;
  static constexpr size_t kCount = 6;
  std::string cores;  // the real runs' "cores: ..." note (real/backend), the last one seen

  // A stage's line on standard error ("calibrate: SGEMM ..."), unless --progress json (its lines
  // are JSON objects only) or none.
  void stage(const std::string& what) const {
    if (mode != ProgressMode::kJson && mode != ProgressMode::kNone) {
      std::cerr << "calibrate: " << what << "...\n";
    }
  }

  core::Trace run(core::Backend& backend, const Reference& r, core::RunOptions options) {
    if (progress.active()) {
      options.progress = [this](const core::RunProgress& p) { progress.update(p); };
    }
    progress.start(next++, kCount, r.plan);
    core::Trace trace = core::run_prepared(backend, r.plan, options, r.loaded);
    progress.done();
    for (const std::string& note : trace.notes()) {
      if (note.rfind("cores: ", 0) == 0) cores = note.substr(7);
    }
    return trace;
  }
};

// The real run of `document`.
core::Trace run_real(const nlohmann::json& document, const CliArgs& args, const std::string& dir,
                     Runs& runs) {
  const std::unique_ptr<core::Backend> real = core::create_backend("real");
  return runs.run(*real, reference_of(document, args, dir), real_options(args));
}

// The transfers of a run from the PS to the worker (the pulls), after the warm-up steps.
std::vector<const core::TraceEvent*> pulls(const core::Trace& t) {
  std::vector<const core::TraceEvent*> out;
  for (const core::TraceEvent& e : t.events) {
    if (e.kind == core::EventKind::kTransfer && e.producer == core::OpKind::kReadVariable &&
        e.step >= 2) {
      out.push_back(&e);
    }
  }
  return out;
}

// CPU seconds of this process's reaped children (the real runs' tasks).
double children_cpu_s() {
  rusage r{};
  ::getrusage(RUSAGE_CHILDREN, &r);
  return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

struct Network {
  double transport_cpu_s_per_gib = 0;  // both ends' CPU time per GiB moved (the link run)
  double link_bytes_per_s = 0;         // one connection's rate for a 16 MiB tensor
  double message_overhead_s = 0;       // each message's cost on a busy connection
  double one_way_latency_s = 0;        // half a byte's TCP round trip
};

Network measure_network(const CliArgs& args, const std::string& dir, const std::string& cpu,
                        Runs& runs) {
  Network n;
  const std::string nic = args.isolate.empty() ? kLoopbackNic : kShapedNic;
  const nlohmann::json big = two_machine_scenario(
      "calibrate-link", nlohmann::json::array({layer("big", kBigParams, "1 kFLOP")}), nic, cpu, 1,
      10);
  std::vector<double> rates;
  const double cpu_before_s = children_cpu_s();
  const core::Trace link = run_real(big, args, dir, runs);
  double moved_bytes = 0;
  for (const core::TraceEvent& e : link.events) {
    if (e.kind == core::EventKind::kTransfer) moved_bytes += e.bytes;
  }
  if (moved_bytes > 0) {
    n.transport_cpu_s_per_gib = (children_cpu_s() - cpu_before_s) / (moved_bytes / (1 << 30));
  }
  for (const core::TraceEvent* e : pulls(link)) {
    if (e->bytes >= 1e6 && e->end_s > e->start_s) {
      rates.push_back(e->bytes / (e->end_s - e->start_s));
    }
  }
  n.link_bytes_per_s = median_of(rates);
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < kTinyVariables; ++i)
    layers.push_back(layer("t" + std::to_string(i), 4, "1 kFLOP"));
  const core::Trace tiny = run_real(
      two_machine_scenario("calibrate-messages", layers, nic, cpu, 1, 30), args, dir, runs);
  // Per step: the pulls' arrivals, one after the other on the connection.
  std::map<int64_t, std::vector<const core::TraceEvent*>> by_step;
  for (const core::TraceEvent* e : pulls(tiny)) by_step[e->step].push_back(e);
  std::vector<double> gaps;
  for (auto& [step, events] : by_step) {
    std::sort(
        events.begin(), events.end(),
        [](const core::TraceEvent* a, const core::TraceEvent* b) { return a->end_s < b->end_s; });
    for (size_t i = 1; i < events.size(); ++i)
      gaps.push_back(events[i]->end_s - events[i - 1]->end_s);
  }
  n.message_overhead_s = median_of(gaps);
  return n;
}

// Calibrate's two reference scenarios, including the calibration file `include` (a path relative
// to the scenario).
nlohmann::json reference_scenario(bool transfer_bound, const std::string& nic,
                                  const std::string& include) {
  nlohmann::json machine = {{"nic", {{"bandwidth", nic}}}};
  nlohmann::json ps = machine, worker = machine;
  ps["name"] = "ps";
  worker["name"] = "w0";
  const nlohmann::json model =
      transfer_bound ? nlohmann::json{{"preset", "mlp"}, {"widths", {1024, 2048, 2048, 10}}}
                     : nlohmann::json{{"preset", "mlp"}, {"widths", {512, 512, 10}}};
  return {{"name", transfer_bound ? "calibrate-reference-transfer-bound"
                                  : "calibrate-reference-compute-bound"},
          {"include", include},
          {"cluster", {{"machines", {ps, worker}}}},
          {"model", model},
          {"training",
           {{"batch_per_replica", transfer_bound ? 16 : 1024},
            {"steps", 14},
            {"warmup_steps", 3},
            {"replicas", {"w0/cpu"}},
            {"client", "w0"},
            {"ps", {"ps/cpu"}}}}};
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

std::string number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", x);
  return buffer;
}

std::string error_percent(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * x);
  return buffer;
}

// The check: the reference plans, predicted through the calibration in `dir` (as scenarios
// include it) and run for real; their rows of the printed table; their errors into `stability`.
// A replisim without the simulator (REPLISIM_WITH_SIM=OFF: real/gpu-check.sh on a GPU machine)
// predicts nothing: the check is left to `validate --measured` where one is.
nlohmann::json check_references(const CliArgs& args, const std::string& dir, Runs& runs,
                                CalibrationStability& stability, std::string& table) {
  const std::vector<core::BackendEntry>& backends = core::registered_backends();
  if (std::none_of(backends.begin(), backends.end(),
                   [](const core::BackendEntry& b) { return b.name == "sim"; })) {
    table =
        "  not checked: this replisim has no simulator (REPLISIM_WITH_SIM=OFF); validate a "
        "real run with replisim validate --measured where one is\n";
    return "not checked: no simulator in this build";
  }
  const std::unique_ptr<core::Backend> sim = core::create_backend("sim");
  const std::unique_ptr<core::Backend> real = core::create_backend("real");
  nlohmann::json references = nlohmann::json::array();
  for (bool transfer_bound : {true, false}) {
    const nlohmann::json doc = reference_scenario(
        transfer_bound, args.isolate.empty() ? kLoopbackNic : kShapedNic, "calibration.json");
    const std::string name = doc["name"];
    runs.stage("reference " + name + " (simulated, then run)");
    const Reference r = reference_of(doc, args, dir);
    core::RunOptions options;
    options.cancelled = interrupted;
    const core::RunMetrics predicted =
        core::measure_run(runs.run(*sim, r, options), r.loaded, r.request, name);
    const core::RunMetrics measured =
        core::measure_run(runs.run(*real, r, real_options(args)), r.loaded, r.request, name);
    const double error = (measured.throughput_samples_per_s - predicted.throughput_samples_per_s) /
                         predicted.throughput_samples_per_s;
    references.push_back({{"name", name},
                          {"predicted_samples_per_s", predicted.throughput_samples_per_s},
                          {"measured_samples_per_s", measured.throughput_samples_per_s},
                          {"relative_error", error}});
    // On loopback the transfer-bound plan is not expected to be predicted
    // (docs/validation-real.md).
    stability.references.push_back({name, error, !(transfer_bound && args.isolate.empty())});
    char line[256];
    std::snprintf(line, sizeof line, "  %-38s %10.1f %10.1f   %s%s\n", name.c_str(),
                  predicted.throughput_samples_per_s, measured.throughput_samples_per_s,
                  error_percent(error).c_str(),
                  stability.references.back().checked ? "" : "   (loopback: not checked)");
    table += line;
  }
  return references;
}

}  // namespace

int run_calibrate(const CliArgs& args, std::ostream& out) {
  const CalibrationProbes& probes = calibration_probes();
  if (!probes.sgemm_flop_per_s) throw core::BackendError("calibrate: no microbenchmarks linked");
  const std::string out_path =
      args.calibration_out.empty() ? "calibration.json" : args.calibration_out;
  core::OutputFiles outputs(args.force, &out);
  nlohmann::json file;
  outputs.add("--out", out_path,
              [&file](std::ostream& o) { o << core::dump_json(file, 2) << "\n"; });
  outputs.set_cancel(interrupted);
  if (probes.check_isolation && !args.isolate.empty()) probes.check_isolation();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  ProgressDisplay progress(parse_progress_mode(args.progress), std::cerr,
                           ::isatty(STDERR_FILENO) == 1);
  Runs runs{progress, parse_progress_mode(args.progress), 0, ""};
  // The probes' wall time: 2 s for SGEMM (5 windows), 1 s for the others; --probe-seconds (tests).
  const double sgemm_s = args.probe_seconds > 0 ? args.probe_seconds : 2.0;
  const double other_s = sgemm_s / 2;
  constexpr int kWindows = 5;
  const HostSnapshot host_before = host_snapshot();
  CalibrationStability stability;

  runs.stage("SGEMM (one core alone, then all " + std::to_string(cores) + " busy)");
  const auto stop_if_cancelled = [] {
    if (interrupted()) throw core::RunCancelled();
  };
  stability.sgemm_one_core_windows = probes.sgemm_flop_per_s(1, sgemm_s, kWindows, interrupted);
  stop_if_cancelled();
  stability.sgemm_all_busy_windows =
      probes.sgemm_flop_per_s(int(cores), sgemm_s, kWindows, interrupted);
  stop_if_cancelled();
  const double sgemm_one = median_of(stability.sgemm_one_core_windows);
  const double sgemm_all = median_of(stability.sgemm_all_busy_windows);
  runs.stage("SGD apply and memory copy");
  const double apply_s_per_param = probes.sgd_apply_s_per_param(other_s, interrupted);
  stop_if_cancelled();
  const double copy_bytes_per_s = probes.copy_bytes_per_s(other_s, interrupted);
  stop_if_cancelled();

  // A device of the scenarios is one core of this machine, at the rate of one core alone (with
  // every core busy it is within a few percent on an idle machine; a neighbour's load shows
  // there first, and is no property of the machine: the stability check).
  const double cpu_speed = sgemm_one;
  const std::string cpu = rate_text(cpu_speed);
  const core::ScopedTempDir scratch("replisim-calibrate");
  const std::string& dir = scratch.path();

  runs.stage(std::string("the link and per-message costs (two real runs") +
             (args.isolate.empty() ? ", loopback" : ", shaped to 1 Gbit/s") + ")");
  Network net = measure_network(args, dir, cpu, runs);
  if (probes.tcp_one_way_latency_s)
    net.one_way_latency_s = probes.tcp_one_way_latency_s(!args.isolate.empty());

  const double apply_flop_per_param = apply_s_per_param * cpu_speed;
  double gpu_flop_per_s = 0;
  if (probes.gpu_sgemm_flop_per_s)
    gpu_flop_per_s = probes.gpu_sgemm_flop_per_s(sgemm_s, interrupted);
  stop_if_cancelled();
  const std::string gpu_speed = rate_text(gpu_flop_per_s > 0 ? gpu_flop_per_s : cpu_speed);
  char hostname[256] = "";
  ::gethostname(hostname, sizeof hostname - 1);
  nlohmann::json calibration = {
      {"format", core::kCalibrationFormat},
      {"version", core::kCalibrationVersion},
      {"replisim", std::string(core::kVersion) + " (" + core::kGitDescribe + ")"},
      {"host", hostname},
      {"cores", cores},
      {"date", now_iso8601()},
      {"command_line", args.command_line},
      {"network", args.isolate.empty() ? "loopback" : "netns, tc-shaped NICs"},
      {"measured",
       {{"sgemm_flop_per_s_one_core_alone", sgemm_one},
        {"sgemm_flop_per_s_per_core_all_busy", sgemm_all},
        {"sgd_apply_s_per_param", apply_s_per_param},
        {"gpu_sgemm_flop_per_s", gpu_flop_per_s > 0 ? nlohmann::json(gpu_flop_per_s)
                                                    : nlohmann::json("no GPU: GPU ops run on the "
                                                                     "CPU engine")},
        {"copy_bytes_per_s", copy_bytes_per_s},
        {"link_bytes_per_s_one_connection", net.link_bytes_per_s},
        {"transport_cpu_s_per_gib", net.transport_cpu_s_per_gib},
        {"message_overhead_s", net.message_overhead_s},
        {"tcp_one_way_latency_s", net.one_way_latency_s}}}};
  if (!args.isolate.empty()) {
    calibration["measured"]["link_efficiency_of_shaped_1_gbps"] =
        net.link_bytes_per_s / kShapedNicBytesPerS;
  }
  // The scenario fields: every machine's CPU (one core each), NIC latency and, on loopback, its
  // bandwidth (the connection's rate); the transport: TCP's framing on a shaped wire, none on
  // loopback (its rate is measured in payload bytes), and no serialisation (copy_bandwidth 0: the
  // real transport has none to charge; kNoSerialisation); the message and apply costs.
  // A route crosses the sender's NIC, the switch (1 us by default) and the receiver's NIC.
  nlohmann::json nic = {{"latency", time_text(std::max(0.0, (net.one_way_latency_s - 1e-6) / 2))}};
  if (args.isolate.empty()) {
    nic["bandwidth"] = bandwidth_text(net.link_bytes_per_s);
  }
  file = {{"calibration", calibration},
          {"cluster",
           {{"machine_defaults",
             {{"cpu", {{"speed", cpu}, {"cores", 1}}},
              // Without a GPU, a GPU device of a real run is one thread of the CPU engine.
              {"gpu", {{"speed", gpu_speed}}},
              {"nic", nic}}},
            {"network_model", "ideal"},
            {"transport",
             {{"preset", args.isolate.empty() ? "ideal" : "tcp"},
              {"copy_bandwidth", kNoSerialisation}}}}},
          {"training",
           {{"costs",
             {{"per_message_overhead", time_text(net.message_overhead_s)},
              {"apply_flop_per_param", std::round(apply_flop_per_param * 100) / 100},
              {"input_samples_per_s", 0}}}}}};

  // The check: the reference plans predicted through the file as scenarios include it.
  std::ofstream(dir + "/calibration.json") << core::dump_json(file, 2) << "\n";
  std::string table;
  file["calibration"]["reference"] = check_references(args, dir, runs, stability, table);
  stability.host = host_load_between(host_before, host_snapshot());
  const std::vector<std::string> problems = stability_problems(stability);
  const bool refused = !problems.empty() && !args.accept_unstable;
  file["calibration"]["stability"] = stability_to_json(stability, problems, !problems.empty());
  file["calibration"]["cores_shared"] = runs.cores;

  char text[1024];
  std::snprintf(text, sizeof text,
                "replisim calibrate: %s (%u cores), %s\n"
                "  SGEMM per core          %s alone (scenarios: this; %.1f%% spread over %zu "
                "windows), %s with all %u busy\n"
                "  SGD apply               %.3g ns per parameter (apply_flop_per_param %.1f)\n"
                "  memory copy             %s\n"
                "  link, one connection    %s%s\n"
                "  per message             %s on a busy connection; TCP one-way latency %s\n"
                "  transport CPU           %.3g s per GiB moved (both ends, with the tasks' other "
                "work)\n",
                hostname, cores, args.isolate.empty() ? "loopback" : "shaped 1 Gbit/s (netns)",
                rate_text(sgemm_one).c_str(), 100 * spread_of(stability.sgemm_one_core_windows),
                stability.sgemm_one_core_windows.size(), rate_text(sgemm_all).c_str(), cores,
                apply_s_per_param * 1e9, apply_flop_per_param,
                core::format_quantity(copy_bytes_per_s, core::Dimension::kBandwidth, 4).c_str(),
                core::format_quantity(net.link_bytes_per_s, core::Dimension::kBandwidth, 4).c_str(),
                args.isolate.empty()
                    ? ""
                    : (" (" + number(100 * net.link_bytes_per_s / kShapedNicBytesPerS) +
                       "% of the shaped 1 Gbit/s; TCP's goodput on a real NIC: 94.1%)")
                          .c_str(),
                core::format_quantity(net.message_overhead_s, core::Dimension::kTime, 3).c_str(),
                core::format_quantity(net.one_way_latency_s, core::Dimension::kTime, 3).c_str(),
                net.transport_cpu_s_per_gib);
  std::ostream& summary = outputs.writes_standard_output() ? std::cerr : out;
  summary << text << "  the host meanwhile      " << host_load_text(stability.host) << "\n"
          << "  cores of the real runs  "
          << (runs.cores.empty() ? std::string("not reported") : runs.cores) << "\n"
          << "\nreference plans (throughput, samples/s)   predicted   measured   error\n"
          << table;
  if (refused) {
    summary.flush();
    std::cerr << "replisim: calibrate: " << refusal_line(problems) << "\n";
    return kExitUnstableCalibration;
  }
  if (!problems.empty()) {
    summary << "written although the host was not stable (--accept-unstable; the file says so): ";
    for (size_t i = 0; i < problems.size(); ++i) summary << (i ? "; " : "") << problems[i];
    summary << "\n";
  }
  summary << "written: " << (out_path == "-" ? std::string("to standard output") : out_path)
          << " (scenarios \"include\" it)\n";
  outputs.write_all();
  return 0;
}

}  // namespace replisim::cli
