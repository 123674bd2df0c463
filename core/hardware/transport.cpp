#include "core/hardware/transport.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::core {
namespace {

// TCP/IPv4 over Ethernet at MTU 1500 with TCP timestamps: 1448 payload bytes per frame, which
// takes 1538 bytes of wire time (14 Ethernet header + 4 FCS + 8 preamble + 12 inter-frame gap
// + 20 IPv4 + 20 TCP + 12 timestamp option around the payload; IEEE 802.3, RFC 791, 793, 7323).
constexpr double kTcpHeaderOverhead = (1538.0 - 1448.0) / 1448.0;
// One long TCP flow keeps one receiving core busy at about 42 Gbit/s, the data copy into the
// application being its largest cost (Cai et al., "Understanding Host Network Stack Overheads",
// SIGCOMM 2021). Charged on each end.
constexpr double kKernelCopyBytesPerS = 42e9 / 8;
// Linux loopback: the same kernel copy bounds one stream (measured on this project's Debian 12
// build machine with iperf3: 38.8 Gbit/s for one loopback stream). One-way latency: half of a
// 1-byte TCP_NODELAY ping-pong's round trip over 127.0.0.1, 22 us measured there (Python, so an
// upper bound).
constexpr double kLoopbackLatencyS = 10e-6;
// TF 1.x gRPC (RecvTensor), TensorFlow issue #6116: 100-200 MB/s per stream before the gRPC
// upgrade of August 2017 (TF 1.3), about 800 MB/s on 10 Gbit/s after it. tf1_grpc models TF
// >= 1.3; tf1_grpc_legacy TF <= 1.2 at the range's middle.
constexpr double kTf1GrpcStreamBytesPerS = 800e6;
constexpr double kTf1LegacyGrpcStreamBytesPerS = 150e6;
// No preset bounds a process (process_rpc_ceiling_bytes_per_s): the one figure found, a PS
// serving four workers at about 1.3 Gbit/s whatever the batch size (TensorFlow issue #4498,
// TF 0.10), does not say which direction it counted, and as a ceiling on both together it would
// keep the 2017 benchmarks' single-GPU ResNet-50 below its measured rate
// (docs/validation-published.md).

}  // namespace

double Transport::send_overhead_s(double bytes) const {
  const double chunks = chunk_bytes > 0 ? std::max(1.0, std::ceil(bytes / chunk_bytes)) : 1.0;
  return per_message_overhead_s * chunks;
}

double Transport::copy_s(double bytes) const {
  return copy_bandwidth_bytes_per_s > 0 ? bytes / copy_bandwidth_bytes_per_s : 0.0;
}

std::vector<std::string> transport_preset_names() {
  return {"ideal", "tcp", "tf1_grpc", "tf1_grpc_legacy"};
}

Transport transport_preset(const std::string& name) {
  Transport t;
  t.preset = name;
  if (name == "ideal") return t;
  const std::vector<std::string> names = transport_preset_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw std::out_of_range("unknown transport preset " + name);
  }
  t.header_overhead_fraction = kTcpHeaderOverhead;
  t.copy_bandwidth_bytes_per_s = kKernelCopyBytesPerS;
  t.between_processes = true;
  t.loopback_bandwidth_bytes_per_s = kKernelCopyBytesPerS;
  t.loopback_latency_s = kLoopbackLatencyS;
  if (name == "tf1_grpc") t.flow_rate_limit_bytes_per_s = kTf1GrpcStreamBytesPerS;
  if (name == "tf1_grpc_legacy") t.flow_rate_limit_bytes_per_s = kTf1LegacyGrpcStreamBytesPerS;
  return t;
}

nlohmann::json transport_to_json(const Transport& t) {
  return {{"preset", t.preset},
          {"flow_rate_limit_bytes_per_s", t.flow_rate_limit_bytes_per_s},
          {"per_message_overhead_s", t.per_message_overhead_s},
          {"copy_bandwidth_bytes_per_s", t.copy_bandwidth_bytes_per_s},
          {"header_overhead_fraction", t.header_overhead_fraction},
          {"chunk_bytes", t.chunk_bytes},
          {"connections_per_peer", t.connections_per_peer},
          {"between_processes", t.between_processes},
          {"loopback_bandwidth_bytes_per_s", t.loopback_bandwidth_bytes_per_s},
          {"loopback_latency_s", t.loopback_latency_s},
          {"process_rpc_ceiling_bytes_per_s", t.process_rpc_ceiling_bytes_per_s}};
}

Transport transport_from_json(const JsonCursor& c) {
  c.check_keys({"preset", "flow_rate_limit_bytes_per_s", "per_message_overhead_s",
                "copy_bandwidth_bytes_per_s", "header_overhead_fraction", "chunk_bytes",
                "connections_per_peer", "between_processes", "loopback_bandwidth_bytes_per_s",
                "loopback_latency_s", "process_rpc_ceiling_bytes_per_s"});
  Transport t;
  t.preset = c.at("preset").as_string();
  const std::vector<std::string> presets = transport_preset_names();
  if (std::find(presets.begin(), presets.end(), t.preset) == presets.end()) {
    c.at("preset").fail("unknown transport preset \"" + t.preset + "\"");
  }
  t.flow_rate_limit_bytes_per_s = c.at("flow_rate_limit_bytes_per_s").as_number_in(0, 1e15);
  t.per_message_overhead_s = c.at("per_message_overhead_s").as_number_in(0, 10);
  t.copy_bandwidth_bytes_per_s = c.at("copy_bandwidth_bytes_per_s").as_number_in(0, 1e15);
  t.header_overhead_fraction = c.at("header_overhead_fraction").as_number_in(0, 10);
  t.chunk_bytes = c.at("chunk_bytes").as_number_in(0, 1e15);
  t.connections_per_peer = int(c.at("connections_per_peer").as_int(1, 64));
  // Absent from plans and traces written before process costs (2026-12-03): none.
  if (c.has("between_processes")) t.between_processes = c.at("between_processes").as_bool();
  if (c.has("loopback_bandwidth_bytes_per_s")) {
    t.loopback_bandwidth_bytes_per_s = c.at("loopback_bandwidth_bytes_per_s").as_number_in(0, 1e15);
  }
  if (c.has("loopback_latency_s")) {
    t.loopback_latency_s = c.at("loopback_latency_s").as_number_in(0, 10);
  }
  if (c.has("process_rpc_ceiling_bytes_per_s")) {
    t.process_rpc_ceiling_bytes_per_s =
        c.at("process_rpc_ceiling_bytes_per_s").as_number_in(0, 1e15);
  }
  for (const char* key : {"flow_rate_limit_bytes_per_s", "copy_bandwidth_bytes_per_s",
                          "loopback_bandwidth_bytes_per_s", "process_rpc_ceiling_bytes_per_s"}) {
    if (!c.has(key)) continue;
    const double value = c.at(key).as_number();
    if (value > 0 && value < 1) c.at(key).fail("must be 0 (none) or at least 1 B/s");
  }
  return t;
}

}  // namespace replisim::core
