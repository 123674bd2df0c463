#include "core/hardware/transport.h"

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
// TF 1.x gRPC (RecvTensor): TF's GitHub issues measured about 100-200 MB/s per stream before the
// 2017 gRPC upgrade and about 800 MB/s on 10 Gbit/s after it. The preset models TF 1.x after
// the upgrade: 800 MB/s per stream.
constexpr double kTf1GrpcStreamBytesPerS = 800e6;

}  // namespace

double Transport::send_overhead_s(double bytes) const {
  const double chunks = chunk_bytes > 0 ? std::max(1.0, std::ceil(bytes / chunk_bytes)) : 1.0;
  double s = per_message_overhead_s * chunks;
  if (copy_bandwidth_bytes_per_s > 0) s += 2 * bytes / copy_bandwidth_bytes_per_s;
  return s;
}

std::vector<std::string> transport_preset_names() {
  return {"ideal", "tcp", "tf1_grpc"};
}

Transport transport_preset(const std::string& name) {
  Transport t;
  t.preset = name;
  if (name == "ideal") return t;
  if (name == "tcp" || name == "tf1_grpc") {
    t.header_overhead_fraction = kTcpHeaderOverhead;
    t.copy_bandwidth_bytes_per_s = kKernelCopyBytesPerS;
  }
  if (name == "tcp") return t;
  if (name == "tf1_grpc") {
    t.flow_rate_limit_bytes_per_s = kTf1GrpcStreamBytesPerS;
    return t;
  }
  throw std::out_of_range("unknown transport preset " + name);
}

nlohmann::json transport_to_json(const Transport& t) {
  return {{"preset", t.preset},
          {"flow_rate_limit_bytes_per_s", t.flow_rate_limit_bytes_per_s},
          {"per_message_overhead_s", t.per_message_overhead_s},
          {"copy_bandwidth_bytes_per_s", t.copy_bandwidth_bytes_per_s},
          {"header_overhead_fraction", t.header_overhead_fraction},
          {"chunk_bytes", t.chunk_bytes},
          {"connections_per_peer", t.connections_per_peer}};
}

Transport transport_from_json(const JsonCursor& c) {
  c.check_keys({"preset", "flow_rate_limit_bytes_per_s", "per_message_overhead_s",
                "copy_bandwidth_bytes_per_s", "header_overhead_fraction", "chunk_bytes",
                "connections_per_peer"});
  Transport t;
  t.preset = c.at("preset").as_string();
  t.flow_rate_limit_bytes_per_s = c.at("flow_rate_limit_bytes_per_s").as_number_in(0, 1e15);
  t.per_message_overhead_s = c.at("per_message_overhead_s").as_number_in(0, 10);
  t.copy_bandwidth_bytes_per_s = c.at("copy_bandwidth_bytes_per_s").as_number_in(0, 1e15);
  t.header_overhead_fraction = c.at("header_overhead_fraction").as_number_in(0, 10);
  t.chunk_bytes = c.at("chunk_bytes").as_number_in(0, 1e15);
  t.connections_per_peer = int(c.at("connections_per_peer").as_int(1, 64));
  return t;
}

}  // namespace replisim::core
