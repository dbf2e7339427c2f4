#include "osprey/io/json.h"

#include <gtest/gtest.h>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/io/io_test_util.h"

namespace osprey::io {
namespace {

using osprey::testing::error_of;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

TEST(JsonTest, LineColumnCountsFromOne) {
  EXPECT_EQ(detail::line_column("abc", 0).line, 1u);
  EXPECT_EQ(detail::line_column("abc", 0).column, 1u);
  EXPECT_EQ(detail::line_column("ab\ncd", 4).line, 2u);
  EXPECT_EQ(detail::line_column("ab\ncd", 4).column, 2u);
  EXPECT_EQ(detail::line_column("ab\n", 3).column, 1u);
  EXPECT_EQ(detail::line_column("x", 99).column, 2u);  // clamped to the end
}

TEST(JsonTest, ParseErrorsNameTheFileLineAndColumn) {
  TempDir dir;
  write_bytes(dir / "config.json", "{\n  \"units\": 3,\n  \"name\": tru\n}\n");
  const std::string msg = error_of<IoError>([&] { read_json_file(dir / "config.json"); });
  EXPECT_NE(msg.find((dir / "config.json").string() + ":3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
}

TEST(JsonTest, OurLineAndColumnAgreeWithNlohmanns) {
  const std::string text = "[1,\n 2,\n   x]";
  try {
    const auto parsed = nlohmann::json::parse(text);
    (void)parsed;
    FAIL();
  } catch (const nlohmann::json::parse_error& e) {
    const auto lc = detail::line_column(text, e.byte - 1);
    EXPECT_NE(std::string(e.what()).find(fmt::format("line {}, column {}", lc.line, lc.column)),
              std::string::npos)
        << e.what() << " vs " << lc.line << ":" << lc.column;
  }
  EXPECT_NE(error_of<ValueError>([&] { parse_json(text, "inline"); }).find("inline:3:4:"),
            std::string::npos);
}

TEST(JsonTest, TruncatedInputIsAParseErrorAtTheEnd) {
  const std::string msg = error_of<ValueError>([] { parse_json("{\"a\": [1, 2", "t.json"); });
  EXPECT_NE(msg.find("t.json:1:"), std::string::npos) << msg;
}

// Found by fuzz_tuner_state: a number past a double's range escaped as nlohmann's exception.
TEST(JsonTest, ANumberPastADoublesRangeIsAnErrorNamingTheSource) {
  EXPECT_EQ(error_of<ValueError>([] { parse_json(R"({"score": 1e999})", "trial.json"); }),
            "trial.json: invalid JSON: number overflow parsing '1e999'");
}

TEST(JsonTest, DuplicateKeysAreRejectedWithTheirPath) {
  const std::string msg = error_of<ValueError>(
      [] { parse_json(R"({"layers": [{"a": 1}, {"units": 1, "units": 2}]})", "c.json"); });
  EXPECT_NE(msg.find("duplicate key \"layers[1].units\""), std::string::npos) << msg;
  EXPECT_NO_THROW(parse_json(R"({"a": {"x": 1}, "b": {"x": 2}})", "ok.json"));
}

TEST(JsonTest, WritesAtomicallyAndReadsBack) {
  TempDir dir;
  nlohmann::ordered_json j = {{"zeta", 1}, {"alpha", {1, 2, 3}}};
  write_json_file(dir / "o.json", j);
  EXPECT_EQ(read_bytes(dir / "o.json"),
            "{\n  \"zeta\": 1,\n  \"alpha\": [\n    1,\n    2,\n    3\n  ]\n}\n");
  EXPECT_EQ(read_json_file(dir / "o.json")["alpha"][2], 3);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"o.json"});
}

TEST(JsonTest, WritingInvalidUtf8IsAValueErrorAndWritesNothing) {
  TempDir dir;
  nlohmann::json j = {{"name", std::string("\xff\xfe")}};
  EXPECT_THROW(write_json_file(dir / "bad.json", j), ValueError);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(JsonViewTest, WrongTypeNamesTheFileAndTheFieldPath) {
  JsonDocument doc(nlohmann::json::parse(R"({"layers": [{}, {}, {"units": "64"}]})"), "config.json",
                   true);
  const std::string msg = error_of<IoError>([&] { doc.root()["layers"][2]["units"].as<int>(); });
  EXPECT_EQ(msg, "config.json: field \"layers[2].units\" must be an integer, got string");
}

TEST(JsonViewTest, MissingFieldNamesTheFullPath) {
  JsonDocument doc(nlohmann::json::parse(R"({"optimizer": {"config": {}}})"), "model.json");
  EXPECT_EQ(
      error_of<ValueError>([&] { doc.root()["optimizer"]["config"].get<double>("learning_rate"); }),
      "model.json: missing required field \"optimizer.config.learning_rate\"");
}

TEST(JsonViewTest, IndexOutOfRangeAndNonArrayAreReported) {
  JsonDocument doc(nlohmann::json::parse(R"({"a": [1, 2], "b": 3})"), "x.json");
  EXPECT_EQ(error_of<ValueError>([&] { doc.root()["a"][5]; }),
            "x.json: field \"a\" has 2 elements; index 5 is out of range");
  EXPECT_EQ(error_of<ValueError>([&] { doc.root()["b"][0]; }),
            "x.json: field \"b\" must be an array, got integer");
  EXPECT_EQ(error_of<ValueError>([&] {
              nlohmann::json j = 1;
              JsonView(j, "s")["k"];
            }),
            "s: the top-level value must be an object, got integer");
}

TEST(JsonViewTest, ConvertsTypedValuesAndChecksRanges) {
  JsonDocument doc(nlohmann::json::parse(
                       R"({"i": 7, "neg": -3, "big": 4000000000, "f": 2.5, "two": 2.0, "s": "x",
                           "b": true, "v": [1, 2, 3], "n": null})"),
                   "cfg");
  const JsonView r = doc.root();
  EXPECT_EQ(r.get<int>("i"), 7);
  EXPECT_EQ(r.get<int64_t>("big"), 4000000000);
  EXPECT_EQ(r.get<uint32_t>("big"), 4000000000u);
  EXPECT_DOUBLE_EQ(r.get<double>("f"), 2.5);
  EXPECT_DOUBLE_EQ(r.get<double>("i"), 7.0);  // integers are numbers
  EXPECT_EQ(r.get<std::string>("s"), "x");
  EXPECT_TRUE(r.get<bool>("b"));
  EXPECT_EQ(r.get<std::vector<int>>("v"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(r.get_or<int>("absent", 9), 9);
  EXPECT_EQ(r.get_or<int>("n", 9), 9);
  EXPECT_EQ(r.get_or<int>("i", 9), 7);
  EXPECT_NE(error_of<ValueError>([&] { r.get<int>("big"); }).find("out of range"),
            std::string::npos);
  EXPECT_EQ(error_of<ValueError>([&] { r.get<uint64_t>("neg"); }),
            "cfg: field \"neg\" must be non-negative, got -3");
  EXPECT_EQ(error_of<ValueError>([&] { r.get<int>("two"); }),
            "cfg: field \"two\" must be an integer, got float");
  EXPECT_EQ(error_of<ValueError>([&] { r.get<std::vector<int>>("s"); }),
            "cfg: field \"s\" must be an array, got string");
  EXPECT_EQ(error_of<ValueError>([&] { r["v"][1].as<bool>(); }),
            "cfg: field \"v[1]\" must be a boolean, got integer");
}

TEST(JsonViewTest, FailReportsSemanticErrorsInTheSameFormat) {
  JsonDocument doc(nlohmann::json::parse(R"({"units": 0})"), "c.json", true);
  EXPECT_EQ(error_of<IoError>([&] { doc.root()["units"].fail("must be positive"); }),
            "c.json: field \"units\" must be positive");
}

TEST(JsonViewTest, ItemsAndElementsCarryTheirPaths) {
  JsonDocument doc(nlohmann::json::parse(R"({"m": {"a": [10, 20]}})"), "d");
  const auto items = doc.root()["m"].items();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].first, "a");
  EXPECT_EQ(items[0].second.elements()[1].path(), "m.a[1]");
  EXPECT_EQ(items[0].second.elements()[1].as<int>(), 20);
}

}  // namespace
}  // namespace osprey::io
