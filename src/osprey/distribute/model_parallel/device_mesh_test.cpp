#include "osprey/distribute/model_parallel/device_mesh.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "osprey/core/error.h"

namespace osprey::distribute {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

TEST(DeviceMeshTest, DevicesAreRowMajorVirtualDevicesByDefault) {
  DeviceMesh mesh({2, 4}, {"data", "model"});
  EXPECT_EQ(mesh.size(), 8);
  EXPECT_EQ(mesh.devices()[5], "cpu:5");
  EXPECT_THAT(mesh.coordinates(5), ElementsAre(1, 1));
  EXPECT_EQ(mesh.device_at({1, 3}), 7);
  EXPECT_EQ(mesh.axis_size("model"), 4);
  EXPECT_EQ(mesh.to_string(), "DeviceMesh({2, 4}, {data, model})");
}

TEST(DeviceMeshTest, BadArgumentsNameWhatIsWrong) {
  EXPECT_EQ(error_of([] {
              DeviceMesh({2, 2}, {"data"});
            }),
            "DeviceMesh: shape and axis_names must have the same length. Received: shape={2, 2} "
            "(2 axes), axis_names={data} (1 names)");
  EXPECT_EQ(error_of([] {
              DeviceMesh({2, 2}, {"x", "x"});
            }),
            "DeviceMesh: axis name 'x' is used twice in {x, x}");
  EXPECT_EQ(error_of([] {
              DeviceMesh({2, 2}, {"data", "model"}, {"cpu:0", "cpu:1"});
            }),
            "DeviceMesh: a mesh of shape {2, 2} needs 4 devices. Received: 2 (cpu:0, cpu:1)");
  EXPECT_EQ(error_of([] {
              DeviceMesh({2, 0}, {"data", "model"});
            }),
            "DeviceMesh: axis 'model' must have size >= 1. Received: 0");
  EXPECT_EQ(error_of([] { (void)DeviceMesh({2}, {"data"}).axis_size("model"); }),
            "DeviceMesh: no axis 'model' in DeviceMesh({2}, {data})");
}

TEST(LayoutMapTest, KeysAreRegexesFullyMatchedAgainstPaths) {
  LayoutMap layout(DeviceMesh({2, 4}, {"data", "model"}));
  layout["dense.*/kernel"] = {std::nullopt, "model"};
  layout["dense.*/bias"] = {"model"};
  EXPECT_EQ(layout.lookup("dense_1/kernel")->to_string(), "(None, 'model')");
  EXPECT_EQ(layout.lookup("dense/bias")->to_string(), "('model',)");
  // Fully matched: a path with a prefix the regex does not cover is not matched.
  EXPECT_FALSE(layout.lookup("sequential/dense/kernel").has_value());
  EXPECT_FALSE(layout.lookup("dense/kernel_extra").has_value());
  EXPECT_THAT(layout.keys(), ElementsAre("dense.*/kernel", "dense.*/bias"));
}

TEST(LayoutMapTest, APathMatchingTwoKeysIsAnErrorNamingBoth) {
  LayoutMap layout(DeviceMesh({2}, {"model"}));
  layout[".*/kernel"] = {std::nullopt, "model"};
  layout["sequential/dense.*"] = {"model", std::nullopt};
  EXPECT_EQ(error_of([&] { (void)layout.lookup("sequential/dense_1/kernel"); }),
            "LayoutMap: the variable 'sequential/dense_1/kernel' matches two keys, '.*/kernel' and "
            "'sequential/dense.*'; make the regexes exclusive");
}

TEST(LayoutMapTest, AnInvalidRegexIsAnErrorNamingTheKey) {
  LayoutMap layout(DeviceMesh({2}, {"model"}));
  EXPECT_THAT(error_of([&] { layout["dense[/kernel"] = {"model"}; }),
              HasSubstr("LayoutMap: the key 'dense[/kernel' is not a valid regex"));
}

TEST(LayoutMapTest, TheLintListsEveryUnmatchedPath) {
  LayoutMap layout(DeviceMesh({2}, {"model"}));
  layout["s/dense/kernel"] = {std::nullopt, "model"};
  EXPECT_THAT(layout.unmatched({"s/dense/kernel", "s/dense/bias", "s/dense_1/kernel"}),
              ElementsAre("s/dense/bias", "s/dense_1/kernel"));
}

TEST(LayoutMapTest, LayoutsAreCheckedAgainstShapeAndMesh) {
  const DeviceMesh mesh({2, 4}, {"data", "model"});
  EXPECT_EQ(error_of([&] {
              check_layout("d/kernel", {6, 10}, {std::nullopt, "model"}, mesh);
            }),
            "LayoutMap: 'd/kernel' (shape [6, 10]): dimension 1 of size 10 cannot be split evenly "
            "over mesh axis 'model' of size 4");
  EXPECT_EQ(error_of([&] {
              check_layout("d/kernel", {8, 8}, {"model"}, mesh);
            }),
            "LayoutMap: the layout ('model',) of 'd/kernel' has 1 entries, but the variable has 2 "
            "dimensions (shape [8, 8])");
  EXPECT_EQ(error_of([&] {
              check_layout("d/kernel", {8, 8}, {std::nullopt, "tensor"}, mesh);
            }),
            "LayoutMap: the layout (None, 'tensor') of 'd/kernel' names axis 'tensor', which "
            "DeviceMesh({2, 4}, {data, model}) does not have");
  EXPECT_EQ(error_of([&] {
              check_layout("d/kernel", {8, 8}, {"model", "model"}, mesh);
            }),
            "LayoutMap: the layout ('model', 'model') of 'd/kernel' uses mesh axis 'model' for two "
            "dimensions");
}

TEST(LayoutMapTest, ShardSlicesFollowTheMeshCoordinates) {
  const DeviceMesh mesh({2, 4}, {"data", "model"});
  // Device 6 is (data 1, model 2): columns [256, 384) of a [784, 512] kernel.
  const ShardSlice s = shard_slice("k", {784, 512}, {std::nullopt, "model"}, mesh, 6);
  EXPECT_THAT(s.start, ElementsAre(0, 256));
  EXPECT_THAT(s.length, ElementsAre(784, 128));
  const ShardSlice r = shard_slice("k", {784, 512}, {}, mesh, 6);
  EXPECT_THAT(r.start, ElementsAre(0, 0));
  EXPECT_THAT(r.length, ElementsAre(784, 512));
}

TEST(VisualizeShardingTest, DrawsAMatrixAsAGridOfShardsWithTheDevicesHoldingEach) {
  const DeviceMesh mesh({2, 4}, {"data", "model"});
  EXPECT_EQ(visualize_sharding("dense/kernel", {784, 512}, {std::nullopt, "model"}, mesh),
            "dense/kernel [784, 512] (None, 'model') on DeviceMesh({2, 4}, {data, model})\n"
            "+------------------+------------------+------------------+------------------+\n"
            "| [0:784, 0:128]   | [0:784, 128:256] | [0:784, 256:384] | [0:784, 384:512] |\n"
            "| cpu:0 cpu:4      | cpu:1 cpu:5      | cpu:2 cpu:6      | cpu:3 cpu:7      |\n"
            "+------------------+------------------+------------------+------------------+\n");
  // Both axes: rows over "data", columns over "model".
  const DeviceMesh small({2, 2}, {"data", "model"});
  EXPECT_EQ(visualize_sharding("k", {4, 6}, {"data", "model"}, small),
            "k [4, 6] ('data', 'model') on DeviceMesh({2, 2}, {data, model})\n"
            "+------------+------------+\n"
            "| [0:2, 0:3] | [0:2, 3:6] |\n"
            "| cpu:0      | cpu:1      |\n"
            "+------------+------------+\n"
            "| [2:4, 0:3] | [2:4, 3:6] |\n"
            "| cpu:2      | cpu:3      |\n"
            "+------------+------------+\n");
  EXPECT_EQ(visualize_sharding("b", {4}, {}, small),
            "b [4] () on DeviceMesh({2, 2}, {data, model})\n"
            "+-------------------------+\n"
            "| [0:4]                   |\n"
            "| cpu:0 cpu:1 cpu:2 cpu:3 |\n"
            "+-------------------------+\n");
}

}  // namespace
}  // namespace osprey::distribute
