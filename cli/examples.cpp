// The examples at the foot of each subcommand's --help: one place, so they read as a set and a
// test (cli_help_examples) can run `--help` of every subcommand.
#include <array>
#include <string>
#include <utility>

#include "cli/subcommands.h"

namespace osprey::cli {

void add_examples(CLI::App& app) {
  static constexpr std::array<std::pair<const char*, const char*>, 12> kExamples = {{
      {"info", "osprey info"},
      {"train",
       "osprey train --model cnn --epochs 5 --dtype-policy mixed_bfloat16 --output fmnist_cnn\n"
       "  osprey train --strategy mirrored --devices 2 --backup /scratch/backup --backup-freq 100\n"
       "  osprey launch -n 2 -- osprey train --strategy multi_worker --timeout 60\n"
       "  osprey train --model net.toml --data iris.csv --label-column species --test-data "
       "iris_test.csv\n"
       "  osprey train --model gpt --data data/tinyshakespeare.txt --epochs 8 --optimizer adamw "
       "--output shakespeare_gpt"},
      {"evaluate",
       "osprey evaluate fmnist_cnn\n"
       "  osprey evaluate --watch ckpts --idle-timeout 600    (beside osprey train "
       "--checkpoint-dir ckpts)"},
      {"predict", "osprey predict fmnist_cnn --count 5"},
      {"generate",
       "osprey generate shakespeare_gpt --prompt \"ROMEO:\" --max-new-tokens 300 --top-k 40"},
      {"tune",
       "osprey tune --tuner hyperband --hypermodel cnn --epochs 9 --directory studies "
       "--project-name cnn\n"
       "  osprey tune --tuner asha --epochs 27 --max-trials 40 --space space.toml --metric "
       "val_loss \\\n"
       "    --command \"python3 train.py --lr {lr} --epochs {epochs} --initial-epoch "
       "{initial_epoch} --resume-from {parent_trial_dir} --save-to {trial_dir}\""},
      {"quantize", "osprey quantize fmnist_cnn --mode int8 --output fmnist_cnn_int8"},
      {"launch",
       "osprey launch -n 2 --max-restarts 3 -- osprey train --strategy multi_worker\n"
       "  osprey launch --tuners 2 -- osprey tune --tuner asha --epochs 9 --max-trials 30"},
      {"run", "osprey run --budget 15m --output osprey_run    (rerun the same line to resume)"},
      {"ensemble",
       "osprey ensemble --from-tuner studies/cnn --hypermodel cnn --top-k 3 --combiner "
       "nelder_mead --output fmnist_ensemble"},
      {"ps",
       "OSPREY_PS_TOKEN=$(cat token) osprey ps --listen 10.0.0.2:5001 --checkpoint-dir ps0 "
       "--checkpoint-every 60"},
      {"report",
       "osprey report studies/cnn --output cnn_study.html    (or a run: osprey report osprey_run)"},
  }};
  for (const auto& [name, example] : kExamples) {
    app.get_subcommand(name)->footer(std::string("\nExample:\n  ") + example);
  }
}

}  // namespace osprey::cli
