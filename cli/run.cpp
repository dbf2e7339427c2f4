// `osprey run`: the main job — seed 001's whole workflow on Fashion-MNIST under one time budget:
//   1. tune      HyperCNN with Hyperband (mixed_bfloat16 where the CPU does bfloat16 natively)
//   2. retrain   the best configurations on train + validation, each for the epochs its share of
//                the budget allows, with a cosine-decayed learning rate
//   3. ensemble  the retrained networks and an XGBoost member on the best network's penultimate
//                features, weights fitted by Nelder-Mead on a held-out split no member trained on
//   4. quantize  the ensemble's networks to int8
// and prints a table (per stage: test accuracy, inference samples/s, size on disk, seconds),
// written with every stage's artefacts to --output, with report.html (the page `osprey report`
// writes: the curves, the trials, the ensemble's weights and this table, plotted). Each stage may
// end by a fixed fraction of the budget (kPlan); time a stage leaves unused goes to the next.
// Killed, the run resumes where it was: finished stages are kept (run.json), the tuner resumes its
// study, retrained members are kept one by one.
//
// The splits of the 60,000 training images: train (the first 50,000), validation (5,000: the
// tuner's objective, then retrained on) and holdout (5,000: never trained on; the ensemble's
// weights are fitted on it). The 10,000 test images only score the stages.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "cli/managed_job.h"
#include "cli/report/history.h"
#include "cli/report/report.h"
#include "cli/run_plan.h"
#include "cli/run_state.h"
#include "cli/saved_model_command.h"
#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/ensemble/ensemble.h"
#include "osprey/io/atomic_file.h"
#include "osprey/nn/name_scope.h"
#include "osprey/optim/schedules.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/tensor/cpu/dnnl_info.h"
#include "osprey/train/callbacks/tensorboard.h"
#include "osprey/train/trainer.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/hyper_cnn.h"

namespace osprey::cli {

namespace fs = std::filesystem;

namespace {

class Run {
 public:
  Run(const RunArgs& a, double budget)
      : a_(a),
        budget_(budget),
        out_(a.output),
        state_(open_state(a, budget)),
        clock_(state_.elapsed()) {}

  void go() {
    const std::string policy = a_.dtype_policy != "auto"
                                   ? a_.dtype_policy
                                   : (cpu::native_bf16() ? "mixed_bfloat16" : "float32");
    config::set_dtype_policy(policy);
    policy_ = policy;
    fmt::print(
        "osprey run: budget {}, output {}, dtype policy {}{}\n", clock_text(budget_), out_.string(),
        policy,
        state_.resumed() ? fmt::format(", resuming after {} spent", clock_text(clock_.now())) : "");
    splits_ = make_splits(a_, budget_);
    fmt::print(
        "data: tune on {} images (validation {}), retrain on {}, ensemble weights on {} "
        "held-out, test {}\n",
        splits_.tune_train.size(), splits_.val.size(), splits_.train_and_val.size(),
        splits_.holdout.size(), splits_.test.size());
    tune();
    plan_the_tail();
    retrain();
    ensemble();
    quantize();
    report();
  }

 private:
  static RunState open_state(const RunArgs& a, double budget) {
    const fs::path out(a.output);
    if (a.overwrite && fs::exists(out)) fs::remove_all(out);
    fs::create_directories(out);
    return RunState::open(out / "run.json", {{"budget_seconds", budget},
                                             {"seed", a.seed},
                                             {"members", a.members},
                                             {"dtype_policy", a.dtype_policy},
                                             {"data", a.data}});
  }

  // HyperCNN's space narrowed to what trains fast enough to be worth it on a CPU budget: two
  // blocks of one convolution, no batch normalization (3.8x slower per step here), horizontal
  // flips only (translations cost accuracy at these epoch counts), adam. Left to tune: widths,
  // dropouts and the learning rate. The widest corner is about 3x the default's cost.
  static std::shared_ptr<tune::HyperCNN> hypermodel() {
    tune::HyperParameters fixed;
    fixed.set("num_blocks", int64_t{2});
    fixed.set("convs_per_block", int64_t{1});
    fixed.set("batch_norm", false);
    fixed.set("head", std::string("flatten"));
    fixed.set("augment", true);
    fixed.set("flip", std::string("horizontal"));
    fixed.set("translation", 0.0);
    fixed.set("zoom", 0.0);
    fixed.set("optimizer", std::string("adam"));
    fixed.Int("filters_0", 32, 64, {.step = 16, .default_value = 32});
    fixed.Int("filters_1", 64, 128, {.step = 32, .default_value = 64});
    fixed.Int("dense_units", 128, 256, {.step = 64, .default_value = 128});
    fixed.Float("dropout", 0.0, 0.3, {.step = 0.1, .default_value = 0.1});
    fixed.Float("dense_dropout", 0.0, 0.5, {.step = 0.1, .default_value = 0.2});
    fixed.Float("learning_rate", 3e-4, 3e-3, {.sampling = "log", .default_value = 1e-3});
    return std::make_shared<tune::HyperCNN>(
        tune::HyperCNNOptions{.input_shape = {28, 28}, .num_classes = 10, .fixed = fixed});
  }

  void announce(const char* stage, int number) {
    fmt::print("\n== stage {}/{}: {} [{} elapsed, {} left; this stage ends by {}]\n", number,
               kPlan.size(), stage, clock_text(clock_.now()), clock_text(budget_ - clock_.now()),
               clock_text(deadline(stage)));
    std::fflush(stdout);
  }

  double deadline(const std::string& stage) const {
    return tail_ ? stage_deadline(stage, budget_, *tail_) : stage_deadline(stage, budget_);
  }

  int xgboost_rounds() const { return budget_ >= 600 ? 60 : 10; }

  // The time the stages after retraining need (run_plan.h), from one test pass's inference
  // time on the first member's network (untrained: the same speed), measured once: a resumed
  // run keeps the plan it started with.
  void plan_the_tail() {
    nlohmann::json& notes = state_.notes("retrain");
    if (!notes.is_object() || !notes.contains("seconds_per_test_pass")) {
      const auto& best = state_.notes("tune").at("best_hyperparameters");
      OSPREY_CHECK(!best.empty(), "osprey run: the tuner completed no trial");
      set_global_seed(a_.seed);
      nn::NameScope names;
      tune::HyperParameters hp = tune::HyperParameters::from_json(best[0], "run.json");
      Model model = hypermodel()->build(hp);
      const Tensor& test = splits_.test.x;
      const Tensor x = test.slice(0, 0, std::min<int64_t>(2048, test.shape()[0]));
      model.predict(x.slice(0, 0, 256), {.batch_size = 256});  // warm-up
      const auto t0 = std::chrono::steady_clock::now();
      model.predict(x, {.batch_size = 256});
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      notes["seconds_per_test_pass"] =
          seconds * static_cast<double>(test.shape()[0]) / static_cast<double>(x.shape()[0]);
    }
    tail_ =
        plan_tail(a_.members, notes.at("seconds_per_test_pass").get<double>(), xgboost_rounds());
    fmt::print(
        "plan: retraining ends {:.0f} s before the budget, for the evaluation, ensemble and "
        "quantization (estimated {:.0f} s)\n",
        budget_ - deadline("retrain"), tail_->total());
  }

  // When the stage first started, in run seconds (an earlier session's start when resumed).
  double stage_start(const std::string& stage) {
    nlohmann::json& notes = state_.notes(stage);
    if (!notes.is_object() || !notes.contains("started_at")) notes["started_at"] = clock_.now();
    return notes["started_at"].get<double>();
  }

  void tune() {
    if (state_.done("tune")) return;
    announce("tune", 1);
    const double start = stage_start("tune");
    const double deadline = this->deadline("tune");
    tune::Hyperband tuner(hypermodel(),
                          {.objective = "val_accuracy",
                           .max_epochs = budget_ >= 600 ? 9 : 3,
                           .factor = 3,
                           .hyperband_iterations = 3,  // max_seconds ends the search first
                           .directory = out_.string(),
                           .project_name = "tune",
                           .seed = a_.seed,
                           .verbose = 1,
                           .max_seconds = std::max(1.0, deadline - clock_.now())});
    // Pushed one by one: GCC 12 warns (-Warray-bounds, wrongly) when a vector built from an
    // initializer list grows.
    std::vector<train::CallbackPtr> fit_callbacks;
    fit_callbacks.push_back(std::make_shared<Progress>("tune", clock_, budget_, deadline, state_));
    if (!a_.tensorboard.empty())  // a run per trial execution under tune/ (trial_tensorboard.h)
      fit_callbacks.push_back(callbacks::TensorBoard(fs::path(a_.tensorboard) / "tune"));
    tuner.search(splits_.tune_train.x, splits_.tune_train.y,
                 {.batch_size = 128,
                  .verbose = 0,
                  .callbacks = fit_callbacks,
                  .validation_data = train::ValidationData(splits_.val.x, splits_.val.y),
                  .seed = a_.seed});
    // The best distinct configurations: Hyperband's promoted trials repeat their parents' values.
    nlohmann::json kept = nlohmann::json::array();
    std::vector<nlohmann::json> seen;
    for (const tune::HyperParameters& hp : tuner.get_best_hyperparameters(100)) {
      nlohmann::json values = hp.to_json().at("values");
      for (auto it = values.begin(); it != values.end();)
        it = it.key().starts_with("tuner/") ? values.erase(it) : std::next(it);
      if (std::find(seen.begin(), seen.end(), values) != seen.end()) continue;
      seen.push_back(values);
      kept.push_back(hp.to_json());
      if (std::ssize(kept) == a_.members) break;
    }
    state_.notes("tune")["best_hyperparameters"] = kept;
    Model model = tuner.get_best_models(1)[0];
    const auto trial = tuner.oracle().get_best_trials(1)[0];
    finish("tune",
           {.stage = "tune",
            .what = fmt::format("best of {} trials (on {} images)", tuner.oracle().trials().size(),
                                splits_.tune_train.size()),
            .test_accuracy = ensemble::accuracy(model.predict(splits_.test.x, {.batch_size = 256}),
                                                splits_.test.y),
            .samples_per_second = samples_per_second(
                splits_.test.x, [&](const Tensor& x) { model.predict(x, {.batch_size = 256}); }),
            .size_bytes = directory_bytes(tuner.checkpoint_path(trial.trial_id)),
            .seconds = clock_.now() - start});
  }

  fs::path member_dir(int i) const { return out_ / "retrain" / fmt::format("member_{}", i); }

  void retrain() {
    if (state_.done("retrain")) return;
    announce("retrain", 2);
    const double start = stage_start("retrain");
    const double deadline = this->deadline("retrain");
    std::vector<tune::HyperParameters> hps;
    for (const auto& j : state_.notes("tune").at("best_hyperparameters"))
      hps.push_back(tune::HyperParameters::from_json(j, "run.json"));
    OSPREY_CHECK(!hps.empty(), "osprey run: the tuner completed no trial");
    auto hm = hypermodel();
    const Splits& s = splits_;
    for (int i = 0; i < a_.members; ++i) {
      if (fs::exists(member_dir(i) / "config.json")) continue;  // kept from an earlier session
      tune::HyperParameters hp = hps[static_cast<size_t>(i) % hps.size()];
      set_global_seed(a_.seed + 1 + static_cast<uint64_t>(i));
      nn::NameScope names;
      Model model = hm->build(hp);
      // Time per member: what is left of the stage, shared by the members still to train. The
      // speed comes from 8 timed steps after 2 warm-up ones; the epochs fill the member's time.
      const double share = (deadline - clock_.now()) / (a_.members - i);
      const int64_t batch = 128;
      const int64_t steps_per_epoch = (s.train_and_val.size() + batch - 1) / batch;
      model.fit(s.train_and_val.x, s.train_and_val.y,
                {.batch_size = batch, .epochs = 1, .verbose = 0, .steps_per_epoch = 2});
      const auto t0 = std::chrono::steady_clock::now();
      model.fit(s.train_and_val.x, s.train_and_val.y,
                {.batch_size = batch, .epochs = 1, .verbose = 0, .steps_per_epoch = 8});
      const double per_step =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 8;
      const int epochs = std::max(
          1, static_cast<int>(share * 0.92 / (per_step * static_cast<double>(steps_per_epoch))));
      optim::Optimizer& opt = model.trainer().optimizer();
      const double lr = opt.learning_rate();
      opt.set_learning_rate(
          optim::CosineDecay({.initial_learning_rate = lr,
                              .decay_steps = epochs * steps_per_epoch + opt.iterations(),
                              .alpha = 0.01}));
      auto history = std::make_shared<report::HistoryRecorder>();  // the report's curves
      fmt::print("member {}/{}: {:.0f} samples/s, {} epochs of {} images in {}\n", i + 1,
                 a_.members, static_cast<double>(batch) / per_step, epochs, s.train_and_val.size(),
                 clock_text(share));
      std::vector<train::CallbackPtr> fit_callbacks;  // one by one, as in tune()
      fit_callbacks.push_back(
          std::make_shared<Progress>(fmt::format("retrain member {}/{}", i + 1, a_.members), clock_,
                                     budget_, clock_.now() + share, state_));
      fit_callbacks.push_back(history);
      if (!a_.tensorboard.empty()) {
        fit_callbacks.push_back(
            callbacks::TensorBoard(fs::path(a_.tensorboard) / fmt::format("member_{}", i)));
      }
      model.fit(s.train_and_val.x, s.train_and_val.y,
                {.batch_size = batch,
                 .epochs = epochs,
                 .verbose = 0,
                 .callbacks = fit_callbacks,
                 .seed = a_.seed + 1 + static_cast<uint64_t>(i)});
      // history.json inside the atomic save: the folder and its curves are replaced together.
      model.save(member_dir(i).string(), {.json_files = {{"history.json", history->to_json()}}});
    }
    // The row: the best member on the test split.
    StageRow row{.stage = "retrain", .what = "", .seconds = clock_.now() - start};
    for (int i = 0; i < a_.members; ++i) {
      Model model = load_model(member_dir(i).string());
      const double acc = ensemble::accuracy(model.predict(s.test.x, {.batch_size = 256}), s.test.y);
      fmt::print("member {}: test accuracy {:.4f}\n", i + 1, acc);
      if (acc >= row.test_accuracy) {
        row.test_accuracy = acc;
        row.what = fmt::format("best of {} retrained (member {})", a_.members, i + 1);
        row.samples_per_second = samples_per_second(
            s.test.x, [&](const Tensor& x) { model.predict(x, {.batch_size = 256}); });
        row.size_bytes = directory_bytes(member_dir(i));
      }
    }
    finish("retrain", row);
  }

  void ensemble() {
    if (state_.done("ensemble")) return;
    announce("ensemble", 3);
    const double start = stage_start("ensemble");
    const Splits& s = splits_;
    ensemble::Ensemble ens;
    Model best;
    double best_holdout = -1;
    for (int i = 0; i < a_.members; ++i) {
      Model model = load_model(member_dir(i).string());
      const double acc =
          ensemble::accuracy(model.predict(s.holdout.x, {.batch_size = 256}), s.holdout.y);
      if (acc > best_holdout) best_holdout = acc, best = model;
      ens.add(model, fmt::format("cnn_{}", i + 1));
    }
    // Gradient-boosted trees on the best network's penultimate features (chosen on holdout,
    // never on test), trained on the rows the networks trained on.
    const int64_t rows = std::min<int64_t>(s.train_and_val.size(), 20000);
    ens.add(ensemble::XGBoostMember::fit_on_features(
        best, s.train_and_val.x.slice(0, 0, rows), s.train_and_val.y.slice(0, 0, rows), 10,
        {.num_boost_round = xgboost_rounds(), .max_depth = 4, .seed = a_.seed}, nullptr, nullptr,
        "xgboost_features"));
    ens.fit_weights(s.holdout.x, s.holdout.y, "nelder_mead");
    const auto members = ens.evaluate_members(s.test.x, s.test.y);
    nlohmann::json& noted = state_.notes("ensemble")["members"] = nlohmann::json::array();
    for (size_t i = 0; i < members.size(); ++i) {
      fmt::print("  {:<18} weight {:.3f}  test accuracy {:.4f}\n", ens.members()[i]->name(),
                 ens.weights()[i], members[i].at("accuracy"));
      noted.push_back({{"name", ens.members()[i]->name()},
                       {"weight", ens.weights()[i]},
                       {"test_accuracy", members[i].at("accuracy")}});
    }
    ens.save((out_ / "ensemble").string());
    finish("ensemble", ensemble_row("ensemble", ens, start, "nelder_mead"));
  }

  void quantize() {
    if (state_.done("quantize")) return;
    announce("quantize", 4);
    const double start = stage_start("quantize");
    ensemble::Ensemble ens = ensemble::Ensemble::load((out_ / "ensemble").string());
    ens.quantize("int8");
    ens.save((out_ / "ensemble_int8").string());
    finish("quantize", ensemble_row("quantize", ens, start, "int8"));
  }

  StageRow ensemble_row(const std::string& stage, ensemble::Ensemble& ens, double start,
                        const std::string& how) {
    const Splits& s = splits_;
    return {
        .stage = stage,
        .what = fmt::format("{} members, {}", ens.members().size(), how),
        .test_accuracy = ensemble::accuracy(ens.predict(s.test.x), s.test.y),
        .samples_per_second =
            samples_per_second(s.test.x, [&](const Tensor& x) { ens.predict(x); }),
        .size_bytes = directory_bytes(out_ / (stage == "quantize" ? "ensemble_int8" : "ensemble")),
        .seconds = clock_.now() - start};
  }

  void finish(const std::string& stage, StageRow row) {
    // The precision the stage's networks ran in, for the report's table.
    state_.notes(stage)["precision"] = stage == "quantize" ? std::string("int8") : policy_;
    fmt::print("{}: test accuracy {:.4f}, {:.0f} samples/s, {:.2f} MB, {:.1f} s\n", stage,
               row.test_accuracy, row.samples_per_second, row.size_bytes / 1e6, row.seconds);
    state_.finish(stage, row, clock_.now());
  }

  void report() {
    std::string table =
        "| stage | what | test accuracy | inference samples/s | size MB | seconds |\n"
        "| --- | --- | --- | --- | --- | --- |\n";
    for (const PlannedStage& p : kPlan) {
      const StageRow r = *state_.row(p.name);
      table +=
          fmt::format("| {} | {} | {:.2f}% | {:.0f} | {:.2f} | {:.1f} |\n", r.stage, r.what,
                      100 * r.test_accuracy, r.samples_per_second, r.size_bytes / 1e6, r.seconds);
    }
    table += fmt::format("\ntotal: {} of a {} budget, seed {}\n", clock_text(clock_.now()),
                         clock_text(budget_), a_.seed);
    fmt::print("\n{}", table);
    io::atomic_write_file(out_ / "report.md", table);
    fmt::print("report: {}\n", report::write_report(out_).string());
  }

  RunArgs a_;
  std::string policy_;  // the dtype policy "auto" resolved to
  double budget_;
  fs::path out_;
  RunState state_;
  RunClock clock_;
  Splits splits_;
  std::optional<TailPlan> tail_;  // set once tuning is done
};

}  // namespace

void add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand(
      "run",
      "The main job: tune a CNN on Fashion-MNIST, retrain the best, ensemble them with XGBoost, "
      "quantize to int8, and report each stage, within --budget; rerun to resume");
  cmd->add_option("--budget", a->budget, "Time for the whole run: 15m (default), 2m, 90s, 1h");
  cmd->add_option("--output", a->output,
                  "Folder for the artefacts, run.json, report.md and report.html, and the "
                  "tuner's and members' checkpoints the run resumes from (default: "
                  "$AIP_MODEL_DIR when set, else osprey_run)");
  cmd->add_option("--seed", a->seed, "Random seed")->check(kNonNegative);
  cmd->add_option("--members", a->members, "Networks to retrain for the ensemble")
      ->check(CLI::Range(1, 10));
  cmd->add_option("--dtype-policy", a->dtype_policy,
                  "auto (mixed_bfloat16 where the CPU has bfloat16 dot products), float32 or "
                  "mixed_bfloat16")
      ->check(CLI::IsMember({"auto", "float32", "mixed_bfloat16"}));
  add_data_option(*cmd, a->data);
  cmd->add_flag("--overwrite", a->overwrite, "Start over instead of resuming --output");
  cmd->add_option(
      "--tensorboard", a->tensorboard,
      "TensorBoard logs: the tuner's trials in DIR/tune (with the HPARAMS tab), each "
      "retrained member in DIR/member_<i> (default: $AIP_TENSORBOARD_LOG_DIR when set)");
  cmd->callback([a, cmd] {
    // Managed jobs (Vertex AI, seed 002): the platform's folders unless a flag says otherwise.
    // AIP_CHECKPOINT_DIR is not used: the run resumes from its checkpoints, which stay in
    // --output beside the state that says which are done.
    default_from_managed_job(*cmd, "--output", "AIP_MODEL_DIR", a->output);
    default_from_managed_job(*cmd, "--tensorboard", "AIP_TENSORBOARD_LOG_DIR", a->tensorboard);
    check_folder_option("run", "--tensorboard", a->tensorboard);
    const double budget = parse_budget(a->budget);
    Run(*a, budget).go();
  });
}

}  // namespace osprey::cli
