// Ensemble end to end on small seeded Sequential models (and XGBoost members when built): save
// and load bit for bit, atomic replacement of a saved folder, weights that only held-out
// predictions can change, evaluate against a hand computation, int8 quantization, load errors.
#include "osprey/ensemble/ensemble.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/io/json.h"
#include "osprey/nn/layers/all.h"
#include "osprey/quant/quantize.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/rounding.h"
#include "osprey/tune/builtin_tuners.h"

namespace osprey::ensemble {
namespace {

namespace fs = std::filesystem;

template <class E, class F>
void expect_message(F&& fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception: " << message;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), message);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() /
               ("osprey_ensemble_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

// Siblings of dir left by a save ("<dir>.tmp-*", "<dir>.old-*").
int stray_siblings(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(dir.filename().string() + ".", 0) == 0) ++n;
  }
  return n;
}

constexpr int64_t kFeatures = 4, kClasses = 3;

// x: [n, 4] normal; y: the argmax of the first three features (a learnable rule).
void make_data(int64_t n, uint64_t seed, Tensor& x, Tensor& y) {
  x = random_normal({n, kFeatures}, {.seed = seed});
  y = argmax(x.slice(1, 0, kClasses), 1).to(DType::int64);
}

// A small softmax classifier trained two epochs on seeded data.
Model trained_mlp(const std::string& name, uint64_t seed) {
  set_global_seed(seed);
  Model m = Sequential({layers::Dense(8, "relu"), layers::Dense(kClasses, "softmax")},
                       {.name = name, .input_shape = {kFeatures}});
  m.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  Tensor x, y;
  make_data(96, seed + 100, x, y);
  m.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .seed = seed});
  return m;
}

Ensemble two_member_ensemble() {
  nn::clear_session();
  Ensemble ens;
  ens.add(trained_mlp("mlp_a", 1)).add(trained_mlp("mlp_b", 2));
  return ens;
}

// Mean of -log(clip(p[i, y_i])) and the fraction of rows whose first argmax is y_i.
void hand_metrics(const Tensor& probs, const Tensor& y, double& loss, double& acc) {
  const std::vector<float> p = probs.to_vector<float>();
  const std::vector<int64_t> ids = y.to_vector<int64_t>();
  const int64_t c = probs.size(1);
  loss = 0.0;
  acc = 0.0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* row = p.data() + static_cast<int64_t>(i) * c;
    const double q = std::clamp(static_cast<double>(row[ids[i]]), 1e-7, 1.0 - 1e-7);
    loss -= std::log(q);
    acc += (std::max_element(row, row + c) - row) == ids[i] ? 1.0 : 0.0;
  }
  loss /= static_cast<double>(ids.size());
  acc /= static_cast<double>(ids.size());
}

TEST(EnsembleTest, AFreshEnsembleAveragesAndAddingAMemberResetsTheWeights) {
  Ensemble ens = two_member_ensemble();
  EXPECT_EQ(ens.combiner(), "average");
  EXPECT_EQ(ens.weights(), (std::vector<double>{0.5, 0.5}));
  ens.set_weights({3.0, 1.0});
  EXPECT_EQ(ens.weights(), (std::vector<double>{0.75, 0.25}));
  EXPECT_EQ(ens.combiner(), "manual");
  ens.add(trained_mlp("mlp_c", 3));
  EXPECT_EQ(ens.combiner(), "average");
  EXPECT_EQ(ens.weights(), average_weights(3));
  EXPECT_EQ(ens.member("mlp_c")->kind(), "model");
}

TEST(EnsembleTest, PredictIsTheWeightedAverageOfTheMembersPredictions) {
  Ensemble ens = two_member_ensemble();
  ens.set_weights({0.25, 0.75});
  Tensor x, y;
  make_data(10, 7, x, y);
  const auto* a = dynamic_cast<ModelMember*>(ens.members()[0].get());
  const auto* b = dynamic_cast<ModelMember*>(ens.members()[1].get());
  ASSERT_TRUE(a && b);
  const std::vector<float> pa = Model(a->model()).predict(x).to_vector<float>();
  const std::vector<float> pb = Model(b->model()).predict(x).to_vector<float>();
  const Tensor p = ens.predict(x);
  ASSERT_EQ(p.shape(), Shape({10, kClasses}));
  const std::vector<float> got = p.to_vector<float>();
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k], static_cast<float>(0.25 * static_cast<double>(pa[k]) +
                                         0.75 * static_cast<double>(pb[k])))
        << k;
  }
}

TEST(EnsembleTest, EvaluateMatchesAHandComputationFromPredict) {
  Ensemble ens = two_member_ensemble();
  Tensor x_val, y_val, x, y;
  make_data(40, 11, x_val, y_val);
  make_data(50, 12, x, y);
  ens.fit_weights(x_val, y_val, "nelder_mead");
  double loss = 0.0, acc = 0.0;
  hand_metrics(ens.predict(x), y, loss, acc);
  const train::Logs logs = ens.evaluate(x, y);
  ASSERT_EQ(logs.items().size(), 2u);
  EXPECT_EQ(logs.items()[0].first, "loss");
  EXPECT_NEAR(logs.at("loss"), loss, 1e-12);
  EXPECT_DOUBLE_EQ(logs.at("accuracy"), acc);
  // Each member alone: the same hand computation, and Model::evaluate's own numbers.
  const std::vector<train::Logs> each = ens.evaluate_members(x, y);
  ASSERT_EQ(each.size(), 2u);
  for (size_t m = 0; m < 2; ++m) {
    Model model = dynamic_cast<ModelMember&>(*ens.members()[m]).model();
    hand_metrics(model.predict(x), y, loss, acc);
    // The member predicts in batches of its own size, the hand computation in Model::predict's
    // 32: another split, so the same loss within float32's reordered sums (testing/rounding.h).
    EXPECT_NEAR(each[m].at("loss"), loss, testing::kFloat32ReorderedSums * loss);
    EXPECT_DOUBLE_EQ(each[m].at("accuracy"), acc);
    const train::Logs keras = model.evaluate(x, y, {.batch_size = 50});
    EXPECT_NEAR(each[m].at("loss"), keras.at("loss"), 1e-5);
    EXPECT_DOUBLE_EQ(each[m].at("accuracy"), keras.at("accuracy"));
  }
}

TEST(EnsembleTest, TheTestSplitNeverInfluencesTheWeights) {
  Tensor x_val, y_val;
  make_data(48, 21, x_val, y_val);
  for (const std::string combiner : {"nelder_mead", "random_search", "greedy"}) {
    Ensemble ens = two_member_ensemble();
    const std::vector<double> fitted = ens.fit_weights(x_val, y_val, combiner);
    EXPECT_GT(fitted[1], 0.0) << combiner;  // both members count: the weights mean something
    EXPECT_GT(fitted[0], fitted[1]) << combiner;
    const std::vector<Tensor> val_probs = ens.predict_members(x_val);

    // Evaluate on other test sets, and on the validation rows with shuffled labels.
    std::vector<int64_t> shuffled = y_val.to_vector<int64_t>();
    std::rotate(shuffled.begin(), shuffled.begin() + 5, shuffled.end());
    Tensor x1, y1, x2, y2;
    make_data(30, 22, x1, y1);
    make_data(64, 23, x2, y2);
    ens.evaluate(x1, y1);
    ens.evaluate(x2, y2);
    ens.evaluate(x_val, from_vector<int64_t>(shuffled));
    ens.evaluate_members(x2, y2);
    ens.predict(x1);
    EXPECT_EQ(ens.weights(), fitted) << combiner;
    EXPECT_EQ(ens.combiner(), combiner);

    // The same weights from the validation predictions alone.
    Ensemble other = two_member_ensemble();
    EXPECT_EQ(other.fit_weights_from_predictions(val_probs, y_val, combiner), fitted) << combiner;
    EXPECT_EQ(fit_weights(combiner, val_probs, y_val), fitted) << combiner;
  }
}

TEST(EnsembleTest, SaveAndLoadRoundTripBitForBit) {
  Ensemble ens = two_member_ensemble();
  Tensor x_val, y_val, x, y;
  make_data(40, 31, x_val, y_val);
  make_data(25, 32, x, y);
  ens.fit_weights(x_val, y_val, "nelder_mead");
  const fs::path dir = temp_dir("roundtrip");
  ens.save(dir);
  EXPECT_TRUE(fs::is_regular_file(dir / "ensemble.json"));
  EXPECT_TRUE(fs::is_regular_file(dir / "members" / "mlp_a" / "model.safetensors"));
  EXPECT_TRUE(fs::is_regular_file(dir / "members" / "mlp_b" / "config.json"));
  const nlohmann::json manifest = io::read_json_file(dir / "ensemble.json");
  EXPECT_EQ(manifest["format"], "osprey.ensemble");
  EXPECT_EQ(manifest["version"], 1);
  EXPECT_EQ(manifest["combiner"], "nelder_mead");
  EXPECT_EQ(manifest["members"][1]["path"], "members/mlp_b");
  EXPECT_EQ(manifest["members"][1]["kind"], "model");

  const Ensemble back = Ensemble::load(dir);
  EXPECT_EQ(back.weights(), ens.weights());  // doubles compared exactly
  EXPECT_EQ(back.combiner(), "nelder_mead");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back.members()[0]->name(), "mlp_a");
  EXPECT_EQ(back.members()[1]->config(), ens.members()[1]->config());
  EXPECT_TRUE(same_bits(back.predict(x), ens.predict(x)));
  EXPECT_EQ(back.size_bytes(), ens.size_bytes());
  // Two Dense(8) -> Dense(3) networks on 4 features: 4*8 + 8 + 8*3 + 3 = 67 float32 weights each.
  EXPECT_EQ(ens.size_bytes(), 2 * 67 * 4);
  fs::remove_all(dir);
}

// A member whose save fails half-way, to interrupt an ensemble's save.
class FailingMember : public Member {
 public:
  FailingMember() : Member("broken") {}
  std::string kind() const override { return "model"; }
  Tensor predict(const Tensor& x) override { return full({x.size(0), kClasses}, 1.0 / 3.0); }
  void save(const fs::path& dir) const override {
    fs::create_directories(dir);
    throw IoError("disk full (simulated)");
  }
  nlohmann::json config() const override { return {{"kind", "model"}, {"name", name()}}; }
  int64_t size_bytes() const override { return 0; }
};

TEST(EnsembleTest, SavingOverAnExistingEnsembleLeavesACompleteOne) {
  Ensemble first = two_member_ensemble();
  first.set_weights({0.9, 0.1});
  const fs::path dir = temp_dir("overwrite");
  first.save(dir);

  // A save that fails part-way leaves the old ensemble as it was.
  Ensemble broken = two_member_ensemble();
  broken.add(std::make_shared<FailingMember>());
  expect_message<IoError>([&] { broken.save(dir); }, "disk full (simulated)");
  EXPECT_EQ(stray_siblings(dir), 0);
  EXPECT_EQ(Ensemble::load(dir).weights(), (std::vector<double>{0.9, 0.1}));

  // A complete save replaces it whole: three members, no folder of the old one's left over.
  Ensemble second = two_member_ensemble();
  second.add(trained_mlp("mlp_c", 5));
  second.set_weights({1.0, 2.0, 1.0}, "hand");
  second.save(dir);
  EXPECT_EQ(stray_siblings(dir), 0);
  const Ensemble back = Ensemble::load(dir);
  EXPECT_EQ(back.size(), 3u);
  EXPECT_EQ(back.weights(), (std::vector<double>{0.25, 0.5, 0.25}));
  EXPECT_EQ(back.combiner(), "hand");
  Tensor x, y;
  make_data(8, 41, x, y);
  EXPECT_TRUE(same_bits(back.predict(x), second.predict(x)));
  fs::remove_all(dir);
}

TEST(EnsembleTest, Int8QuantizationStaysCloseToFloat32AndStillSavesAndLoads) {
  Ensemble ens = two_member_ensemble();
  ens.set_weights({0.6, 0.4});
  Tensor x, y;
  make_data(32, 51, x, y);
  const Tensor before = ens.predict(x);
  const int64_t float_bytes = ens.size_bytes();
  ens.quantize("int8");
  const auto& model = dynamic_cast<ModelMember&>(*ens.members()[0]).model();
  EXPECT_EQ(model.layers()[0]->class_name(), "QuantizedDense");
  const Tensor after = ens.predict(x);
  const double max_diff = max(abs(sub(after, before))).item();
  EXPECT_GT(max_diff, 0.0);  // it did change
  EXPECT_LT(max_diff, 0.02);
  EXPECT_LT(ens.size_bytes(), float_bytes);
  EXPECT_EQ(ens.weights(), (std::vector<double>{0.6, 0.4}));

  const fs::path dir = temp_dir("int8");
  ens.save(dir);
  const Ensemble back = Ensemble::load(dir);
  EXPECT_TRUE(same_bits(back.predict(x), after));
  fs::remove_all(dir);
  expect_message<ValueError>([&] { ens.quantize("int4"); },
                             "Ensemble::quantize: unknown mode 'int4'. Expected one of: int8, "
                             "float8");
}

TEST(EnsembleTest, LogitsNeedFromLogitsAndOutputsMustBeRows) {
  nn::clear_session();
  set_global_seed(3);
  Model logits = Sequential({layers::Dense(kClasses)}, {.name = "logits", .input_shape = {2}});
  logits.set_weights({from_vector<float>({1, -2, 0.5f, 3, 0, -1}, {2, 3}), zeros({3})});
  const Tensor x = from_vector<float>({1, 0, 0, 1}, {2, 2});
  // Rows of x pick the rows of the kernel: logits [1, -2, 0.5] and [3, 0, -1].
  ModelMember soft(logits, "", {.from_logits = true});
  EXPECT_EQ(soft.name(), "logits");
  const std::vector<float> p = soft.predict(x).to_vector<float>();
  const double z0 = std::exp(1.0) + std::exp(-2.0) + std::exp(0.5);
  EXPECT_NEAR(p[0], std::exp(1.0) / z0, 1e-6);
  EXPECT_NEAR(p[2], std::exp(0.5) / z0, 1e-6);
  ModelMember raw(logits, "raw");
  expect_message<ValueError>([&] { raw.predict(x); },
                             "ModelMember 'raw': the model's outputs must be probabilities in "
                             "[0, 1] (a softmax last layer), or logits with from_logits = true. "
                             "Received: -2 at row 0, class 1");
  Model seq3 = Sequential({layers::Dense(2, "softmax")}, {.name = "seq3", .input_shape = {2, 3}});
  ModelMember rows(seq3);
  expect_message<ValueError>(
      [&] {
        rows.predict(ones({4, 2, 3}));
      },
      "ModelMember 'seq3': the model must output [N, C] class "
      "probabilities. Received: float32[4, 2, 2] on cpu:0");
}

TEST(EnsembleTest, BadMembersAndWeightsAreRefused) {
  Ensemble ens = two_member_ensemble();
  expect_message<ValueError>([&] { ens.add(trained_mlp("mlp_a", 9)); },
                             "Ensemble::add: member names must be unique. Received: 'mlp_a' "
                             "again (members: mlp_a, mlp_b)");
  expect_message<ValueError>([&] { ens.add(trained_mlp("x", 9), "../x"); },
                             "Ensemble::add: a member's name must be a folder name of letters, "
                             "digits, '.', '_' and '-', not starting with '.'. Received: '../x'");
  expect_message<ValueError>([&] { ens.set_weights({1.0}); },
                             "Ensemble::set_weights: needs one weight per member (2). Received: "
                             "1 weights");
  expect_message<ValueError>(
      [&] {
        ens.set_weights({1.0, -1.0});
      },
      "Ensemble::set_weights: weights must be finite and >= 0. Received: "
      "weights[1] = -1");
  expect_message<ValueError>(
      [&] {
        ens.fit_weights_from_predictions({ones({2, 3})}, from_vector<int64_t>({0, 1}));
      },
      "Ensemble::fit_weights_from_predictions: needs one prediction tensor per member (2: mlp_a, "
      "mlp_b). Received: 1 tensors");
  Tensor x, y;
  make_data(6, 61, x, y);
  expect_message<ValueError>([&] { ens.fit_weights(x, y, "vote"); },
                             "fit_weights: unknown combiner 'vote'. Expected one of: average, "
                             "nelder_mead, random_search, greedy");
  EXPECT_EQ(ens.combiner(), "average");  // a failed fit changes nothing
  expect_message<ValueError>(
      [] {
        Ensemble().predict(ones({1, kFeatures}));
      },
      "Ensemble::predict: the ensemble has no members; add() some first");
  expect_message<ValueError>([&] { ens.member("mlp_z"); },
                             "Ensemble::member: no member is named 'mlp_z'. Members: [mlp_a, "
                             "mlp_b]");
}

class EnsembleLoadErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("load_errors");
    Ensemble ens = two_member_ensemble();
    ens.save(dir_);
    file_ = (dir_ / "ensemble.json").string();
    manifest_ = io::read_json_file(dir_ / "ensemble.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void rewrite(const nlohmann::json& j) { io::write_json_file(dir_ / "ensemble.json", j); }

  fs::path dir_;
  std::string file_;
  nlohmann::json manifest_;
};

TEST_F(EnsembleLoadErrorTest, MissingManifestNamesTheFile) {
  fs::remove(dir_ / "ensemble.json");
  expect_message<IoError>([&] { Ensemble::load(dir_); },
                          "Ensemble::load: " + file_ + " does not exist, so " + dir_.string() +
                              " is not a saved ensemble (Ensemble::save writes ensemble.json "
                              "into its folder)");
}

TEST_F(EnsembleLoadErrorTest, CorruptManifestNamesTheFile) {
  std::ofstream(dir_ / "ensemble.json") << "{\"format\": \"osprey.ensemble\", ";
  try {
    Ensemble::load(dir_);
    ADD_FAILURE() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(file_ + ":", 0), 0u) << e.what();
  }
}

TEST_F(EnsembleLoadErrorTest, AnotherFormatOrVersionIsRefused) {
  nlohmann::json j = manifest_;
  j["version"] = 2;
  rewrite(j);
  expect_message<IoError>([&] { Ensemble::load(dir_); },
                          file_ + ": field \"version\" is 2; this osprey reads ensemble version 1");
  j = manifest_;
  j["format"] = "keras";
  rewrite(j);
  expect_message<IoError>([&] { Ensemble::load(dir_); },
                          file_ + ": field \"format\" must be \"osprey.ensemble\", got \"keras\"");
}

TEST_F(EnsembleLoadErrorTest, WeightsCountMustMatchTheMembers) {
  nlohmann::json j = manifest_;
  j["weights"] = {1.0};
  rewrite(j);
  expect_message<IoError>([&] { Ensemble::load(dir_); },
                          file_ +
                              ": field \"weights\" must hold one weight per member (2 members). "
                              "Received: 1 weights");
}

TEST_F(EnsembleLoadErrorTest, UnknownKindAndMissingFolderNameTheField) {
  nlohmann::json j = manifest_;
  j["members"][1]["kind"] = "forest";
  rewrite(j);
  expect_message<IoError>([&] { Ensemble::load(dir_); },
                          file_ +
                              ": field \"members[1].kind\" is \"forest\", not a member kind this "
                              "osprey knows (model, xgboost)");
  rewrite(manifest_);
  fs::remove_all(dir_ / "members" / "mlp_b");
  expect_message<IoError>([&] { Ensemble::load(dir_); },
                          file_ + ": field \"members[1].path\" names the member folder " +
                              (dir_ / "members" / "mlp_b").string() + ", which does not exist");
}

#ifdef OSPREY_WITH_XGBOOST

BoostedTreesOptions small_trees() {
  return {.num_boost_round = 5, .max_depth = 3, .nthread = 1, .seed = 1};
}

TEST(XGBoostMemberTest, PredictionsAreTheTreesProbabilitiesOnTheFlattenedRows) {
  Tensor x, y;
  make_data(60, 71, x, y);
  const Tensor x3 = x.reshape({60, 2, 2});  // flattened back to [60, 4] for the trees
  auto member =
      XGBoostMember::fit_on_inputs(x3, y, kClasses, small_trees(), nullptr, nullptr, "trees");
  EXPECT_EQ(member->kind(), "xgboost");
  EXPECT_EQ(member->trees().num_features(), kFeatures);
  const Tensor p = member->predict(x3);
  EXPECT_EQ(p.shape(), Shape({60, kClasses}));
  EXPECT_TRUE(same_bits(p, member->trees().predict_proba(x)));
  const BoostedTrees direct = BoostedTrees::fit(x, y, kClasses, small_trees());
  EXPECT_TRUE(same_bits(p, direct.predict_proba(x)));  // the same trees as fitting directly
  EXPECT_GT(member->size_bytes(), 0);
  EXPECT_EQ(member->config()["features"], "inputs");
}

TEST(XGBoostMemberTest, PenultimateFeaturesMemberWorksOnASmallSequentialModel) {
  nn::clear_session();
  Model net = trained_mlp("net", 81);
  Tensor x, y;
  make_data(60, 82, x, y);
  auto member = XGBoostMember::fit_on_features(net, x, y, kClasses, small_trees());
  // The penultimate features of Dense(8, relu) -> Dense(3, softmax): the first layer's output.
  const Tensor hidden = [&] {
    autograd::NoGradGuard no_grad;
    return (*net.layers()[0])(autograd::Variable(x), false).value();
  }();
  const Tensor f = member->features(x);
  EXPECT_EQ(f.shape(), Shape({60, 8}));
  EXPECT_TRUE(same_bits(f, hidden));
  // Batches of 7 rows: another split of the batch, so within float32's reordered sums
  // (testing/rounding.h), and bitwise the same from one call to the next.
  const Tensor f7 = penultimate_features(net, x, 7);
  EXPECT_LE(max(abs(sub(f7, hidden))).item(),
            testing::kFloat32ReorderedSums * max(abs(hidden)).item());
  EXPECT_TRUE(same_bits(penultimate_features(net, x, 7), f7));
  EXPECT_TRUE(same_bits(member->predict(x), member->trees().predict_proba(hidden)));
  EXPECT_EQ(member->config()["features"], "penultimate");

  auto in = nn::Input({kFeatures});
  Model functional = Functional(in, layers::Dense(kClasses, "softmax")(layers::Dense(4)(in)));
  expect_message<ValueError>(
      [&] { XGBoostMember::fit_on_features(functional, x, y, kClasses, small_trees()); },
      "XGBoostMember: penultimate features need a Sequential model (the output of all its "
      "layers but the last). Received: model '" +
          functional.name() + "' of class Functional");
}

TEST(XGBoostMemberTest, EnsembleWithTreesSavesLoadsAndQuantizesOnlyTheNetworks) {
  Ensemble ens = two_member_ensemble();
  Tensor x_train, y_train, x_val, y_val, x, y;
  make_data(80, 91, x_train, y_train);
  make_data(40, 92, x_val, y_val);
  make_data(20, 93, x, y);
  const Model net = dynamic_cast<ModelMember&>(*ens.members()[0]).model();
  ens.add(XGBoostMember::fit_on_inputs(x_train, y_train, kClasses, small_trees(), &x_val, &y_val,
                                       "raw_trees"));
  ens.add(XGBoostMember::fit_on_features(net, x_train, y_train, kClasses, small_trees(), nullptr,
                                         nullptr, "feature_trees"));
  ens.fit_weights(x_val, y_val, "greedy");
  const fs::path dir = temp_dir("xgboost");
  ens.save(dir);
  EXPECT_TRUE(fs::is_regular_file(dir / "members" / "raw_trees" / "model.json"));
  EXPECT_FALSE(fs::exists(dir / "members" / "raw_trees" / "features"));
  EXPECT_TRUE(fs::is_regular_file(dir / "members" / "feature_trees" / "model.json"));
  EXPECT_TRUE(fs::is_regular_file(dir / "members" / "feature_trees" / "features" / "config.json"));
  const Ensemble back = Ensemble::load(dir);
  EXPECT_EQ(back.weights(), ens.weights());
  EXPECT_EQ(back.members()[2]->kind(), "xgboost");
  EXPECT_EQ(back.members()[3]->config(), ens.members()[3]->config());
  EXPECT_TRUE(same_bits(back.predict(x), ens.predict(x)));
  const std::vector<Tensor> before = ens.predict_members(x);
  ens.quantize("int8");
  const std::vector<Tensor> after = ens.predict_members(x);
  EXPECT_FALSE(same_bits(after[0], before[0]));  // a network: quantized
  EXPECT_TRUE(same_bits(after[2], before[2]));   // trees: unchanged
  fs::remove_all(dir);
}

#endif  // OSPREY_WITH_XGBOOST
// from_tuner: the best trials of a search become members with the weights of their best epoch,
// weighted on the validation predictions the tuner kept (no retraining, no predicting).
TEST(EnsembleFromTunerTest, TheBestTrialsJoinWithTheirKeptValidationPredictions) {
  const fs::path dir = temp_dir("from_tuner");
  Tensor x, y, xv, yv;
  make_data(128, 11, x, y);
  make_data(48, 12, xv, yv);
  auto build = [](tune::HyperParameters& hp) {
    Model m = Sequential({layers::Dense(hp.Int("units", 2, 16, {.step = 2}), "relu"),
                          layers::Dense(kClasses, "softmax")},
                         {.input_shape = {kFeatures}});
    m.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
    return m;
  };
  tune::RandomSearch tuner(build, {.objective = "val_loss",
                                   .max_trials = 3,
                                   .directory = dir.string(),
                                   .project_name = "p",
                                   .seed = 5,
                                   .verbose = 0});
  tuner.search(x, y,
               {.batch_size = 16,
                .epochs = 2,
                .verbose = 0,
                .validation_data = train::ValidationData(xv, yv)});
  Ensemble ens = Ensemble::from_tuner(tuner, 2, "nelder_mead");
  const auto trials = tuner.oracle().get_best_trials(2);
  ASSERT_EQ(ens.size(), 2u);
  std::vector<Tensor> kept;
  for (size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(ens.members()[i]->name(), "trial_" + trials[i].trial_id);
    const tune::TrialPredictions p = tuner.validation_predictions(trials[i].trial_id);
    // The member is the trial's best state: it predicts the validation rows as the tuner kept.
    EXPECT_TRUE(same_bits(ens.members()[i]->predict(xv), p.predictions)) << i;
    kept.push_back(p.predictions);
  }
  Ensemble again = Ensemble::from_tuner(tuner, 2, "nelder_mead");
  Ensemble by_hand;
  by_hand.add(tuner.get_best_models(2)[0], "a").add(tuner.get_best_models(2)[1], "b");
  by_hand.fit_weights_from_predictions(kept, yv, "nelder_mead");
  EXPECT_EQ(ens.weights(), by_hand.weights());
  EXPECT_EQ(ens.weights(), again.weights());
  EXPECT_EQ(ens.combiner(), "nelder_mead");
  expect_message<ValueError>([&] { Ensemble::from_tuner(tuner, 0); },
                             "Ensemble.from_tuner: top_k must be at least 1. Received: top_k=0");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace osprey::ensemble
