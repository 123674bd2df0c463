// A price catalog: instance types one can rent (GPUs, CPU cores, NICs, internal links), their
// dated on-demand and spot prices with sources, and each GPU's sustained speed per model preset
// (docs/catalog-format.md). `replisim recommend` turns a scenario into one configuration per
// instance type and machine count and prices it from here.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace replisim::core {

inline constexpr const char* kCatalogFormat = "replisim-catalog";
inline constexpr int kCatalogVersion = 1;

// Where a GPU's speed on a model preset comes from: a published single-GPU benchmark
// (`benchmark`), `replisim calibrate` on such a GPU (`calibrate`), or an assumption carried over
// from another model or GPU (`assumed`: recommend prints it as a caveat beside the point).
enum class SpeedBasis { kBenchmark, kCalibrate, kAssumed };
const char* speed_basis_name(SpeedBasis basis);  // "benchmark", "calibrate", "assumed"

struct GpuSpeed {
  std::string preset;  // a model preset name (core/model: "resnet50")
  double speed_flop_per_s = 0;
  SpeedBasis basis = SpeedBasis::kBenchmark;
  std::string source;
  std::string json_path;  // where it is in the catalog, for errors found later (an unknown preset)
};

struct CatalogGpu {
  std::string name;  // "V100"
  double memory_bytes = 0;
  std::vector<GpuSpeed> speeds;
  const GpuSpeed* speed_for(const std::string& preset) const;  // nullptr when not given
};

// AWS's Spot Instance Advisor publishes the frequency of interruption of the last 30 days as one
// of five bands (aws.amazon.com/ec2/spot/instance-advisor/): "<5%", "5-10%", "10-15%",
// "15-20%", ">20%" of instances interrupted in a month.
enum class InterruptionBand { kUnder5, k5To10, k10To15, k15To20, kOver20 };
const char* interruption_band_name(InterruptionBand band);  // "<5%", ...
// The probability of at least one interruption in a 30-day month that stands for a band: its
// upper bound (0.05, 0.10, 0.15, 0.20), and for ">20%", which has none, 0.25 (its lower bound
// plus one band's width). A planning figure on the pessimistic side of each band.
double interruption_band_monthly_probability(InterruptionBand band);
// That probability as a constant rate (a Poisson process over 720 h): -ln(1 - p) / 720 per hour
// (p = 0.05 gives 7.12e-5 per hour, one interruption per 585 days of one instance).
double interruption_band_rate_per_hour(InterruptionBand band);

enum class PriceKind { kOnDemand, kSpot };
const char* price_kind_name(PriceKind kind);  // "on_demand", "spot"

// One dated price of an instance type.
struct CatalogPrice {
  PriceKind kind = PriceKind::kOnDemand;
  double usd_per_hour = 0;
  std::string date;    // when the price was stated: "YYYY", "YYYY-MM" or "YYYY-MM-DD"
  std::string source;  // a URL or a document
  std::optional<InterruptionBand> interruption;  // spot only (required there)
  std::string interruption_source;               // where the band was read
};

struct CatalogInstance {
  std::string name;  // "p3.16xlarge"
  std::string provider;
  std::string region;
  std::string gpu;  // a key of Catalog::gpus
  int gpu_count = 0;
  int cpu_cores = 0;  // vCPUs
  int nic_count = 1;
  double nic_bandwidth_bytes_per_s = 0;  // each NIC, per direction
  // Each GPU's link to the host (the scenario's pcie); 0: the scenario's own (or its default).
  double pcie_bandwidth_bytes_per_s = 0;
  // Links between the GPUs the scenario format does not model (NVLink): what they are, for people.
  std::string gpu_links;
  std::string hardware_source;  // where the GPU, CPU and NIC facts come from
  std::vector<CatalogPrice> prices;
  // The newest price of `kind` stated on or before `as_of` ("" for the newest of all); nullptr
  // when there is none.
  const CatalogPrice* price(PriceKind kind, const std::string& as_of = "") const;
};

struct Catalog {
  std::string file;
  std::string name;
  std::vector<CatalogGpu> gpus;
  std::vector<CatalogInstance> instances;
  const CatalogGpu* gpu(const std::string& name) const;
};

// Reads a catalog (docs/catalog-format.md). Throws InputError(file, JSON path, why) on: another
// format or version, unknown or missing fields, a price that is not a positive number of dollars,
// a date that is not YYYY, YYYY-MM or YYYY-MM-DD (or not a real month or day), an empty source, an
// instance naming a GPU the catalog does not list, a spot price without its interruption band, an
// unknown band, or a repeated instance or GPU name. Preset names are checked by their user
// (core/sweep/recommend.h: core/hardware does not know the model presets).
Catalog load_catalog(const std::string& file);

// Whether `date` is "YYYY", "YYYY-MM" or "YYYY-MM-DD" with a month 01-12 and a day 01-31. Dates
// compare as text: "2017" < "2017-01" < "2017-01-15".
bool valid_catalog_date(const std::string& date);

}  // namespace replisim::core
