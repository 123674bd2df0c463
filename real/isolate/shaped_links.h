// A plan's machines on a shaped network (netns.h), racks and their uplinks included, and the
// plan's link faults played on it: a degraded window changes both tc rates of that machine's NIC
// for its window, a cut sets its veth down and up again (docs/validation-real.md, "Shaped local
// networks").
#pragma once

#include <vector>

#include "core/plan/plan.h"
#include "real/isolate/netns.h"

namespace replisim::real::isolate {

// Throws core::InputError(file, "/faults/<i>", ...) for a link fault a shaped network cannot
// play: one on the switch (the bridge is not shaped, each NIC is), or a cut (factor 0) lasting as
// long as a peer's silence deadline or longer (open-ended included): the tasks would declare each
// other lost, where the simulator holds the transfers until the link returns.
void check_link_faults(const core::Plan& plan, const std::string& file);

// Throws core::InputError(file, "/platform/machines/<i>/nic_links", ...) for a machine of several
// NICs (scenario nic.count): a shaped network gives each machine one veth, shaped as one NIC, and
// no route per peer (core::Platform::nic_toward). A scenario's run refuses it earlier, naming
// nic.count (core::refuse_what_real_runs_cannot_do); this guards a plan run directly.
void check_one_nic_per_machine(const core::Plan& plan, const std::string& file);

class ShapedLinks {
 public:
  // Every machine of the plan's platform, its NIC's bandwidth per direction, in its rack behind
  // the rack's uplink. Throws as ShapedNetwork does.
  explicit ShapedLinks(const core::Plan& plan);
  ShapedNetwork net;
  // Puts each NIC at the product of the factors of the link windows in force at run time `now_s`
  // (seconds on the run's clock). Called by the launcher every few tens of milliseconds.
  void play(double now_s);

 private:
  const core::Plan& plan_;
};

}  // namespace replisim::real::isolate
