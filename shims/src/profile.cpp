// The profile counters: per-thread tables (no shared write on a call), merged by name
// when read. See profile.h.
#include "profile.h"

#include "tensor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace aotishim::profile {
namespace {

constexpr const char* kTotal = "(shim total: outermost entry points)";

bool env_enabled() {
  const char* value = std::getenv("AOTI_SHIM_PROFILE");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

// One thread's counters. The owner writes under the table's mutex (uncontended but
// for a reader merging), so a read never sees a torn pair.
struct ThreadTable {
  std::mutex mutex;
  std::unordered_map<const char*, std::pair<uint64_t, uint64_t>> counters;  // name -> (calls, ns)
};

struct Registry {
  std::mutex mutex;
  std::vector<ThreadTable*> tables;  // never freed: a thread's counts outlive it
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: read at exit
  return *instance;
}

thread_local ThreadTable* own_table = nullptr;
thread_local int api_depth = 0;

ThreadTable& table() {
  if (own_table == nullptr) {
    auto* fresh = new ThreadTable();
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.tables.push_back(fresh);
    own_table = fresh;
  }
  return *own_table;
}

struct Row {
  std::string name;
  uint64_t calls = 0;
  uint64_t nanos = 0;
};

// Every thread's counters merged by name (one literal may have several addresses),
// the most time first.
std::vector<Row> merged() {
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_name;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (ThreadTable* t : r.tables) {
    std::lock_guard<std::mutex> table_lock(t->mutex);
    for (const auto& [name, value] : t->counters) {
      auto& slot = by_name[name];
      slot.first += value.first;
      slot.second += value.second;
    }
  }
  std::vector<Row> rows;
  rows.reserve(by_name.size());
  for (const auto& [name, value] : by_name) {
    rows.push_back(Row{name, value.first, value.second});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.nanos > b.nanos; });
  return rows;
}

std::string tab_separated() {
  std::string text;
  for (const Row& row : merged()) {
    text += row.name + "\t" + std::to_string(row.calls) + "\t" + std::to_string(row.nanos) + "\n";
  }
  return text;
}

// At exit (or unload), when the environment switched profiling on: the table, for a
// person, to AOTI_SHIM_PROFILE_FILE or else stderr.
struct ExitReport {
  bool wanted = env_enabled();
  ~ExitReport() {
    if (!wanted) {
      return;
    }
    const char* path = std::getenv("AOTI_SHIM_PROFILE_FILE");
    FILE* out = path != nullptr && path[0] != '\0' ? std::fopen(path, "w") : stderr;
    if (out == nullptr) {
      return;
    }
    std::fprintf(out, "# aoti_shim profile (AOTI_SHIM_PROFILE): host time per shim function, all threads\n");
    std::fprintf(out, "%-52s %12s %14s %10s\n", "function", "calls", "total us", "ns/call");
    for (const Row& row : merged()) {
      std::fprintf(
          out, "%-52s %12llu %14.1f %10.0f\n", row.name.c_str(), static_cast<unsigned long long>(row.calls),
          static_cast<double>(row.nanos) / 1e3,
          row.calls ? static_cast<double>(row.nanos) / static_cast<double>(row.calls) : 0.0);
    }
    if (out != stderr) {
      std::fclose(out);
    }
  }
};

ExitReport exit_report;

}  // namespace

std::atomic<bool> enabled_flag{env_enabled()};

uint64_t now_ns() noexcept {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void add(const char* name, uint64_t nanos) noexcept {
  try {
    ThreadTable& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto& slot = t.counters[name];
    slot.first += 1;
    slot.second += nanos;
  } catch (...) {
    // Out of memory for a counter: the profile misses one call, the shim call goes on.
  }
}

void ApiScope::begin(const char* name) noexcept {
  name_ = name;
  ++api_depth;
  start_ = now_ns();
}

void ApiScope::end() noexcept {
  uint64_t elapsed = now_ns() - start_;
  add(name_, elapsed);
  if (--api_depth == 0) {
    add(kTotal, elapsed);
  }
}

}  // namespace aotishim::profile

using namespace aotishim;

extern "C" {

AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_enable(int32_t on, int32_t* previous) {
  bool was = profile::enabled_flag.exchange(on != 0, std::memory_order_relaxed);
  if (previous != nullptr) {
    *previous = was ? 1 : 0;
  }
  return AOTI_SHIM_OK;
}

AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_reset(void) {
  profile::Registry& r = profile::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto* t : r.tables) {
    std::lock_guard<std::mutex> table_lock(t->mutex);
    t->counters.clear();
  }
  return AOTI_SHIM_OK;
}

// Nothing but profile scopes: timed with the profile on, it tells a bench what the profile
// itself adds to the times it reports (issue 38: with a few microseconds of shim time per
// inference, the profile's own clock reads and counter updates are a visible part of it).
AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_probe(int32_t steps, int32_t counts) {
  AOTISHIM_PROFILE_API("(profile probe)");
  for (int32_t i = 0; i < steps; ++i) {
    AOTISHIM_PROFILE_STEP("(profile probe: step)");
  }
  for (int32_t i = 0; i < counts; ++i) {
    profile::count("(profile probe: count)");
  }
  return AOTI_SHIM_OK;
}

AOTI_SHIM_EXPORT AOTITorchError aoti_shim_profile_read(char* buffer, size_t size, size_t* needed) {
  // Not through guarded(): reading the table must not count as a call in it.
  AOTISHIM_TRY(require_output(needed, "needed"));
  try {
    std::string text = profile::tab_separated();
    *needed = text.size() + 1;
    if (buffer != nullptr && size > 0) {
      size_t n = std::min(size - 1, text.size());
      std::memcpy(buffer, text.data(), n);
      buffer[n] = '\0';
    }
  } catch (...) {
    return fail_format(AOTI_SHIM_E_OUT_OF_MEMORY, "aoti_shim_profile_read: out of host memory");
  }
  return AOTI_SHIM_OK;
}

}  // extern "C"
