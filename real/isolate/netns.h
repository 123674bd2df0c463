// Shaped local networks for real runs (`replisim run --isolate netns`, docs/validation-real.md):
// each machine of the plan becomes a Linux network namespace joined to a private bridge by a veth
// pair, and `tc tbf` shapes each NIC direction to the machine's NIC bandwidth. Latency is what the
// veth gives (tens of microseconds; `netem` is not available on the machines this targets). The
// rate accounts for Ethernet framing (kTbfBytesPerWireByte), so a shaped NIC carries what a real
// one of that rate carries.
//
// Layout of one run (names carry the run id "replisim-<launcher pid>-<its start time in clock
// ticks since boot>", so that a later start can tell a dead run's leftovers from a live run's):
//   <run>-sw      the switch namespace: bridge "br0", and per machine i the veth end "m<i>"
//                 (its egress qdisc shapes machine i's download)
//   <run>-m<i>    machine i: "lo" and "eth0" at kSubnet.<i / 250>.<i % 250 + 1>/16 (its egress
//                 qdisc shapes machine i's upload)
// With racks (RackShape), a machine of rack r plugs into the rack's namespace instead:
//   <run>-r<r>    rack r: bridge "br0" with its machines' veth ends "m<i>" (each egress qdisc
//                 shapes machine i's download) and "core", the rack's end of its uplink (its
//                 egress qdisc shapes the uplink up); the switch namespace holds the uplink's
//                 other end "r<r>" (its egress qdisc shapes the uplink down). Bridges are not
//                 shaped: the top-of-rack and core switches are non-blocking.
// Nothing is made in the launcher's own namespace; removing the namespaces removes everything.
//
// Everything here runs iproute2's `ip` and `tc` and needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace replisim::real::isolate {

// The first two octets of every machine's address (a /16 private to each run's bridge).
inline constexpr const char* kSubnet = "10.77";
// Prefix of every namespace a run makes.
inline constexpr const char* kNamePrefix = "replisim-";

// Throws core::InputError("", "--isolate", ...) saying what is missing: root (or CAP_NET_ADMIN
// and CAP_SYS_ADMIN), or the `ip` / `tc` commands (iproute2).
void check_can_isolate();

// One machine's NIC, per direction, in bytes per second (> 0).
struct NicShape {
  std::string machine;  // for messages
  double up_bytes_per_s = 0;
  double down_bytes_per_s = 0;
  int rack = -1;  // index into the racks (RackShape); -1: on the switch
};

// A rack's uplink, per direction ("up": toward the core), in bytes per second (> 0).
struct RackShape {
  std::string rack;  // for messages
  double up_bytes_per_s = 0;
  double down_bytes_per_s = 0;
};

// A real Ethernet NIC's wire carries, per full TCP segment (MTU 1500, TCP timestamps), 1448
// payload bytes in 1538 bytes: IP and TCP headers 52, Ethernet header 14, and framing tbf does not
// see (preamble and start delimiter 8, frame check sequence 4, inter-frame gap 12; IEEE 802.3).
// tbf counts 1514 of them (the kernel counts every segment's headers of a GSO packet), so each
// NIC's tbf runs at rate x 1514/1538 and TCP's goodput on a NIC of rate R is R x 1448/1538 (94.1%),
// as on a real one (the scenario's `tcp` transport preset models the same framing).
inline constexpr double kTbfBytesPerWireByte = 1514.0 / 1538.0;
inline constexpr double kTcpGoodputFraction = 1448.0 / 1538.0;

// tc tbf's burst for a NIC of a rate: 1 ms of traffic, at least kMinTbfBurstBytes and at most
// kMaxTbfBurstBytes. At least the largest packet a veth hands tbf (a 64 KiB segmentation-offload
// packet and its headers): a packet larger than the burst can never leave, so a degraded window
// keeps the NIC's full-rate burst and changes only the rate. At most what tc accepts for a burst
// (a NIC of terabytes per second is not shaped any tighter: a veth does not go that fast).
inline constexpr uint64_t kMinTbfBurstBytes = 96 * 1024;
inline constexpr uint64_t kMaxTbfBurstBytes = 256u << 20;
uint64_t tbf_burst_bytes(double rate_bytes_per_s);

// A run's shaped network, made by the constructor and removed by the destructor (and, should the
// launcher be killed, by remove_leftovers() at the next start or by `replisim cleanup`).
class ShapedNetwork {
 public:
  // Removes the leftovers of dead runs first. Throws core::BackendError naming the `ip`/`tc`
  // command that failed and its message (what was made so far is removed first).
  explicit ShapedNetwork(const std::vector<NicShape>& nics,
                         const std::vector<RackShape>& racks = {});
  ~ShapedNetwork();
  ShapedNetwork(const ShapedNetwork&) = delete;
  ShapedNetwork& operator=(const ShapedNetwork&) = delete;

  const std::string& run_id() const { return run_; }
  size_t machines() const { return nics_.size(); }
  // Machine i's address ("10.77.0.1") and namespace name.
  std::string address(size_t machine) const;
  std::string namespace_name(size_t machine) const;
  std::string switch_namespace() const { return run_ + "-sw"; }
  std::string rack_namespace(size_t rack) const { return run_ + "-r" + std::to_string(rack); }
  // A descriptor of machine i's namespace (close-on-exec; owned here), for setns(2) in a child.
  int namespace_fd(size_t machine) const { return ns_fds_[machine]; }
  // A listening TCP socket at machine i's address and a free port, made inside its namespace
  // (close-on-exec; the caller owns it). Throws core::BackendError.
  int listen(size_t machine, uint16_t* port) const;
  // Both directions of machine i's NIC at `factor` × their bandwidth (factor in (0, 1]), or the
  // link down (factor 0: the veth is set down; in-flight TCP retransmits until it is up again).
  // Throws core::BackendError.
  void set_nic_factor(size_t machine, double factor);

 private:
  void make();
  void remove() noexcept;
  void shape(size_t machine, const char* verb, double factor);

  // The namespace holding machine i's bridge port (the switch's or its rack's).
  std::string port_namespace(size_t machine) const;

  std::string run_;
  std::vector<NicShape> nics_;
  std::vector<RackShape> racks_;
  size_t racks_made_ = 0;
  std::vector<int> ns_fds_;
  std::vector<double> factor_;
  bool switch_made_ = false;
  size_t machines_made_ = 0;
};

// Removes every namespace whose run's launcher is no longer alive (a launcher killed by SIGKILL,
// or a crashed host process); returns the names removed. A live run's namespaces are kept.
std::vector<std::string> remove_leftovers();

// Runs `argv` (argv[0] found on the PATH), standard output and error captured. Returns the exit
// status (127: not found) and the captured text in *output. Used for ip, tc and iperf3.
int run_tool(const std::vector<std::string>& argv, std::string* output);

}  // namespace replisim::real::isolate
