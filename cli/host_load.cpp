#include "cli/host_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace replisim::cli {
namespace {

double host_rusage_s(int who) {
  rusage r{};
  ::getrusage(who, &r);
  return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

std::string host_fixed(double x, int decimals) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, x);
  return buffer;
}

}  // namespace

HostSnapshot host_snapshot() {
  HostSnapshot s;
  s.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  s.own_cpu_s = host_rusage_s(RUSAGE_SELF) + host_rusage_s(RUSAGE_CHILDREN);
  std::ifstream loadavg("/proc/loadavg");
  std::ifstream stat("/proc/stat");
  std::string line;
  if (!(loadavg >> s.load_average_1min) || !std::getline(stat, line)) return s;
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice (proc(5)).
  std::istringstream fields(line);
  std::string name;
  double v[8] = {};
  fields >> name;
  for (double& x : v) fields >> x;
  if (name != "cpu" || !fields) return s;
  const double tick_s = 1.0 / double(std::max(1L, ::sysconf(_SC_CLK_TCK)));
  s.busy_cpu_s = (v[0] + v[1] + v[2] + v[5] + v[6]) * tick_s;
  s.steal_cpu_s = v[7] * tick_s;
  s.total_cpu_s = (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) * tick_s;
  s.readable = true;
  return s;
}

HostLoad host_load_between(const HostSnapshot& before, const HostSnapshot& after) {
  HostLoad h;
  h.cores = int(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  h.load_average_before = before.load_average_1min;
  h.load_average_after = after.load_average_1min;
  h.wall_s = after.wall_s - before.wall_s;
  h.readable = before.readable && after.readable;
  if (!h.readable) return h;
  const double total = after.total_cpu_s - before.total_cpu_s;
  if (total > 0) h.steal_fraction = (after.steal_cpu_s - before.steal_cpu_s) / total;
  if (h.wall_s > 0) {
    const double others =
        (after.busy_cpu_s - before.busy_cpu_s) - (after.own_cpu_s - before.own_cpu_s);
    h.other_cores = std::max(0.0, others / h.wall_s);
  }
  return h;
}

nlohmann::json host_load_to_json(const HostLoad& load) {
  if (!load.readable) return "not measured (no Linux /proc here)";
  return {{"load_average_before", load.load_average_before},
          {"load_average_after", load.load_average_after},
          {"steal_fraction", load.steal_fraction},
          {"other_cores", load.other_cores},
          {"cores", load.cores},
          {"wall_s", load.wall_s}};
}

std::string host_load_text(const HostLoad& load) {
  if (!load.readable) return "the host's load was not measured (no Linux /proc here)";
  return "load average " + host_fixed(load.load_average_before, 1) + " before, " +
         host_fixed(load.load_average_after, 1) + " after; other processes used " +
         host_fixed(load.other_cores, 2) + " of " + std::to_string(load.cores) + " cores; steal " +
         host_fixed(100 * load.steal_fraction, 1) + "%";
}

}  // namespace replisim::cli
