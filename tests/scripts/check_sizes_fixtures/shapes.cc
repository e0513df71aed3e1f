// Fixture for scripts/check_sizes.py (tests/scripts/check_sizes_test.py):
// the function shapes the detector must measure. Not compiled; the test
// pins each function's name, first and last line. { braces in a comment }
#include <functional>
#define BRACES(x) do { x; } while (0)
#define LONG_MACRO(x) \
  void x() {          \
  }

namespace outer {
namespace {

int Plain(int a) {
  return a + 1;
}

}  // namespace

template <typename T>
std::function<void()> Templated(T value,
                                int other) {
  const char* s = "} not a brace {";
  const char c = '{';
  const int big = 1'000'000;
  auto lambda = [&](int x) -> int {
    struct Local {
      int Get() { return 1; }
    };
    return x + Local().Get();
  };
  return [value] { (void)value; };
}

class Widget : public Base {
 public:
  Widget(int a, int b) : a_{a}, b_(b) {
    Plain(a_);
  }
  int operator()(int x) const { return x; }
  bool operator==(const Widget& o) const {
    return a_ == o.a_;
  }

 private:
  int a_{0};
  int b_ ABSL_GUARDED_BY(mu_){0};
  std::function<void()> callback_ = [] {
    Plain(2);
  };
};

const auto kTable = std::vector<std::function<int(int)>>{
    [](int x) { return x; },
    [](int x) {
      return x * 2;
    },
};

static const bool kRegistered = Register("name", [] {
  return true;
});

absl::Status Widget::Raw() {
  const char* json = R"json({
    "not": {"a": "brace"}
  })json";
  return absl::OkStatus();
}

auto Trailing(int x) -> decltype(x) { return x; }

extern "C" {
void CFunction() {}
}

}  // namespace outer
