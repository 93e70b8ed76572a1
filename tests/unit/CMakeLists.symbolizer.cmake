# Unit test of host/lib/trace/symbolizer, included from tests/CMakeLists.txt.
# The fixtures below are only read by the test, never run. They get their
# own flags (no sanitizers, fixed optimisation levels), so what the test
# expects does not depend on how the project itself is configured.
set(SYMB_FIXTURE_SRC ${CMAKE_CURRENT_LIST_DIR}/symbolizer_fixtures)

add_executable(symb_fixture_nopie ${SYMB_FIXTURE_SRC}/fixture_main.c)
set_property(TARGET symb_fixture_nopie PROPERTY COMPILE_OPTIONS -O2 -g -fno-pie)
set_property(TARGET symb_fixture_nopie PROPERTY LINK_OPTIONS -no-pie)

add_executable(symb_fixture_pie ${SYMB_FIXTURE_SRC}/fixture_main.c)
set_property(TARGET symb_fixture_pie PROPERTY COMPILE_OPTIONS -O0 -g -fPIE)
set_property(TARGET symb_fixture_pie PROPERTY LINK_OPTIONS -pie)

add_library(symb_fixture_lib SHARED ${SYMB_FIXTURE_SRC}/fixture_lib.c)
set_property(TARGET symb_fixture_lib PROPERTY COMPILE_OPTIONS -O0 -g)
set_property(TARGET symb_fixture_lib PROPERTY LINK_OPTIONS "")

add_library(symb_fixture_cpp SHARED ${SYMB_FIXTURE_SRC}/fixture_cpp.cpp)
set_property(TARGET symb_fixture_cpp PROPERTY COMPILE_OPTIONS -O0 -g)
set_property(TARGET symb_fixture_cpp PROPERTY LINK_OPTIONS "")

set_property(TARGET symb_fixture_nopie PROPERTY POSITION_INDEPENDENT_CODE OFF)
foreach(fixture symb_fixture_pie symb_fixture_lib symb_fixture_cpp)
  set_property(TARGET ${fixture} PROPERTY POSITION_INDEPENDENT_CODE ON)
endforeach()

# binutils found by CMake; the test falls back to PATH when one is missing.
set(SYMB_TOOL_DEFS)
foreach(tool NM OBJCOPY READELF)
  if(CMAKE_${tool})
    list(APPEND SYMB_TOOL_DEFS "SYMB_${tool}=\"${CMAKE_${tool}}\"")
  endif()
endforeach()

add_executable(test_symbolizer ${CMAKE_CURRENT_LIST_DIR}/test_symbolizer.c)
target_link_libraries(test_symbolizer PRIVATE lphost ${CMAKE_DL_LIBS})
target_compile_definitions(test_symbolizer PRIVATE
  "SYMB_FIXTURE_NOPIE=\"$<TARGET_FILE:symb_fixture_nopie>\""
  "SYMB_FIXTURE_PIE=\"$<TARGET_FILE:symb_fixture_pie>\""
  "SYMB_FIXTURE_LIB=\"$<TARGET_FILE:symb_fixture_lib>\""
  "SYMB_FIXTURE_CPP=\"$<TARGET_FILE:symb_fixture_cpp>\""
  "SYMB_FIXTURE_DIR=\"${SYMB_FIXTURE_SRC}\""
  ${SYMB_TOOL_DEFS})
add_dependencies(test_symbolizer symb_fixture_nopie symb_fixture_pie symb_fixture_lib
                 symb_fixture_cpp)
add_test(NAME unit_symbolizer COMMAND test_symbolizer)
