// Built against an installed arrayjit (see cmake/run_install_consumer.cmake).
#include <arrayjit/arrayjit.hpp>

#include <iostream>

int main() {
  aj::Array x = aj::ones({2, 3}, aj::DType::f32) + 1;
  const float total = aj::sum(x).item<float>();
  std::cout << "arrayjit " << aj::version() << ": sum(ones({2,3}) + 1) = " << total << "\n";
  if (total != 12.0f) {
    std::cerr << "expected 12\n";
    return 1;
  }
  return 0;
}
