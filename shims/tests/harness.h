// A tiny test harness: TEST(group, name) registers a test; CHECK* record failures
// (from any thread) and go on; SKIP(reason) ends a test as skipped.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

namespace harness {

using TestFn = void (*)();
struct Registrar {
  Registrar(const char* group, const char* name, TestFn fn);
};
struct Skip {
  std::string reason;
};
void record_failure(const char* file, int line, const std::string& message);

template <typename T>
void show(std::ostream& out, const T& value) {
  if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    out << +value;
  } else if constexpr (std::is_pointer_v<T>) {
    out << reinterpret_cast<const void*>(value);
  } else {
    out << "[";
    bool first = true;
    for (const auto& item : value) {
      out << (first ? "" : ", ");
      show(out, static_cast<std::decay_t<decltype(item)>>(item));
      first = false;
    }
    out << "]";
  }
}

template <typename A, typename B>
std::string describe(const char* a_text, const char* b_text, const A& a, const B& b) {
  std::ostringstream out;
  out << a_text << " == " << b_text << " (";
  show(out, a);
  out << " vs ";
  show(out, b);
  out << ")";
  return out.str();
}

}  // namespace harness

#define HARNESS_CAT_(a, b) a##b
#define HARNESS_CAT(a, b) HARNESS_CAT_(a, b)
#define TEST(group, name)                                                               \
  static void test_##group##_##name();                                                  \
  static harness::Registrar HARNESS_CAT(registrar_##group##_##name, __LINE__)(#group, #name, \
                                                                           &test_##group##_##name); \
  static void test_##group##_##name()

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      harness::record_failure(__FILE__, __LINE__, "CHECK(" #cond ")"); \
    }                                                                \
  } while (0)

#define CHECK_EQ(a, b)                                                                  \
  do {                                                                                  \
    const auto harness_a_ = (a); /* a copy: (a) may refer into a temporary */ \
    const auto harness_b_ = (b);                                                       \
    if (!(harness_a_ == harness_b_)) {                                                  \
      harness::record_failure(__FILE__, __LINE__, harness::describe(#a, #b, harness_a_, harness_b_)); \
    }                                                                                   \
  } while (0)

#define CHECK_NEAR(a, b, tolerance)                                                      \
  do {                                                                                   \
    double harness_a_ = static_cast<double>(a);                                          \
    double harness_b_ = static_cast<double>(b);                                          \
    double harness_d_ = harness_a_ - harness_b_;                                         \
    if (!(harness_d_ <= (tolerance) && -harness_d_ <= (tolerance))) {                    \
      harness::record_failure(__FILE__, __LINE__, harness::describe(#a, #b, harness_a_, harness_b_)); \
    }                                                                                    \
  } while (0)

// Expects a shim call to succeed; prints the library's message when it does not.
#define CHECK_OK(expr)                                                                        \
  do {                                                                                        \
    int32_t harness_code_ = (expr);                                                           \
    if (harness_code_ != 0) {                                                                 \
      harness::record_failure(__FILE__, __LINE__,                                             \
                              std::string(#expr) + " returned " + std::to_string(harness_code_) + \
                                  ": " + aoti_shim_last_error());                             \
    }                                                                                         \
  } while (0)

#define SKIP(reason) throw harness::Skip{reason}
