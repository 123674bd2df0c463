// Knob groups of the sweep's library kept out of sweep_knobs.cpp (sweep_knobs.h lists them all).
#pragma once

#include <vector>

#include "core/sweep/sweep_knobs.h"

namespace replisim::core::sweep_detail {

// The all-reduce knobs (sweep_knobs_allreduce.cpp), in docs/capacity-planning.md's order:
// algorithm, fusion_threshold, cycle_time (training.allreduce) and nccl_streams
// (cluster.transport.connections_per_peer).
void add_allreduce_knobs(std::vector<SweepKnob>& knobs);

}  // namespace replisim::core::sweep_detail
