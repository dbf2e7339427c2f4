// The two string hashes TensorFlow (and so Keras's Hashing, StringLookup and IntegerLookup)
// use to put values into bins: FarmHash's Fingerprint64 (tf.strings.to_hash_bucket_fast,
// tf.fingerprint's "farmhash64"), and SipHash-2-4 keyed by two 64-bit words
// (tf.strings.to_hash_bucket_strong, used when a salt is given). Both are fixed, documented
// functions of the bytes, so a bin computed here equals the bin Keras computes for the same
// string: the property a model trained in Keras needs from its preprocessing.
//   uint64_t bin = text::fingerprint64("hello") % 1000;       // 296, as Keras's Hashing(1000)
//   uint64_t salted = text::siphash64("hello", {1, 2}) % 1000;  // 622, Hashing(1000, salt=[1,2])
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace osprey::data::text {

// FarmHash Fingerprint64 (farmhashna::Hash64 of Google's farmhash.cc, seed 81 for long inputs):
// stable across platforms and releases by FarmHash's own promise.
uint64_t fingerprint64(std::string_view bytes) noexcept;

// SipHash-2-4 (Aumasson and Bernstein) with key {k0, k1}, as highwayhash's SipHash that
// TensorFlow's StrongKeyedHash calls.
uint64_t siphash64(std::string_view bytes, const std::array<uint64_t, 2>& key) noexcept;

}  // namespace osprey::data::text
