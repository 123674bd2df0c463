// An exact max-min sharing model for many flows bound at a few duplex links (issue 17's second
// lever, docs/model.md "An exact sharing model"): the parameter servers' NICs when they saturate.
// It reproduces what SimGrid 3.32's max-min solver (network_cm02.cpp, lmm) gives the same flows,
// at O(log n) per arrival or departure instead of a re-solve over every flow tied to the change,
// and says when it would not (exact()): then the caller hands the flows back to SimGrid.
//
// Internal to sim/; pure C++ (no SimGrid call), so a test can drive it beside SimGrid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

namespace replisim::sim::detail {

// SimGrid's max-min problem as SimGrid 3.32 poses it for replisim's platform (links of latency 0,
// so every flow's sharing penalty is 1 and there is no TCP-window bound):
//   - one constraint per shared link direction (a split-duplex link is two), capacity its
//     bandwidth in bytes/s;
//   - a flow uses each link of its route with coefficient 1 and, with LV08's cross-traffic, each
//     link of its reverse route with 0.05 (a link in both, like the switch, 1.05);
//   - the flows' shares are the max-min fair solution of sum(coefficient x share) <= capacity per
//     constraint; a flow progresses at rate_factor x its share bytes/s (LV08's 0.97 between
//     machines, 1 inside one: NetworkCm02Model::comm_action_set_bounds sets it as the action's
//     rate factor, not as a change of capacity).
//
// Groups and other flows. A group is a machine's NIC (both directions under cross-traffic, else
// one). Every flow is a member of the group whose link binds it, or an "other" flow when that
// link is in no group (a PCIe link). All members of a group share one level; each other flow has
// its own. The shares come from progressive filling over these entities on the groups' links and
// the other flows' links (tens of entities rather than thousands of flows). A group advances one
// virtual clock (work per member, in share-bytes), and a member ends when the clock reaches its
// start plus its bytes / rate_factor (a min-heap on that: Valente, "Exact GPS simulation and
// optimal fair scheduling with logarithmic complexity", IEEE/ACM ToN 15(6), 2007).
//
// exact() says the result is SimGrid's. The max-min solution is unique and characterised by:
// feasible, and every flow has a full constraint on which its share is the largest (Bertsekas and
// Gallager, Data Networks, section 6.5.2; the argument holds for positive coefficients).
// Progressive filling over the entities gives it if (1) the link that fixes a group is the
// group's own, and (2) no link outside the filling is over capacity; both are checked at every
// change. A flow's group is chosen when it starts, from the last shares. The fill corrects it
// where flow-level filling would fix the flow with another group at the same level (members of an
// unfixed group crossing a group's own link when it fills move to that group; an other flow fixed
// at a group's own link joins it): no share changes. When a check still fails the model moves
// the flows concerned to the group of the link that binds them and fills again (up to
// `repair_rounds` times), and reassign_groups() chooses every group from a full progressive
// filling over all flows. docs/model.md, "The exact sharing model", has the whole argument.
//
// Changes mark the shares stale; they are computed (one fill for every change at an instant)
// when something reads them or before the clock moves on.
//
// Times are SimGrid's clock (seconds); it must not go backwards. Not thread-safe.
class SharingModel {
 public:
  struct Use {
    int constraint = -1;
    double coefficient = 1;  // 1 on the route, 0.05 on the reverse route under LV08
  };
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  // `repair_rounds`: local repairs of the groups per change before the model reports that it is
  // not exact (tests set 0 to make the caller's fall-back run).
  explicit SharingModel(int repair_rounds = 8) : repair_rounds_(repair_rounds) {}

  // A shared link direction of `capacity_bytes_per_s` (> 0). Returns its index.
  int add_constraint(double capacity_bytes_per_s);
  // Constraints `links` as a group: the two directions of a NIC when cross-traffic couples them
  // (every flow crosses both, so all of them are fixed when the first is full), else one
  // direction. A constraint is in at most one group. Returns its index.
  int add_group(const std::vector<int>& links);

  // Starts a flow of `bytes` (> 0) at `now_s`. `uses`: the constraints it crosses (a repeated
  // constraint adds up its coefficients); `rate_factor`: bytes/s of progress per unit of share.
  // Returns its id (ids are reused after a flow ends).
  int add_flow(double now_s, double bytes, const std::vector<Use>& uses, double rate_factor);
  // Takes flow `flow` out at `now_s` before its end (to hand it to SimGrid). Returns the bytes it
  // had left.
  double remove_flow(double now_s, int flow);

  // Sets the bytes flow `flow` has left at `now_s` (SimGrid carried it until now). The shares do
  // not change: O(log n).
  void set_remaining_bytes(double now_s, int flow, double bytes);

  // When the next flow ends at the current shares (kNever: no flow).
  double next_completion_s();
  // Advances to `now_s` and removes the flows that have ended by then: their remaining time at
  // their rate within `precision_s` (like SimGrid's surf/precision), or too short to be told
  // from `now_s` on the clock (`now_s` + it == `now_s`: from about 2^23 s of simulated time a
  // double's spacing passes 1 ns, and next_completion_s() then gives `now_s` itself). Returns
  // their ids (the model's own list: valid until the next call).
  const std::vector<int>& advance_to(double now_s, double precision_s = 1e-9);

  // Whether the shares are SimGrid's max-min solution (the checks above). Valid after any call.
  bool exact() {
    settle();
    return inexact_ == nullptr;
  }
  // Which check failed (null: exact).
  const char* why_inexact() {
    settle();
    return inexact_;
  }
  // Re-chooses every flow's group: the group of the link where the full max-min problem fixes
  // it, or none (another flow) if that link is in no group. A choice made when a flow started
  // can become the wrong one as flows come and go. O(uses x log links).
  void reassign_groups(double now_s);

  int flows() const { return live_flows_; }
  // The flow's progress rate now, bytes/s.
  double rate_bytes_per_s(int flow);
  // Bytes the flow has left at `now_s` (at most its current rate's progress since the last call
  // that changed the shares).
  double remaining_bytes(int flow, double now_s) {
    settle();
    return remaining_at(flow, now_s);
  }

 private:
  struct Constraint {
    double capacity = 0;
    int group = -1;
    int crossing = 0;   // flows crossing it
    double weight = 0;  // sum of their coefficients
    int members = 0;    // of them, members of its group
    int others = 0;     // of them, flows in no group
    // Per group with members crossing it: (group, their coefficients' sum, how many).
    std::vector<std::tuple<int, double, int>> group_weight;
  };
  using Finish = std::tuple<double, int, int64_t>;
  struct Group {
    std::vector<int> links;  // its own constraints
    int members = 0;
    int active_pos = -1;  // with members: its index in active_
    std::vector<int> member_list;
    double share = 0;  // bytes/s per member
    double work = 0;   // the virtual clock: share-bytes per member since the start
    // While its share is at or below this, no link its members cross outside the fill can be
    // over capacity on its account: the smallest key() of those links when last looked at,
    // lowered as flows arrive on them (check_other_links()).
    double safe_below = kNever;
    // (finish work, flow, its serial): a min-heap; entries of flows that left early are stale.
    std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes;
  };
  struct Flow {
    bool live = false;
    std::vector<Use> uses;
    double rate_factor = 1;
    int group = -1;
    double finish_work = 0;  // a member: its group's work when it ends
    double remaining = 0;    // another flow: bytes left at updated_s_
    double share = 0;        // another flow: its share
    int64_t serial = 0;      // tells a reused id's heap entries from the old flow's
    int member_pos = -1;     // a member: its index in its group's member_list
  };

  void sync(double now_s);
  // The shares after changes at the current instant: several flows that start or end at one
  // instant cost one fill (a change marks them stale; time does not pass before they are
  // settled, see sync()).
  void settle() {
    if (!stale_) return;
    stale_ = false;
    reshare();
  }
  double remaining_at(int flow, double now_s) const;
  // Makes `flow` a member of `group` (-1: another flow) with `share_bytes` of its bytes left in
  // share units (bytes / rate_factor).
  void join(int flow, int group, double share_bytes);
  void leave(int flow);
  int choose_group(const Flow& flow) const;
  std::vector<int> bottlenecks(const std::vector<std::pair<int, double>>& live);
  void count(const Flow& flow, int sign);
  void drop_stale(Group& group);
  void end(int flow);
  void reshare();
  // What the last fill found wrong: `why` (null: nothing), the link concerned (-1: none) and
  // the group whose members it binds (-1: the link is over capacity).
  struct Conflict {
    const char* why = nullptr;
    int link = -1;
    int group = -1;
  };
  // The shares (progressive filling over the groups and the other flows); sets conflict_.
  void fill();
  int bind_foreign_members(int link, int owner, double level);
  void adopt();
  void check_other_links();
  void repair();
  void repair_link(int link, int group);
  // Moves flow `flow` to group `group` (-1: another flow), keeping its bytes left.
  void move(int flow, int group);
  double group_usage(const Constraint& c) const;
  // Capacity / weight: the level at which the link is full if every flow on it has that share.
  static double key(const Constraint& c);
  // Whether the fill accounts for the link: an active group's own, or crossed by other flows.
  bool in_fill(const Constraint& c) const;
  void leaves_fill(const Constraint& c);

  std::vector<Constraint> constraints_;
  std::vector<Group> groups_;
  std::vector<Flow> flows_;
  std::vector<int> free_ids_;
  std::vector<int> others_;  // live flows in no group
  std::vector<int> active_;  // groups with members
  double updated_s_ = 0;
  // Scratch space of fill() (per constraint its index among the fill's links, -1: none; per
  // group the fill's links its members cross; per fill link the other flows crossing it) and of
  // bottlenecks().
  std::vector<std::pair<double, std::size_t>> fill_heap_;
  std::vector<int> advance_active_;  // advance_to()'s copy of active_
  std::vector<int> advance_ended_;   // what advance_to() returns
  std::vector<int> fill_index_;
  std::vector<int> fill_links_;
  std::vector<double> fill_left_;
  std::vector<double> fill_weight_;
  std::vector<std::vector<std::pair<std::size_t, double>>> fill_group_links_;
  std::vector<int> fill_fixing_;
  std::vector<int> fill_moving_;
  std::vector<std::vector<int>> fill_others_on_;
  std::vector<std::pair<int, int>> fill_adopted_;  // (other flow, group of the link fixing it)
  std::vector<std::size_t> bottleneck_start_;
  std::vector<std::pair<std::size_t, double>> bottleneck_on_;
  int live_flows_ = 0;
  int64_t next_serial_ = 0;
  int repair_rounds_ = 8;
  const char* inexact_ = nullptr;
  bool stale_ = false;
  Conflict conflict_;
  std::vector<int> over_capacity_;  // every link check_other_links() found over capacity
};

}  // namespace replisim::sim::detail
