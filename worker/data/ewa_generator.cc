#include "worker/data/ewa_generator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/data/internal/hdf5.h"

namespace hpcai500::worker {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Our own draws on top of mt19937_64 (whose output the standard fixes), so
// files are identical across standard libraries.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double Uniform() { return (engine_() >> 11) * (1.0 / 9007199254740992.0); }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  int64_t Int(int64_t lo, int64_t hi) {  // inclusive
    return lo +
           static_cast<int64_t>(engine_() % static_cast<uint64_t>(hi - lo + 1));
  }
  double Normal() {
    const double u1 = 1.0 - Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * kPi * u2);
  }

 private:
  std::mt19937_64 engine_;
};

// A smooth random field: Gaussian values on a coarse grid, bilinearly
// interpolated.
class SmoothNoise {
 public:
  SmoothNoise(Rng& rng, int64_t rows, int64_t cols)
      : rows_(rows), cols_(cols), v_((rows + 1) * (cols + 1)) {
    for (double& x : v_) x = rng.Normal();
  }
  // u, v in [0, 1].
  double At(double u, double v) const {
    const double y = u * rows_, x = v * cols_;
    const int64_t y0 = std::min<int64_t>(rows_ - 1, static_cast<int64_t>(y));
    const int64_t x0 = std::min<int64_t>(cols_ - 1, static_cast<int64_t>(x));
    const double fy = y - y0, fx = x - x0;
    auto g = [&](int64_t r, int64_t c) { return v_[r * (cols_ + 1) + c]; };
    return (1 - fy) * ((1 - fx) * g(y0, x0) + fx * g(y0, x0 + 1)) +
           fy * ((1 - fx) * g(y0 + 1, x0) + fx * g(y0 + 1, x0 + 1));
  }

 private:
  int64_t rows_, cols_;
  std::vector<double> v_;
};

struct Grid {
  int64_t h, w;
  double deg_per_row() const { return 180.0 / h; }
  double deg_per_col() const { return 360.0 / w; }
  double Lat(double row) const { return -90.0 + (row + 0.5) * deg_per_row(); }
  double Lon(double col) const { return (col + 0.5) * deg_per_col(); }
  double Row(double lat) const { return (lat + 90.0) / deg_per_row() - 0.5; }
  double Col(double lon) const { return lon / deg_per_col() - 0.5; }
};

// Field planes of one sample, [16][h*w].
class Fields {
 public:
  explicit Fields(const Grid& g) : g_(g), data_(kEwaChannels * g.h * g.w) {}
  float& at(int c, int64_t r, int64_t x) {
    return data_[(c * g_.h + r) * g_.w + x];
  }
  const std::vector<float>& data() const { return data_; }

 private:
  Grid g_;
  std::vector<float> data_;
};

void DrawBackground(const Grid& g, Rng& rng, Fields& f) {
  const int wave_k = static_cast<int>(rng.Int(3, 6));
  const double wave_phase = rng.Uniform(0, 2 * kPi);
  const double wave_amp = rng.Uniform(400, 900);  // Pa
  SmoothNoise psl_noise(rng, 6, 12), tmq_noise(rng, 8, 16), t_noise(rng, 6, 12),
      wind_noise(rng, 6, 12);
  for (int64_t r = 0; r < g.h; ++r) {
    const double lat = g.Lat(r);
    const double phi = lat * kPi / 180.0;
    const double s2 = std::sin(phi) * std::sin(phi);
    const double c2 = 1.0 - s2;
    const double midlat = std::sin(2 * phi) * std::sin(2 * phi);
    const double u_jet =
        -6.0 * std::exp(-std::pow(lat / 15.0, 2)) +
        12.0 * std::exp(-std::pow((std::fabs(lat) - 45.0) / 12.0, 2));
    for (int64_t x = 0; x < g.w; ++x) {
      const double lam = g.Lon(x) * kPi / 180.0;
      const double u = static_cast<double>(r) / g.h;
      const double v = static_cast<double>(x) / g.w;
      const double wave = std::cos(wave_k * lam + wave_phase) * midlat;
      const double dwave = -std::sin(wave_k * lam + wave_phase) * midlat;
      const double tn = t_noise.At(u, v);
      const double ts = 302.0 - 50.0 * s2 + 1.5 * tn + 0.3 * rng.Normal();
      const double psl = 101325.0 + wave_amp * wave +
                         250.0 * psl_noise.At(u, v) + 15.0 * rng.Normal();
      const double topo =
          std::max(0.0, 1500.0 * std::sin(3 * lam) * std::cos(phi) - 500.0);
      const double tmq = 5.0 + 45.0 * c2 * c2 + 4.0 * tmq_noise.At(u, v) * c2 +
                         0.3 * rng.Normal();
      const double q = 0.001 + 0.017 * c2 * c2 + 0.0002 * rng.Normal();
      const double ubg = u_jet + 2.0 * wind_noise.At(u, v);
      const double vbg = 4.0 * dwave + 1.5 * wind_noise.At(v, u);
      f.at(kPrect, r, x) = static_cast<float>(std::max(
          0.0,
          2e-8 * c2 + 1e-8 * tmq_noise.At(u, v) + 2e-9 * rng.Normal()));  // m/s
      f.at(kPsl, r, x) = static_cast<float>(psl);
      f.at(kPs, r, x) = static_cast<float>(psl * std::exp(-topo / 8000.0));
      f.at(kQrefht, r, x) = static_cast<float>(std::max(1e-5, q));
      f.at(kTs, r, x) = static_cast<float>(ts);
      f.at(kTrefht, r, x) = static_cast<float>(ts - 1.5 + 0.2 * rng.Normal());
      f.at(kT500, r, x) =
          static_cast<float>(268.0 - 30.0 * s2 + 1.0 * tn + 0.2 * rng.Normal());
      f.at(kT200, r, x) =
          static_cast<float>(218.0 + 4.0 * s2 + 0.5 * tn + 0.2 * rng.Normal());
      f.at(kTmq, r, x) = static_cast<float>(std::max(0.5, tmq));
      f.at(kU850, r, x) = static_cast<float>(ubg + 0.3 * rng.Normal());
      f.at(kUbot, r, x) = static_cast<float>(0.7 * ubg + 0.3 * rng.Normal());
      f.at(kV850, r, x) = static_cast<float>(vbg + 0.3 * rng.Normal());
      f.at(kVbot, r, x) = static_cast<float>(0.7 * vbg + 0.3 * rng.Normal());
      f.at(kZ100, r, x) = static_cast<float>(16500.0 - 900.0 * s2 +
                                             60.0 * wave + 2.0 * rng.Normal());
      f.at(kZ200, r, x) = static_cast<float>(12200.0 - 1100.0 * s2 +
                                             80.0 * wave + 2.0 * rng.Normal());
      f.at(kZbot, r, x) = static_cast<float>(
          62.0 + 0.1 * (psl - 101325.0) / 12.0 + 0.5 * rng.Normal());
    }
  }
}

struct Box {
  double ymin, xmin, ymax, xmax;
  int64_t cls;
  bool Overlaps(const Box& o, double margin) const {
    return !(xmax + margin < o.xmin || o.xmax + margin < xmin ||
             ymax + margin < o.ymin || o.ymax + margin < ymin);
  }
};

struct Cyclone {
  double lat, lon;       // centre, degrees
  double radius;         // e-folding radius of the pressure drop, degrees
  double pressure_drop;  // Pa
  double max_wind;       // m/s
  double warm_core;      // K at 200 hPa
  double moisture;       // kg/m^2 of extra TMQ
  double rain;           // m/s at the centre
};

// Adds `c` to the fields within 3 radii. Tangential wind peaks at
// radius/sqrt(2) and turns counter-clockwise in the north, clockwise in the
// south (cyclonic in both).
void DrawCyclone(const Grid& g, const Cyclone& c, Fields& f) {
  const double coslat = std::cos(c.lat * kPi / 180.0);
  const double reach = 3.0 * c.radius;
  const double rm = c.radius / std::sqrt(2.0);
  const double turn = c.lat >= 0 ? 1.0 : -1.0;
  const int64_t r0 = std::max<int64_t>(0, std::floor(g.Row(c.lat - reach)));
  const int64_t r1 =
      std::min<int64_t>(g.h - 1, std::ceil(g.Row(c.lat + reach)));
  const double lon_reach = reach / coslat;
  const int64_t x0 = std::max<int64_t>(0, std::floor(g.Col(c.lon - lon_reach)));
  const int64_t x1 =
      std::min<int64_t>(g.w - 1, std::ceil(g.Col(c.lon + lon_reach)));
  for (int64_t r = r0; r <= r1; ++r) {
    const double dy = g.Lat(r) - c.lat;  // northward, degrees
    for (int64_t x = x0; x <= x1; ++x) {
      const double dx = (g.Lon(x) - c.lon) * coslat;  // eastward, degrees
      const double d2 = dx * dx + dy * dy;
      if (d2 > reach * reach) continue;
      const double d = std::sqrt(d2);
      const double shape = std::exp(-d2 / (c.radius * c.radius));
      const double core = std::exp(-d2 / (0.25 * c.radius * c.radius));
      const double vt =
          c.max_wind * (d / rm) * std::exp(0.5 * (1 - d2 / (rm * rm)));
      const double ux = d > 0 ? -turn * vt * dy / d : 0.0;
      const double vy = d > 0 ? turn * vt * dx / d : 0.0;
      f.at(kPsl, r, x) -= static_cast<float>(c.pressure_drop * shape);
      f.at(kPs, r, x) -= static_cast<float>(c.pressure_drop * shape);
      f.at(kU850, r, x) += static_cast<float>(ux);
      f.at(kV850, r, x) += static_cast<float>(vy);
      f.at(kUbot, r, x) += static_cast<float>(0.8 * ux);
      f.at(kVbot, r, x) += static_cast<float>(0.8 * vy);
      f.at(kT200, r, x) += static_cast<float>(c.warm_core * shape);
      f.at(kT500, r, x) += static_cast<float>(0.6 * c.warm_core * shape);
      f.at(kZ200, r, x) += static_cast<float>(15.0 * c.warm_core * shape);
      f.at(kZ100, r, x) += static_cast<float>(10.0 * c.warm_core * shape);
      f.at(kTmq, r, x) += static_cast<float>(c.moisture * shape);
      f.at(kQrefht, r, x) +=
          static_cast<float>(0.003 * c.moisture / 20.0 * shape);
      f.at(kPrect, r, x) += static_cast<float>(c.rain * core);
    }
  }
}

// Draws a cyclone of class `cls` somewhere free of `taken`; returns false
// after a few failed placements.
bool PlaceCyclone(const Grid& g, Rng& rng, int64_t cls,
                  const std::vector<Box>& taken, Fields& f, Box& box) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const double hemi = rng.Uniform() < 0.5 ? -1.0 : 1.0;
    Cyclone c;
    if (cls == kExtratropicalCyclone) {
      c.lat = hemi * rng.Uniform(35, 60);
      c.radius = rng.Uniform(6, 9);
      c.pressure_drop = rng.Uniform(1500, 3000);
      c.max_wind = rng.Uniform(15, 25);
      c.warm_core = rng.Uniform(0.3, 1.0);
      c.moisture = rng.Uniform(4, 8);
      c.rain = rng.Uniform(2e-7, 5e-7);
    } else if (cls == kTropicalCyclone) {
      c.lat = hemi * rng.Uniform(10, 25);
      c.radius = rng.Uniform(3, 4.5);
      c.pressure_drop = rng.Uniform(2500, 6000);
      c.max_wind = rng.Uniform(33, 60);
      c.warm_core = rng.Uniform(4, 8);
      c.moisture = rng.Uniform(15, 25);
      c.rain = rng.Uniform(1.5e-6, 3e-6);
    } else {  // tropical depression
      c.lat = hemi * rng.Uniform(8, 25);
      c.radius = rng.Uniform(2.5, 3.5);
      c.pressure_drop = rng.Uniform(500, 1200);
      c.max_wind = rng.Uniform(10, 17);
      c.warm_core = rng.Uniform(1, 2);
      c.moisture = rng.Uniform(6, 12);
      c.rain = rng.Uniform(4e-7, 9e-7);
    }
    // The box spans two radii each way; keep it inside the grid.
    const double half_lat = 2 * c.radius;
    const double half_lon = half_lat / std::cos(c.lat * kPi / 180.0);
    c.lon = rng.Uniform(half_lon + g.deg_per_col(),
                        360 - half_lon - g.deg_per_col());
    const double cy = g.Row(c.lat) + 0.5, cx = g.Col(c.lon) + 0.5;
    Box b{cy - half_lat / g.deg_per_row(), cx - half_lon / g.deg_per_col(),
          cy + half_lat / g.deg_per_row(), cx + half_lon / g.deg_per_col(),
          cls};
    bool free = true;
    for (const Box& t : taken) free = free && !b.Overlaps(t, 2.0);
    if (!free) continue;
    DrawCyclone(g, c, f);
    box = b;
    return true;
  }
  return false;
}

// An atmospheric river: a band of water vapour, rain and along-band wind
// from the subtropics poleward and eastward.
bool PlaceRiver(const Grid& g, Rng& rng, const std::vector<Box>& taken,
                Fields& f, Box& box) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const double hemi = rng.Uniform() < 0.5 ? -1.0 : 1.0;
    const double lat0 = hemi * rng.Uniform(20, 30);
    const double angle = rng.Uniform(25, 50) * kPi / 180.0;  // from east
    const double length = rng.Uniform(30, 45);               // degrees
    const double width = rng.Uniform(1.5, 2.5);              // e-folding
    const double ex = std::cos(angle), ey = hemi * std::sin(angle);
    const double span_lon = length * ex + 3 * width;
    const double lon0 = rng.Uniform(3 * width, 360 - span_lon - 3 * width);
    const double lat1 = lat0 + length * ey, lon1 = lon0 + length * ex;
    const double ymin = g.Row(std::min(lat0, lat1) - 2 * width);
    const double ymax = g.Row(std::max(lat0, lat1) + 2 * width) + 1;
    const double xmin = g.Col(lon0 - 2 * width);
    const double xmax = g.Col(lon1 + 2 * width) + 1;
    Box b{std::max(0.0, ymin), std::max(0.0, xmin), std::min<double>(g.h, ymax),
          std::min<double>(g.w, xmax), kAtmosphericRiver};
    bool free = true;
    for (const Box& t : taken) free = free && !b.Overlaps(t, 2.0);
    if (!free) continue;
    const double strength = rng.Uniform(15, 30);
    for (int64_t r = std::max<int64_t>(0, std::floor(b.ymin));
         r < std::min<int64_t>(g.h, std::ceil(b.ymax)); ++r) {
      for (int64_t x = std::max<int64_t>(0, std::floor(b.xmin));
           x < std::min<int64_t>(g.w, std::ceil(b.xmax)); ++x) {
        const double px = g.Lon(x) - lon0, py = g.Lat(r) - lat0;
        const double along = px * ex + py * ey;
        const double across = -px * ey + py * ex;
        const double t = along / length;
        if (t < -0.05 || t > 1.05) continue;
        const double taper = std::sin(kPi * std::clamp(t, 0.0, 1.0));
        const double shape =
            taper * std::exp(-across * across / (width * width));
        f.at(kTmq, r, x) += static_cast<float>(strength * shape);
        f.at(kQrefht, r, x) += static_cast<float>(0.004 * shape);
        f.at(kPrect, r, x) += static_cast<float>(6e-7 * shape);
        f.at(kU850, r, x) += static_cast<float>(12 * ex * shape);
        f.at(kV850, r, x) += static_cast<float>(12 * ey * shape);
        f.at(kUbot, r, x) += static_cast<float>(8 * ex * shape);
        f.at(kVbot, r, x) += static_cast<float>(8 * ey * shape);
      }
    }
    box = b;
    return true;
  }
  return false;
}

// Draws one sample's fields into `f` and its boxes into `rows` (15 x 5,
// padded with -1).
void DrawSample(const Grid& g, Rng& rng, Fields& f, float* rows) {
  DrawBackground(g, rng, f);
  std::vector<int64_t> classes;
  const int64_t cyclones = rng.Int(2, 7);
  for (int64_t i = 0; i < cyclones; ++i) {
    const double u = rng.Uniform();
    classes.push_back(u < 0.35   ? kTropicalDepression
                      : u < 0.65 ? kTropicalCyclone
                                 : kExtratropicalCyclone);
  }
  const int64_t rivers = rng.Int(0, 2);
  for (int64_t i = 0; i < rivers; ++i) classes.push_back(kAtmosphericRiver);
  std::vector<Box> boxes;
  for (int64_t cls : classes) {
    if (static_cast<int64_t>(boxes.size()) == kEwaMaxBoxes) break;
    Box b{};
    const bool placed = cls == kAtmosphericRiver
                            ? PlaceRiver(g, rng, boxes, f, b)
                            : PlaceCyclone(g, rng, cls, boxes, f, b);
    if (placed) boxes.push_back(b);
  }
  std::fill(rows, rows + kEwaMaxBoxes * kEwaBoxFields, -1.0f);
  for (size_t i = 0; i < boxes.size(); ++i) {
    float* row = rows + i * kEwaBoxFields;
    row[0] = static_cast<float>(std::max(0.0, boxes[i].ymin));
    row[1] = static_cast<float>(std::max(0.0, boxes[i].xmin));
    row[2] = static_cast<float>(std::min<double>(g.h, boxes[i].ymax));
    row[3] = static_cast<float>(std::min<double>(g.w, boxes[i].xmax));
    row[4] = static_cast<float>(boxes[i].cls);
  }
}

}  // namespace

void WriteSyntheticEwaFile(const EwaGeneratorOptions& options) {
  if (options.samples <= 0) {
    throw std::invalid_argument("make-ewa: --samples must be positive");
  }
  if (options.height < 32 || options.width < 48) {
    throw std::invalid_argument(
        "make-ewa: grid " + std::to_string(options.height) + "x" +
        std::to_string(options.width) + " is below the minimum 32x48");
  }
#ifdef HPCAI500_HAVE_HDF5
  const Grid g{options.height, options.width};
  const std::string& path = options.out;
  std::lock_guard<std::mutex> lock(internal::Hdf5Mutex());
  internal::SilenceHdf5Errors();
  // No timestamps anywhere, so equal inputs give equal bytes.
  internal::H5Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  H5Pset_obj_track_times(fcpl.get(), 0);
  internal::H5Handle file(
      H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT),
      H5Fclose);
  if (file.get() < 0) internal::FailEwaFile(path, "cannot be created");
  internal::H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(dcpl.get(), 0);
  H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);
  H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY);
  const hsize_t n = static_cast<hsize_t>(options.samples);
  const hsize_t image_dims[4] = {n, static_cast<hsize_t>(kEwaChannels),
                                 static_cast<hsize_t>(g.h),
                                 static_cast<hsize_t>(g.w)};
  const hsize_t box_dims[3] = {n, static_cast<hsize_t>(kEwaMaxBoxes),
                               static_cast<hsize_t>(kEwaBoxFields)};
  internal::H5Handle image_space(H5Screate_simple(4, image_dims, nullptr),
                                 H5Sclose);
  internal::H5Handle box_space(H5Screate_simple(3, box_dims, nullptr),
                               H5Sclose);
  internal::H5Handle images(
      H5Dcreate2(file.get(), "images", H5T_IEEE_F32LE, image_space.get(),
                 H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      H5Dclose);
  internal::H5Handle boxes(
      H5Dcreate2(file.get(), "boxes", H5T_IEEE_F32LE, box_space.get(),
                 H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      H5Dclose);
  if (images.get() < 0 || boxes.get() < 0)
    internal::FailEwaFile(path, "cannot create datasets");
  Rng rng(options.seed);
  std::vector<float> rows(options.samples * kEwaMaxBoxes * kEwaBoxFields);
  const hsize_t count[4] = {1, image_dims[1], image_dims[2], image_dims[3]};
  internal::H5Handle mem_space(H5Screate_simple(4, count, nullptr), H5Sclose);
  for (int64_t i = 0; i < options.samples; ++i) {
    Fields f(g);
    DrawSample(g, rng, f, rows.data() + i * kEwaMaxBoxes * kEwaBoxFields);
    const hsize_t start[4] = {static_cast<hsize_t>(i), 0, 0, 0};
    internal::H5Handle slab(H5Dget_space(images.get()), H5Sclose);
    H5Sselect_hyperslab(slab.get(), H5S_SELECT_SET, start, nullptr, count,
                        nullptr);
    if (H5Dwrite(images.get(), H5T_NATIVE_FLOAT, mem_space.get(), slab.get(),
                 H5P_DEFAULT, f.data().data()) < 0) {
      internal::FailEwaFile(path, "cannot write sample " + std::to_string(i));
    }
  }
  if (H5Dwrite(boxes.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
               rows.data()) < 0) {
    internal::FailEwaFile(path, "cannot write boxes");
  }
#else
  internal::NoHdf5("writing " + options.out);
#endif
}

}  // namespace hpcai500::worker
