#include "gui/panels/details_panel.h"

#include "core/base/units.h"

namespace replisim::gui {

DetailsPanel::DetailsPanel(QWidget* parent) : QTextBrowser(parent) {
  setPlaceholderText("Click a span for its details.");
}

void DetailsPanel::show_slice(const TimelineModel* model, int slice) {
  if (model == nullptr || slice < 0) {
    clear();
    return;
  }
  const core::Trace& trace = model->trace();
  const core::TraceEvent& e = *model->layout().slices[size_t(slice)].event;
  auto str = [&trace](uint32_t id) {
    return id == core::kNoString ? QString("-")
                                 : QString::fromStdString(trace.str(id)).toHtmlEscaped();
  };
  auto q = [](double v, core::Dimension d) {
    return QString::fromStdString(core::format_quantity(v, d));
  };
  QString html = "<table cellspacing=2>";
  auto row = [&html](const QString& name, const QString& value) {
    html += "<tr><td><b>" + name + "</b></td><td>" + value + "</td></tr>";
  };
  row("op", str(e.label));
  row("kind", QString(core::event_kind_name(e.kind)) + " · " + category_name(category_of(e)));
  if (e.op) row("op kind", core::op_kind_name(*e.op));
  if (e.producer) row("tensor of", core::op_kind_name(*e.producer));
  row("actor", str(e.actor));
  row("device", str(e.device));
  if (e.kind == core::EventKind::kTransfer) {
    row("to", str(e.peer_actor) + " " + str(e.peer));
    row("message", QString::number(e.message_id));
  }
  row("client", str(e.client));
  if (e.step >= 0) row("step", QString::number(e.step));
  row("start", q(e.start_s, core::Dimension::kTime));
  row("end", q(e.end_s, core::Dimension::kTime));
  row("duration", q(e.end_s - e.start_s, core::Dimension::kTime));
  if (e.bytes > 0) {
    row("bytes", q(e.bytes, core::Dimension::kBytes));
    if (e.end_s > e.start_s)
      row("rate", q(e.bytes / (e.end_s - e.start_s), core::Dimension::kBandwidth));
  }
  if (e.flop > 0) {
    row("work", q(e.flop, core::Dimension::kFlop));
    if (e.end_s > e.start_s)
      row("speed", q(e.flop / (e.end_s - e.start_s), core::Dimension::kFlopRate));
  }
  if (e.global_step_read >= 0) row("global_step read", QString::number(e.global_step_read));
  if (e.global_step_after >= 0) row("global_step after", QString::number(e.global_step_after));
  if (e.samples > 0) row("samples", QString::number(e.samples));
  setHtml(html + "</table>");
}

}  // namespace replisim::gui
