// Speed of replisim's simulation against a bare SimGrid program with the same activity pattern
// (N workers x S steps of compute + push + pull to P PS), both measured in this run on this
// machine. Prints activities per second of wall time for each and their ratio (target >= 0.8).
//
//   build/bin/bench_vs_bare [--workers N] [--steps S] [--ps P] [--slice-mb M] [--repeat R]
//                           [--network-engine simgrid|auto] [--tolerance SECONDS] [--callgrind]
//
// --callgrind runs one repeat (64 x 10 unless sized) under Valgrind's callgrind and prints the
// instructions each process executed and activities per instruction, replisim / bare: a measure
// the neighbours' load does not move (bench/callgrind.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "bench/bare_pattern.h"
#include "bench/bench_flags.h"
#include "bench/callgrind.h"
#include "core/strategy/strategy.h"
#include "sim/sim_backend.h"

namespace {

using replisim::bench::BarePattern;
using replisim::bench::BareResult;

// Set in a run under callgrind (--callgrind-inner): print the figures the outer run reads.
bool inner_callgrind = false;

// The bare program runs in a child (one SimGrid engine per process).
BareResult bare_in_child(const BarePattern& p) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(3);
  std::fflush(stdout);
  replisim::bench::zero_counts();  // under callgrind: the child counts from here
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const BareResult r = replisim::bench::run_bare_pattern(p);
    if (::write(fds[1], &r, sizeof r) != ssize_t(sizeof r)) ::_exit(4);
    ::_exit(0);
  }
  ::close(fds[1]);
  if (inner_callgrind) replisim::bench::print_value("process bare", pid);
  BareResult r;
  if (::read(fds[0], &r, sizeof r) != ssize_t(sizeof r)) std::exit(5);
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return r;
}

// The same pattern as a replisim scenario: P layers of one slice each (round_robin puts one per
// PS), granularity 1 (one forward and one backward op per step), no extra costs, no jitter.
nlohmann::json scenario(const BarePattern& p) {
  auto machine = [&](const std::string& name, double speed, double nic) {
    return nlohmann::json{{"name", name},
                          {"cpu", {{"speed", std::to_string(speed) + " FLOPS"}}},
                          {"nic",
                           {{"bandwidth", std::to_string(nic) + " Bps"},
                            {"latency", std::to_string(p.latency_s * 1e6) + " us"}}}};
  };
  nlohmann::json worker = machine("w", p.worker_speed_flop_per_s, p.worker_nic_bytes_per_s);
  worker["count"] = p.workers;
  nlohmann::json layers = nlohmann::json::array();
  for (int k = 0; k < p.ps; ++k) {
    layers.push_back(
        {{"name", "l" + std::to_string(k)},
         {"params", p.slice_bytes / 4},
         {"forward_flops_per_sample", std::to_string(p.compute_flop / 3 / p.ps) + " FLOP"},
         {"activation_bytes_per_sample", "0 B"}});
  }
  return {{"name", "bench-vs-bare"},
          {"cluster",
           {{"machines", {worker}},
            {"switch",
             {{"bandwidth", std::to_string(p.switch_bytes_per_s) + " Bps"}, {"latency", "0 s"}}}}},
          {"model", {{"layers", layers}}},
          {"training",
           {{"batch_per_replica", 1},
            {"steps", p.steps},
            {"warmup_steps", 1},
            {"replicas", "w*/cpu"},
            {"ps",
             {{"count", p.ps},
              {"on", "dedicated"},
              {"machine", machine("ps", 1e12, p.ps_nic_bytes_per_s)}}},
            {"granularity", 1},
            {"costs", "none"},
            {"jitter", 0}}}};
}

struct Measured {
  double engine_wall_s;  // SimGrid's engine only, as for the bare program
  double total_wall_s;   // plus process isolation, platform, trace transport and decoding
  uint64_t activities;
};

Measured run_replisim(const BarePattern& p, const nlohmann::json& settings) {
  nlohmann::json doc = scenario(p);
  doc["training"]["ps"]["machine"].erase("name");
  const replisim::core::Scenario s = replisim::core::parse_scenario(doc, "bench");
  const replisim::core::Plan plan = replisim::core::compile_plan(s, "between_graph", {1});
  replisim::sim::SimBackend backend;
  replisim::core::RunOptions options;
  options.settings = settings;
  replisim::bench::zero_counts();  // under callgrind: parent and child count from here
  const replisim::core::Trace trace = replisim::core::run_to_trace(backend, plan, options);
  uint64_t activities = 0;
  // SimGrid activities only: computations and transfers that carry bytes (zero-byte control
  // tensors are charged as latency without a SimGrid communication).
  for (const auto& e : trace.events) {
    activities += e.kind == replisim::core::EventKind::kCompute ||
                  (e.kind == replisim::core::EventKind::kTransfer && e.bytes > 0);
  }
  return {backend.last_engine_wall_s(), backend.last_total_wall_s(), activities};
}

// --callgrind: this benchmark once under callgrind, then its instruction counts.
void report_callgrind(int argc, char** argv) {
  using replisim::bench::with_commas;
  const replisim::bench::CallgrindRun run =
      replisim::bench::run_under_callgrind(argc, argv, {"--workers", "64", "--steps", "10"});
  const long long parent = replisim::bench::value_of(run, "process parent");
  const long long bare = replisim::bench::value_of(run, "process bare");
  const long long bare_activities = replisim::bench::value_of(run, "activities bare");
  const long long our_activities = replisim::bench::value_of(run, "activities replisim");
  const uint64_t ours = replisim::bench::instructions_of_unnamed(run, {parent, bare});
  const uint64_t bare_instructions = run.instructions.at(bare);
  const uint64_t parent_instructions = run.instructions.at(parent);
  const double bare_rate = double(bare_activities) / double(bare_instructions);
  std::printf(
      "instructions (callgrind), each process counted from just before its part started:\n"
      "  bare SimGrid child  %s for %lld activities\n"
      "  replisim's child    %s for %lld activities (the simulation: platform, engine, trace)\n"
      "  replisim's parent   %s (run_to_trace: the fork, then the metadata and decoding)\n"
      "activities per instruction, replisim / bare: the simulation %.3f, end to end %.3f\n",
      with_commas(bare_instructions).c_str(), bare_activities, with_commas(ours).c_str(),
      our_activities, with_commas(parent_instructions).c_str(),
      double(our_activities) / double(ours) / bare_rate,
      double(our_activities) / double(ours + parent_instructions) / bare_rate);
}

int run(int argc, char** argv) {
  if (replisim::bench::has_flag(argc, argv, "--callgrind")) {
    return replisim::bench::callgrind_main([&] { report_callgrind(argc, argv); });
  }
  inner_callgrind = replisim::bench::has_flag(argc, argv, "--callgrind-inner");
  if (inner_callgrind) replisim::bench::print_value("process parent", ::getpid());
  BarePattern p;
  p.workers = replisim::bench::int_flag(argc, argv, "--workers", 256);
  p.steps = replisim::bench::int_flag(argc, argv, "--steps", 50);
  p.ps = replisim::bench::int_flag(argc, argv, "--ps", 8);
  p.latency_s = replisim::bench::int_flag(argc, argv, "--latency-us", 10) * 1e-6;
  // Larger slices keep more flows in flight (each worker has one on every PS's NIC while the
  // PS saturate): 1,024 workers x 8 PS with 100 MB slices is the ~16k-flow regime.
  p.slice_bytes = replisim::bench::int_flag(argc, argv, "--slice-mb", 1) * 1e6;
  // Under callgrind one repeat: one bare child and one simulation child to tell apart.
  const int repeat =
      inner_callgrind ? 1 : std::max(1, replisim::bench::int_flag(argc, argv, "--repeat", 3));
  const nlohmann::json settings = replisim::bench::sim_settings_flags(argc, argv);
  std::printf(
      "pattern: %d workers x %d steps, compute + push + pull to %d PS, %.0f MB slices; replisim's "
      "settings %s (bare SimGrid: its defaults)\n",
      p.workers, p.steps, p.ps, p.slice_bytes / 1e6, settings.dump().c_str());
  std::vector<double> engine_ratio, total_ratio;
  for (int r = 0; r < repeat; ++r) {
    const BareResult bare = bare_in_child(p);
    const Measured ours = run_replisim(p, settings);
    const double bare_rate = double(bare.activities) / bare.wall_s;
    const double engine_rate = double(ours.activities) / ours.engine_wall_s;
    const double total_rate = double(ours.activities) / ours.total_wall_s;
    if (inner_callgrind) {
      replisim::bench::print_value("activities bare", (long long)bare.activities);
      replisim::bench::print_value("activities replisim", (long long)ours.activities);
    }
    engine_ratio.push_back(engine_rate / bare_rate);
    total_ratio.push_back(total_rate / bare_rate);
    std::printf(
        "run %d: bare %llu activities in %.3f s = %.0f/s | replisim %llu activities: "
        "engine %.3f s = %.0f/s (ratio %.2f), end to end %.3f s = %.0f/s (ratio %.2f)\n",
        r + 1, static_cast<unsigned long long>(bare.activities), bare.wall_s, bare_rate,
        static_cast<unsigned long long>(ours.activities), ours.engine_wall_s, engine_rate,
        engine_ratio.back(), ours.total_wall_s, total_rate, total_ratio.back());
  }
  std::sort(engine_ratio.begin(), engine_ratio.end());
  std::sort(total_ratio.begin(), total_ratio.end());
  std::printf(
      "median ratio replisim / bare SimGrid, activities per second of engine time: %.2f "
      "(target >= 0.80); end to end: %.2f\n",
      engine_ratio[engine_ratio.size() / 2], total_ratio[total_ratio.size() / 2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return replisim::bench::guarded_main("bench_vs_bare", run, argc, argv);
}
