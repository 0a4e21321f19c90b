# One CMake target per area of src/ (see CMakeLists.txt). Uses TRAFO_SYSTEM_FMT_DIR, TRAFO_WARNINGS,
# Torch and OpenMP from the top-level file.

# LibTorch for `target`, with OpenMP (at::parallel_for is a header template: without OpenMP in the
# including file it runs serially; linked by flag, not by the system library's path, so that the
# binary loads one libgomp.so.1, LibTorch's, found first through its rpath) and the system's fmt
# ahead of the fmt 12 headers in the wheel's include folder (Debian's spdlog is built against fmt 9).
function(trafo_torch_settings target)
  target_include_directories(${target} BEFORE PUBLIC ${TRAFO_SYSTEM_FMT_DIR})
  target_include_directories(${target} SYSTEM PUBLIC ${TORCH_INCLUDE_DIRS})  # not ours to warn about
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  target_compile_options(${target} PUBLIC ${OpenMP_CXX_FLAGS})
  target_link_options(${target} PUBLIC ${OpenMP_CXX_FLAGS})
  target_compile_definitions(${target} PUBLIC TRAFO_VERSION="${PROJECT_VERSION}")
endfunction()

# trafo_area(NAME [NO_TORCH] [EXECUTABLE] [TARGET target] [SOURCES files...] [USES areas...] [LIBS libraries...])
# A static library trafo_NAME (or the executable TARGET) of src/NAME/*.cpp (or SOURCES), linking
# the areas it USES and LIBS. Each build checks that its files (and include/trafo/NAME/) include
# only headers of NAME and of the areas it USES, and no LibTorch header when NO_TORCH.
function(trafo_area name)
  cmake_parse_arguments(AREA "NO_TORCH;EXECUTABLE" "TARGET" "SOURCES;USES;LIBS" ${ARGN})
  if(NOT AREA_SOURCES)
    file(GLOB AREA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  endif()
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.h ${PROJECT_SOURCE_DIR}/include/trafo/${name}/*.h)
  set(target trafo_${name})
  if(AREA_TARGET)
    set(target ${AREA_TARGET})
  endif()
  set(torch ON)
  if(AREA_NO_TORCH)
    set(torch OFF)
  endif()

  set(stamp ${CMAKE_BINARY_DIR}/layering/${name}.checked)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DAREA=${name} "-DALLOWED=${name};${AREA_USES}" -DTORCH=${torch}
            "-DFILES=${AREA_SOURCES};${headers}" -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake
    DEPENDS ${AREA_SOURCES} ${headers} ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake
    COMMENT "Checking what ${name}/ includes"
    VERBATIM)

  if(AREA_EXECUTABLE)
    add_executable(${target} ${AREA_SOURCES} ${stamp})
  else()
    add_library(${target} STATIC ${AREA_SOURCES} ${stamp})
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE ${TRAFO_WARNINGS})
  foreach(used ${AREA_USES})
    target_link_libraries(${target} PUBLIC trafo_${used})
  endforeach()
  target_link_libraries(${target} PUBLIC ${AREA_LIBS})
  if(torch)
    trafo_torch_settings(${target})
    target_precompile_headers(${target} REUSE_FROM trafo_pch)
  else()
    target_compile_definitions(${target} PUBLIC TRAFO_VERSION="${PROJECT_VERSION}")
  endif()
endfunction()
