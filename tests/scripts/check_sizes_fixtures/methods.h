// Fixture for scripts/check_sizes.py (tests/scripts/check_sizes_test.py):
// which member functions count as public methods. Not compiled.
#pragma once

class Counted {
 public:
  Counted();                                    // 1: constructors count
  explicit Counted(int a);                      // 2
  Counted(const Counted&) = delete;             // deleted: not counted
  Counted& operator=(const Counted&) = default;  // 3: operators count
  ~Counted();                                   // the destructor: not counted
  static Counted Make();                        // 4
  void Overloaded(int);                         // 5: each overload
  void Overloaded(double);                      // 6
  int inline_body() const { return a_; }        // 7
  template <typename T>
  void Templated(T t) {                         // 8
    (void)t;
  }
  virtual void Pure() = 0;                      // 9
  explicit operator bool() const;               // 10
  absl::Status Annotated() ABSL_LOCKS_EXCLUDED(mu_);  // 11
  friend void Friend(Counted&);                 // a friend: not counted
  using Base::Inherited;                        // not counted
  DISALLOW_SOMETHING(Counted);                  // a macro: not counted
  std::function<void(int)> callback;            // a data member
  void (*pointer)(int);                         // a data member

  struct Nested {
    void NestedMethod();                        // Nested's, not Counted's
  };

 protected:
  void Protected();

 private:
  void Private();
  int a_ ABSL_GUARDED_BY(mu_) = 0;

 public:
  void AgainPublic();                           // 12
};

struct PublicByDefault {
  void One();
  void Two();

 private:
  void Three();
};
