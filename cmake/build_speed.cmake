# Build speed: unity builds and precompiled headers (issue 35: the suite's 30 minutes on 2 cores).
#
# Unity builds (REPLISIM_UNITY_BUILD, default ON) compile each target's sources in batches of
# REPLISIM_UNITY_BATCH files, so that the heavy headers (nlohmann/json, GoogleTest, Asio, Qt) are
# parsed and their templates instantiated and compiled once per batch instead of once per file:
# a clean Release build took 439 s on 2 cores without, 264 s with. The price: names local to a file
# (anonymous namespaces, static functions) share a translation unit with the other files of their
# batch, so two files of one target may not define the same local name (the compiler says so).
# Configure with -DREPLISIM_UNITY_BUILD=OFF while editing one file again and again.
#
# Precompiled headers (REPLISIM_PCH, default ON): the standard library and the heavy third-party
# headers each target includes everywhere, parsed once per target (replisim_precompile below).
option(REPLISIM_UNITY_BUILD "Compile each target's sources in batches (faster clean builds)" ON)
set(REPLISIM_UNITY_BATCH 8 CACHE STRING "Source files per unity batch")
option(REPLISIM_PCH "Precompile the standard and third-party headers of each target" ON)
set(CMAKE_UNITY_BUILD ${REPLISIM_UNITY_BUILD})
set(CMAKE_UNITY_BUILD_BATCH_SIZE ${REPLISIM_UNITY_BATCH})

# The standard headers most of replisim's files include.
set(REPLISIM_STD_HEADERS <algorithm> <cmath> <cstdint> <functional> <map> <memory> <set>
                         <string> <vector>)

# replisim_test_optimisation(TARGET): test code (not the libraries it tests, where the simulations
# run) compiled at -O1: a unity batch of real_tests took 20.7 s at -O3, 11.8 s at -O1. In the
# sanitizer build the test code itself is not instrumented (the libraries, the replisim binary
# and the fuzz targets' replays are; ASan's allocator and leak check still see every allocation):
# the tests' own code is checked by what they assert, and compiling it instrumented took close to
# half of that build's CPU time (docs/testing.md).
function(replisim_test_optimisation target)
  target_compile_options(${target} PRIVATE -O1)
  if(REPLISIM_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()

# replisim_precompile(TARGET header...): precompiles the standard headers above and the given
# ones (as <name>) for TARGET's own sources, when REPLISIM_PCH is ON.
function(replisim_precompile target)
  if(REPLISIM_PCH)
    target_precompile_headers(${target} PRIVATE ${REPLISIM_STD_HEADERS} ${ARGN})
  endif()
endfunction()
