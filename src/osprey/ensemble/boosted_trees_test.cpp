#include "osprey/ensemble/boosted_trees.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "osprey/core/error_of_test.h"
#include "osprey/io/io_test_util.h"
#include "osprey/tensor/factory.h"

#ifdef OSPREY_WITH_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace osprey::ensemble {
namespace {

using osprey::testing::error_of;

using io::testing::TempDir;

TEST(BoostedTreesOptionsTest, JsonRoundTripKeepsEveryField) {
  BoostedTreesOptions o;
  o.num_boost_round = 7;
  o.max_depth = 3;
  o.learning_rate = 0.05;
  o.subsample = 0.8;
  o.colsample_bytree = 0.6;
  o.min_child_weight = 2.5;
  o.reg_lambda = 0.1;
  o.tree_method = "approx";
  o.max_bin = 64;
  o.nthread = 2;
  o.seed = 18446744073709551615ULL;  // past INT64_MAX: JSON keeps it unsigned
  o.early_stopping_rounds = 4;
  o.verbose = 1;
  const nlohmann::json j = nlohmann::json::parse(to_json(o).dump());
  EXPECT_EQ(j.size(), 13U);
  EXPECT_EQ(j.at("learning_rate"), 0.05);
  EXPECT_EQ(boosted_trees_options_from_json(j), o);
}

TEST(BoostedTreesOptionsTest, MissingFieldsKeepDefaultsAndBadFieldsAreNamed) {
  BoostedTreesOptions expected;
  expected.max_depth = 2;
  EXPECT_EQ(boosted_trees_options_from_json({{"max_depth", 2}}), expected);
  EXPECT_EQ(error_of<ValueError>([] {
              boosted_trees_options_from_json({{"eta", 0.1}});
            }),
            "BoostedTreesOptions: field \"eta\" is not a BoostedTreesOptions field");
  EXPECT_EQ(error_of<ValueError>([] {
              boosted_trees_options_from_json({{"max_depth", "6"}});
            }),
            "BoostedTreesOptions: field \"max_depth\" must be an integer, got string");
}

#ifdef OSPREY_WITH_XGBOOST

constexpr int kClasses = 3;
constexpr int64_t kFeatures = 5;

// Three blobs in 5-D: class c has mean 3 on feature c and 0 elsewhere, unit noise; class ids
// cycle 0, 1, 2, ... so every class has n / 3 rows.
struct Blobs {
  Tensor x, y;
};
Blobs blobs(int64_t n, uint64_t seed) {
  Blobs b{random_normal({n, kFeatures}, {.seed = seed}), Tensor::empty({n}, {DType::int64})};
  float* x = b.x.data<float>();
  int64_t* y = b.y.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    y[i] = i % kClasses;
    x[i * kFeatures + y[i]] += 3.0F;
  }
  return b;
}

// Noise: features and labels unrelated, so a deep model overfits at once and its validation
// loss rises after the first rounds.
Blobs noise(int64_t n, uint64_t seed) {
  Blobs b{random_normal({n, kFeatures}, {.seed = seed}), Tensor::empty({n}, {DType::int64})};
  const Tensor u = random_uniform({n}, {.seed = seed + 1});
  for (int64_t i = 0; i < n; ++i) {
    b.y.data<int64_t>()[i] = std::min<int64_t>(kClasses - 1, u.data<float>()[i] * kClasses);
  }
  return b;
}

BoostedTreesOptions small_options() {
  BoostedTreesOptions o;
  o.num_boost_round = 15;
  o.max_depth = 3;
  o.seed = 7;
  o.nthread = 1;  // the tests share a few cores with others: one thread keeps them fast
  return o;
}

struct RawBooster {
  BoosterHandle h = nullptr;
  RawBooster() {
    EXPECT_EQ(XGBoosterCreate(nullptr, 0, &h), 0) << XGBGetLastError();
    EXPECT_EQ(XGBoosterSetParam(h, "nthread", "1"), 0) << XGBGetLastError();
  }
  ~RawBooster() { XGBoosterFree(h); }
};
struct RawDMatrix {
  DMatrixHandle h = nullptr;
  explicit RawDMatrix(const Tensor& x) {
    EXPECT_EQ(XGDMatrixCreateFromMat(x.data<float>(), x.size(0), x.size(1),
                                     std::numeric_limits<float>::quiet_NaN(), &h),
              0)
        << XGBGetLastError();
  }
  ~RawDMatrix() { XGDMatrixFree(h); }
};

// XGBoost's own prediction for x ([N, F] float32) from a model file, over rounds [0, end).
std::vector<float> xgboost_predict(const std::filesystem::path& model, const Tensor& x, int end) {
  RawBooster b;
  EXPECT_EQ(XGBoosterLoadModel(b.h, model.string().c_str()), 0) << XGBGetLastError();
  RawDMatrix d(x);
  const std::string config =
      fmt::format(R"({{"type": 0, "training": false, "iteration_begin": 0, "iteration_end": {}, )"
                  R"("strict_shape": false}})",
                  end);
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  EXPECT_EQ(XGBoosterPredictFromDMatrix(b.h, d.h, config.c_str(), &shape, &dim, &out), 0)
      << XGBGetLastError();
  EXPECT_EQ(dim, 2U);
  return std::vector<float>(out, out + shape[0] * shape[1]);
}

int boosted_rounds(const std::filesystem::path& model) {
  RawBooster b;
  EXPECT_EQ(XGBoosterLoadModel(b.h, model.string().c_str()), 0) << XGBGetLastError();
  int rounds = 0;
  EXPECT_EQ(XGBoosterBoostedRounds(b.h, &rounds), 0) << XGBGetLastError();
  return rounds;
}

double accuracy(const Tensor& proba, const Tensor& y) {
  const auto p = proba.to_vector<float>();
  const auto t = y.to_vector<int64_t>();
  int64_t right = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const float* row = p.data() + i * kClasses;
    right += std::max_element(row, row + kClasses) - row == t[i];
  }
  return static_cast<double>(right) / static_cast<double>(t.size());
}

TEST(BoostedTreesTest, XGBoostIsBuilt) { EXPECT_TRUE(xgboost_built()); }

TEST(BoostedTreesTest, LearnsSeparableBlobsWithRowsSummingToOne) {
  const Blobs train = blobs(300, 1);
  const Blobs test = blobs(150, 2);
  const BoostedTrees trees = BoostedTrees::fit(train.x, train.y, kClasses, small_options());
  EXPECT_TRUE(trees.defined());
  EXPECT_EQ(trees.num_classes(), kClasses);
  EXPECT_EQ(trees.num_features(), kFeatures);
  EXPECT_EQ(trees.best_iteration(), -1);
  const Tensor p = trees.predict_proba(test.x);
  ASSERT_EQ(p.shape(), Shape({150, kClasses}));
  EXPECT_EQ(p.dtype(), DType::float32);
  EXPECT_GT(accuracy(p, test.y), 0.95);
  const auto v = p.to_vector<float>();
  for (int64_t i = 0; i < 150; ++i) {
    EXPECT_NEAR(v[i * 3] + v[i * 3 + 1] + v[i * 3 + 2], 1.0, 1e-5) << "row " << i;
  }
  // [N, ...] is flattened: the same rows as [N, 1, 5] predict the same.
  const auto flat = trees.predict_proba(test.x.reshape({150, 1, kFeatures})).to_vector<float>();
  EXPECT_EQ(flat, v);
}

TEST(BoostedTreesTest, PredictionsEqualXGBoostsOwnOnTheSavedModel) {
  const Blobs train = blobs(300, 3);
  const Blobs test = blobs(60, 4);
  const BoostedTrees trees = BoostedTrees::fit(train.x, train.y, kClasses, small_options());
  const TempDir dir;
  trees.save(dir / "trees.json");
  EXPECT_EQ(trees.predict_proba(test.x).to_vector<float>(),
            xgboost_predict(dir / "trees.json", test.x, 0));
}

TEST(BoostedTreesTest, SaveLoadRoundTripIsBitIdenticalAndWritesXGBoostJson) {
  const Blobs train = blobs(300, 5);
  const Blobs val = blobs(90, 6);
  const Blobs test = blobs(60, 7);
  BoostedTreesOptions o = small_options();
  o.early_stopping_rounds = 3;
  const BoostedTrees trees = BoostedTrees::fit(train.x, train.y, kClasses, o, &val.x, &val.y);
  ASSERT_GE(trees.best_iteration(), 0);
  const TempDir dir;
  const auto file = dir / "trees.json";
  io::testing::write_bytes(file, "old content");  // replaced whole
  trees.save(file);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"trees.json"});  // no temporary left
  const nlohmann::json j = nlohmann::json::parse(io::testing::read_bytes(file));
  ASSERT_TRUE(j.contains("learner"));
  EXPECT_EQ(j["learner"]["attributes"]["best_iteration"], std::to_string(trees.best_iteration()));
  EXPECT_EQ(j["learner"]["learner_model_param"]["num_class"], "3");

  const BoostedTrees back = BoostedTrees::load(file);
  EXPECT_EQ(back.num_classes(), kClasses);
  EXPECT_EQ(back.num_features(), kFeatures);
  EXPECT_EQ(back.best_iteration(), trees.best_iteration());
  EXPECT_EQ(back.predict_proba(test.x).to_vector<float>(),
            trees.predict_proba(test.x).to_vector<float>());
}

TEST(BoostedTreesTest, EarlyStoppingKeepsTheBestRoundAndPredictsWithIt) {
  const Blobs train = noise(200, 11);
  const Blobs val = noise(100, 13);
  BoostedTreesOptions o = small_options();
  o.num_boost_round = 40;
  o.max_depth = 6;
  o.subsample = 0.8;  // the seed matters: the comparison below needs the same samples
  o.seed = 3;
  o.early_stopping_rounds = 3;
  const BoostedTrees trees = BoostedTrees::fit(train.x, train.y, kClasses, o, &val.x, &val.y);
  const int best = trees.best_iteration();
  ASSERT_GE(best, 0);
  const TempDir dir;
  trees.save(dir / "trees.json");
  // Training ran exactly early_stopping_rounds rounds past the best one, well short of 40.
  const int rounds = boosted_rounds(dir / "trees.json");
  EXPECT_EQ(rounds, best + 1 + o.early_stopping_rounds);
  ASSERT_LT(rounds, o.num_boost_round);

  // The best round has the lowest validation mlogloss of those trained, computed here from
  // XGBoost's predictions over rounds [0, k].
  const auto labels = val.y.to_vector<int64_t>();
  std::vector<double> loss;
  for (int k = 0; k < rounds; ++k) {
    const auto p = xgboost_predict(dir / "trees.json", val.x, k + 1);
    double sum = 0;
    for (size_t i = 0; i < labels.size(); ++i) sum -= std::log(p[i * kClasses + labels[i]]);
    loss.push_back(sum / static_cast<double>(labels.size()));
  }
  EXPECT_EQ(std::min_element(loss.begin(), loss.end()) - loss.begin(), best);
  EXPECT_GT(loss.back(), loss[best]);

  // predict_proba uses rounds [0, best]: the same as a model trained for best + 1 rounds.
  o.num_boost_round = best + 1;
  o.early_stopping_rounds = 0;
  const BoostedTrees shorter = BoostedTrees::fit(train.x, train.y, kClasses, o);
  const auto p = trees.predict_proba(val.x).to_vector<float>();
  EXPECT_EQ(p, shorter.predict_proba(val.x).to_vector<float>());
  EXPECT_NE(p, xgboost_predict(dir / "trees.json", val.x, 0));  // all rounds differ
}

TEST(BoostedTreesTest, VerboseLogsEveryTenthRoundAndTheLast) {
  const Blobs train = blobs(60, 15);
  const Blobs val = blobs(30, 17);
  BoostedTreesOptions o = small_options();
  o.num_boost_round = 12;
  o.verbose = 1;
  ::testing::internal::CaptureStdout();
  BoostedTrees::fit(train.x, train.y, kClasses, o, &val.x, &val.y);
  const std::string log = ::testing::internal::GetCapturedStdout();
  std::vector<std::string> rounds;
  for (size_t p = 0; (p = log.find('[', p)) != std::string::npos; ++p) {
    rounds.push_back(log.substr(p, log.find('\t', p) - p));
  }
  EXPECT_EQ(rounds, (std::vector<std::string>{"[0]", "[10]", "[11]"})) << log;
  EXPECT_NE(log.find("[11]\ttrain-mlogloss:"), std::string::npos) << log;
  EXPECT_NE(log.find("\tvalidation-mlogloss:"), std::string::npos) << log;
}

TEST(BoostedTreesTest, LabelsMayBeInt32Int64OrIntegralFloats) {
  const Blobs train = blobs(90, 21);
  BoostedTreesOptions o = small_options();
  o.num_boost_round = 3;
  const auto p64 = BoostedTrees::fit(train.x, train.y, kClasses, o).predict_proba(train.x);
  const auto p32 =
      BoostedTrees::fit(train.x, train.y.to(DType::int32), kClasses, o).predict_proba(train.x);
  const auto pf =
      BoostedTrees::fit(train.x, train.y.to(DType::float32).reshape({90, 1}), kClasses, o)
          .predict_proba(train.x);
  EXPECT_EQ(p32.to_vector<float>(), p64.to_vector<float>());
  EXPECT_EQ(pf.to_vector<float>(), p64.to_vector<float>());
}

TEST(BoostedTreesTest, NanFeaturesAreMissingValues) {
  Blobs train = blobs(150, 23);
  float* x = train.x.data<float>();
  for (int64_t i = 0; i < 150 * kFeatures; i += 7) x[i] = std::nanf("");
  BoostedTreesOptions o = small_options();
  o.num_boost_round = 5;
  const BoostedTrees trees = BoostedTrees::fit(train.x, train.y, kClasses, o);
  const Tensor all_missing = full({1, kFeatures}, std::nan(""));
  const auto p = trees.predict_proba(all_missing).to_vector<float>();
  ASSERT_EQ(p.size(), 3U);
  for (float v : p) EXPECT_TRUE(std::isfinite(v) && v > 0.0F && v < 1.0F) << v;
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-5);
}

TEST(BoostedTreesTest, MovingTransfersTheModel) {
  const Blobs train = blobs(60, 25);
  BoostedTreesOptions o = small_options();
  o.num_boost_round = 2;
  BoostedTrees a = BoostedTrees::fit(train.x, train.y, kClasses, o);
  const auto before = a.predict_proba(train.x).to_vector<float>();
  BoostedTrees b = std::move(a);
  EXPECT_FALSE(a.defined());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(b.predict_proba(train.x).to_vector<float>(), before);
  BoostedTrees c;
  c = std::move(b);
  EXPECT_EQ(c.num_classes(), kClasses);
}

TEST(BoostedTreesTest, BadInputsAreRefusedWithClearMessages) {
  const Blobs d = blobs(6, 27);
  const auto fit = [&](const Tensor& x, const Tensor& y, int classes = kClasses) {
    BoostedTrees::fit(x, y, classes, small_options());
  };
  EXPECT_EQ(error_of<ValueError>([&] { fit(full(Shape{}, 1.0), d.y); }),
            "BoostedTrees.fit: x must be [N, ...] with one row per sample. Received: "
            "float32[] on cpu:0");
  EXPECT_EQ(error_of<ValueError>([&] { fit(d.x, d.y.slice(0, 0, 5)); }),
            "BoostedTrees.fit: x and y must have the same number of rows. Received: x has 6, "
            "y has 5");
  EXPECT_EQ(error_of<ValueError>([&] {
              fit(d.x, from_vector<int64_t>({0, 1, 2, 0, 3, 1}));
            }),
            "BoostedTrees.fit: y must hold integer class ids in [0, 3). Received: y[4]=3");
  EXPECT_EQ(error_of<ValueError>([&] {
              fit(d.x, from_vector<int32_t>({0, 1, -1, 0, 2, 1}));
            }),
            "BoostedTrees.fit: y must hold integer class ids in [0, 3). Received: y[2]=-1");
  EXPECT_EQ(error_of<ValueError>([&] {
              fit(d.x, from_vector<float>({0, 1, 2, 0.5F, 2, 1}));
            }),
            "BoostedTrees.fit: y must hold integer class ids in [0, 3). Received: y[3]=0.5");
  EXPECT_EQ(error_of<ValueError>([&] {
              fit(d.x, d.y.reshape({3, 2}));
            }),
            "BoostedTrees.fit: y must be [N] class ids. Received: int64[3, 2] on cpu:0");
  EXPECT_EQ(error_of<ValueError>([&] { fit(d.x, d.y, 1); }),
            "BoostedTrees.fit: num_classes must be at least 2. Received: num_classes=1");
  EXPECT_EQ(error_of<ValueError>([&] {
              fit(zeros({0, kFeatures}), zeros({0}));
            }),
            "BoostedTrees.fit: x is empty (no rows). Received: float32[0, 5] on cpu:0");
  EXPECT_EQ(error_of<ValueError>([&] {
              fit(zeros({6, 0}), d.y);
            }),
            "BoostedTrees.fit: x has no features. Received: float32[6, 0] on cpu:0");
  Tensor with_inf = d.x.clone();
  with_inf.set({2, 4}, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(error_of<ValueError>([&] { fit(with_inf, d.y); }),
            "BoostedTrees.fit: x must be finite or NaN (NaN marks a missing value). Received: "
            "-inf at row 2, feature 4");
}

TEST(BoostedTreesTest, BadOptionsAndValidationDataAreRefused) {
  const Blobs d = blobs(6, 29);
  BoostedTreesOptions o = small_options();
  o.early_stopping_rounds = 2;
  EXPECT_EQ(error_of<ValueError>([&] { BoostedTrees::fit(d.x, d.y, kClasses, o); }),
            "BoostedTrees.fit: early_stopping_rounds > 0 needs validation data (x_val, y_val). "
            "Received: early_stopping_rounds=2 and no validation data");
  EXPECT_EQ(error_of<ValueError>([&] { BoostedTrees::fit(d.x, d.y, kClasses, o, &d.x); }),
            "BoostedTrees.fit: x_val and y_val must be given together. Received: only x_val");
  const Tensor narrow = d.x.slice(1, 0, 4);
  EXPECT_EQ(error_of<ValueError>([&] { BoostedTrees::fit(d.x, d.y, kClasses, o, &narrow, &d.y); }),
            "BoostedTrees.fit: x_val must have as many features as x. Received: x has 5, x_val "
            "has 4");
  const Tensor bad_val_y = from_vector<int64_t>({0, 1, 7, 0, 2, 1});
  EXPECT_EQ(
      error_of<ValueError>([&] { BoostedTrees::fit(d.x, d.y, kClasses, o, &d.x, &bad_val_y); }),
      "BoostedTrees.fit: y_val must hold integer class ids in [0, 3). Received: y_val[2]=7");
  o = small_options();
  o.num_boost_round = 0;
  EXPECT_EQ(error_of<ValueError>([&] { BoostedTrees::fit(d.x, d.y, kClasses, o); }),
            "BoostedTrees.fit: num_boost_round must be positive. Received: num_boost_round=0");
  // A parameter only XGBoost checks: its error, naming the call that failed.
  o = small_options();
  o.tree_method = "bogus";
  const std::string msg = error_of<ValueError>([&] { BoostedTrees::fit(d.x, d.y, kClasses, o); });
  EXPECT_EQ(msg.rfind("BoostedTrees.fit: XGBoosterUpdateOneIter failed: ", 0), 0U) << msg;
  EXPECT_NE(msg.find("'bogus'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Stack trace"), std::string::npos) << msg;
}

TEST(BoostedTreesTest, PredictChecksFeaturesAndAnEmptyModelIsRefused) {
  const Blobs d = blobs(30, 31);
  BoostedTreesOptions o = small_options();
  o.num_boost_round = 2;
  const BoostedTrees trees = BoostedTrees::fit(d.x, d.y, kClasses, o);
  EXPECT_EQ(error_of<ValueError>([&] {
              trees.predict_proba(zeros({2, 4}));
            }),
            "BoostedTrees.predict_proba: x must have 5 features per row, as the data the model "
            "was fit on. Received: 4 features (float32[2, 4] on cpu:0)");
  const BoostedTrees empty;
  EXPECT_FALSE(empty.defined());
  const std::string tail =
      ": the model is empty (default-constructed or moved from). Expected a model from "
      "BoostedTrees::fit or BoostedTrees::load";
  EXPECT_EQ(error_of<ValueError>([&] { empty.predict_proba(d.x); }),
            "BoostedTrees.predict_proba" + tail);
  const TempDir dir;
  EXPECT_EQ(error_of<ValueError>([&] { empty.save(dir / "t.json"); }), "BoostedTrees.save" + tail);
  EXPECT_EQ(error_of<ValueError>([&] { (void)empty.num_classes(); }),
            "BoostedTrees.num_classes" + tail);
}

TEST(BoostedTreesTest, SaveAndLoadErrorsNameTheFile) {
  const Blobs d = blobs(30, 33);
  BoostedTreesOptions o = small_options();
  o.num_boost_round = 2;
  const BoostedTrees trees = BoostedTrees::fit(d.x, d.y, kClasses, o);
  const TempDir dir;
  const auto missing = dir / "missing.json";
  EXPECT_EQ(error_of<IoError>([&] { BoostedTrees::load(missing); }),
            "BoostedTrees.load: cannot read " + missing.string() + ": no such file");
  EXPECT_EQ(error_of<ValueError>([&] { trees.save(dir / "trees.ubj"); }),
            "BoostedTrees.save: the file name must end in .json (XGBoost's JSON model format). "
            "Received: " +
                (dir / "trees.ubj").string());
  const auto no_dir = dir / "no_such_dir" / "t.json";
  const std::string save_msg = error_of<IoError>([&] { trees.save(no_dir); });
  EXPECT_NE(save_msg.find(no_dir.string()), std::string::npos) << save_msg;

  // A truncated model: XGBoost's parse error, naming the file.
  trees.save(dir / "good.json");
  const std::string good = io::testing::read_bytes(dir / "good.json");
  const auto corrupt = dir / "corrupt.json";
  io::testing::write_bytes(corrupt, good.substr(0, good.size() / 2));
  const std::string msg = error_of<IoError>([&] { BoostedTrees::load(corrupt); });
  EXPECT_EQ(
      msg.rfind("BoostedTrees.load: XGBoosterLoadModel failed on " + corrupt.string() + ": ", 0),
      0U)
      << msg;
}

TEST(BoostedTreesTest, LoadRefusesAModelThatIsNotAMultiClassClassifier) {
  // A one-round regression model written by XGBoost itself.
  const Blobs d = blobs(30, 35);
  const Tensor target = d.y.to(DType::float32);
  const RawDMatrix m(d.x);
  ASSERT_EQ(XGDMatrixSetFloatInfo(m.h, "label", target.data<float>(), 30), 0);
  BoosterHandle h = nullptr;
  ASSERT_EQ(XGBoosterCreate(&m.h, 1, &h), 0);
  EXPECT_EQ(XGBoosterSetParam(h, "nthread", "1"), 0);
  const TempDir dir;
  const auto file = dir / "regression.json";
  EXPECT_EQ(XGBoosterSetParam(h, "objective", "reg:squarederror"), 0);
  EXPECT_EQ(XGBoosterUpdateOneIter(h, 0, m.h), 0);
  EXPECT_EQ(XGBoosterSaveModel(h, file.string().c_str()), 0);
  XGBoosterFree(h);
  EXPECT_EQ(error_of<IoError>([&] { BoostedTrees::load(file); }),
            "BoostedTrees.load: " + file.string() +
                " is not a multi-class classifier. Expected objective multi:softprob with "
                "num_class >= 2. Received: objective reg:squarederror, num_class 0");
}

#else  // the stub build

TEST(BoostedTreesTest, StubSaysHowToGetXGBoost) {
  EXPECT_FALSE(xgboost_built());
  const std::string expected =
      "osprey was built without XGBoost: install libxgboost-dev (scripts/setup.sh does) and "
      "rebuild with -DOSPREY_WITH_XGBOOST=ON";
  const Tensor x = zeros({4, 2});
  const Tensor y = zeros({4});
  EXPECT_EQ(error_of<NotImplementedError>([&] { BoostedTrees::fit(x, y, 2); }), expected);
  EXPECT_EQ(error_of<NotImplementedError>([] { BoostedTrees::load("trees.json"); }), expected);
  const BoostedTrees empty;
  EXPECT_FALSE(empty.defined());
}

#endif

}  // namespace
}  // namespace osprey::ensemble
