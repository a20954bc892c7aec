# Helpers that keep the per-folder CMakeLists short. Sources are globbed
# with CONFIGURE_DEPENDS so that adding a file needs no CMake edit.

# tpusim_folder_library(NAME DIR [EXCLUDE regex] [LINKS ...])
# A static library of every .cpp below DIR (recursively).
function(tpusim_folder_library name dir)
  cmake_parse_arguments(A "" "EXCLUDE" "LINKS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cpp)
  if(A_EXCLUDE)
    list(FILTER srcs EXCLUDE REGEX "${A_EXCLUDE}")
  endif()
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${A_LINKS})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${A_LINKS})
  endif()
endfunction()

# tpusim_test_dir(DIR LINKS ... [SCMAIN]): one executable per test_*.cpp in
# DIR, each test case discovered by CTest and run in its own process (so a
# SystemC test elaborates once per process). Tests find the source tree
# through the TPUSIM_SOURCE_DIR compile definition and the executable
# through the TPUSIM_BINARY environment variable (one variable: a list
# would be split by the discovery script). SCMAIN links the test main that
# runs GoogleTest from sc_main (for tests that link the SystemC kernel).
# Each executable is listed in the global property TPUSIM_TESTS_<PREFIX>
# (tests/CMakeLists.txt makes the unit tests' list a build target).
function(tpusim_test_dir dir)
  cmake_parse_arguments(A "SCMAIN" "PREFIX;TIMEOUT" "LINKS" ${ARGN})
  file(GLOB tests CONFIGURE_DEPENDS ${dir}/test_*.cpp)
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  foreach(src ${tests})
    get_filename_component(stem ${src} NAME_WE)
    set(exe ${A_PREFIX}${stem})
    add_executable(${exe} ${src})
    set_property(GLOBAL APPEND PROPERTY TPUSIM_TESTS_${A_PREFIX} ${exe})
    # The tests' own code at -O1 in an optimized build (the libraries they
    # test keep the build's -O3): it compiles in about half the time, and
    # the ~120 test files were half of a clean build's CPU time.
    target_compile_options(${exe} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:-O1>)
    target_link_libraries(${exe} PRIVATE ${A_LINKS} GTest::gtest GTest::gmock)
    if(A_SCMAIN)
      target_link_libraries(${exe} PRIVATE tpusim_test_scmain)
    else()
      target_link_libraries(${exe} PRIVATE GTest::gtest_main)
    endif()
    gtest_discover_tests(${exe} DISCOVERY_TIMEOUT 60
      PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS ${A_PREFIX}
      ENVIRONMENT "TPUSIM_BINARY=$<TARGET_FILE:tpusim>")
  endforeach()
endfunction()
