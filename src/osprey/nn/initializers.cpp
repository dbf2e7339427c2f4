#include "osprey/nn/initializers.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "osprey/core/rng.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

namespace initializers {

std::pair<double, double> compute_fans(const Shape& shape) {
  if (shape.ndim() == 0) return {1.0, 1.0};
  if (shape.ndim() == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  if (shape.ndim() == 2) return {static_cast<double>(shape[0]), static_cast<double>(shape[1])};
  double receptive = 1.0;
  for (int i = 0; i + 2 < shape.ndim(); ++i) receptive *= static_cast<double>(shape[i]);
  return {receptive * static_cast<double>(shape[shape.ndim() - 2]),
          receptive * static_cast<double>(shape[shape.ndim() - 1])};
}

namespace {

// A normal truncated at two standard deviations, as Keras: out-of-range draws are redrawn from
// further counter blocks of the same element, so the result stays thread-count independent.
Tensor truncated_normal(const Shape& shape, DType dtype, uint64_t seed, double stddev) {
  Tensor t = Tensor::empty(shape, {DType::float64});
  double* p = t.data<double>();
  const Philox rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double z = 0;
    for (uint64_t attempt = 0;; ++attempt) {
      const auto w = rng(static_cast<uint64_t>(i), attempt + 1);
      const double u1 = 1.0 - Philox::to_unit_double(w[0], w[1]);
      const double u2 = Philox::to_unit_double(w[2], w[3]);
      z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      if (std::fabs(z) <= 2.0 || attempt > 64) break;
    }
    p[i] = z * stddev;
  }
  return t.to(dtype);
}

// Keras's VarianceScaling: scale / fan, with a truncated normal (corrected to keep the
// variance), a plain normal, or a uniform.
Initializer variance_scaling(std::string name, std::string class_name, double scale,
                             std::string mode, std::string distribution) {
  nlohmann::json config = {
      {"scale", scale}, {"mode", mode}, {"distribution", distribution}, {"seed", nullptr}};
  return Initializer(
      std::move(name), {{"class_name", class_name}, {"config", config}},
      [=](const Shape& shape, DType dtype, uint64_t seed) {
        auto [fan_in, fan_out] = compute_fans(shape);
        const double n = mode == "fan_in"    ? fan_in
                         : mode == "fan_out" ? fan_out
                                             : (fan_in + fan_out) / 2.0;
        const double s = scale / std::max(1.0, n);
        if (distribution == "truncated_normal") {
          return truncated_normal(shape, dtype, seed, std::sqrt(s) / 0.87962566103423978);
        }
        if (distribution == "untruncated_normal") {
          return random_normal(shape, {.seed = seed, .dtype = dtype, .stddev = std::sqrt(s)});
        }
        const double limit = std::sqrt(3.0 * s);
        return random_uniform(shape, {.seed = seed, .dtype = dtype, .low = -limit, .high = limit});
      });
}

}  // namespace

Initializer Zeros() {
  return {"zeros",
          {{"class_name", "Zeros"}, {"config", nlohmann::json::object()}},
          [](const Shape& s, DType d, uint64_t) { return zeros(s, {d}); }};
}
Initializer Ones() {
  return {"ones",
          {{"class_name", "Ones"}, {"config", nlohmann::json::object()}},
          [](const Shape& s, DType d, uint64_t) { return ones(s, {d}); }};
}
Initializer Constant(double value) {
  return {"constant",
          {{"class_name", "Constant"}, {"config", {{"value", value}}}},
          [value](const Shape& s, DType d, uint64_t) { return full(s, value, {d}); }};
}
Initializer RandomNormal(double mean, double stddev) {
  OSPREY_CHECK(stddev >= 0, "RandomNormal: stddev must be non-negative. Received: {}", stddev);
  return {"random_normal",
          {{"class_name", "RandomNormal"},
           {"config", {{"mean", mean}, {"stddev", stddev}, {"seed", nullptr}}}},
          [=](const Shape& s, DType d, uint64_t seed) {
            return random_normal(s, {.seed = seed, .dtype = d, .mean = mean, .stddev = stddev});
          }};
}
Initializer RandomUniform(double minval, double maxval) {
  OSPREY_CHECK(minval <= maxval, "RandomUniform: minval must not exceed maxval. Received: {} > {}",
               minval, maxval);
  return {"random_uniform",
          {{"class_name", "RandomUniform"},
           {"config", {{"minval", minval}, {"maxval", maxval}, {"seed", nullptr}}}},
          [=](const Shape& s, DType d, uint64_t seed) {
            return random_uniform(s, {.seed = seed, .dtype = d, .low = minval, .high = maxval});
          }};
}
Initializer GlorotUniform() {
  return variance_scaling("glorot_uniform", "GlorotUniform", 1.0, "fan_avg", "uniform");
}
Initializer GlorotNormal() {
  return variance_scaling("glorot_normal", "GlorotNormal", 1.0, "fan_avg", "truncated_normal");
}
Initializer HeNormal() {
  return variance_scaling("he_normal", "HeNormal", 2.0, "fan_in", "truncated_normal");
}
Initializer HeUniform() {
  return variance_scaling("he_uniform", "HeUniform", 2.0, "fan_in", "uniform");
}
Initializer LecunNormal() {
  return variance_scaling("lecun_normal", "LecunNormal", 1.0, "fan_in", "truncated_normal");
}

Initializer Orthogonal(double gain) {
  return {"orthogonal",
          {{"class_name", "Orthogonal"}, {"config", {{"gain", gain}, {"seed", nullptr}}}},
          [=](const Shape& shape, DType dtype, uint64_t seed) {
            OSPREY_CHECK(shape.ndim() >= 2,
                         "Orthogonal: the weight needs at least 2 dimensions. Received: {}",
                         shape.to_string());
            const int64_t cols = shape[shape.ndim() - 1], rows = shape.numel() / cols;
            // The QR factor of a normal [n, k] matrix (n >= k) with R's diagonal positive (what
            // Keras gets by flipping signs): Gram-Schmidt, orthogonalized twice for accuracy,
            // by hand since osprey links no LAPACK for this one use.
            const int64_t n = std::max(rows, cols), k = std::min(rows, cols);
            const Tensor a = random_normal({k, n}, {.seed = seed, .dtype = DType::float64});
            std::vector<double> q(a.data<double>(), a.data<double>() + k * n);  // row j: column j
            for (int64_t j = 0; j < k; ++j) {
              double* v = q.data() + j * n;
              for (int pass = 0; pass < 2; ++pass) {
                for (int64_t i = 0; i < j; ++i) {
                  const double* u = q.data() + i * n;
                  double dot = 0;
                  for (int64_t t = 0; t < n; ++t) dot += u[t] * v[t];
                  for (int64_t t = 0; t < n; ++t) v[t] -= dot * u[t];
                }
              }
              double norm = 0;
              for (int64_t t = 0; t < n; ++t) norm += v[t] * v[t];
              norm = std::sqrt(norm);
              for (int64_t t = 0; t < n; ++t) v[t] /= norm;
            }
            for (double& x : q) x *= gain;
            // q holds Q^T [k, n]: that is the weight when it is wider than tall, else its
            // transpose.
            const Tensor qt = from_vector<double>(q, {k, n});
            const Tensor w = rows >= cols ? qt.transpose(0, 1).contiguous() : qt;
            return w.reshape(shape).to(dtype);
          }};
}

Initializer get(const std::string& name) {
  if (name == "zeros") return Zeros();
  if (name == "ones") return Ones();
  if (name == "glorot_uniform") return GlorotUniform();
  if (name == "glorot_normal") return GlorotNormal();
  if (name == "he_normal") return HeNormal();
  if (name == "he_uniform") return HeUniform();
  if (name == "lecun_normal") return LecunNormal();
  if (name == "random_normal") return RandomNormal();
  if (name == "random_uniform") return RandomUniform();
  if (name == "orthogonal") return Orthogonal();
  OSPREY_THROW(
      ValueError,
      "unknown initializer '{}'. Expected one of: zeros, ones, glorot_uniform, glorot_normal, "
      "he_normal, he_uniform, lecun_normal, random_normal, random_uniform, orthogonal",
      name);
}

Initializer from_json(const nlohmann::json& j) {
  if (j.is_string()) return get(j.get<std::string>());
  OSPREY_CHECK(j.is_object() && j.contains("class_name"),
               "initializer config must be a name or "
               "{{\"class_name\": ..., \"config\": ...}}. Received: {}",
               j.dump());
  const std::string cls = j.at("class_name").get<std::string>();
  const nlohmann::json c = j.value("config", nlohmann::json::object());
  if (cls == "Constant") return Constant(c.value("value", 0.0));
  if (cls == "RandomNormal") return RandomNormal(c.value("mean", 0.0), c.value("stddev", 0.05));
  if (cls == "RandomUniform")
    return RandomUniform(c.value("minval", -0.05), c.value("maxval", 0.05));
  if (cls == "Orthogonal") return Orthogonal(c.value("gain", 1.0));
  if (cls == "VarianceScaling") {
    return variance_scaling("variance_scaling", "VarianceScaling", c.value("scale", 1.0),
                            c.value("mode", std::string("fan_in")),
                            c.value("distribution", std::string("truncated_normal")));
  }
  static const std::pair<const char*, const char*> kNames[] = {{"Zeros", "zeros"},
                                                               {"Ones", "ones"},
                                                               {"GlorotUniform", "glorot_uniform"},
                                                               {"GlorotNormal", "glorot_normal"},
                                                               {"HeNormal", "he_normal"},
                                                               {"HeUniform", "he_uniform"},
                                                               {"LecunNormal", "lecun_normal"}};
  for (const auto& [k, n] : kNames) {
    if (cls == k) return get(n);
  }
  OSPREY_THROW(ValueError, "unknown initializer class '{}'", cls);
}

}  // namespace initializers

Initializer::Initializer(const char* name) : Initializer(initializers::get(name)) {}
Initializer::Initializer(const std::string& name) : Initializer(initializers::get(name)) {}

Tensor Initializer::operator()(const Shape& shape, DType dtype, uint64_t seed) const {
  OSPREY_CHECK(defined(), "Initializer: calling an undefined initializer");
  return fn_(shape, dtype, seed);
}

nlohmann::json Initializer::to_json() const { return config_; }

}  // namespace osprey::nn
