// A search space read from TOML: every type with its options, the file's order kept, and errors
// that name the source, the table and the field.
#include "osprey/tune/search_space_toml.h"

#include <gtest/gtest.h>

#include <fstream>

#include "osprey/core/error.h"

namespace osprey::tune {
namespace {

// The message of the ValueError reading `text` throws, or "" (a test failure) without one.
std::string error_of(const std::string& text) {
  try {
    hyperparameters_from_toml_text(text, "space.toml");
  } catch (const ValueError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ValueError for:\n" << text;
  return "";
}

TEST(SearchSpaceTomlTest, ReadsEveryTypeInTheFilesOrder) {
  const HyperParameters hp = hyperparameters_from_toml_text(R"(
[units]
type = "int"
min = 32
max = 128
step = 32
default = 64

[learning_rate]
type = "float"
min = 1e-4
max = 1e-2
sampling = "log"

[dropout]
type = "float"
min = 0
max = 0.5
step = 0.1

[optimizer]
type = "choice"
values = ["adam", "sgd"]
default = "sgd"

[batch_norm]
type = "boolean"
default = true

[layers]
type = "fixed"
value = 2
)",
                                                            "space.toml");
  std::vector<std::string> names;
  for (const HyperParameter& h : hp.space()) names.push_back(h.name);
  EXPECT_EQ(names, (std::vector<std::string>{"units", "learning_rate", "dropout", "optimizer",
                                             "batch_norm", "layers"}));
  EXPECT_EQ(*hp.find("units"), HyperParameter::Int("units", 32, 128, 32, Sampling::linear, 64));
  EXPECT_EQ(*hp.find("learning_rate"),
            HyperParameter::Float("learning_rate", 1e-4, 1e-2, {}, Sampling::log));
  EXPECT_EQ(*hp.find("dropout"), HyperParameter::Float("dropout", 0.0, 0.5, 0.1));
  EXPECT_EQ(*hp.find("optimizer"),
            HyperParameter::Choice("optimizer", {"adam", "sgd"}, {}, Value("sgd")));
  EXPECT_EQ(*hp.find("batch_norm"), HyperParameter::Boolean("batch_norm", true));
  EXPECT_EQ(*hp.find("layers"), HyperParameter::Fixed("layers", int64_t{2}));
  EXPECT_TRUE(hp.values().empty());
}

TEST(SearchSpaceTomlTest, ErrorsNameTheSourceTheTableAndTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[units]\ntype = \"int\"\nmin = 1\n", "space.toml: [units]: type \"int\" needs 'max'"},
      {"[units]\ntype = \"int\"\nmin = 1.5\nmax = 4\n",
       "space.toml: [units].min: must be an integer. Received: 1.5"},
      {"[units]\ntype = \"int\"\nmin = 1\nmax = 4\nstep = \"2\"\n",
       "space.toml: [units].step: must be an integer"},
      {"[lr]\ntype = \"float\"\nmin = \"small\"\nmax = 1\n",
       "space.toml: [lr].min: must be a number"},
      {"[units]\ntype = \"int\"\nmin = 1\nmax = 4\nvalues = [1]\n",
       "space.toml: [units]: unknown field 'values' (type \"int\" takes min, max, step, sampling, "
       "default, parent_name, parent_values)"},
      {"[a]\ntype = \"boolean\"\n[b]\ntype = \"fixed\"\nvalue = 1\nparent_name = \"a\"\n",
       "space.toml: [b]: parent_name and parent_values go together (the hyperparameter is active "
       "only when parent_name takes one of parent_values)"},
      {"[a]\ntype = \"boolean\"\n[b]\ntype = \"fixed\"\nvalue = 1\nparent_name = \"a\"\n"
       "parent_values = []\n",
       "space.toml: [b].parent_values: must be a non-empty array"},
      {"[b]\ntype = \"fixed\"\nvalue = 1\nparent_name = \"a\"\nparent_values = [true]\n",
       "space.toml: [b]: conditional_scope: parent hyperparameter 'a' is not declared yet; "
       "declare it first"},
      {"[a]\ntype = \"choice\"\nvalues = [\"x\", \"y\"]\n[b]\ntype = \"fixed\"\nvalue = 1\n"
       "parent_name = \"a\"\nparent_values = [\"z\"]\n",
       "space.toml: [b]: conditional_scope('a'): "},
      {"[a]\ntype = \"choice\"\nvalues = [\"x\", \"y\"]\nordered = true\n",
       "space.toml: [a]: hyperparameter 'a': only numeric choices can be ordered"},
      {"[a]\ntype = \"choice\"\nvalues = [1, 2]\nordered = \"yes\"\n",
       "space.toml: [a].ordered: must be true or false"},
      {"[units]\ntype = \"integer\"\n",
       "space.toml: [units].type: must be \"int\", \"float\", \"choice\", \"boolean\" or "
       "\"fixed\". Received: \"integer\""},
      {"[units]\nmin = 1\n", "space.toml: [units].type: must be"},
      {"units = 3\n", "space.toml: [units]: must be a table"},
      {"[opt]\ntype = \"choice\"\nvalues = []\n",
       "space.toml: [opt].values: must be a non-empty array"},
      {"[opt]\ntype = \"choice\"\nvalues = [[1]]\n", "space.toml: [opt].values: must be a boolean"},
      // What the hyperparameter itself refuses, with where it was declared.
      {"[units]\ntype = \"int\"\nmin = 8\nmax = 4\n", "space.toml: [units]: "},
      {"[lr]\ntype = \"float\"\nmin = 1\nmax = 2\nsampling = \"cubic\"\n", "space.toml: [lr]: "},
      // Invalid TOML: the line and column.
      {"[units]\ntype = \n", "space.toml:2:"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string message = error_of(text);
    EXPECT_EQ(message.find(expected), 0u)
        << "expected \"" << expected << "\", got \"" << message << "\"";
  }
  EXPECT_NE(error_of(cases[17].first).find("cubic"), std::string::npos);
}

// The example of docs/guide/search_space.md (examples/search_space.toml, shown verbatim there):
// every entry as the page says it reads, conditions included.
TEST(SearchSpaceTomlTest, TheDocumentedExampleReadsAsThePageSays) {
  const HyperParameters hp = hyperparameters_from_toml(std::filesystem::path(OSPREY_SOURCE_DIR) /
                                                       "examples" / "search_space.toml");
  std::vector<std::string> names;
  for (const HyperParameter& h : hp.space()) names.push_back(h.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"model_type", "units", "filters", "learning_rate", "momentum",
                                      "dropout", "batch_norm", "batch_size", "seed"}));
  HyperParameter units = HyperParameter::Int("units", 32, 256, 32, Sampling::linear, 128);
  units.conditions = {{"model_type", {Value("mlp")}}};
  HyperParameter filters = HyperParameter::Int("filters", 16, 128, 2, Sampling::log);
  filters.conditions = {{"model_type", {Value("cnn")}}};
  EXPECT_EQ(*hp.find("model_type"),
            HyperParameter::Choice("model_type", {"mlp", "cnn"}, {}, Value("mlp")));
  EXPECT_EQ(*hp.find("units"), units);
  EXPECT_EQ(*hp.find("filters"), filters);
  for (int64_t f : {16, 32, 64, 128}) EXPECT_TRUE(hp.find("filters")->contains(Value(f))) << f;
  EXPECT_FALSE(hp.find("filters")->contains(Value(int64_t{48})));  // step 2 is a factor
  EXPECT_EQ(*hp.find("learning_rate"),
            HyperParameter::Float("learning_rate", 1e-4, 1e-2, {}, Sampling::log, 1e-3));
  EXPECT_EQ(*hp.find("momentum"),
            HyperParameter::Float("momentum", 0.5, 0.999, {}, Sampling::reverse_log));
  EXPECT_EQ(*hp.find("dropout"), HyperParameter::Float("dropout", 0.0, 0.5, 0.1));
  EXPECT_EQ(*hp.find("batch_norm"), HyperParameter::Boolean("batch_norm", true));
  EXPECT_EQ(*hp.find("batch_size"),
            HyperParameter::Choice("batch_size", {int64_t{32}, int64_t{64}, int64_t{128}}, true));
  EXPECT_TRUE(hp.find("batch_size")->ordered);
  EXPECT_EQ(*hp.find("seed"), HyperParameter::Fixed("seed", int64_t{42}));
  // A child is active only under its parent's values.
  HyperParameters trial = hp.copy_space();
  trial.set("model_type", "cnn");
  EXPECT_FALSE(trial.is_active("units"));
  EXPECT_TRUE(trial.is_active("filters"));
}

TEST(SearchSpaceTomlTest, ReadsAFileAndNamesOneThatCannotBeOpened) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("osprey_space_" + std::to_string(::getpid()) + ".toml");
  {
    std::ofstream f(path);
    f << "[optimizer]\ntype = \"choice\"\nvalues = [\"adam\", \"sgd\"]\n"
      << "[units]\ntype = \"int\"\nmin = 1\n";
  }
  try {
    hyperparameters_from_toml(path);
    ADD_FAILURE() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": [units]: type \"int\" needs 'max'"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(hyperparameters_from_toml(path), IoError);
}

}  // namespace
}  // namespace osprey::tune
