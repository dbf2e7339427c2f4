// TOML read as the JSON tree it maps to, so a config may be written in either and read by one
// JSON reader (`osprey train --model net.toml`, a model description like config.json): tables
// become objects, arrays arrays, strings, integers, floats and booleans themselves, and dates and
// times their TOML text. TOML has no null: a field left out is what JSON's null would say.
//   nlohmann::json j = io::read_toml_file("net.toml");
//   j["model"]["config"]["layers"][0]["class_name"];   // [[model.config.layers]] class_name = ...
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace osprey::io {

// Parses text; `source` names it in errors: ValueError "net.toml:3:9: invalid TOML: ..." (the
// line and column count from 1, as the tuner's search-space files report them).
nlohmann::json toml_to_json(std::string_view text, const std::string& source);
// The same for a file: IoError when it cannot be read, ValueError naming it for invalid TOML.
nlohmann::json read_toml_file(const std::filesystem::path& path);

}  // namespace osprey::io
