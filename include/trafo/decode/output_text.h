// The output contract of every command that prints one result per input line (translate, eval's
// hypotheses, the server): one line out for every line in, whatever the model emits. Byte-fallback
// pieces decode to any byte, so a sampled translation can hold a line break or a control byte;
// one_line is the one place where decoded text is made safe to print (docs/output.md).
#pragma once

#include <string>
#include <string_view>

namespace trafo::decode {

// `text` as one printable line: each control character (U+0000-U+001F, U+007F-U+009F, so tab,
// line feed, carriage return and NEL too) and each line or paragraph separator (U+2028, U+2029)
// becomes a space; a byte that is not part of valid UTF-8 becomes U+FFFD; then runs of spaces
// become one and spaces at either end are dropped. Text without such characters is unchanged
// except for those spaces.
std::string one_line(std::string_view text);

// The number of words of a line as alignments count them: runs of characters other than space
// and tab.
int count_words(std::string_view line);

}  // namespace trafo::decode
