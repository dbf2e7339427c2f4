#include "cli/saved_model_command.h"

#include <memory>

#include "osprey/data/fashion_mnist.h"

namespace osprey::cli {

void add_data_option(CLI::App& cmd, std::string& directory) {
  cmd.add_option("--data", directory, "Directory with the Fashion-MNIST IDX files")
      ->check(CLI::ExistingDirectory);
}

CLI::App* add_saved_model_command(CLI::App& app, const std::string& name,
                                  const std::string& description,
                                  std::function<void(SavedModelRun& run)> body) {
  struct Args {
    std::string dir, data;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("dir", args->dir, "A directory written by osprey train / Model::save")
      ->required();
  add_data_option(*cmd, args->data);
  cmd->callback([args, body = std::move(body)] {
    SavedModelRun run{.dir = args->dir, .model = load_model(args->dir), .test = {}};
    run.test = datasets::fashion_mnist::load({.directory = args->data}).test;
    body(run);
  });
  return cmd;
}

}  // namespace osprey::cli
