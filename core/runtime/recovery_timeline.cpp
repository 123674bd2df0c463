#include "core/runtime/recovery_timeline.h"

#include <algorithm>
#include <cmath>

namespace replisim::core {

double RecoveryTimeline::worker_back_s(double up_s, double chief_ready_s) const {
  const double wait_s = policy_.recovery_wait_s;
  return up_s + std::ceil(std::max(0.0, chief_ready_s - up_s) / wait_s) * wait_s;
}

int64_t RecoveryTimeline::resumed_step(const Plan& plan, const std::vector<int64_t>& client_steps,
                                       size_t c) {
  if (client_steps.empty()) return 0;
  if (plan.sync == kDistributedReplicated) {
    return *std::min_element(client_steps.begin(), client_steps.end());
  }
  return c < client_steps.size() ? client_steps[c] : 0;
}

}  // namespace replisim::core
