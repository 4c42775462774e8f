// scripts/compile_time/eigen_prog.cpp — the floor for scripts/compile_time.sh: the same five
// gradient steps of a Linear(2,1) under MSE written with Eigen alone (no autograd, no framework).
#include <Eigen/Dense>

#include <iostream>

int main() {
  Eigen::MatrixXf X(2, 2), y(2, 1), W = Eigen::MatrixXf::Constant(2, 1, 0.1f);
  X << 1.0f, 0.5f, 0.5f, 1.0f;
  y << 2.0f, 1.5f;
  float b = 0.0f;
  for (int epoch = 0; epoch < 5; ++epoch) {
    Eigen::MatrixXf out = (X * W).array() + b;
    Eigen::MatrixXf diff = out - y;
    const float loss = diff.squaredNorm() / 2.0f;
    Eigen::MatrixXf grad = diff * (2.0f / 2.0f);
    W -= 0.01f * (X.transpose() * grad);
    b -= 0.01f * grad.sum();
    std::cout << "epoch " << epoch << ": " << loss << "\n";
  }
}
