// Fuzzes the tuning-file parser: any bytes, strict and lenient. It may
// reject the input (tutti::Error); it must never crash, hang, read out of
// bounds or throw anything else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.hpp"
#include "tuning/file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool strict : {true, false}) {
    try {
      const tutti::TuningFile f = tutti::parse_tuning_toml(text, "fuzz.toml", strict);
      // Selection for a few job shapes walks every section and rule.
      for (int ranks : {1, 2, 7, 64})
        (void)f.rules_for(tutti::JobShape{ranks, ranks > 8 ? 4 : 1, ranks > 8 ? ranks / 4 : ranks});
    } catch (const tutti::Error&) {
    }
  }
  return 0;
}
