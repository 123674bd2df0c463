// The topology view's drawing (topology_view.h): the cluster's layout in a panel, a tensor's
// route through it, and one run's picture at a time (links by bandwidth and use, devices and
// roles, tensors in flight, legend).
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "gui/timeline_model.h"
#include "gui/topology_view.h"

namespace replisim::gui {
namespace {

constexpr double kTitleHeightPx = 24;
constexpr double kLegendHeightPx = 24;
constexpr double kDeviceHeightPx = 46;

QColor tensor_color(TensorRole role) {
  switch (role) {
    case TensorRole::kParameter:
      return QColor(0, 114, 178);
    case TensorRole::kGradient:
      return QColor(213, 94, 0);
    case TensorRole::kOther:
      break;
  }
  return QColor(80, 80, 80);
}

QString use_percent(double fraction) {
  return QString::number(std::lround(100 * fraction)) + "%";
}

// "10 Gbps": a link's bandwidth in bits per second, as scenarios give NICs.
QString bandwidth_text(double bytes_per_s) {
  const double bits = 8 * bytes_per_s;
  if (bits >= 1e9) return QString::number(bits / 1e9, 'g', 3) + " Gbps";
  return QString::number(bits / 1e6, 'g', 3) + " Mbps";
}

// Pen width by bandwidth: 3 px for the slowest link of the cluster, 14 px for the fastest, on a
// log scale (NICs of 1 to 100 Gbps and PCIe of 16 GB/s differ by orders of magnitude).
double link_width_px(const core::Platform& p, double bandwidth_bytes_per_s) {
  double least = 0, most = 0;
  for (const core::PlatformLink& l : p.links) {
    if (!(l.bandwidth_bytes_per_s > 0)) continue;
    least = least > 0 ? std::min(least, l.bandwidth_bytes_per_s) : l.bandwidth_bytes_per_s;
    most = std::max(most, l.bandwidth_bytes_per_s);
  }
  if (!(bandwidth_bytes_per_s > 0) || !(most > least)) return 6;
  return 3 + 11 * std::log(bandwidth_bytes_per_s / least) / std::log(most / least);
}

// Where machine `m`'s NIC link meets the switch box (with racks, its rack's box): below the
// machine's centre, kept inside the box.
QPointF switch_anchor(const core::Platform& p, const TopologyGeometry& g, size_t m) {
  const int rack = p.machines[m].rack;
  const QRectF& box = rack >= 0 ? g.rack_boxes[size_t(rack)] : g.switch_box;
  if (rack < 0) {
    const size_t n = g.machine_boxes.size();
    return {box.left() + box.width() * double(m + 1) / double(n + 1), box.bottom()};
  }
  const double x = std::clamp(g.machine_boxes[m].center().x(), box.left() + 6, box.right() - 6);
  return {x, box.bottom()};
}

// Where rack `r`'s uplink meets the core box: spread along its bottom edge.
QPointF core_anchor(const TopologyGeometry& g, size_t r) {
  const size_t n = g.rack_boxes.size();
  return {g.switch_box.left() + g.switch_box.width() * double(r + 1) / double(n + 1),
          g.switch_box.bottom()};
}

QPointF nic_anchor(const QRectF& machine_box) {
  return {machine_box.center().x(), machine_box.top()};
}

// The first of `texts` that fits `width_px` in the painter's font (the last one otherwise).
QString fitting(const QPainter& painter, const std::vector<QString>& texts, double width_px) {
  for (const QString& text : texts) {
    if (painter.fontMetrics().horizontalAdvance(text) <= width_px) return text;
  }
  return texts.back();
}

struct Fonts {
  QFont base, bold, small;
};

// "↑95% ↓0%": a split-duplex link's two directions.
QString directions_text(const TopologyState& state, int link) {
  return "↑" + use_percent(state.channel_utilisation[size_t(2 * link)]) + " ↓" +
         use_percent(state.channel_utilisation[size_t(2 * link + 1)]);
}

// Title: the run and how many tensors are moving; false when the trace has no cluster to draw.
bool paint_title(QPainter& painter, const TopologyModel& model, const QString& name,
                 const TopologyState& state, const QRectF& panel, const Fonts& fonts) {
  painter.setFont(fonts.bold);
  painter.setPen(Qt::black);
  painter.drawText(QRectF(panel.left() + 8, panel.top() + 2, panel.width() - 16, kTitleHeightPx),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   name + QString("  ·  %1 tensor(s) in flight").arg(state.in_flight.size()));
  if (!model.platform().machines.empty()) return true;
  painter.setFont(fonts.base);
  painter.drawText(panel, Qt::AlignCenter, "this trace carries no cluster (a Chrome trace?)");
  return false;
}

// The NIC links (machine to switch) and the switch, coloured by their use.
void paint_network(QPainter& painter, const TopologyModel& model, const TopologyGeometry& g,
                   const TopologyState& state, const Fonts& fonts) {
  const core::Platform& p = model.platform();
  for (size_t m = 0; m < model.machines().size(); ++m) {
    const int link = model.machines()[m].nic_link;
    if (link < 0) continue;
    const double u = state.link_utilisation(p, link);
    const QPointF a = nic_anchor(g.machine_boxes[m]), b = switch_anchor(p, g, m);
    painter.setPen(QPen(utilisation_color(u),
                        link_width_px(p, p.links[size_t(link)].bandwidth_bytes_per_s),
                        Qt::SolidLine, Qt::RoundCap));
    painter.drawLine(a, b);
    // Over its machine's box, as much as fits there: bandwidth and both directions, or these.
    painter.setFont(fonts.small);
    painter.setPen(Qt::black);
    const QRectF over(g.machine_boxes[m].left(), a.y() - 19, g.machine_boxes[m].width(), 17);
    const QString directions = directions_text(state, link);
    painter.drawText(
        over, Qt::AlignCenter,
        fitting(painter,
                {bandwidth_text(p.links[size_t(link)].bandwidth_bytes_per_s) + "  " + directions,
                 directions, use_percent(state.link_utilisation(p, link))},
                over.width()));
  }
  // Racks: each uplink (its rack's switch to the core) with both directions, then the switches.
  for (size_t r = 0; r < g.rack_boxes.size(); ++r) {
    const int uplink = p.racks[r].uplink;
    const QPointF a(g.rack_boxes[r].center().x(), g.rack_boxes[r].top()), b = core_anchor(g, r);
    painter.setPen(QPen(utilisation_color(state.link_utilisation(p, uplink)),
                        link_width_px(p, p.links[size_t(uplink)].bandwidth_bytes_per_s),
                        Qt::SolidLine, Qt::RoundCap));
    painter.drawLine(a, b);
    painter.setFont(fonts.small);
    painter.setPen(Qt::black);
    const QRectF beside(std::min(a.x(), b.x()) - 90, (a.y() + b.y()) / 2 - 9,
                        std::abs(a.x() - b.x()) + 180, 17);
    painter.drawText(beside, Qt::AlignCenter,
                     "uplink " + bandwidth_text(p.links[size_t(uplink)].bandwidth_bytes_per_s) +
                         "  " + directions_text(state, uplink));
  }
  const auto draw_switch = [&](const QRectF& box, int link, const QString& name) {
    const double use = link >= 0 ? state.link_utilisation(p, link) : 0;
    painter.setPen(QPen(utilisation_color(use), 3));
    painter.setBrush(QColor(245, 245, 245));
    painter.drawRoundedRect(box, 6, 6);
    painter.setPen(Qt::black);
    painter.setFont(fonts.small);
    painter.drawText(
        box, Qt::AlignCenter,
        fitting(painter, {name + " " + use_percent(use), use_percent(use)}, box.width() - 4));
  };
  for (size_t r = 0; r < g.rack_boxes.size(); ++r) {
    draw_switch(g.rack_boxes[r], p.racks[r].tor_link,
                QString::fromStdString(p.racks[r].name) + " switch");
  }
  draw_switch(g.switch_box, p.switch_link, p.racks.empty() ? "switch" : "core switch");
}

// Each GPU's PCIe link to its host CPU, coloured by its use, with both directions' figures.
void paint_pcie(QPainter& painter, const TopologyModel& model, const TopologyMachine& machine,
                const TopologyGeometry& g, const TopologyState& state, const Fonts& fonts) {
  const core::Platform& p = model.platform();
  const TopologyDevice* cpu = nullptr;
  for (const TopologyDevice& d : machine.devices) {
    if (d.kind == core::DeviceKind::kCpu) cpu = &d;
  }
  if (cpu == nullptr) return;
  for (const TopologyDevice& d : machine.devices) {
    const int link = p.devices[size_t(d.device)].pcie_link;
    if (link < 0) continue;
    const QRectF gpu = g.device_boxes[size_t(d.device)];
    const QRectF host = g.device_boxes[size_t(cpu->device)];
    painter.setPen(QPen(utilisation_color(state.link_utilisation(p, link)),
                        link_width_px(p, p.links[size_t(link)].bandwidth_bytes_per_s)));
    painter.drawLine(QPointF(gpu.center().x(), gpu.top()),
                     QPointF(gpu.center().x(), host.bottom()));
    painter.setFont(fonts.small);
    painter.setPen(Qt::black);
    const QRectF beside(gpu.center().x() + 8, host.bottom(), gpu.right() - gpu.center().x() - 8,
                        gpu.top() - host.bottom());
    painter.drawText(
        beside, Qt::AlignLeft | Qt::AlignVCenter,
        fitting(painter,
                {directions_text(state, link), use_percent(state.link_utilisation(p, link))},
                beside.width()));
  }
}

// A machine's box, its PCIe links, and its devices with the roles on each (a PS in orange).
void paint_machine(QPainter& painter, const TopologyModel& model, size_t m,
                   const TopologyGeometry& g, const TopologyState& state, const Fonts& fonts) {
  const TopologyMachine& machine = model.machines()[m];
  const QRectF box = g.machine_boxes[m];
  painter.setPen(QPen(QColor(90, 90, 90), 1.5));
  painter.setBrush(QColor(250, 250, 252));
  painter.drawRoundedRect(box, 8, 8);
  painter.setFont(fonts.bold);
  painter.setPen(Qt::black);
  painter.drawText(QRectF(box.left() + 8, box.top() + 2, box.width() - 16, 20),
                   Qt::AlignLeft | Qt::AlignVCenter, QString::fromStdString(machine.name));
  paint_pcie(painter, model, machine, g, state, fonts);  // under the device boxes
  for (const TopologyDevice& d : machine.devices) {
    const QRectF r = g.device_boxes[size_t(d.device)];
    if (r.isEmpty()) continue;
    const bool gpu = d.kind == core::DeviceKind::kGpu;
    const QColor fill = d.parameter_server ? QColor(255, 226, 190)
                        : gpu              ? QColor(214, 240, 220)
                                           : QColor(228, 234, 246);
    painter.setPen(QPen(d.parameter_server ? QColor(200, 110, 0) : QColor(110, 110, 110),
                        d.parameter_server ? 2.5 : 1.2));
    painter.setBrush(fill);
    painter.drawRoundedRect(r, 5, 5);
    const QString kind = QString::fromStdString(d.name.substr(d.name.find('/') + 1));
    QString roles;
    for (const std::string& role : d.roles) {
      roles += (roles.isEmpty() ? "" : " ") + QString::fromStdString(role);
    }
    painter.setPen(Qt::black);
    painter.setFont(fonts.bold);
    painter.drawText(r.adjusted(4, 2, -4, -r.height() / 2), Qt::AlignCenter,
                     d.parameter_server ? "PS · " + kind : kind.toUpper());
    painter.setFont(fonts.small);
    painter.drawText(r.adjusted(4, r.height() / 2 - 2, -4, -2), Qt::AlignCenter,
                     roles.isEmpty() ? QString("(no role)") : roles);
  }
}

// Tensors in flight: each route a faint dashed line (where the tensor goes), its dot on it.
void paint_tensors(QPainter& painter, const TopologyModel& model, const TopologyGeometry& g,
                   const TopologyState& state) {
  for (const TransferInFlight& t : state.in_flight) {
    const std::vector<QPointF> route = g.route_points(model.platform(), t.src_device, t.dst_device);
    QColor trail = tensor_color(t.tensor);
    trail.setAlpha(150);
    painter.setPen(QPen(trail, 1.5, Qt::DashLine));
    painter.setBrush(Qt::NoBrush);
    painter.drawPolyline(route.data(), int(route.size()));
    painter.setPen(QPen(Qt::black, 1.5));
    painter.setBrush(tensor_color(t.tensor));
    painter.drawEllipse(point_along(route, t.progress), 7, 7);
  }
}

void paint_legend(QPainter& painter, const QRectF& panel, const Fonts& fonts) {
  painter.save();
  painter.setClipRect(panel);
  painter.setFont(fonts.small);
  const QFontMetrics metrics = painter.fontMetrics();
  // The long texts where they fit in the panel's width, else the short ones (a narrow pane: two
  // runs side by side under a projector's timelines).
  struct Texts {
    const char* tensors[3];
    const char* scale;
  };
  static const Texts kLong{{"parameters", "gradients", "other tensors"},
                           "link: width = bandwidth, colour = use  "};
  static const Texts kShort{{"params", "grads", "other"}, "link use  "};
  const auto width_of = [&metrics](const Texts& t) {
    double w = 8;
    for (const char* text : t.tensors) w += 22 + metrics.horizontalAdvance(text);
    return w + 20 + metrics.horizontalAdvance(t.scale) + 5 * 22 + 8 +
           metrics.horizontalAdvance("0 → 100%");
  };
  const Texts& texts = width_of(kLong) <= panel.width() ? kLong : kShort;
  const double y = panel.bottom() - kLegendHeightPx;
  double x = panel.left() + 8;
  const TensorRole roles[3] = {TensorRole::kParameter, TensorRole::kGradient, TensorRole::kOther};
  for (int i = 0; i < 3; ++i) {
    painter.setPen(Qt::NoPen);
    painter.setBrush(tensor_color(roles[i]));
    painter.drawEllipse(QPointF(x + 5, y + kLegendHeightPx / 2), 5, 5);
    painter.setPen(Qt::black);
    painter.drawText(QRectF(x + 13, y, 100, kLegendHeightPx), Qt::AlignLeft | Qt::AlignVCenter,
                     texts.tensors[i]);
    x += 22 + metrics.horizontalAdvance(texts.tensors[i]);
  }
  const QString scale = texts.scale;
  painter.drawText(QRectF(x + 6, y, 400, kLegendHeightPx), Qt::AlignLeft | Qt::AlignVCenter, scale);
  x += 8 + metrics.horizontalAdvance(scale);
  for (int i = 0; i <= 4; ++i) {
    painter.fillRect(QRectF(x + i * 22, y + 6, 22, kLegendHeightPx - 12),
                     utilisation_color(i / 4.0));
  }
  // The scale's ends where there is room for them (the colours alone say it otherwise).
  if (width_of(texts) <= panel.width()) {
    painter.drawText(QRectF(x + 5 * 22 + 4, y, 80, kLegendHeightPx),
                     Qt::AlignLeft | Qt::AlignVCenter, "0 → 100%");
  }
  painter.restore();
}

}  // namespace

TopologyGeometry layout_topology(const TopologyModel& model, const QRectF& panel) {
  TopologyGeometry g;
  g.panel = panel;
  const QRectF area = panel.adjusted(8, kTitleHeightPx + 4, -8, -kLegendHeightPx - 4);
  g.switch_box = QRectF(area.center().x() - 70, area.top(), 140, 30);
  const core::Platform& p = model.platform();
  const size_t n = std::max<size_t>(1, model.machines().size());
  const double gap = 14;
  const double width = std::min(300.0, (area.width() - gap * double(n - 1)) / double(n));
  const double left = area.center().x() - (width * double(n) + gap * double(n - 1)) / 2;
  // With racks a band of top-of-rack switches between the core and the machines, which are
  // drawn rack by rack (a dedicated PS machine joins its rack's group).
  const double band = std::clamp(area.height() * 0.22, 50.0, 110.0);
  const double rack_top = g.switch_box.bottom() + band;
  const double top = p.racks.empty() ? rack_top : rack_top + 30 + band * 0.6;
  const double height = std::min(area.bottom() - top, 260.0);
  std::vector<size_t> order(model.machines().size());
  for (size_t m = 0; m < order.size(); ++m) order[m] = m;
  if (!p.racks.empty() && p.machines.size() == order.size()) {
    std::stable_sort(order.begin(), order.end(),
                     [&p](size_t a, size_t b) { return p.machines[a].rack < p.machines[b].rack; });
  }
  g.machine_boxes.assign(model.machines().size(), QRectF());
  g.device_boxes.assign(p.devices.size(), QRectF());
  for (size_t slot = 0; slot < order.size(); ++slot) {
    const size_t m = order[slot];
    const QRectF box(left + double(slot) * (width + gap), top, width, height);
    g.machine_boxes[m] = box;
    const TopologyMachine& machine = model.machines()[m];
    std::vector<const TopologyDevice*> gpus;
    const TopologyDevice* cpu = nullptr;
    for (const TopologyDevice& d : machine.devices) {
      if (d.kind == core::DeviceKind::kGpu)
        gpus.push_back(&d);
      else
        cpu = &d;
    }
    const QRectF inner = box.adjusted(8, 24, -8, -8);
    const double cpu_height = gpus.empty() ? std::min(inner.height(), 2 * kDeviceHeightPx)
                                           : std::min(kDeviceHeightPx, inner.height() / 3);
    if (cpu != nullptr) {
      g.device_boxes[size_t(cpu->device)] =
          QRectF(inner.left(), inner.top(), inner.width(), cpu_height);
    }
    if (gpus.empty()) continue;
    const double gpu_top = inner.top() + cpu_height + std::min(40.0, inner.height() / 4);
    const double gpu_height = std::min(kDeviceHeightPx + 10, inner.bottom() - gpu_top);
    const double gpu_gap = 6;
    const double gpu_width =
        (inner.width() - gpu_gap * double(gpus.size() - 1)) / double(gpus.size());
    for (size_t i = 0; i < gpus.size(); ++i) {
      g.device_boxes[size_t(gpus[i]->device)] =
          QRectF(inner.left() + double(i) * (gpu_width + gpu_gap), gpu_top, gpu_width, gpu_height);
    }
  }
  // Each rack's switch spans its machines' boxes.
  g.rack_boxes.assign(p.racks.size(), QRectF());
  for (size_t m = 0; m < g.machine_boxes.size() && m < p.machines.size(); ++m) {
    const int rack = p.machines[m].rack;
    if (rack < 0) continue;
    const QRectF span(g.machine_boxes[m].left(), rack_top, g.machine_boxes[m].width(), 30);
    QRectF& box = g.rack_boxes[size_t(rack)];
    box = box.isNull() ? span : box.united(span);
  }
  return g;
}

std::vector<QPointF> TopologyGeometry::route_points(const core::Platform& p, int src,
                                                    int dst) const {
  // One side of the route: from a device up to its machine's NIC (reversed for the way down).
  auto up_to_nic = [&](int device) {
    std::vector<QPointF> points;
    const core::PlatformDevice& d = p.devices[size_t(device)];
    const QRectF box = device_boxes[size_t(device)];
    points.push_back(box.center());
    if (d.kind == core::DeviceKind::kGpu) {
      const QRectF cpu = device_boxes[size_t(p.cpu_of_machine(d.machine))];
      points.push_back({box.center().x(), box.top()});
      points.push_back({box.center().x(), cpu.bottom()});
      points.push_back(cpu.center());
    }
    points.push_back(nic_anchor(machine_boxes[size_t(d.machine)]));
    return points;
  };
  const core::PlatformDevice& s = p.devices[size_t(src)];
  const core::PlatformDevice& d = p.devices[size_t(dst)];
  std::vector<QPointF> out = up_to_nic(src);
  std::vector<QPointF> down = up_to_nic(dst);
  if (s.machine == d.machine) {  // PCIe only: up to the host CPU, down to the other device
    out.pop_back();              // (or back down to the same GPU: two processes on it)
    down.pop_back();
    down.pop_back();  // the CPU's centre, where `out` ends
  } else {
    const int from = p.machines[size_t(s.machine)].rack, to = p.machines[size_t(d.machine)].rack;
    out.push_back(switch_anchor(p, *this, size_t(s.machine)));
    if (from < 0) {
      out.push_back(switch_box.center());
    } else {
      out.push_back(rack_boxes[size_t(from)].center());
      if (from != to) {
        out.push_back({rack_boxes[size_t(from)].center().x(), rack_boxes[size_t(from)].top()});
        out.push_back(core_anchor(*this, size_t(from)));
        out.push_back(switch_box.center());
        out.push_back(core_anchor(*this, size_t(to)));
        out.push_back({rack_boxes[size_t(to)].center().x(), rack_boxes[size_t(to)].top()});
        out.push_back(rack_boxes[size_t(to)].center());
      }
    }
    out.push_back(switch_anchor(p, *this, size_t(d.machine)));
  }
  out.insert(out.end(), down.rbegin(), down.rend());
  return out;
}

QPointF point_along(const std::vector<QPointF>& polyline, double fraction) {
  if (polyline.empty()) return {};
  double total = 0;
  for (size_t i = 1; i < polyline.size(); ++i)
    total += QLineF(polyline[i - 1], polyline[i]).length();
  double left = std::clamp(fraction, 0.0, 1.0) * total;
  for (size_t i = 1; i < polyline.size(); ++i) {
    const double length = QLineF(polyline[i - 1], polyline[i]).length();
    if (left <= length && length > 0) {
      return polyline[i - 1] + (polyline[i] - polyline[i - 1]) * (left / length);
    }
    left -= length;
  }
  return polyline.back();
}

QColor utilisation_color(double u) {
  const QColor idle(175, 175, 175), half(240, 150, 0), full(200, 0, 0);
  auto mix = [](const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t),
                            float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
  };
  u = std::clamp(u, 0.0, 1.0);
  return u < 0.5 ? mix(idle, half, u / 0.5) : mix(half, full, (u - 0.5) / 0.5);
}

void paint_topology_run(QPainter& painter, const TopologyModel& model, const QString& name,
                        double time_s, const QRectF& panel) {
  const TopologyGeometry g = layout_topology(model, panel);
  const TopologyState state = model.state_at(time_s);
  Fonts fonts{painter.font(), painter.font(), painter.font()};
  fonts.bold.setBold(true);
  fonts.small.setPointSizeF(fonts.base.pointSizeF() * 0.85);
  if (!paint_title(painter, model, name, state, panel, fonts)) return;
  paint_network(painter, model, g, state, fonts);
  for (size_t m = 0; m < model.machines().size(); ++m) {
    paint_machine(painter, model, m, g, state, fonts);
  }
  paint_tensors(painter, model, g, state);
  paint_legend(painter, panel, fonts);
}

}  // namespace replisim::gui
