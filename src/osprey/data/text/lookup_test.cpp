// StringLookup, IntegerLookup and Hashing against Keras 3.15.1 (TensorFlow 2.21 backend): every
// expected value was printed by the Keras layer built with the same arguments on the same input.
#include <gtest/gtest.h>

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/data/text/hashing.h"
#include "osprey/data/text/integer_lookup.h"
#include "osprey/data/text/string_lookup.h"
#include "osprey/tensor/factory.h"

namespace osprey::data::text {
namespace {

using Strings = std::vector<std::string>;
using Ints = std::vector<int64_t>;

using osprey::testing::error_of;

Ints ints(const Tensor& t) { return t.to_vector<int64_t>(); }
std::vector<float> floats(const Tensor& t) { return t.to_vector<float>(); }
Tensor i64(const Ints& v, const Shape& shape) { return from_vector<int64_t>(v, shape); }

TEST(StringLookupTest, AdaptCountsEveryValueAndOovIsZero) {
  StringLookup s;
  s.adapt(Strings{"a", "b", "b", "c", "c", "c", ""});
  EXPECT_EQ(s.get_vocabulary(), (Strings{"[UNK]", "c", "b", "a", ""}));
  const Tensor x = s({"c", "a", "q", ""});
  EXPECT_EQ(x.shape(), (Shape{4}));
  EXPECT_EQ(ints(x), (Ints{1, 3, 0, 4}));
}

TEST(StringLookupTest, MaskAndSeveralOovIndices) {
  StringLookup masked({.mask_token = "", .vocabulary = {"a", "b"}});
  EXPECT_EQ(masked.get_vocabulary(), (Strings{"", "[UNK]", "a", "b"}));
  EXPECT_EQ(ints(masked({"a", "", "x", "b"})), (Ints{2, 0, 1, 3}));
  // Two OOV indices: Fingerprint64 % 2 picks one.
  StringLookup two({.num_oov_indices = 2, .vocabulary = {"a", "b"}});
  EXPECT_EQ(two.get_vocabulary(), (Strings{"[UNK]", "[UNK]", "a", "b"}));
  EXPECT_EQ(ints(two({"hello", "world", "a", "zz"})), (Ints{0, 0, 2, 0}));
  StringLookup salted({.num_oov_indices = 3, .vocabulary = {"a", "b"}, .salt = {{1, 2}}});
  EXPECT_EQ(ints(salted({"hello", "world", "a", "zz"})), (Ints{1, 1, 3, 1}));
}

TEST(StringLookupTest, OneHotMultiHotAndCount) {
  StringLookup one({.vocabulary = {"a", "b", "c"}, .output_mode = "one_hot"});
  const Tensor o = one({"a", "q", "c"});
  EXPECT_EQ(o.shape(), (Shape{3, 4}));
  EXPECT_EQ(floats(o), (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}));
  StringLookup multi({.vocabulary = {"a", "b", "c"}, .output_mode = "multi_hot"});
  EXPECT_EQ(floats(multi({Strings{"a", "c", "c", "q"}, Strings{"b", "b", "b", "b"}})),
            (std::vector<float>{1, 1, 0, 1, 0, 0, 1, 0}));
  // A flat list is one example, as Keras's rank-1 input.
  EXPECT_EQ(multi(Strings{"a", "c"}).shape(), (Shape{4}));
  // In the non-int modes the mask has no index: it is dropped.
  StringLookup count({.mask_token = "", .vocabulary = {"a", "b", "c"}, .output_mode = "count"});
  EXPECT_EQ(count.get_vocabulary(), (Strings{"[UNK]", "a", "b", "c"}));
  EXPECT_EQ(floats(count({Strings{"a", "c", "c", ""}, Strings{"b", "", "", "q"}})),
            (std::vector<float>{0, 1, 0, 2, 1, 0, 1, 0}));
}

TEST(StringLookupTest, InvertMapsIndicesBack) {
  StringLookup inv({.vocabulary = {"a", "b", "c"}, .invert = true});
  EXPECT_EQ(inv.get_vocabulary(), (Strings{"[UNK]", "a", "b", "c"}));
  EXPECT_EQ(inv(i64({1, 2, 3, 0, 9}, {5})), (Strings{"a", "b", "c", "[UNK]", "[UNK]"}));
  StringLookup masked({.mask_token = "[M]", .vocabulary = {"a", "b", "c"}, .invert = true});
  EXPECT_EQ(masked.get_vocabulary(), (Strings{"[M]", "[UNK]", "a", "b", "c"}));
  EXPECT_EQ(masked(i64({0, 1, 2, 3, 4, 9}, {6})),
            (Strings{"[M]", "[UNK]", "a", "b", "c", "[UNK]"}));
  EXPECT_EQ(error_of<ValueError>([&] { inv({"a"}); }),
            "StringLookup: invert=true maps indices to strings: call it with an integer tensor");
}

TEST(StringLookupTest, JsonRoundTripAndErrors) {
  StringLookup s({.max_tokens = 4, .num_oov_indices = 2, .mask_token = "", .salt = {{3, 4}}});
  s.adapt({Strings{"x", "y", "y"}, Strings{"z", "z", "z"}});
  EXPECT_EQ(s.get_vocabulary(), (Strings{"", "[UNK]", "[UNK]", "z"}));
  const StringLookup back = StringLookup::from_json(s.to_json());
  EXPECT_EQ(back.get_vocabulary(), s.get_vocabulary());
  EXPECT_EQ(ints(back({"z", "q", "", "y"})), ints(s({"z", "q", "", "y"})));
  EXPECT_EQ(error_of<ValueError>([] { StringLookup({.output_mode = "binary"}); }),
            "StringLookup: output_mode must be one of \"int\", \"one_hot\", \"multi_hot\", "
            "\"count\", \"tf_idf\". Received: output_mode=\"binary\"");
  EXPECT_EQ(error_of<ValueError>([] { StringLookup({.num_oov_indices = -1}); }),
            "StringLookup: num_oov_indices must be >= 0. Received: num_oov_indices=-1");
  EXPECT_EQ(error_of<ValueError>([] {
              StringLookup({.mask_token = "", .vocabulary = {"a", ""}});
            }),
            "StringLookup: the mask token \"\" is in the vocabulary; leave it out, or give the "
            "reserved tokens first, in this order: [\"\", \"[UNK]\"]");
  StringLookup strict({.num_oov_indices = 0, .vocabulary = {"a"}});
  EXPECT_EQ(error_of<ValueError>([&] { strict({"b"}); }),
            "StringLookup: \"b\" is not in the vocabulary, and num_oov_indices=0 allows no OOV "
            "values (set num_oov_indices=1)");
  EXPECT_EQ(error_of<ValueError>([] { StringLookup({.invert = true, .output_mode = "count"}); }),
            "StringLookup: invert=true needs output_mode \"int\". Received: output_mode=\"count\"");
  StringLookup empty;
  EXPECT_EQ(error_of<ValueError>([&] { empty.adapt(Strings{}); }),
            "StringLookup: adapt needs at least one value. Received: none");
}

TEST(IntegerLookupTest, AdaptLookupAndInvert) {
  IntegerLookup lookup;
  lookup.adapt(i64({12, 36, 1138, 42, 42, 7, 7, -1}, {8}));
  EXPECT_EQ(lookup.get_vocabulary(), (Ints{-1, 42, 7, 1138, 36, 12}));
  const Tensor x = lookup(i64({12, 1138, 42, 42, 1000, 36}, {2, 3}));
  EXPECT_EQ(x.shape(), (Shape{2, 3}));
  EXPECT_EQ(ints(x), (Ints{5, 3, 1, 1, 0, 4}));

  // Two OOV indices by floormod (-3 % 2 == 1), the mask at 0.
  IntegerLookup masked({.num_oov_indices = 2, .mask_token = 0, .vocabulary = {12, 36, 42}});
  EXPECT_EQ(masked.get_vocabulary(), (Ints{0, -1, -1, 12, 36, 42}));
  EXPECT_EQ(ints(masked(from_vector<int32_t>({12, 0, 5, 8, -3, 42}, {6}))),
            (Ints{3, 0, 2, 1, 2, 5}));

  IntegerLookup inv({.vocabulary = {12, 36, 42}, .invert = true});
  EXPECT_EQ(inv.get_vocabulary(), (Ints{-1, 12, 36, 42}));
  EXPECT_EQ(ints(inv(i64({0, 1, 2, 3, 7}, {5}))), (Ints{-1, 12, 36, 42, -1}));
}

TEST(IntegerLookupTest, MultiHotAndTfIdf) {
  IntegerLookup multi({.vocabulary = {12, 36, 42}, .output_mode = "multi_hot"});
  const Tensor m = multi(i64({12, 42, 42, 9, 36, 36, 36, 36}, {2, 4}));
  EXPECT_EQ(m.shape(), (Shape{2, 4}));
  EXPECT_EQ(floats(m), (std::vector<float>{1, 1, 0, 1, 0, 0, 1, 0}));

  IntegerLookup tfidf({.output_mode = "tf_idf"});
  tfidf.adapt(i64({1, 2, 2, 2, 3, 3, 4, 4, 4}, {3, 3}));
  EXPECT_EQ(tfidf.get_vocabulary(), (Ints{-1, 4, 2, 3, 1}));
  const std::vector<float> got = floats(tfidf(i64({2, 2, 3, 9}, {1, 4})));
  const std::vector<float> want = {0.8605048656463623f, 0, 1.3862943649291992f, 0.9162907600402832f,
                                   0};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;
  const IntegerLookup back = IntegerLookup::from_json(tfidf.to_json());
  EXPECT_EQ(floats(back(i64({2, 2, 3, 9}, {1, 4}))), got);
  EXPECT_EQ(
      error_of<ValueError>([&] { tfidf(from_vector<float>({1.0f}, {1})); }),
      "IntegerLookup: inputs must be an int32 or int64 tensor. Received: float32[1] on cpu:0");
}

TEST(HashingTest, BinsMatchKerasWithMaskAndSalt) {
  EXPECT_EQ(ints(Hashing({.num_bins = 3})({"A", "B", "C", "D", "E"})), (Ints{1, 0, 1, 1, 2}));
  EXPECT_EQ(ints(Hashing({.num_bins = 3, .mask_value = ""})({"A", "B", "", "C", "D", "E"})),
            (Ints{1, 1, 0, 2, 2, 1}));
  EXPECT_EQ(ints(Hashing({.num_bins = 3, .salt = {{133, 133}}})({"A", "B", "C", "D", "E"})),
            (Ints{0, 0, 2, 1, 0}));
  EXPECT_EQ(ints(Hashing({.num_bins = 3, .salt = {{133, 137}}})({"A", "B", "C", "D", "E"})),
            (Ints{1, 2, 1, 0, 2}));
  // Integers hash as their decimal strings.
  EXPECT_EQ(ints(Hashing({.num_bins = 5})(i64({11, 22, 33, 44, 55}, {5}))), (Ints{4, 0, 4, 3, 1}));
  EXPECT_EQ(ints(Hashing({.num_bins = 5, .mask_value = "0"})(i64({0, 11, 22, 33, 44, 55}, {6}))),
            (Ints{0, 4, 1, 3, 4, 4}));
}

TEST(HashingTest, MultiHotCountAndOneHot) {
  const std::vector<Strings> rows = {{"A", "B", "C", "A"}, {"D", "E", "F", "G"}};
  EXPECT_EQ(floats(Hashing({.num_bins = 4, .output_mode = "multi_hot"})(rows)),
            (std::vector<float>{1, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(floats(Hashing({.num_bins = 4, .output_mode = "count"})(rows)),
            (std::vector<float>{3, 0, 0, 1, 1, 1, 1, 1}));
  const Tensor one = Hashing({.num_bins = 4, .output_mode = "one_hot"})({"A", "B", "C"});
  EXPECT_EQ(one.shape(), (Shape{3, 4}));
  EXPECT_EQ(floats(one), (std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(error_of<ValueError>([] { Hashing({.num_bins = 0}); }),
            "Hashing: num_bins must be positive. Received: num_bins=0");
  EXPECT_EQ(error_of<ValueError>([] { Hashing({.num_bins = 2, .output_mode = "tf_idf"}); }),
            "Hashing: output_mode must be one of \"int\", \"one_hot\", \"multi_hot\", "
            "\"count\". Received: output_mode=\"tf_idf\"");
  EXPECT_EQ(error_of<ValueError>([] {
              Hashing({.num_bins = 2})({Strings{"a", "b"}, Strings{"c"}});
            }),
            "Hashing: every example must have as many values in output_mode \"int\"; example 1 "
            "has 1, example 0 has 2");
}

}  // namespace
}  // namespace osprey::data::text
