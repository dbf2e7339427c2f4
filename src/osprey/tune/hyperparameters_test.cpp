// Sampling statistics with fixed seeds: ranges, steps, log scale, choices and conditions; the
// same value twice in a trial; JSON round trips; errors that name the hyperparameter.
#include "osprey/tune/hyperparameters.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"

namespace osprey::tune {
namespace {

// A deterministic stream of uniforms, the way the oracle draws them.
struct Uniforms {
  explicit Uniforms(uint64_t seed) : rng(seed) {}
  double operator()() {
    const auto w = rng(i++);
    return Philox::to_unit_double(w[0], w[1]);
  }
  Philox rng;
  uint64_t i = 0;
};

// Found by fuzz_tuner_state: an Int's bounds given as floats past int64 were cast unchecked.
TEST(HyperParameterTest, AnIntWhoseBoundsAreFloatsPastInt64IsRefused) {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"class_name": "Int", "config": {"name": "units", "min_value": 2.2e49, "max_value": 8}})");
  try {
    HyperParameter::from_json(j, "oracle.json: space[0]");
    FAIL() << "accepted min_value = 2.2e49";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "oracle.json: space[0] ('units'): min_value is 2.2e+49, past the +-9.2e+18 a "
                 "number here may take");
  }
}

// Found by fuzz_toml (fuzz/regressions/toml): a stepped range of more values than int64 counts
// (0 to 1e23 by 32) was counted with an unchecked cast. Such a grid is refused when declared.
TEST(HyperParameterTest, AGridOfMoreThan2To53ValuesIsRefused) {
  try {
    HyperParameter::Float("rate", 0.0, 1e23, 32.0);
    FAIL() << "accepted 3.1e21 grid values";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "hyperparameter 'rate': step 32 makes 3.12e+21 values from 0 to 1e+23; at most "
                 "2^53 are allowed (use a larger step, or none)");
  }
  EXPECT_THROW(HyperParameter::Float("f", 1e-300, 1e300, 1.0 + 1e-15, Sampling::log), ValueError);
  EXPECT_THROW(HyperParameter::Int("i", INT64_MIN, INT64_MAX, 1), ValueError);
  EXPECT_NO_THROW(HyperParameter::Float("ok", 0.0, 1e15, 0.25));  // 4e15 values: allowed
}

TEST(HyperParameterTest, IntWithStepSamplesEveryGridValueUniformly) {
  const auto hp = HyperParameter::Int("units", 16, 64, 16);
  Uniforms u(1);
  std::map<int64_t, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) counts[hp.from_unit(u()).as_int()]++;
  ASSERT_EQ(counts.size(), 4u);
  for (int64_t v : {16, 32, 48, 64}) {
    ASSERT_TRUE(counts.count(v)) << v;
    // Binomial(20000, 1/4): sd ~ 61; 5 sd.
    EXPECT_NEAR(counts[v], n / 4.0, 310) << v;
  }
}

TEST(HyperParameterTest, IntWithoutStepCoversEveryIntegerIncludingTheEnds) {
  const auto hp = HyperParameter::Int("layers", 1, 3);
  Uniforms u(2);
  std::map<int64_t, int> counts;
  for (int i = 0; i < 9000; ++i) counts[hp.from_unit(u()).as_int()]++;
  ASSERT_EQ(counts.size(), 3u);
  for (int64_t v : {1, 2, 3}) EXPECT_NEAR(counts[v], 3000, 250) << v;
}

TEST(HyperParameterTest, FloatLogSamplingIsUniformInTheLogarithm) {
  const auto hp = HyperParameter::Float("lr", 1e-4, 1e-1, std::nullopt, Sampling::log);
  Uniforms u(3);
  int per_decade[3] = {0, 0, 0};
  const int n = 30000;
  for (int i = 0; i < n; ++i) {
    const double v = hp.from_unit(u()).as_double();
    ASSERT_GE(v, 1e-4);
    ASSERT_LE(v, 1e-1);
    per_decade[std::min(2, static_cast<int>(std::floor(std::log10(v) + 4)))]++;
  }
  // Log-uniform: each decade a third; linear sampling would put 90% in the last decade.
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(per_decade[d], n / 3.0, 400) << d;
}

TEST(HyperParameterTest, ReverseLogConcentratesNearTheMaximum) {
  const auto hp = HyperParameter::Float("momentum", 0.01, 1.0, std::nullopt, Sampling::reverse_log);
  Uniforms u(4);
  int above = 0;
  const int n = 10000;
  for (int i = 0; i < n; ++i) {
    const double v = hp.from_unit(u()).as_double();
    ASSERT_GE(v, 0.01);
    ASSERT_LE(v, 1.0);
    above += v > 0.9 ? 1 : 0;
  }
  // Mirror of log: P(v > 0.9) = P(log-uniform < 0.11) = log(11)/log(100) = 0.52.
  EXPECT_NEAR(above / double(n), std::log(11.0) / std::log(100.0), 0.02);
}

TEST(HyperParameterTest, LogStepIsAFactor) {
  const auto hp = HyperParameter::Int("batch", 16, 256, 2, Sampling::log);
  Uniforms u(5);
  std::map<int64_t, int> counts;
  for (int i = 0; i < 5000; ++i) counts[hp.from_unit(u()).as_int()]++;
  std::vector<int64_t> seen;
  seen.reserve(counts.size());
  for (auto& [k, c] : counts) seen.push_back(k);
  EXPECT_EQ(seen, (std::vector<int64_t>{16, 32, 64, 128, 256}));
  for (auto& [k, c] : counts) EXPECT_NEAR(c, 1000, 150) << k;
}

TEST(HyperParameterTest, FloatStepSnapsToTheGrid) {
  const auto hp = HyperParameter::Float("dropout", 0.0, 0.5, 0.1);
  Uniforms u(6);
  for (int i = 0; i < 1000; ++i) {
    const double v = hp.from_unit(u()).as_double();
    EXPECT_NEAR(v * 10, std::round(v * 10), 1e-9);
    EXPECT_TRUE(hp.contains(v));
  }
  EXPECT_FALSE(hp.contains(0.05));
}

TEST(HyperParameterTest, ToUnitInvertsFromUnit) {
  const auto lr = HyperParameter::Float("lr", 1e-4, 1e-1, std::nullopt, Sampling::log);
  EXPECT_NEAR(lr.to_unit(1e-4), 0.0, 1e-12);
  EXPECT_NEAR(lr.to_unit(1e-1), 1.0, 1e-12);
  EXPECT_NEAR(lr.to_unit(std::sqrt(1e-4 * 1e-1)), 0.5, 1e-12);  // geometric middle
  for (double u : {0.1, 0.37, 0.8}) EXPECT_NEAR(lr.to_unit(lr.from_unit(u)), u, 1e-12);
  const auto units = HyperParameter::Int("units", 16, 64, 16);
  for (int64_t v : {16, 32, 48, 64}) EXPECT_EQ(units.from_unit(units.to_unit(v)).as_int(), v);
  const auto opt = HyperParameter::Choice("opt", {"sgd", "adam", "rmsprop"});
  EXPECT_EQ(opt.from_unit(opt.to_unit("adam")).as_string(), "adam");
}

TEST(HyperParameterTest, ChoiceIsUniformOverValues) {
  const auto hp = HyperParameter::Choice("activation", {"relu", "tanh", "gelu", "elu"});
  Uniforms u(7);
  std::map<std::string, int> counts;
  for (int i = 0; i < 8000; ++i) counts[hp.from_unit(u()).as_string()]++;
  ASSERT_EQ(counts.size(), 4u);
  for (auto& [k, c] : counts) EXPECT_NEAR(c, 2000, 200) << k;
}

TEST(HyperParametersTest, SameNameReturnsTheSameValueWithinATrial) {
  HyperParameters hp;
  hp.set("units", int64_t{48});
  EXPECT_EQ(hp.Int("units", 16, 64, {.step = 16}), 48);
  EXPECT_EQ(hp.Int("units", 16, 64, {.step = 16}), 48);
  EXPECT_EQ(hp.space().size(), 1u);
  // Without a value, the default; then stable.
  EXPECT_EQ(hp.Int("layers", 1, 3, {.default_value = 2}), 2);
  EXPECT_EQ(hp.Int("layers", 1, 3), 2);
  EXPECT_EQ(hp.Choice("optimizer", {"rmsprop", "adam"}), "rmsprop");
  EXPECT_FALSE(hp.Boolean("shuffle"));
  EXPECT_DOUBLE_EQ(hp.Fixed("momentum", 0.9), 0.9);
  EXPECT_EQ(hp.Choice("batch", {32, 64}), 32);
  static_assert(std::is_same_v<decltype(hp.Choice("batch", {32, 64})), int64_t>);
}

TEST(HyperParametersTest, ConditionalHyperparametersAreActiveOnlyForTheirParentValues) {
  HyperParameters hp;
  hp.set("model", "mlp");
  const std::string model = hp.Choice("model", {"mlp", "cnn"});
  EXPECT_EQ(model, "mlp");
  {
    auto scope = hp.conditional_scope("model", {"cnn"});
    EXPECT_EQ(hp.Int("filters", 8, 64, {.default_value = 32}), 32);  // inactive: default
  }
  {
    auto scope = hp.conditional_scope("model", {"mlp"});
    hp.Int("units", 16, 64);
  }
  EXPECT_FALSE(hp.is_active("filters"));
  EXPECT_TRUE(hp.is_active("units"));
  EXPECT_FALSE(hp.has_value("filters"));
  EXPECT_TRUE(hp.has_value("units"));
  ASSERT_EQ(hp.find("filters")->conditions.size(), 1u);
  EXPECT_EQ(hp.find("filters")->conditions[0].parent, "model");
  // Declared outside any scope: unconditional.
  hp.Float("lr", 1e-4, 1e-2);
  EXPECT_TRUE(hp.find("lr")->conditions.empty());
  hp.set("model", "cnn");
  EXPECT_TRUE(hp.is_active("filters"));
  EXPECT_FALSE(hp.is_active("units"));
}

TEST(HyperParametersTest, ConditionalScopeNeedsADeclaredParentAndValidValues) {
  HyperParameters hp;
  EXPECT_THROW((void)hp.conditional_scope("model", {"mlp"}), ValueError);
  hp.Choice("model", {"mlp", "cnn"});
  try {
    (void)hp.conditional_scope("model", {"rnn"});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rnn"), std::string::npos) << e.what();
  }
}

TEST(HyperParametersTest, JsonRoundTripKeepsSpaceValuesAndConditions) {
  HyperParameters hp;
  hp.Int("units", 16, 64, {.step = 16});
  hp.Float("lr", 1e-4, 1e-2, {.sampling = "log", .default_value = 1e-3});
  hp.Choice("opt", {"adam", "sgd"});
  {
    auto s = hp.conditional_scope("opt", {"sgd"});
    hp.Float("momentum", 0.0, 0.9, {.step = 0.1});
  }
  hp.Boolean("bn", {.default_value = true});
  hp.Fixed("seed", 3);
  hp.set("units", int64_t{48});
  const auto j = hp.to_json();
  const auto back = HyperParameters::from_json(nlohmann::json::parse(j.dump()), "test");
  EXPECT_EQ(back.space(), hp.space());
  EXPECT_EQ(back.values(), hp.values());
  EXPECT_TRUE(back.get("units").is_int());
  EXPECT_TRUE(back.get("lr").is_float());
}

TEST(HyperParametersTest, ErrorsNameTheHyperparameter) {
  HyperParameters hp;
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { hp.Int("units", 64, 16); }).find("'units'"), std::string::npos);
  EXPECT_NE(message([&] { hp.Float("lr", 0.0, 1.0, {.sampling = "log"}); }).find("'lr'"),
            std::string::npos);
  EXPECT_NE(message([&] { hp.Float("x", 0.0, 1.0, {.sampling = "cubic"}); }).find("cubic"),
            std::string::npos);
  EXPECT_NE(message([&] { hp.Int("n", 1, 4, {.default_value = 9}); }).find("default 9"),
            std::string::npos);
  hp.Int("k", 1, 3);
  EXPECT_NE(message([&] { hp.Float("k", 0.0, 1.0); }).find("already a Int"), std::string::npos);
  EXPECT_NE(message([&] { hp.set("k", int64_t{7}); }).find("'k'"), std::string::npos);
}

TEST(HyperParametersTest, SummaryListsRangesAndDefaults) {
  HyperParameters hp;
  hp.Int("units", 16, 64, {.step = 16});
  hp.Choice("optimizer", {"rmsprop", "adam"});
  const std::string s = hp.summary();
  EXPECT_NE(s.find("Default search space size: 2"), std::string::npos) << s;
  EXPECT_NE(s.find("units (Int)\n  [16, 64] step 16, linear, default 16"), std::string::npos) << s;
  EXPECT_NE(s.find("optimizer (Choice)\n  {rmsprop, adam}, default rmsprop"), std::string::npos)
      << s;
}

}  // namespace
}  // namespace osprey::tune
