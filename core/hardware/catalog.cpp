#include "core/hardware/catalog.h"

#include <cmath>
#include <cstdlib>
#include <set>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::core {
namespace {

// A catalog is a few hundred lines; far fewer values than a scenario may hold.
constexpr size_t kMaxCatalogJsonValues = size_t(1) << 16;
// No instance rented today costs more than a few hundred dollars an hour.
constexpr double kMaxUsdPerHour = 1e5;

std::string required_text(const JsonCursor& c, const std::string& key) {
  const JsonCursor v = c.at(key);
  const std::string text = v.as_string();
  if (text.empty()) v.fail("expected a non-empty text");
  if (has_control_character(text)) v.fail("refuses control characters");
  return text;
}

std::string date_of(const JsonCursor& c) {
  const JsonCursor d = c.at("date");
  const std::string text = d.as_string();
  if (!valid_catalog_date(text)) {
    d.fail(
        "expected the date the price was stated, \"YYYY\", \"YYYY-MM\" or \"YYYY-MM-DD\", got \"" +
        text + "\"");
  }
  return text;
}

InterruptionBand band_of(const JsonCursor& c) {
  const std::string text = c.as_string();
  for (InterruptionBand b :
       {InterruptionBand::kUnder5, InterruptionBand::k5To10, InterruptionBand::k10To15,
        InterruptionBand::k15To20, InterruptionBand::kOver20}) {
    if (text == interruption_band_name(b)) return b;
  }
  c.fail(
      "expected one of the Spot Instance Advisor's bands \"<5%\", \"5-10%\", \"10-15%\", "
      "\"15-20%\", \">20%\", got \"" +
      text + "\"");
}

CatalogPrice price_of(const JsonCursor& c) {
  c.expect_object();
  c.check_keys({"kind", "usd_per_hour", "date", "source", "interruption", "interruption_source"});
  CatalogPrice p;
  const JsonCursor kind = c.at("kind");
  const std::string k = kind.as_string();
  if (k == "on_demand") {
    p.kind = PriceKind::kOnDemand;
  } else if (k == "spot") {
    p.kind = PriceKind::kSpot;
  } else {
    kind.fail("expected \"on_demand\" or \"spot\", got \"" + k + "\"");
  }
  const JsonCursor usd = c.at("usd_per_hour");
  p.usd_per_hour = usd.as_number();
  if (!(p.usd_per_hour > 0) || p.usd_per_hour > kMaxUsdPerHour) {
    usd.fail("expected a price above 0 and at most 100000 dollars per hour, got " +
             describe_json(usd.value()));
  }
  p.date = date_of(c);
  p.source = required_text(c, "source");
  if (p.kind == PriceKind::kSpot) {
    if (!c.has("interruption")) {
      c.fail(
          "a spot price needs its \"interruption\" band (the Spot Instance Advisor's \"<5%\", "
          "\"5-10%\", ...): recommend prices the risk of preemption from it");
    }
    p.interruption = band_of(c.at("interruption"));
    p.interruption_source = required_text(c, "interruption_source");
  } else if (c.has("interruption") || c.has("interruption_source")) {
    c.at(c.has("interruption") ? "interruption" : "interruption_source")
        .fail("only a spot price has an interruption band");
  }
  return p;
}

CatalogGpu gpu_of(const JsonCursor& c, const std::string& name) {
  c.expect_object();
  c.check_keys({"memory", "speeds", "description"});
  CatalogGpu g;
  g.name = name;
  g.memory_bytes = c.at("memory").as_quantity_in(Dimension::kBytes, 1, 1e13);
  const JsonCursor speeds = c.at("speeds");
  speeds.expect_object();
  for (const auto& item : speeds.value().items()) {
    const JsonCursor s = speeds.at(item.key());
    s.expect_object();
    s.check_keys({"speed", "basis", "source"});
    GpuSpeed speed;
    speed.preset = item.key();
    speed.json_path = s.path();
    speed.speed_flop_per_s = s.at("speed").as_quantity_in(Dimension::kFlopRate, 1e3, 1e18);
    const JsonCursor basis = s.at("basis");
    const std::string b = basis.as_string();
    if (b == "benchmark") {
      speed.basis = SpeedBasis::kBenchmark;
    } else if (b == "calibrate") {
      speed.basis = SpeedBasis::kCalibrate;
    } else if (b == "assumed") {
      speed.basis = SpeedBasis::kAssumed;
    } else {
      basis.fail("expected \"benchmark\", \"calibrate\" or \"assumed\", got \"" + b + "\"");
    }
    speed.source = required_text(s, "source");
    g.speeds.push_back(std::move(speed));
  }
  return g;
}

CatalogInstance instance_of(const JsonCursor& c, const Catalog& catalog) {
  c.expect_object();
  c.check_keys({"name", "provider", "region", "gpu", "gpus", "cpu_cores", "nic", "pcie",
                "gpu_links", "hardware_source", "prices"});
  CatalogInstance t;
  t.name = required_text(c, "name");
  t.provider = required_text(c, "provider");
  t.region = required_text(c, "region");
  const JsonCursor gpu = c.at("gpu");
  t.gpu = gpu.as_string();
  if (catalog.gpu(t.gpu) == nullptr) {
    std::vector<std::string> names;
    for (const CatalogGpu& g : catalog.gpus) names.push_back(g.name);
    gpu.fail("unknown GPU \"" + t.gpu + "\"; the catalog's /gpus are: " + join_names(names));
  }
  t.gpu_count = int(c.at("gpus").as_int(1, 1024));
  t.cpu_cores = int(c.at("cpu_cores").as_int(1, 4096));
  const JsonCursor nic = c.at("nic");
  nic.expect_object();
  nic.check_keys({"count", "bandwidth"});
  t.nic_count = nic.has("count") ? int(nic.at("count").as_int(1, 16)) : 1;
  t.nic_bandwidth_bytes_per_s = nic.at("bandwidth").as_quantity_in(Dimension::kBandwidth, 1, 1e15);
  if (c.has("pcie")) {
    const JsonCursor pcie = c.at("pcie");
    pcie.expect_object();
    pcie.check_keys({"bandwidth"});
    t.pcie_bandwidth_bytes_per_s =
        pcie.at("bandwidth").as_quantity_in(Dimension::kBandwidth, 1, 1e15);
  }
  if (c.has("gpu_links")) t.gpu_links = required_text(c, "gpu_links");
  t.hardware_source = required_text(c, "hardware_source");
  const JsonCursor prices = c.at("prices");
  prices.expect_array();
  if (prices.size() == 0) prices.fail("expected at least one dated price");
  for (size_t i = 0; i < prices.size(); ++i) t.prices.push_back(price_of(prices.at(i)));
  return t;
}

}  // namespace

const char* speed_basis_name(SpeedBasis basis) {
  switch (basis) {
    case SpeedBasis::kBenchmark:
      return "benchmark";
    case SpeedBasis::kCalibrate:
      return "calibrate";
    case SpeedBasis::kAssumed:
      return "assumed";
  }
  return "?";
}

const char* interruption_band_name(InterruptionBand band) {
  switch (band) {
    case InterruptionBand::kUnder5:
      return "<5%";
    case InterruptionBand::k5To10:
      return "5-10%";
    case InterruptionBand::k10To15:
      return "10-15%";
    case InterruptionBand::k15To20:
      return "15-20%";
    case InterruptionBand::kOver20:
      return ">20%";
  }
  return "?";
}

double interruption_band_monthly_probability(InterruptionBand band) {
  switch (band) {
    case InterruptionBand::kUnder5:
      return 0.05;
    case InterruptionBand::k5To10:
      return 0.10;
    case InterruptionBand::k10To15:
      return 0.15;
    case InterruptionBand::k15To20:
      return 0.20;
    case InterruptionBand::kOver20:
      return 0.25;
  }
  return 0.25;
}

double interruption_band_rate_per_hour(InterruptionBand band) {
  constexpr double kHoursPerMonth = 30 * 24;
  return -std::log1p(-interruption_band_monthly_probability(band)) / kHoursPerMonth;
}

const char* price_kind_name(PriceKind kind) {
  return kind == PriceKind::kSpot ? "spot" : "on_demand";
}

bool valid_catalog_date(const std::string& date) {
  if (date.size() != 4 && date.size() != 7 && date.size() != 10) return false;
  for (size_t i = 0; i < date.size(); ++i) {
    const bool dash = i == 4 || i == 7;
    if (dash ? date[i] != '-' : (date[i] < '0' || date[i] > '9')) return false;
  }
  if (date.size() == 4) return true;
  const int month = std::atoi(date.substr(5, 2).c_str());
  if (month < 1 || month > 12) return false;
  if (date.size() == 10) {
    const int day = std::atoi(date.substr(8, 2).c_str());
    if (day < 1 || day > 31) return false;
  }
  return true;
}

const CatalogPrice* CatalogInstance::price(PriceKind kind, const std::string& as_of) const {
  const CatalogPrice* best = nullptr;
  for (const CatalogPrice& p : prices) {
    if (p.kind != kind) continue;
    // Dates compare as text ("2025-06" < "2025-06-15" < "2025-07"); a month-only date counts as
    // stated by its first day.
    if (!as_of.empty() && p.date > as_of) continue;
    if (best == nullptr || p.date > best->date) best = &p;
  }
  return best;
}

const GpuSpeed* CatalogGpu::speed_for(const std::string& preset) const {
  for (const GpuSpeed& s : speeds) {
    if (s.preset == preset) return &s;
  }
  return nullptr;
}

const CatalogGpu* Catalog::gpu(const std::string& name) const {
  for (const CatalogGpu& g : gpus) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

Catalog load_catalog(const std::string& file) {
  const nlohmann::json document = read_json_file(file, kMaxCatalogJsonValues);
  const JsonCursor root(document, file);
  root.expect_object();
  root.check_keys({"format", "version", "name", "description", "gpus", "instances"});
  const JsonCursor format = root.at("format");
  if (format.as_string() != kCatalogFormat) {
    format.fail(std::string("expected \"") + kCatalogFormat + "\", got \"" + format.as_string() +
                "\"");
  }
  const JsonCursor version = root.at("version");
  if (version.as_int(1, 1000000) != kCatalogVersion) {
    version.fail("a catalog of version " + std::to_string(version.as_int(1, 1000000)) +
                 "; this replisim reads version " + std::to_string(kCatalogVersion));
  }
  Catalog catalog;
  catalog.file = file;
  catalog.name = required_text(root, "name");
  const JsonCursor gpus = root.at("gpus");
  gpus.expect_object();
  for (const auto& item : gpus.value().items()) {
    catalog.gpus.push_back(gpu_of(gpus.at(item.key()), item.key()));
  }
  const JsonCursor instances = root.at("instances");
  instances.expect_array();
  if (instances.size() == 0) instances.fail("expected at least one instance type");
  std::set<std::string> names;
  for (size_t i = 0; i < instances.size(); ++i) {
    CatalogInstance t = instance_of(instances.at(i), catalog);
    if (!names.insert(t.name).second) {
      instances.at(i).at("name").fail("instance type \"" + t.name + "\" is listed twice");
    }
    catalog.instances.push_back(std::move(t));
  }
  return catalog;
}

}  // namespace replisim::core
