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
       "default)"},
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
  EXPECT_NE(error_of(cases[11].first).find("cubic"), std::string::npos);
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
