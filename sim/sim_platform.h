// Builds the SimGrid platform of a plan: a root star zone that holds every machine's hosts (the
// CPU on the host bus, each GPU behind its split-duplex PCIe link), their split-duplex NICs and
// the shared switch link. A host's star route is its way out to the host bus, its NIC up and the
// switch (a machine of several NICs: hosts that leave through its others, ProcessEndpoint); routes
// between two hosts of one machine are bypass routes that leave the NIC out. With
// racks (core::Platform::racks) the machines are in a star zone per rack that holds their NICs
// and the top-of-rack switch, and the root holds the racks' split-duplex uplinks and the core
// switch: SimGrid's hierarchical routing then gives core::Platform::route's links. In a fat tree
// (core::Platform::pods) each pod is a star zone too, holding its aggregation switch and its
// children's zones and uplinks, nested level by level under the root; a group's route in its
// parent's zone is its uplink up and the parent's switch, through the group's gateway (a pod's in
// a zone of its own inside the pod's, where SimGrid 3.32's hierarchical routing finds it; see
// sim_platform.cpp). (No zone per
// machine, as until issue 41: SimGrid 3.32 finds a host by name by walking every zone, which made
// the set-up quadratic in machines.)
#pragma once

#include <vector>

#include <simgrid/s4u.hpp>

#include "core/hardware/platform.h"

namespace replisim::sim {

// Applies the network model's configuration. Must run after the sg4::Engine is constructed and
// before any platform call (simgrid-notes.md section 5).
void configure_network_model(core::NetworkModel model);

// Where a process's streams start and end on one of its devices when the transport bounds what
// a process moves (Transport::process_rpc_ceiling_bytes_per_s): a host of its own on the
// device's machine whose way out is the process's RPC link and the device's PCIe link (a GPU), one
// shared link of the ceiling's bandwidth that all of the process's streams cross, in both
// directions. It only sends and receives; copies run on the process's CPU.
// On a machine of several NICs, the streams a device's connections to another machine carry leave
// through the NIC core::Platform::nic_toward chooses: a star zone gives each host one way out, so
// a device's connections through NIC k >= 1 start and end at an endpoint of its own whose way out
// is that NIC (`nic` k; `process` -1 when no RPC ceiling applies: the device's own links). Only
// for streams between machines: inside a machine the device's own host serves.
struct ProcessEndpoint {
  int process = -1;  // index into core::Processes; -1: none (a device's host through NIC `nic`)
  int device = -1;   // plan device
  int nic = 0;       // index into its machine's PlatformMachine::nic_links
};

struct SimPlatform {
  std::vector<simgrid::s4u::Host*> hosts;           // one per plan device (same indices)
  std::vector<simgrid::s4u::Host*> endpoint_hosts;  // one per ProcessEndpoint (same indices)
  // A host with no link that only runs bookkeeping actors (transfers): it is never the end of a
  // communication and no fault turns it off.
  simgrid::s4u::Host* service_host = nullptr;
};

// Whether the switch (with racks, the core switch) can ever limit a flow
// (core::Platform::switch_can_bind): when not, it takes no part in the SimGrid routes.
bool switch_can_bind(const core::Platform& platform);

// Creates and seals the platform.
// Links carry bandwidth only (latency 0): the backend charges route latency itself, once per
// burst on a connection (sim_run.cpp), because SimGrid would charge it to every tensor while a
// gRPC connection streams tensors back to back.
// Machines none of whose devices are in `used` (one flag per plan device) are left out: idle
// machines of a large template cost SimGrid time and memory for nothing. Their hosts are null.
// Every NIC of a machine is built (SimGrid names "<link>_UP" / "_DOWN"); a device's host goes out
// through its first, an endpoint through its `nic`.
// `keep_switch`: every switch stays in the routes even when it cannot bind (a fault changes one).
// `endpoints` (of `process_count` processes, core::Processes) get their hosts and RPC links.
SimPlatform build_sim_platform(const core::Platform& platform, const std::vector<bool>& used,
                               bool keep_switch = false,
                               const std::vector<ProcessEndpoint>& endpoints = {},
                               size_t process_count = 0);

// Links inside a machine (PCIe) are not TCP: LV08's bandwidth factor (0.97, Velho and Legrand
// 2009, fitted to TCP over Ethernet) applies only to communications between machines, through a
// bandwidth-factor callback on the network model that replaces SimGrid's configured factor. (The
// latency factor is the backend's own charge, network_latency_factor(); LV08's reverse-traffic
// term is global in SimGrid 3.32 and stays: 5% of a copy's rate on its PCIe link's other
// direction, felt only by a copy the other way at the same time.) Hosts are told apart by their
// data (Host::set_data): build_sim_platform() gives each of a machine's hosts the same tag.
// Call after sealing `root`.
void keep_tcp_factors_off_machine_links(simgrid::s4u::NetZone* root);

// Multiplier the configured network model applies to latencies (LV08: 13.01, read from
// SimGrid's "network/latency-factor"; CM02: 1), between machines only (inside a machine the
// route's own latency is charged). Call after configure_network_model().
double network_latency_factor();

}  // namespace replisim::sim
