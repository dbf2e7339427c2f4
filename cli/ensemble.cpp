// `osprey ensemble`: builds an ensemble (ensemble/ensemble.h), scores it and each member on the
// Fashion-MNIST test split, and saves it to --output:
//   from a search made by `osprey tune --hypermodel mlp|cnn`:
//     osprey ensemble --from-tuner osprey_tune/fmnist_hyper_cnn --hypermodel cnn --top-k 3
//                     --output fmnist_ensemble
//   the best trials with their best epoch's weights, weighted on the validation predictions the
//   tuner kept (Ensemble::from_tuner: no retraining, no predicting);
//   from saved models (`osprey train --output`, `osprey run`'s retrain/member_<i>):
//     osprey ensemble --models a b c [--xgboost] --output fmnist_ensemble
//   weighted on the last --holdout training images, which the members should not have trained on
//   (`osprey run`'s members have not; `osprey train` trains on all 60,000).
// --xgboost adds gradient-boosted trees on the first model's penultimate features, trained on
// the first --xgboost-rows training images.
#include "osprey/ensemble/ensemble.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/saved_model_command.h"
#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/core/error.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/io/json.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/hyper_cnn.h"
#include "osprey/tune/hyper_mlp.h"

namespace osprey::cli {

namespace fs = std::filesystem;

namespace {

struct EnsembleArgs {
  std::vector<std::string> models;
  std::string from_tuner;
  std::string hypermodel;
  int top_k = 3;
  std::string combiner = "nelder_mead";
  bool xgboost = false;
  int64_t xgboost_rows = 20000;
  int64_t holdout = 5000;
  std::string output;
  std::string data;
};

// Reopens a study as the tuner that wrote it: the oracle's class, objective and (Hyperband, ASHA)
// schedule come from its oracle.json, so nothing has to be repeated on the command line.
std::unique_ptr<tune::Tuner> open_study(const fs::path& dir,
                                        std::shared_ptr<tune::HyperModel> hypermodel) {
  const fs::path file = dir / "oracle.json";
  OSPREY_CHECK_T(IoError, fs::exists(file), "{} does not exist: --from-tuner names a study folder",
                 file.string());
  const nlohmann::json state = io::read_json_file(file);
  const std::string cls = state.value("class_name", std::string());
  const tune::Objective objective = tune::Objective::from_json(state.at("objective"));
  const std::string directory = dir.parent_path().string(), project = dir.filename().string();
  if (cls == "Hyperband") {
    const nlohmann::json& alg = state.at("algorithm");
    return std::make_unique<tune::Hyperband>(
        hypermodel, tune::HyperbandOptions{.objective = objective,
                                           .max_epochs = alg.at("max_epochs").get<int>(),
                                           .factor = alg.at("factor").get<int>(),
                                           .directory = directory,
                                           .project_name = project,
                                           .verbose = 0,
                                           .sampler = tune::parse_hyperband_sampler(
                                               alg.value("sampler", std::string("random")),
                                               file.string() + ": algorithm.sampler")});
  }
  if (cls == "ASHA") {
    const nlohmann::json& alg = state.at("algorithm");
    return std::make_unique<tune::Asha>(
        hypermodel, tune::AshaOptions{.objective = objective,
                                      .max_epochs = alg.at("max_epochs").get<int>(),
                                      .min_epochs = alg.at("min_epochs").get<int>(),
                                      .factor = alg.at("factor").get<int>(),
                                      .max_trials = state.at("max_trials").get<int>(),
                                      .directory = directory,
                                      .project_name = project,
                                      .verbose = 0});
  }
  if (cls == "RandomSearch") {
    return std::make_unique<tune::RandomSearch>(
        hypermodel,
        tune::RandomSearchOptions{
            .objective = objective, .directory = directory, .project_name = project, .verbose = 0});
  }
  if (cls == "BayesianOptimization") {
    return std::make_unique<tune::BayesianOptimization>(
        hypermodel,
        tune::BayesianOptimizationOptions{
            .objective = objective, .directory = directory, .project_name = project, .verbose = 0});
  }
  OSPREY_THROW(IoError, "{}: holds a search by \"{}\", not one osprey tune writes", file.string(),
               cls);
}

void run(const EnsembleArgs& a) {
  const auto data = datasets::fashion_mnist::load({.directory = a.data});
  ensemble::Ensemble ens;
  if (!a.from_tuner.empty()) {
    std::shared_ptr<tune::HyperModel> hm;
    if (a.hypermodel == "cnn") {
      hm = std::make_shared<tune::HyperCNN>(
          tune::HyperCNNOptions{.input_shape = {28, 28}, .num_classes = 10});
    } else {
      hm = std::make_shared<tune::HyperMLP>(
          tune::HyperMLPOptions{.input_shape = {28, 28}, .num_classes = 10});
    }
    std::unique_ptr<tune::Tuner> tuner = open_study(a.from_tuner, hm);
    ens = ensemble::Ensemble::from_tuner(*tuner, a.top_k, a.combiner);
  } else {
    for (const std::string& dir : a.models)
      ens.add(load_model(dir), fs::path(dir).filename().string());
  }
  if (a.xgboost) {
    const auto* first = dynamic_cast<const ensemble::ModelMember*>(ens.members()[0].get());
    OSPREY_CHECK(first != nullptr, "osprey ensemble: --xgboost needs a network as first member");
    const int64_t rows = std::min(a.xgboost_rows, data.train.size() - a.holdout);
    ens.add(ensemble::XGBoostMember::fit_on_features(first->model(), data.train.x.slice(0, 0, rows),
                                                     data.train.y.slice(0, 0, rows), 10, {},
                                                     nullptr, nullptr, "xgboost_features"));
  }
  if (a.from_tuner.empty() || a.xgboost) {
    auto [rest, holdout] = data.train.split_tail(a.holdout);
    ens.fit_weights(holdout.x, holdout.y, a.combiner);
    fmt::print("weights fitted by {} on the last {} training images\n", a.combiner, a.holdout);
  }
  const std::vector<train::Logs> members = ens.evaluate_members(data.test.x, data.test.y);
  for (size_t i = 0; i < members.size(); ++i) {
    fmt::print("{:<24} weight {:.4f}  test accuracy {:.4f}  loss {:.4f}\n",
               ens.members()[i]->name(), ens.weights()[i], members[i].at("accuracy"),
               members[i].at("loss"));
  }
  const train::Logs logs = ens.evaluate(data.test.x, data.test.y);
  fmt::print("ensemble of {} ({}): test accuracy {:.4f}  loss {:.4f}\n", ens.size(), ens.combiner(),
             logs.at("accuracy"), logs.at("loss"));
  ens.save(a.output);
  fmt::print("saved to {}/ (ensemble.json, members/)\n", a.output);
}

}  // namespace

void add_ensemble(CLI::App& app) {
  auto a = std::make_shared<EnsembleArgs>();
  auto* cmd = app.add_subcommand(
      "ensemble", "Ensemble saved models or a search's best trials, score it on the test split");
  cmd->add_option("--models", a->models, "Folders of saved models");
  cmd->add_option("--from-tuner", a->from_tuner,
                  "A study folder written by osprey tune --hypermodel (DIRECTORY/PROJECT)");
  cmd->add_option("--hypermodel", a->hypermodel, "The study's hypermodel: mlp or cnn");
  cmd->add_option("--top-k", a->top_k, "Best trials to take from the study")->check(kPositive);
  cmd->add_option("--combiner", a->combiner, "How weights are fitted")
      ->check(CLI::IsMember(ensemble::combiner_names()));
  cmd->add_flag("--xgboost", a->xgboost,
                "Add gradient-boosted trees on the first network's penultimate features");
  cmd->add_option("--xgboost-rows", a->xgboost_rows, "Training images the trees see")
      ->check(kPositive);
  cmd->add_option("--holdout", a->holdout,
                  "Weights are fitted on the last N training images (--models, --xgboost)")
      ->check(CLI::Range(1, 30000));
  cmd->add_option("--output,-o", a->output, "Where to save the ensemble")->required();
  add_data_option(*cmd, a->data);
  cmd->callback([a] {
    OSPREY_CHECK_T(cli::UsageError, a->models.empty() != a->from_tuner.empty(),
                   "osprey ensemble: give either --models or --from-tuner");
    OSPREY_CHECK_T(cli::UsageError, a->from_tuner.empty() || !a->hypermodel.empty(),
                   "osprey ensemble: --from-tuner needs --hypermodel (mlp or cnn), the model the "
                   "study tuned");
    // The text hypermodels' studies are language models, which a Fashion-MNIST ensemble cannot
    // score: refused by name, as any other.
    OSPREY_CHECK_T(
        cli::UsageError, a->hypermodel.empty() || a->hypermodel == "mlp" || a->hypermodel == "cnn",
        "osprey ensemble: --hypermodel {}: ensembles are of Fashion-MNIST classifiers, "
        "from a study of mlp or cnn (a transformer or lstm study tunes a language model; "
        "sample its best_model with osprey generate)",
        a->hypermodel);
    run(*a);
  });
}

}  // namespace osprey::cli
