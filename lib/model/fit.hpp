// Fitting a link's cost line (alpha + bytes / rate) to ping-pong times, for
// tutti-tune --calibrate.
#pragma once

#include <optional>
#include <utility>
#include <vector>

namespace tutti::model {

struct FittedLine {
  double alpha_us = 0;      // at least 0
  double bytes_per_us = 0;  // positive
};

// The least-squares line through (bytes, us) points; nothing where the
// times do not grow with the bytes (noise above the bytes' cost, or fewer
// than two sizes). Two points alone put 2x2 emulated nodes' eager rate at
// 4,088 GB/s when 4 KiB happened to take as long as 8 B (2026-12-06).
inline std::optional<FittedLine> fit_line(const std::vector<std::pair<double, double>>& points) {
  if (points.size() < 2) return std::nullopt;
  double mean_b = 0, mean_t = 0;
  for (const auto& [b, t] : points) {
    mean_b += b;
    mean_t += t;
  }
  mean_b /= static_cast<double>(points.size());
  mean_t /= static_cast<double>(points.size());
  double sbb = 0, sbt = 0;
  for (const auto& [b, t] : points) {
    sbb += (b - mean_b) * (b - mean_b);
    sbt += (b - mean_b) * (t - mean_t);
  }
  if (sbb <= 0 || sbt <= 0) return std::nullopt;
  const double us_per_byte = sbt / sbb;
  FittedLine line;
  line.bytes_per_us = 1 / us_per_byte;
  line.alpha_us = mean_t - us_per_byte * mean_b;
  if (line.alpha_us < 0) line.alpha_us = 0;
  return line;
}

}  // namespace tutti::model
