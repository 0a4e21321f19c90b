// GFLOP/s of the packed inference GEMM (src/ops/packed_gemm.cpp) against at::linear (MKL's sgemm)
// for the default model's products (d_model 256, feed-forward 1,024, a 2,000-piece output) at the
// row counts of a decoding step, an encoder call and an offline batch. Not part of the build:
//
//   torch=$(.venv/bin/python -c 'import torch, os; print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++20 -fopenmp -I include -I "$torch/include" bench/gemm_rate.cpp build/libtrafo_ops.a \
//     -L "$torch/lib" -ltorch -ltorch_cpu -lc10 -Wl,-rpath,"$torch/lib" -o /tmp/gemm_rate
//   /tmp/gemm_rate [THREADS=2]
//
// The packed kernel is the variant of this CPU (ops::cpu_isa()); on AVX2 it takes at most
// kMaxPackedRows (128) rows.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "trafo/ops/eligibility.h"
#include "trafo/ops/packed_gemm.h"

namespace {

// Seconds per call of `call`, over `repeats` calls after one to warm up.
template <typename Call>
double seconds_per_call(const Call& call, int repeats) {
  call();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trafo::ops;
  at::set_num_threads(argc > 1 ? std::atoi(argv[1]) : 2);
  const bool avx512 = cpu_isa() == Isa::avx512;
  std::printf("%-12s %5s %10s %10s\n", "n x k", "rows", "packed", "at::linear");
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{256, 256}, {768, 256}, {1024, 256}, {256, 1024}, {2000, 256}}) {
    const auto weight = at::randn({n, k});
    const auto bias = at::randn({n});
    const auto panels = pack_panels(weight, panel_width(cpu_isa()));
    for (const int64_t rows : {8, 32, 64, 100, 128, 200, 300}) {
      const auto x = at::randn({rows, k});
      const double flop = 2.0 * static_cast<double>(rows * n * k);
      const double linear = flop / seconds_per_call([&] { at::linear(x, weight, bias); }, 300) / 1e9;
      char packed[16] = "-";
      if (avx512 || rows <= kMaxPackedRows) {
        std::snprintf(packed, sizeof packed, "%.1f",
                      flop / seconds_per_call([&] { packed_gemm(x, panels, n, bias); }, 300) / 1e9);
      }
      std::printf("%5lld x %-5lld %5lld %10s %10.1f\n", static_cast<long long>(n), static_cast<long long>(k),
                  static_cast<long long>(rows), packed, linear);
    }
  }
  return 0;
}
