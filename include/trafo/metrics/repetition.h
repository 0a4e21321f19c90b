// Repetition loops: a translation that repeats one n-gram again and again ("the the the the", "is a
// dog is a dog is a dog is a dog"), the way a decoder fails that no corpus metric shows on its own.
#pragma once

#include <string>
#include <vector>

namespace trafo::metrics {

inline constexpr int kLoopRepeats = 4;   // an n-gram repeated this many times in a row is a loop
inline constexpr int kLoopLongestN = 8;  // the longest n-gram looked for

// Whether the whitespace-separated words of `text` hold kLoopRepeats or more copies in a row of
// one n-gram, n from 1 to kLoopLongestN.
bool has_repetition_loop(const std::string& text);

// How many of `hypotheses` have a repetition loop.
long long count_repetition_loops(const std::vector<std::string>& hypotheses);

}  // namespace trafo::metrics
