// Runs the registered tests: `aoti_shim_tests [group...]` (all groups when none given).
// Prints one line per test and a last line "summary: passed=P failed=F skipped=S".
#include "harness.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

namespace harness {
namespace {

struct TestCase {
  const char* group;
  const char* name;
  TestFn fn;
};

std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

std::mutex failure_mutex;
int current_failures = 0;

}  // namespace

Registrar::Registrar(const char* group, const char* name, TestFn fn) { registry().push_back({group, name, fn}); }

void record_failure(const char* file, int line, const std::string& message) {
  std::lock_guard<std::mutex> lock(failure_mutex);
  ++current_failures;
  std::printf("    %s:%d: %s\n", file, line, message.c_str());
}

}  // namespace harness

int main(int argc, char** argv) {
  using namespace harness;
  int passed = 0, failed = 0, skipped = 0;
  for (const TestCase& test : registry()) {
    bool selected = argc < 2;
    for (int i = 1; i < argc; ++i) {
      selected = selected || std::strcmp(argv[i], test.group) == 0;
    }
    if (!selected) {
      continue;
    }
    current_failures = 0;
    std::string skip_reason;
    bool skipped_here = false;
    try {
      test.fn();
    } catch (const Skip& skip) {
      skipped_here = true;
      skip_reason = skip.reason;
    } catch (const std::exception& error) {
      record_failure(__FILE__, __LINE__, std::string("unexpected exception: ") + error.what());
    }
    if (current_failures > 0) {
      ++failed;
      std::printf("FAIL %s.%s\n", test.group, test.name);
    } else if (skipped_here) {
      ++skipped;
      std::printf("SKIP %s.%s: %s\n", test.group, test.name, skip_reason.c_str());
    } else {
      ++passed;
      std::printf("PASS %s.%s\n", test.group, test.name);
    }
    std::fflush(stdout);
  }
  std::printf("summary: passed=%d failed=%d skipped=%d\n", passed, failed, skipped);
  return failed == 0 ? 0 : 1;
}
