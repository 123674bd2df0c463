#include "sim/sharing_model.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/base/error.h"

namespace replisim::sim::detail {
namespace {

// Relative slack of the exactness checks: shares computed in a different order than SimGrid's
// solver differ in the last bits.
constexpr double kSlack = 1e-9;
// A link's weight left after its flows are fixed, from rounding (coefficients are 0.05 or more).
constexpr double kNoWeight = 1e-9;

// Whether a flow with `left_s` of its time left at `now_s` ends now (advance_to()).
bool due(double left_s, double now_s, double precision_s) {
  return left_s <= precision_s || now_s + left_s <= now_s;
}

}  // namespace

int SharingModel::add_constraint(double capacity_bytes_per_s) {
  REPLISIM_ASSERT(capacity_bytes_per_s > 0, "a constraint needs a positive capacity");
  Constraint c;
  c.capacity = capacity_bytes_per_s;
  constraints_.push_back(c);
  return int(constraints_.size()) - 1;
}

int SharingModel::add_group(const std::vector<int>& links) {
  const int id = int(groups_.size());
  Group g;
  g.links = links;
  for (int link : links) {
    REPLISIM_ASSERT(constraints_[size_t(link)].group < 0, "a constraint is in at most one group");
    constraints_[size_t(link)].group = id;
  }
  groups_.push_back(std::move(g));
  return id;
}

void SharingModel::sync(double now_s) {
  const double dt = now_s - updated_s_;
  REPLISIM_ASSERT(dt >= 0, "the sharing model's clock went backwards");
  if (dt == 0) return;
  settle();  // the shares since updated_s_
  for (int g : active_) groups_[size_t(g)].work += groups_[size_t(g)].share * dt;
  for (int o : others_) {
    Flow& f = flows_[size_t(o)];
    f.remaining -= f.rate_factor * f.share * dt;
  }
  updated_s_ = now_s;
}

double SharingModel::key(const Constraint& c) {
  return c.weight > kNoWeight ? c.capacity / c.weight : kNever;
}

void SharingModel::count(const Flow& flow, int sign) {
  for (const Use& use : flow.uses) {
    Constraint& c = constraints_[size_t(use.constraint)];
    c.crossing += sign;
    c.weight += sign * use.coefficient;
    if (c.crossing == 0) c.weight = 0;  // no rounding residue on an idle link
    if (sign < 0) continue;
    // More weight: a lower level at which the link would be full, for the groups on it (its own
    // group's fill accounts for it).
    const double k = key(c);
    for (const auto& [g, weight, n] : c.group_weight) {
      if (g != c.group) groups_[size_t(g)].safe_below = std::min(groups_[size_t(g)].safe_below, k);
    }
  }
}

// The link of its route that would give the flow the smallest share if it were bound there
// (capacity less what the flows of other groups and the other flows use, over the weight of that
// link's group and the flow): its group, or -1 (another flow) if that link is in no group. An
// estimate from the last shares; reassign_groups() corrects it when the fill finds it wrong.
int SharingModel::choose_group(const Flow& flow) const {
  int best = -1;
  double best_share = kNever;
  for (const Use& use : flow.uses) {
    const Constraint& c = constraints_[size_t(use.constraint)];
    double own = 0;
    double foreign = 0;
    for (const auto& [g, weight, n] : c.group_weight) {
      if (g == c.group) {
        own = weight;
      } else {
        foreign += weight * std::max(groups_[size_t(g)].share, 0.0);
      }
    }
    if (c.others > 0) {
      for (int o : others_) {
        for (const Use& u : flows_[size_t(o)].uses) {
          if (u.constraint == use.constraint)
            foreign += u.coefficient * std::max(flows_[size_t(o)].share, 0.0);
        }
      }
    }
    const double share = (c.capacity - foreign) / (own + use.coefficient);
    if (share < best_share) {
      best = c.group;
      best_share = share;
    }
  }
  return best;
}

void SharingModel::join(int id, int group, double share_bytes) {
  Flow& f = flows_[size_t(id)];
  f.group = group;
  for (const Use& use : f.uses) {
    Constraint& c = constraints_[size_t(use.constraint)];
    if (group < 0) {
      ++c.others;
      continue;
    }
    if (c.group == group) ++c.members;
    auto it = std::find_if(c.group_weight.begin(), c.group_weight.end(),
                           [group](const auto& e) { return std::get<0>(e) == group; });
    if (it == c.group_weight.end()) {
      c.group_weight.emplace_back(group, use.coefficient, 1);
    } else {
      std::get<1>(*it) += use.coefficient;
      ++std::get<2>(*it);
    }
  }
  if (group < 0) {
    f.remaining = share_bytes * f.rate_factor;
    others_.push_back(id);
    return;
  }
  Group& g = groups_[size_t(group)];
  for (const Use& use : f.uses) {
    const Constraint& c = constraints_[size_t(use.constraint)];
    if (c.group != group) g.safe_below = std::min(g.safe_below, key(c));
  }
  if (g.members++ == 0) {
    g.active_pos = int(active_.size());
    active_.push_back(group);
  }
  f.member_pos = int(g.member_list.size());
  g.member_list.push_back(id);
  f.serial = next_serial_++;
  f.finish_work = g.work + share_bytes;
  g.finishes.emplace(f.finish_work, id, f.serial);
}

void SharingModel::leave(int id) {
  Flow& f = flows_[size_t(id)];
  for (const Use& use : f.uses) {
    Constraint& c = constraints_[size_t(use.constraint)];
    if (f.group < 0) {
      if (--c.others == 0) leaves_fill(c);
      continue;
    }
    if (c.group == f.group) --c.members;
    auto it = std::find_if(c.group_weight.begin(), c.group_weight.end(),
                           [&f](const auto& e) { return std::get<0>(e) == f.group; });
    REPLISIM_ASSERT(it != c.group_weight.end(), "a member's group is missing on its link");
    if (--std::get<2>(*it) == 0) {
      c.group_weight.erase(it);
    } else {
      std::get<1>(*it) -= use.coefficient;
    }
  }
  if (f.group < 0) {
    others_.erase(std::find(others_.begin(), others_.end(), id));
    return;
  }
  Group& g = groups_[size_t(f.group)];
  if (--g.members == 0) {
    const int moved = active_.back();
    active_[size_t(g.active_pos)] = moved;
    groups_[size_t(moved)].active_pos = g.active_pos;
    active_.pop_back();
    for (int link : g.links) leaves_fill(constraints_[size_t(link)]);
  }
  const int last = g.member_list.back();
  g.member_list[size_t(f.member_pos)] = last;
  flows_[size_t(last)].member_pos = f.member_pos;
  g.member_list.pop_back();
  f.serial = -1;  // its heap entry is stale now
  drop_stale(g);
}

// A link the fill no longer accounts for: the groups on it must look at it again.
void SharingModel::leaves_fill(const Constraint& c) {
  const double k = key(c);
  for (const auto& [g, weight, n] : c.group_weight) {
    if (g != c.group) groups_[size_t(g)].safe_below = std::min(groups_[size_t(g)].safe_below, k);
  }
}

void SharingModel::drop_stale(Group& g) {
  while (!g.finishes.empty()) {
    const auto& [work, id, serial] = g.finishes.top();
    if (flows_[size_t(id)].live && flows_[size_t(id)].serial == serial) return;
    g.finishes.pop();
  }
}

void SharingModel::end(int id) {
  leave(id);
  Flow& f = flows_[size_t(id)];
  count(f, -1);
  f.live = false;
  f.uses.clear();
  free_ids_.push_back(id);
  --live_flows_;
  // leave() ran while the flow was live: its entry may still head the heap.
  if (f.group >= 0) drop_stale(groups_[size_t(f.group)]);
}

int SharingModel::add_flow(double now_s, double bytes, const std::vector<Use>& uses,
                           double rate_factor) {
  REPLISIM_ASSERT(bytes > 0 && rate_factor > 0, "a flow needs bytes and a rate factor");
  sync(now_s);
  int id;
  if (free_ids_.empty()) {
    id = int(flows_.size());
    flows_.emplace_back();
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
  }
  Flow& f = flows_[size_t(id)];
  f.live = true;
  f.share = 0;  // a reused id's old share must not feed choose_group()'s estimates
  f.rate_factor = rate_factor;
  f.uses.clear();
  for (const Use& use : uses) {
    auto it = std::find_if(f.uses.begin(), f.uses.end(),
                           [&use](const Use& u) { return u.constraint == use.constraint; });
    if (it == f.uses.end()) {
      f.uses.push_back(use);
    } else {
      it->coefficient += use.coefficient;
    }
  }
  ++live_flows_;
  count(f, +1);
  join(id, choose_group(f), bytes / rate_factor);
  stale_ = true;
  return id;
}

double SharingModel::remaining_at(int id, double now_s) const {
  const Flow& f = flows_[size_t(id)];
  const double dt = now_s - updated_s_;
  if (f.group < 0) return f.remaining - f.rate_factor * f.share * dt;
  const Group& g = groups_[size_t(f.group)];
  return (f.finish_work - g.work - g.share * dt) * f.rate_factor;
}

double SharingModel::rate_bytes_per_s(int id) {
  settle();
  const Flow& f = flows_[size_t(id)];
  return f.rate_factor * (f.group < 0 ? f.share : groups_[size_t(f.group)].share);
}

double SharingModel::remove_flow(double now_s, int id) {
  sync(now_s);
  const double left = std::max(0.0, remaining_at(id, now_s));
  end(id);
  stale_ = true;
  return left;
}

void SharingModel::set_remaining_bytes(double now_s, int id, double bytes) {
  sync(now_s);
  Flow& f = flows_[size_t(id)];
  if (f.group < 0) {
    f.remaining = bytes;
    return;
  }
  Group& g = groups_[size_t(f.group)];
  f.serial = next_serial_++;  // the old heap entry is stale now
  f.finish_work = g.work + bytes / f.rate_factor;
  g.finishes.emplace(f.finish_work, id, f.serial);
  drop_stale(g);
}

void SharingModel::reassign_groups(double now_s) {
  sync(now_s);
  std::vector<std::pair<int, double>> live;
  for (size_t id = 0; id < flows_.size(); ++id) {
    if (!flows_[id].live) continue;
    // A flow SimGrid carries has no meaningful count here; take_over() sets its bytes anew.
    const double left = std::max(remaining_at(int(id), now_s), 0.0) / flows_[id].rate_factor;
    live.emplace_back(int(id), left);
    leave(int(id));
  }
  for (Group& g : groups_) g.finishes = {};  // every member joins again below
  const std::vector<int> bottleneck = bottlenecks(live);
  for (size_t k = 0; k < live.size(); ++k) {
    join(live[k].first, constraints_[size_t(bottleneck[k])].group, live[k].second);
  }
  stale_ = false;
  reshare();
}

// Progressive filling over every flow (the full max-min problem, as SimGrid's solver poses it):
// the link where each flow of `live` is fixed. O(uses x log links).
std::vector<int> SharingModel::bottlenecks(const std::vector<std::pair<int, double>>& live) {
  // The flows on each link, as one array in link order (offsets per link).
  const size_t n = constraints_.size();
  std::vector<size_t>& start = bottleneck_start_;
  std::vector<std::pair<size_t, double>>& on = bottleneck_on_;
  start.assign(n + 1, 0);
  std::vector<double> left(n), weight(n, 0);
  for (const auto& [id, bytes] : live) {
    for (const Use& use : flows_[size_t(id)].uses) ++start[size_t(use.constraint) + 1];
  }
  for (size_t c = 0; c < n; ++c) start[c + 1] += start[c];
  on.resize(start[n]);
  std::vector<size_t> next(start.begin(), start.end() - 1);
  for (size_t k = 0; k < live.size(); ++k) {
    for (const Use& use : flows_[size_t(live[k].first)].uses) {
      on[next[size_t(use.constraint)]++] = {k, use.coefficient};
      weight[size_t(use.constraint)] += use.coefficient;
    }
  }
  for (size_t c = 0; c < n; ++c) left[c] = constraints_[c].capacity;
  // (level at which the link saturates, link): a link's level only rises as flows elsewhere are
  // fixed below it, so an entry whose level is out of date is pushed again with the new one.
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>>
      heap;
  for (size_t c = 0; c < n; ++c) {
    if (weight[c] > kNoWeight) heap.emplace(left[c] / weight[c], int(c));
  }
  std::vector<int> bottleneck(live.size(), -1);
  while (!heap.empty()) {
    const auto [level, c] = heap.top();
    heap.pop();
    if (weight[size_t(c)] <= kNoWeight) continue;
    const double now_level = left[size_t(c)] / weight[size_t(c)];
    if (now_level > level * (1 + kSlack)) {
      heap.emplace(now_level, c);
      continue;
    }
    for (size_t e = start[size_t(c)]; e < start[size_t(c) + 1]; ++e) {
      const size_t k = on[e].first;
      if (bottleneck[k] >= 0) continue;
      bottleneck[k] = c;
      for (const Use& use : flows_[size_t(live[k].first)].uses) {
        weight[size_t(use.constraint)] -= use.coefficient;
        left[size_t(use.constraint)] -= use.coefficient * now_level;
      }
    }
    weight[size_t(c)] = 0;
  }
  return bottleneck;
}

double SharingModel::next_completion_s() {
  settle();
  double next = kNever;
  for (int index : active_) {
    const Group& g = groups_[size_t(index)];
    if (g.share <= 0 || g.finishes.empty()) continue;
    const double work = std::get<0>(g.finishes.top());
    next = std::min(next, updated_s_ + std::max(0.0, work - g.work) / g.share);
  }
  for (int o : others_) {
    const Flow& f = flows_[size_t(o)];
    if (f.share <= 0) continue;
    next = std::min(next, updated_s_ + std::max(0.0, f.remaining) / (f.rate_factor * f.share));
  }
  return next;
}

const std::vector<int>& SharingModel::advance_to(double now_s, double precision_s) {
  sync(now_s);
  settle();
  std::vector<int>& ended = advance_ended_;
  ended.clear();
  std::vector<int>& active = advance_active_;  // end() changes active_
  active = active_;
  for (int index : active) {
    Group& g = groups_[size_t(index)];
    while (g.members > 0 && !g.finishes.empty() && g.share > 0) {
      const auto [work, id, serial] = g.finishes.top();
      if (!due((work - g.work) / g.share, now_s, precision_s)) break;
      ended.push_back(id);
      end(id);
    }
  }
  for (size_t k = 0; k < others_.size();) {
    const Flow& f = flows_[size_t(others_[k])];
    if (f.share > 0 && due(f.remaining / (f.rate_factor * f.share), now_s, precision_s)) {
      ended.push_back(others_[k]);
      end(others_[k]);  // erases others_[k]
    } else {
      ++k;
    }
  }
  if (!ended.empty()) stale_ = true;
  return ended;
}

double SharingModel::group_usage(const Constraint& c) const {
  double used = 0;
  for (const auto& [g, weight, n] : c.group_weight) used += weight * groups_[size_t(g)].share;
  return used;
}

void SharingModel::reshare() {
  // A group chosen when a flow started can stop being where it is bound as flows come and go:
  // a few local repairs (moving the flows concerned to the group of the link that binds them)
  // settle most cases; reassign_groups() is the caller's next resort.
  for (int round = 0;; ++round) {
    conflict_ = {};
    over_capacity_.clear();
    fill();
    if (conflict_.why == nullptr) check_other_links();
    if (conflict_.why == nullptr || conflict_.link < 0 || round == repair_rounds_) break;
    repair();
  }
  inexact_ = conflict_.why;
}

void SharingModel::move(int id, int group) {
  const Flow& f = flows_[size_t(id)];
  const double share_bytes =
      f.group < 0 ? f.remaining / f.rate_factor : f.finish_work - groups_[size_t(f.group)].work;
  leave(id);
  join(id, group, share_bytes);
}

// Moves the flows the last fill found bound elsewhere than their group says.
void SharingModel::repair() {
  if (conflict_.group >= 0) {
    repair_link(conflict_.link, conflict_.group);
    return;
  }
  for (int link : over_capacity_) repair_link(link, -1);
}

// Moves the flows crossing `link` that it binds to its group: those of `group`, or (-1: the link
// is over capacity) those of the groups whose share it cannot carry.
void SharingModel::repair_link(int link, int group) {
  const int owner = constraints_[size_t(link)].group;
  std::vector<int> groups;
  if (group >= 0) {
    groups.push_back(group);  // its members crossing `link` are fixed there
  } else {
    // `link` is over capacity: the groups on it in increasing share keep their flows while the
    // link has room for them at their share; from the first that does not, they are bound here.
    std::vector<std::tuple<double, int, double>> on;  // (share, group, weight)
    for (const auto& [g, weight, n] : constraints_[size_t(link)].group_weight) {
      on.emplace_back(groups_[size_t(g)].share, g, weight);
    }
    std::sort(on.begin(), on.end());
    double left = constraints_[size_t(link)].capacity;
    double weight = constraints_[size_t(link)].weight;
    size_t k = 0;
    for (; k < on.size() && std::get<0>(on[k]) * weight <= left; ++k) {
      left -= std::get<2>(on[k]) * std::get<0>(on[k]);
      weight -= std::get<2>(on[k]);
    }
    for (; k < on.size(); ++k) groups.push_back(std::get<1>(on[k]));
  }
  for (int g : groups) {
    if (g == owner) continue;
    std::vector<int> moving;
    for (int id : groups_[size_t(g)].member_list) {
      const std::vector<Use>& uses = flows_[size_t(id)].uses;
      if (std::any_of(uses.begin(), uses.end(),
                      [link](const Use& u) { return u.constraint == link; })) {
        moving.push_back(id);
      }
    }
    for (int id : moving) move(id, owner);
  }
}

// Progressive filling over the active groups (each one entity: its members share one level) and
// the other flows, on the groups' own links and the links the other flows cross: every unfixed
// entity's share rises together, and the link that saturates first fixes the entities crossing
// it. A group fixed by a link that is not its own has members bound elsewhere than it assumed:
// not exact.
void SharingModel::fill() {
  std::vector<int>& links = fill_links_;
  links.clear();
  auto add_link = [this, &links](int constraint) {
    if (fill_index_[size_t(constraint)] >= 0) return;
    fill_index_[size_t(constraint)] = int(links.size());
    links.push_back(constraint);
  };
  fill_index_.resize(constraints_.size(), -1);
  fill_group_links_.resize(groups_.size());
  int unfixed = 0;
  for (int g : active_) {
    groups_[size_t(g)].share = -1;
    for (int link : groups_[size_t(g)].links) add_link(link);
    fill_group_links_[size_t(g)].clear();
    ++unfixed;
  }
  for (int o : others_) {
    flows_[size_t(o)].share = -1;
    for (const Use& use : flows_[size_t(o)].uses) add_link(use.constraint);
    ++unfixed;
  }
  // Per link: capacity left by the fixed entities, the unfixed entities' weight on it, and the
  // other flows crossing it; per group, the links of the fill its members cross.
  std::vector<double>& left = fill_left_;
  std::vector<double>& weight = fill_weight_;
  left.assign(links.size(), 0);
  weight.assign(links.size(), 0);
  if (fill_others_on_.size() < links.size()) fill_others_on_.resize(links.size());
  for (size_t k = 0; k < links.size(); ++k) {
    const Constraint& c = constraints_[size_t(links[k])];
    left[k] = c.capacity;
    fill_others_on_[k].clear();
    for (const auto& [g, w, n] : c.group_weight) {
      weight[k] += w;
      fill_group_links_[size_t(g)].emplace_back(k, w);
    }
  }
  for (int o : others_) {
    for (const Use& use : flows_[size_t(o)].uses) {
      const size_t k = size_t(fill_index_[size_t(use.constraint)]);
      weight[k] += use.coefficient;
      fill_others_on_[k].push_back(o);
    }
  }
  // A min-heap of (level at which the link is full, link): a link's level only rises as entities
  // crossing it are fixed below it, so an entry out of date is pushed again with its new level.
  std::vector<std::pair<double, size_t>>& heap = fill_heap_;
  heap.clear();
  auto push = [&heap](double level, size_t k) {
    heap.emplace_back(level, k);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (size_t k = 0; k < links.size(); ++k) {
    if (weight[k] > kNoWeight) push(left[k] / weight[k], k);
  }
  auto fixed = [&](size_t k, double w, double level) {
    weight[k] -= w;
    left[k] -= w * level;
  };
  auto fix_group = [&](int g, double level) {
    groups_[size_t(g)].share = level;
    --unfixed;
    for (const auto& [k, w] : fill_group_links_[size_t(g)]) fixed(k, w, level);
  };
  while (unfixed > 0 && conflict_.why == nullptr && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const auto [at, best] = heap.back();
    heap.pop_back();
    if (weight[best] <= kNoWeight) continue;
    const double level = left[best] / weight[best];
    if (level > at * (1 + kSlack)) {
      push(level, best);
      continue;
    }
    if (level <= 0) {
      conflict_ = {"a link is full before its flows have a share", -1, -1};
      break;
    }
    const int owner = constraints_[size_t(links[best])].group;
    // Members of unfixed groups crossing a group's own link are fixed here, with that group:
    // they move to it, as the flow-level filling would fix them (the group is fixed below).
    if (owner >= 0 && groups_[size_t(owner)].members > 0 && groups_[size_t(owner)].share < 0) {
      unfixed -= bind_foreign_members(links[best], owner, level);
    }
    const Constraint& saturated = constraints_[size_t(links[best])];
    fill_fixing_.clear();
    for (const auto& [g, w, n] : saturated.group_weight) {
      if (groups_[size_t(g)].share < 0) fill_fixing_.push_back(g);
    }
    for (int g : fill_fixing_) {
      if (g != saturated.group && conflict_.why == nullptr) {
        conflict_ = {"a link binds members of another group", links[best], g};
      }
      fix_group(g, level);
    }
    for (int o : fill_others_on_[best]) {
      Flow& f = flows_[size_t(o)];
      if (f.share >= 0) continue;
      f.share = level;
      --unfixed;
      // Fixed at a group's own link: a member of that group at the same level (adopted below).
      if (saturated.group >= 0) fill_adopted_.emplace_back(o, saturated.group);
      for (const Use& use : f.uses) {
        fixed(size_t(fill_index_[size_t(use.constraint)]), use.coefficient, level);
      }
    }
    weight[best] = 0;  // full: rounding must not leave it a residue
    // The links whose level rose: pushed again lazily when they come out of the heap.
  }
  REPLISIM_ASSERT(unfixed == 0 || conflict_.why != nullptr, "an unfixed flow crosses no link");
  for (int c : links) fill_index_[size_t(c)] = -1;
  adopt();
}

// The members of unfixed groups other than `owner` that cross `link` (owner's own, saturated
// now in the fill at `level`) join `owner`: they are fixed at `level` now, and their groups'
// weights in the fill no longer count them (the owner's never did). Returns how many groups it
// left without members (they leave the fill).
int SharingModel::bind_foreign_members(int link, int owner, double level) {
  const Constraint& c = constraints_[size_t(link)];
  std::vector<int>& foreign = fill_fixing_;
  foreign.clear();
  for (const auto& [g, w, n] : c.group_weight) {
    if (g != owner && groups_[size_t(g)].share < 0) foreign.push_back(g);
  }
  int emptied = 0;
  std::vector<int>& moving = fill_moving_;
  for (int g : foreign) {
    moving.clear();
    for (int id : groups_[size_t(g)].member_list) {
      const std::vector<Use>& uses = flows_[size_t(id)].uses;
      if (std::any_of(uses.begin(), uses.end(),
                      [link](const Use& u) { return u.constraint == link; })) {
        moving.push_back(id);
      }
    }
    std::vector<std::pair<std::size_t, double>>& listed = fill_group_links_[size_t(g)];
    for (int id : moving) {
      for (const Use& use : flows_[size_t(id)].uses) {
        const int k = fill_index_[size_t(use.constraint)];
        if (k < 0) continue;
        fill_weight_[size_t(k)] -= use.coefficient;
        fill_left_[size_t(k)] -= use.coefficient * level;
        auto entry = std::find_if(listed.begin(), listed.end(),
                                  [k](const auto& e) { return e.first == std::size_t(k); });
        REPLISIM_ASSERT(entry != listed.end(), "a member's link is missing from its group's fill");
        entry->second -= use.coefficient;
      }
      move(id, owner);
    }
    if (groups_[size_t(g)].members == 0) ++emptied;
  }
  return emptied;
}

// Other flows the last fill fixed at a group's own link join that group: the shares stay the
// same (the group's level is the link's), and the next fills count one entity fewer. A flow gets
// there when the link that bound it at its start was another one (choose_group() estimates from
// the last shares) and it was moved off it by a repair.
void SharingModel::adopt() {
  if (conflict_.why == nullptr) {
    for (const auto& [id, group] : fill_adopted_) {
      Group& g = groups_[size_t(group)];
      const double share = flows_[size_t(id)].share;
      // A group the fill had not fixed (no members yet) takes the level its new member had; a
      // group fixed at a different level (at its other direction) keeps the flow out.
      if (g.members == 0) g.share = share;
      if (g.share == share) move(id, group);
    }
  }
  fill_adopted_.clear();
}

// The links outside the fill (a worker's NIC under flows bound at the servers, a PCIe link) must
// have room for what the fill gave: only one whose capacity / weight is below the largest share
// can lack it.
void SharingModel::check_other_links() {
  for (int index : active_) {
    Group& g = groups_[size_t(index)];
    if (g.share <= g.safe_below) continue;
    // Some link its members cross may be full below the group's share: look at each, and keep
    // the smallest capacity / weight of them all (those found over capacity too: they must be
    // looked at again if the repairs leave them outside the fill) for next time.
    double safe = kNever;
    for (int id : g.member_list) {
      for (const Use& use : flows_[size_t(id)].uses) {
        const Constraint& c = constraints_[size_t(use.constraint)];
        if (c.group == index || in_fill(c)) continue;
        const double k = key(c);
        if (k < g.share && group_usage(c) > c.capacity * (1 + kSlack)) {
          // Every such link is repaired at once: at the end of a server's phase its share rises
          // past many workers' NICs together.
          if (conflict_.why == nullptr) {
            conflict_ = {"a link outside the groups is over capacity", use.constraint, -1};
          }
          if (std::find(over_capacity_.begin(), over_capacity_.end(), use.constraint) ==
              over_capacity_.end()) {
            over_capacity_.push_back(use.constraint);
          }
        }
        safe = std::min(safe, k);
      }
    }
    g.safe_below = safe;
  }
}

bool SharingModel::in_fill(const Constraint& c) const {
  return c.others > 0 || (c.group >= 0 && groups_[size_t(c.group)].members > 0);
}

}  // namespace replisim::sim::detail
