# The one LibTorch hpcai500 builds against: the one inside PyPI's torch,
# pinned in scripts/requirements.txt and installed by scripts/install-deps.sh
# into the checkout's virtual environment (.venv). A CUDA build: the worker's
# NCCL, CUDA autocast and loss-scaling code compile on every build, and the
# same binary runs on a machine without a GPU.
#
# Sets Torch_VERSION, TORCH_LIBRARIES and TORCH_CUDA_LIBRARIES (through
# TorchConfig.cmake), HPCAI500_TORCH_CXX_STANDARD (the C++ standard that
# LibTorch's CMake package asks for; the project builds with it) and
# GLOO_INCLUDE_DIR. Another LibTorch: -DTorch_DIR=... or
# -DHPCAI500_PYTHON=/path/to/python (a warning says when its version is not
# the pinned one). docs/design.md, "One LibTorch", says how to move the pin.
set(HPCAI500_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python3" CACHE FILEPATH
    "The Python whose torch package holds the LibTorch to build against")

file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/requirements.txt hpcai500_pins
     REGEX "^torch==")
string(REGEX REPLACE "^torch==" "" HPCAI500_PINNED_TORCH "${hpcai500_pins}")

if(NOT Torch_DIR)
  if(NOT EXISTS "${HPCAI500_PYTHON}")
    message(FATAL_ERROR
      "No LibTorch: ${HPCAI500_PYTHON} does not exist. scripts/install-deps.sh "
      "makes .venv with torch==${HPCAI500_PINNED_TORCH}; or pass "
      "-DHPCAI500_PYTHON=<a python with torch> or -DTorch_DIR=<.../Torch>.")
  endif()
  execute_process(
    COMMAND "${HPCAI500_PYTHON}" -c
            "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE hpcai500_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE hpcai500_torch_error RESULT_VARIABLE hpcai500_torch_failed)
  if(hpcai500_torch_failed)
    message(FATAL_ERROR "No LibTorch: ${HPCAI500_PYTHON} cannot import torch: "
                        "${hpcai500_torch_error}")
  endif()
  set(Torch_DIR "${hpcai500_torch_prefix}/Torch" CACHE PATH
      "LibTorch's CMake package (from ${HPCAI500_PYTHON})")
endif()

# TorchConfig.cmake looks for the CUDA toolkit (nvcc, cudart, NVTX) itself
# when its LibTorch was built with CUDA: in the one cmake/CudaToolkit.cmake
# chooses.
include(CudaToolkit)

# Two warnings every configure printed, about nothing that matters here, go:
# - "library kineto not found": the wheel links Kineto (the profiler) into
#   libtorch_cpu.so, yet TorchConfig.cmake looks for a libkineto of its own;
#   an empty target answers its find_library.
# - "pytorch is not compatible with CMAKE_CUDA_ARCHITECTURES": its CUDA
#   setup warns whenever the variable is defined, and enable_language(CUDA)
#   defines it from the compiler's default under policy CMP0104. With the
#   old behaviour nothing defines it; cmake/Cuda.cmake sets the
#   architectures on each CUDA target instead.
if(NOT TARGET hpcai500_kineto_in_libtorch)
  add_library(hpcai500_kineto_in_libtorch INTERFACE)
endif()
set(kineto_LIBRARY hpcai500_kineto_in_libtorch)
cmake_policy(SET CMP0104 OLD)
find_package(Torch REQUIRED)
if(HPCAI500_PINNED_TORCH AND NOT Torch_VERSION VERSION_EQUAL HPCAI500_PINNED_TORCH)
  message(WARNING "LibTorch ${Torch_VERSION} (${Torch_DIR}): hpcai500 is built "
                  "and tested with ${HPCAI500_PINNED_TORCH} "
                  "(scripts/requirements.txt)")
endif()

# The wheel's libraries (built on manylinux_2_28 with a newer GCC than that
# system's libstdc++) carry and export their own copies of some libstdc++
# functions: libtorch.so defines std::filesystem::remove_all, for one. The
# dynamic linker binds a call to the first library in the program's load
# order that defines it, and g++ adds libstdc++ after every library on the
# command line, so our calls (and other libraries' calls) reached the
# wheel's copies, built for another libstdc++: a test crashed jumping to
# address 0 inside libtorch.so's remove_all (the H200's warning crash in
# std::ostream's sentry looks the same). So every program that links
# LibTorch names libstdc++ first: its definitions are the ones all get.
set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS
  "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")

get_target_property(HPCAI500_TORCH_CXX_STANDARD torch CXX_STANDARD)
if(NOT HPCAI500_TORCH_CXX_STANDARD OR HPCAI500_TORCH_CXX_STANDARD LESS 17)
  set(HPCAI500_TORCH_CXX_STANDARD 17)
endif()

# The wheel ships ProcessGroupGloo.hpp but not the Gloo headers it includes:
# Debian's libgloo-dev has them (its Store lacks Gloo's newer "v2" calls,
# which the header leaves out unless GLOO_STORE_HAS_STORE_V2 is defined).
find_path(GLOO_INCLUDE_DIR gloo/algorithm.h)
if(NOT GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "Gloo's headers (gloo/algorithm.h) are missing: "
                      "apt-get install libgloo-dev, or -DGLOO_INCLUDE_DIR=...")
endif()

# LibTorch's headers are most of a worker file's compile time: with 2.11,
# one file took 65 s of CPU with torch/torch.h parsed and 15 s with it
# precompiled (a loaded 2-core machine; the header itself took 93 s). hpcai500_torch_pch() makes the one
# target that precompiles them; hpcai500_reuse_torch_pch(TARGET...) has
# each target that compiles against LibTorch reuse it. They share the
# project's compile options (a target with other language flags would make
# GCC ignore the header, -Winvalid-pch says so). The header is built
# before any file that uses it, so on many cores (bench/gpu.sh) building
# without it is faster: -DHPCAI500_TORCH_PCH=OFF.
option(HPCAI500_TORCH_PCH "Precompile LibTorch's headers" ON)
function(hpcai500_torch_pch)
  if(NOT HPCAI500_TORCH_PCH)
    return()
  endif()
  add_library(hpcai500_torch_pch OBJECT
              ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cc)
  target_link_libraries(hpcai500_torch_pch PRIVATE ${TORCH_LIBRARIES})
  target_compile_options(hpcai500_torch_pch PRIVATE -Winvalid-pch)
  target_precompile_headers(hpcai500_torch_pch PRIVATE <torch/torch.h>)
endfunction()

function(hpcai500_reuse_torch_pch)
  if(NOT HPCAI500_TORCH_PCH)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} REUSE_FROM hpcai500_torch_pch)
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endforeach()
endfunction()
