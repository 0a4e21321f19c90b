// The ids of the special pieces, the same in every vocabulary trafo makes: data::Tokenizer has
// SentencePiece train with them (and refuses a model without them), the model pads with kPadId
// and the decoders start with kBosId and stop at kEosId.
#pragma once

namespace trafo {

inline constexpr int kPadId = 0;
inline constexpr int kUnkId = 1;
inline constexpr int kBosId = 2;
inline constexpr int kEosId = 3;

}  // namespace trafo
