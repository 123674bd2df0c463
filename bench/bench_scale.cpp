// Scale benchmark: N workers x S steps of ResNet-50, between-graph, P parameter servers on
// dedicated machines; prints the wall time of the simulation (its engine, the whole simulation
// process with decoding its trace, the metrics after it, and end to end: both), the
// peak memory of the simulation process, events, and the granularity that ran.
// --strategy allreduce runs the same cluster with a ring all-reduce (no PS) after the PS run and
// prints both wall times and their ratio (issue 39's target: at most 2.5).
// --objective softmax runs the same PS run again with a training.objective (bench_objective.h:
// softmax regression on a synthetic set whose SGD the simulator computes as the ops complete) and
// prints both wall times and their ratio (issue 40's target: at most 2).
//
//   build/bin/bench_scale [--workers 1024] [--steps 100] [--ps 8] [--granularity 1|0]
//                         [--topology star|racks|fat_tree] [--setup-growth]
//                         [--strategy between_graph|allreduce] [--objective softmax]
//                         [--network-engine simgrid|auto] [--tolerance SECONDS] [--callgrind]
//   (--granularity 0 = per layer; engine and tolerance: sim/sim_settings.h)
//
// --topology racks puts the machines in racks of 32 with uplinks 3:1 and the PSes spread over the
// racks (issue 41); --topology fat_tree in a fat tree of racks of 32 (1:1) and pods of 8 racks
// (uplinks 3:1), the PSes spread over the racks (workers: a multiple of 256). --setup-growth prints
// the set-up (SimGrid's engine, the platform, the actors: everything before the engine runs) per
// machine at 1,024, 4,096 and 16,384 workers, 2 steps each.
//
// --callgrind runs it (64 x 10 unless sized) under Valgrind's callgrind and prints the
// instructions of the simulation and per event: a measure the neighbours' load does not move
// (bench/callgrind.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include "bench/bench_flags.h"
#include "bench/bench_objective.h"
#include "bench/callgrind.h"
#include "core/metrics/metrics.h"
#include "core/plan/plan.h"
#include "core/strategy/strategy.h"
#include "sim/sim_backend.h"

namespace {

// --callgrind --objective softmax: the two simulation children (without the objective, forked
// first, then with it: ascending process ids, barring a wrap of the id space) and their ratio.
void report_objective_callgrind(const replisim::bench::CallgrindRun& run, long long parent,
                                long long events) {
  using replisim::bench::with_commas;
  std::vector<uint64_t> children;  // by process id
  for (const auto& [pid, instructions] : run.instructions) {
    if (pid != parent) children.push_back(instructions);
  }
  if (children.size() != 2) {
    throw std::runtime_error("--callgrind --objective: expected two simulation children, counted " +
                             std::to_string(children.size()));
  }
  std::printf(
      "instructions (callgrind) of the simulation child, %lld events each:\n"
      "  without the objective %s\n"
      "  with the objective    %s\n"
      "  with / without        %.2f (target <= 2)\n",
      events, with_commas(children[0]).c_str(), with_commas(children[1]).c_str(),
      double(children[1]) / double(children[0]));
}

// --callgrind: this benchmark once under callgrind, then its instruction counts.
void report_callgrind(int argc, char** argv) {
  using replisim::bench::with_commas;
  const replisim::bench::CallgrindRun run =
      replisim::bench::run_under_callgrind(argc, argv, {"--workers", "64", "--steps", "10"});
  const long long parent = replisim::bench::value_of(run, "process parent");
  const long long events = replisim::bench::value_of(run, "events");
  if (replisim::bench::has_flag(argc, argv, "--objective")) {
    report_objective_callgrind(run, parent, events);
    return;
  }
  const uint64_t child = replisim::bench::instructions_of_unnamed(run, {parent});
  std::printf(
      "instructions (callgrind), each process counted from just before the run started:\n"
      "  the simulation child %s, %.0f per event (%lld events)\n"
      "  the parent           %s (run_to_trace: the fork, then the metadata and decoding;\n"
      "                       then metrics)\n",
      with_commas(child).c_str(), double(child) / double(events), events,
      with_commas(run.instructions.at(parent)).c_str());
}

// Compiles `s` with `strategy`, simulates it and prints the figures; returns the end-to-end wall
// time (s) and sets *events.
double measure(const replisim::core::Scenario& s, const std::string& strategy, int workers,
               int steps, int ps, int argc, char** argv, size_t* events,
               double* setup_wall_s_out = nullptr) {
  double end_to_end_s = 0;
  replisim::core::CompileOptions compile;
  compile.budget.max_ops = 1e9;  // the benchmark measures, whatever the size
  compile.budget.max_bytes = 64.0 * (1ull << 30);
  const replisim::core::Plan plan = replisim::core::compile_plan(s, strategy, compile);
  std::printf(
      "%d workers x %d steps of ResNet-50, %s, %d PS dedicated, granularity %s,"
      " %zu ops per step graph%s\n",
      workers, steps, strategy.c_str(), strategy == "allreduce" ? 0 : ps, plan.granularity.c_str(),
      plan.clients.front().ops.size(),
      replisim::core::objective_computed_by_simulator(plan) ? ", objective computed" : "");
  std::fflush(stdout);
  replisim::sim::SimBackend backend;
  replisim::core::RunOptions options;
  options.settings = replisim::bench::sim_settings_flags(argc, argv);
  replisim::bench::zero_counts();  // under callgrind: parent and child count from here
  const auto started = std::chrono::steady_clock::now();
  const replisim::core::Trace trace = replisim::core::run_to_trace(backend, plan, options);
  std::printf("network engine %s, tolerance %g s\n",
              trace.meta.provenance.at("network_engine").get<std::string>().c_str(),
              trace.meta.provenance.at("tolerance_s").get<double>());
  const auto traced = std::chrono::steady_clock::now();
  const auto seconds = [](auto from, auto to) {
    return std::chrono::duration<double>(to - from).count();
  };
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  const double engine_s = backend.last_engine_wall_s();
  const double setup_s = backend.last_setup_wall_s();
  std::printf(
      "set-up %.2f s (%.1f us per machine), engine %.1f s, simulation %.1f s, peak memory of the "
      "simulation %.0f MB, %zu events (%.0f per second of engine), simulated %.1f s\n",
      setup_s, 1e6 * setup_s / double(plan.platform.machines.size()), engine_s,
      seconds(started, traced), double(usage.ru_maxrss) / 1024.0, trace.events.size(),
      engine_s > 0 ? double(trace.events.size()) / engine_s : 0.0, trace.outcome.end_s);
  if (setup_wall_s_out != nullptr) *setup_wall_s_out = setup_s;
  std::fflush(stdout);
  // The metrics need a measurement window: with a warm-up of one step, thousands of workers
  // can leave none (the first finishes before the last has warmed up). The timing above stands.
  try {
    const replisim::core::RunMetrics m = replisim::core::compute_metrics(trace);
    const auto measured = std::chrono::steady_clock::now();
    std::printf("metrics %.1f s, end to end %.1f s, throughput %.0f samples/s, bottleneck %s\n",
                seconds(traced, measured), seconds(started, measured), m.throughput_samples_per_s,
                m.bottleneck.name.c_str());
    end_to_end_s = seconds(started, measured);
    if (m.objective) {
      std::printf(
          "objective: %d evaluations, final test accuracy %.4f, loss %.4f at global step %lld\n",
          m.objective->evaluations, m.objective->final_accuracy, m.objective->final_loss,
          (long long)m.objective->final_global_step);
    }
  } catch (const std::exception& e) {
    std::printf("metrics not computed (%s); end to end without them %.1f s\n", e.what(),
                seconds(started, traced));
    end_to_end_s = seconds(started, traced);
  }
  const replisim::sim::SharingStats& sharing = backend.last_sharing_stats();
  if (sharing.flows > 0) {
    std::printf(
        "exact sharing model: ended %lld of %lld flows; handed them to SimGrid %lld times, took "
        "them back %lld times, chose every flow's group again %lld times\n",
        (long long)sharing.model_flows, (long long)sharing.flows, (long long)sharing.hand_backs,
        (long long)sharing.take_overs, (long long)sharing.reassignments);
  } else {
    std::printf("exact sharing model: not used (SimGrid's solver carried every flow)\n");
  }
  *events = trace.events.size();
  return end_to_end_s;
}

int run(int argc, char** argv) {
  if (replisim::bench::has_flag(argc, argv, "--callgrind")) {
    return replisim::bench::callgrind_main([&] { report_callgrind(argc, argv); });
  }
  const bool inner_callgrind = replisim::bench::has_flag(argc, argv, "--callgrind-inner");
  if (inner_callgrind) replisim::bench::print_value("process parent", ::getpid());
  const int workers = replisim::bench::int_flag(argc, argv, "--workers", 1024);
  const int steps = replisim::bench::int_flag(argc, argv, "--steps", 100);
  const int ps = replisim::bench::int_flag(argc, argv, "--ps", 8);
  const int granularity = replisim::bench::int_flag(argc, argv, "--granularity", 1);
  const std::string topology = replisim::bench::text_flag(argc, argv, "--topology", "star");
  if (topology != "star" && topology != "racks" && topology != "fat_tree") {
    std::fprintf(stderr, "bench_scale: --topology takes star, racks or fat_tree\n");
    return 2;
  }
  // V100-class GPUs (15 TFLOPS) on 25 GbE; PS machines with 100 GbE.
  nlohmann::json scenario = {
      {"name", "bench-scale"},
      {"cluster",
       {{"machines",
         {{{"name", "w"},
           {"count", workers},
           {"cpu", {{"speed", "1 TFLOPS"}}},
           {"gpus", {{{"speed", "15 TFLOPS"}}}},
           {"nic", {{"bandwidth", "25 Gbps"}, {"latency", "10 us"}}}}}}}},
      {"model", {{"preset", "resnet50"}}},
      {"training",
       {{"batch_per_replica", 64},
        {"steps", steps},
        {"warmup_steps", std::max(1, steps / 10)},
        {"replicas", "w*/gpu0"},
        {"ps",
         {{"count", ps},
          {"on", "dedicated"},
          {"machine",
           {{"cpu", {{"speed", "2 TFLOPS"}}},
            {"nic", {{"bandwidth", "100 Gbps"}, {"latency", "10 us"}}}}}}},
        {"granularity", granularity > 0 ? nlohmann::json(granularity) : nlohmann::json("layer")}}}};
  if (topology == "racks") {
    // 32 machines per rack (a 48-port top-of-rack switch's usual load), uplinks 3:1; the PSes
    // spread over the racks.
    scenario["cluster"]["topology"] = {
        {"kind", "racks"}, {"machines_per_rack", 32}, {"oversubscription", 3}};
    scenario["training"]["ps"]["spread"] = "racks";
  }
  if (topology == "fat_tree") {
    scenario["cluster"]["topology"] = {
        {"kind", "fat_tree"},
        {"levels",
         {{{"down", 32}, {"oversubscription", 1}}, {{"down", 8}, {"oversubscription", 3}}}}};
    scenario["training"]["ps"]["spread"] = "racks";
  }
  std::printf("topology: %s\n", topology == "racks" ? "racks of 32, uplinks 3:1"
                                : topology == "fat_tree"
                                    ? "fat tree: racks of 32 (1:1), pods of 8 racks (3:1)"
                                    : "one switch");
  if (replisim::bench::has_flag(argc, argv, "--setup-growth")) {
    // The set-up (engine, platform, actors) per machine at three sizes, 2 steps each.
    for (int n : {1024, 4096, 16384}) {
      nlohmann::json sized = scenario;
      sized["cluster"]["machines"][0]["count"] = n;
      sized["training"]["steps"] = 2;
      sized["training"]["warmup_steps"] = 1;
      double setup_s = 0;
      size_t events = 0;
      measure(replisim::core::parse_scenario(sized, "bench"), "between_graph", n, 2, ps, argc, argv,
              &events, &setup_s);
      std::printf("SET-UP %d machines: %.2f s, %.1f us per worker machine\n\n", n, setup_s,
                  1e6 * setup_s / n);
      std::fflush(stdout);
    }
    return 0;
  }
  const replisim::core::Scenario s = replisim::core::parse_scenario(scenario, "bench");
  const char* strategy_flag = replisim::bench::text_flag(argc, argv, "--strategy", "between_graph");
  const std::string strategy = strategy_flag;
  if (strategy != "between_graph" && strategy != "allreduce") {
    std::fprintf(stderr, "bench_scale: --strategy takes between_graph or allreduce\n");
    return 2;
  }
  const std::string objective = replisim::bench::text_flag(argc, argv, "--objective", "");
  if (!objective.empty() && (objective != "softmax" || strategy != "between_graph")) {
    std::fprintf(stderr, "bench_scale: --objective takes softmax, with between_graph\n");
    return 2;
  }
  size_t events = 0;
  const double ps_s = measure(s, "between_graph", workers, steps, ps, argc, argv, &events);
  if (strategy == "allreduce") {
    const double ring_s = measure(s, "allreduce", workers, steps, ps, argc, argv, &events);
    std::printf("allreduce / between_graph wall time: %.1f s / %.1f s = %.2f (target <= 2.5)\n",
                ring_s, ps_s, ps_s > 0 ? ring_s / ps_s : 0.0);
  }
  if (!objective.empty()) {
    nlohmann::json with = scenario;
    with["training"]["objective"] = replisim::bench::softmax_objective();
    const replisim::core::Scenario o = replisim::core::parse_scenario(with, "bench");
    const double objective_s = measure(o, "between_graph", workers, steps, ps, argc, argv, &events);
    std::printf(
        "with / without the softmax objective, wall time: %.1f s / %.1f s = %.2f (target <= 2)\n",
        objective_s, ps_s, ps_s > 0 ? objective_s / ps_s : 0.0);
  }
  if (inner_callgrind) replisim::bench::print_value("events", (long long)events);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return replisim::bench::guarded_main("bench_scale", run, argc, argv);
}
