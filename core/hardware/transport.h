// How tensors travel between processes (cluster.transport): the software stack above the links.
// A copy inside one process (a PCIe transfer between a worker's CPU and its GPUs) pays none of
// it; one between processes of one machine pays it when `between_processes` is set.
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
  // Serialisation and copying on each end (bytes/s of one core; 0 = free): a tensor costs
  // bytes / this of a core of the sending process's CPU before it leaves and of the receiving
  // process's CPU after it arrives (work that shares those cores with the ops; the send holds
  // its connection meanwhile).
  double copy_bandwidth_bytes_per_s = 0;
  // Protocol headers: a tensor occupies bytes x (1 + this) of the links.
  double header_overhead_fraction = 0;
  // Messages of at most this many bytes (0 = one message per tensor): each pays the
  // per-message overhead.
  double chunk_bytes = 0;
  // Connections per pair of devices on different machines; tensors between them take the
  // connections in turn (gRPC uses one channel per pair of tasks).
  int connections_per_peer = 1;

  // Between processes (TF 1.x: every tensor between two tasks goes through gRPC, over loopback
  // inside a machine). When set, a tensor between two processes on one machine pays the
  // per-message overheads, the copies, the loopback's latency and the stream ceilings below, as
  // one between machines pays them; when not (the `ideal` preset), it costs its PCIe hops only.
  bool between_processes = false;
  // One loopback stream's ceiling (bytes/s; 0 = none; the stream also keeps
  // flow_rate_limit_bytes_per_s) and one-way latency (s).
  double loopback_bandwidth_bytes_per_s = 0;
  double loopback_latency_s = 0;
  // What one process moves over all of its streams together, in and out (bytes/s; 0 = none):
  // its RPC server's threads, a resource every stream of the process shares.
  double process_rpc_ceiling_bytes_per_s = 0;

  // Fixed cost charged before a tensor of `bytes` between processes starts (s): the per-message
  // overhead per chunk. (The copies are CPU work of the processes at both ends: copy_s.)
  double send_overhead_s(double bytes) const;
  // Serialisation and copying of a tensor of `bytes` on one end (s of one core; 0 when free).
  double copy_s(double bytes) const;
};

// The presets, in documentation order: "ideal", "tcp", "tf1_grpc", "tf1_grpc_legacy" (values
// and sources: transport.cpp, docs/scenario-format.md).
std::vector<std::string> transport_preset_names();
// Throws std::out_of_range for an unknown name.
Transport transport_preset(const std::string& name);

// The plan's and the trace's form (every field, SI units). transport_from_json throws InputError
// at `c` on a missing or out-of-range field.
nlohmann::json transport_to_json(const Transport& t);
Transport transport_from_json(const JsonCursor& c);

}  // namespace replisim::core
