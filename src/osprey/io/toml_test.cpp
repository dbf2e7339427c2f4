// TOML read as JSON: every value type, nested tables and arrays of tables, and errors that name
// the source with the line and column.
#include "osprey/io/toml.h"

#include <gtest/gtest.h>

#include "osprey/core/error.h"
#include "osprey/io/io_test_util.h"

namespace osprey::io {
namespace {

TEST(TomlTest, ValuesTablesAndArraysOfTablesMapToTheirJson) {
  const nlohmann::json j = toml_to_json(R"(
format = "osprey.model"
format_version = 1
[model]
class_name = "Sequential"
[model.config]
build_input_shape = [-1, 4]
[[model.config.layers]]
class_name = "Dense"
config = { units = 3, use_bias = true, scale = 0.5 }
[[model.config.layers]]
class_name = "Flatten"
)",
                                        "net.toml");
  const nlohmann::json expected = nlohmann::json::parse(R"({
    "format": "osprey.model", "format_version": 1,
    "model": {"class_name": "Sequential", "config": {
      "build_input_shape": [-1, 4],
      "layers": [{"class_name": "Dense", "config": {"units": 3, "use_bias": true, "scale": 0.5}},
                 {"class_name": "Flatten"}]}}})");
  EXPECT_EQ(j, expected);
  EXPECT_TRUE(j["format_version"].is_number_integer());
  EXPECT_TRUE(j["model"]["config"]["layers"][0]["config"]["scale"].is_number_float());
}

TEST(TomlTest, DatesBecomeTheirTomlText) {
  const nlohmann::json j = toml_to_json("day = 2024-05-01\n", "d.toml");
  EXPECT_EQ(j["day"], "2024-05-01");
}

TEST(TomlTest, InvalidTomlNamesTheSourceLineAndColumn) {
  try {
    toml_to_json("a = 1\nb = \n", "net.toml");
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("net.toml:2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("invalid TOML"), std::string::npos) << e.what();
  }
}

TEST(TomlTest, ReadsAFileAndNamesOneThatCannotBeRead) {
  testing::TempDir dir;
  testing::write_bytes(dir / "a.toml", "x = [1, 2]\n");
  EXPECT_EQ(read_toml_file(dir / "a.toml"), nlohmann::json::parse(R"({"x": [1, 2]})"));
  EXPECT_THROW(read_toml_file(dir / "missing.toml"), IoError);
}

}  // namespace
}  // namespace osprey::io
