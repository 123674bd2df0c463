#include "core/runtime/recovery_timeline.h"

#include <algorithm>
#include <cmath>

#include "core/base/units.h"

namespace replisim::core {

double RecoveryTimeline::worker_back_s(double up_s, double chief_ready_s) const {
  return first_model_poll_s(up_s, chief_ready_s, policy_.recovery_wait_s);
}

int64_t RecoveryTimeline::resumed_step(const Plan& plan, const std::vector<int64_t>& client_steps,
                                       size_t c) {
  if (client_steps.empty()) return 0;
  if (plan.sync == kDistributedReplicated) {
    return *std::min_element(client_steps.begin(), client_steps.end());
  }
  // All-reduce: every rank resumes with the chief at the checkpoint's step (they meet in every
  // collective; one at another step would wait for a tensor nobody submits).
  if (plan.sync == kAllReduceSync && !plan.collective.ranks.empty()) {
    const size_t chief = size_t(plan.collective.ranks.front());
    return chief < client_steps.size() ? client_steps[chief] : 0;
  }
  return c < client_steps.size() ? client_steps[c] : 0;
}

void note_faults_after_the_end(const Plan& plan, double end_s, double from_s,
                               std::vector<std::string>& notes) {
  for (const PlanFault& f : plan.faults) {
    const double strikes_s = f.strikes_s();
    if (strikes_s <= end_s || strikes_s < from_s) continue;
    notes.push_back("fault \"" + f.description + "\" at " +
                    format_quantity(strikes_s, Dimension::kTime) + " comes after the run's end (" +
                    format_quantity(end_s, Dimension::kTime) + "): it changed nothing");
  }
}

}  // namespace replisim::core
