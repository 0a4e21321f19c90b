cmake_minimum_required(VERSION 3.22)  # policies, as in the project
# Run by the build (cmake -P): writes OUTPUT, a C++ file that defines `const std::string_view NAME`
# in namespace NAMESPACE holding the bytes of INPUT, so that the binary carries the file.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
math(EXPR size "${length} / 2")
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by cmake/embed_file.cmake: do not edit.\n#include <string_view>\n"
     "namespace ${NAMESPACE} {\nnamespace {\nconstexpr char kBytes[] = {\n${bytes}'\\0'};\n}  // namespace\n"
     "extern const std::string_view ${NAME};\nconst std::string_view ${NAME}(kBytes, ${size});\n}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
