// Pictures of attention weights: per map (kind and layer) a row of heatmaps, the head average
// first, then every head; rows and columns labelled with the SentencePiece pieces.
#pragma once

#include <string>

#include "trafo/report/attention_maps.h"

namespace trafo::report {

// One standalone SVG document holding every map.
std::string attention_svg(const AttentionMaps& maps);

// An HTML page (no scripts, opens offline): the texts, then every map under its own heading.
std::string attention_html(const AttentionMaps& maps);

}  // namespace trafo::report
