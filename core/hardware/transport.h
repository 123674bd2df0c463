// How tensors travel between machines (cluster.transport): the software stack above the links.
// Inside a machine (PCIe copies) none of this applies.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace replisim::core {

class JsonCursor;

struct Transport {
  std::string preset = "ideal";
  // One tensor stream's ceiling (bytes/s; 0 = none): what one connection can carry however fast
  // the links are (SimGrid's per-communication rate bound).
  double flow_rate_limit_bytes_per_s = 0;
  // Fixed cost of each message (s), on top of training.costs.per_message_overhead.
  double per_message_overhead_s = 0;
  // Serialisation and copying on each end (bytes/s; 0 = free): a tensor costs bytes / this on
  // the sender before it leaves and on the receiver after it arrives (both charged to the send,
  // which holds its connection meanwhile).
  double copy_bandwidth_bytes_per_s = 0;
  // Protocol headers: a tensor occupies bytes x (1 + this) of the links.
  double header_overhead_fraction = 0;
  // Messages of at most this many bytes (0 = one message per tensor): each pays the
  // per-message overhead.
  double chunk_bytes = 0;
  // Connections per pair of devices on different machines; tensors between them take the
  // connections in turn (gRPC uses one channel per pair of tasks).
  int connections_per_peer = 1;

  // Fixed cost charged before a tensor of `bytes` between machines starts (s): per-message
  // overhead per chunk plus the copies on both ends.
  double send_overhead_s(double bytes) const;
};

// The presets, in documentation order: "ideal", "tcp", "tf1_grpc" (values and sources:
// transport.cpp, docs/scenario-format.md).
std::vector<std::string> transport_preset_names();
// Throws std::out_of_range for an unknown name.
Transport transport_preset(const std::string& name);

// The plan's and the trace's form (every field, SI units). transport_from_json throws InputError
// at `c` on a missing or out-of-range field.
nlohmann::json transport_to_json(const Transport& t);
Transport transport_from_json(const JsonCursor& c);

}  // namespace replisim::core
