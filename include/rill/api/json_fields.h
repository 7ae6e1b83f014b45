#pragma once
// Tolerant reads of the JSON that workers answer (api_views, metrics_text): a missing field or
// one of another type reads as zero, an empty array or the given default, so that an older or partial answer never
// throws in the middle of a response.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace rill::api::json_fields {

inline uint64_t u64(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

inline double num(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

inline std::string str(const nlohmann::json& j, const char* key, const char* otherwise) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string(otherwise);
}

inline const nlohmann::json& arr(const nlohmann::json& j, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

}  // namespace rill::api::json_fields
