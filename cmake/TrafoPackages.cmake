# The packages every trafo build finds (the main build and fuzz/): LibTorch from the PyPI wheel
# (scripts/setup.sh puts it in .venv; pass -DCMAKE_PREFIX_PATH=$(.venv/bin/python -c 'import torch;
# print(torch.utils.cmake_prefix_path)')), and Debian's fmt, spdlog, CLI11, nlohmann-json, utfcpp,
# SentencePiece, libxml2 and Boost's headers.
find_package(Torch 2.0 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(utf8cpp REQUIRED)
find_package(Boost 1.74 REQUIRED)  # headers only: Asio and Beast for trafo serve
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
pkg_check_modules(LIBXML2 REQUIRED IMPORTED_TARGET libxml-2.0)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc icu-i18n)
# CLD2 (Debian's libcld2-dev) has no pkg-config file.
find_library(TRAFO_CLD2_LIBRARY cld2)
find_path(TRAFO_CLD2_INCLUDE cld2/public/compact_lang_det.h)
if(NOT TRAFO_CLD2_LIBRARY OR NOT TRAFO_CLD2_INCLUDE)
  message(FATAL_ERROR "CLD2 not found: install libcld2-dev (scripts/setup.sh does)")
endif()
if(NOT TARGET trafo_cld2)
  add_library(trafo_cld2 INTERFACE IMPORTED)
  target_link_libraries(trafo_cld2 INTERFACE ${TRAFO_CLD2_LIBRARY})
  target_include_directories(trafo_cld2 SYSTEM INTERFACE ${TRAFO_CLD2_INCLUDE})
endif()

# The wheel's include folder carries fmt 12 headers, Debian's spdlog is built against fmt 9:
# a folder holding only a link to the system's fmt goes ahead of torch's include folders.
set(TRAFO_SYSTEM_FMT_DIR ${CMAKE_BINARY_DIR}/system-fmt)
file(MAKE_DIRECTORY ${TRAFO_SYSTEM_FMT_DIR})
get_target_property(_fmt_includes fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
if(NOT _fmt_includes)
  set(_fmt_includes /usr/include)
endif()
list(GET _fmt_includes 0 _fmt_include)
file(CREATE_LINK ${_fmt_include}/fmt ${TRAFO_SYSTEM_FMT_DIR}/fmt SYMBOLIC)
