# The project's own CUDA code (worker/kernels): nvcc from the toolkit that
# LibTorch's package found, for the GPU architectures that matter, set by
# the cache variable HPCAI500_CUDA_ARCHITECTURES (default "80;90": A100,
# H100/H200; real code for each, so no JIT at start). Included by the root
# only when LibTorch has CUDA (TORCH_CUDA_LIBRARIES); sets
# HPCAI500_CUDA_KERNELS.
#
# Torch's package has already enabled CUDA and put its own architecture
# list into CMAKE_CUDA_FLAGS as -gencode flags (every architecture its
# wheel supports when no GPU is seen: minutes of nvcc on two cores), and set
# CMAKE_CUDA_ARCHITECTURES to OFF. Its flags go; ours are set per target
# (hpcai500_cuda_target), so a -DCMAKE_CUDA_ARCHITECTURES left in an old
# cache does not matter.
set(HPCAI500_CUDA_ARCHITECTURES "80;90" CACHE STRING
    "GPU architectures the project's CUDA kernels are compiled for")
enable_language(CUDA)
string(REGEX REPLACE "-gencode[ =;]*arch=compute_[0-9a-z]+,code=[^ ]+" ""
       CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
set(HPCAI500_CUDA_KERNELS ON)

# hpcai500_cuda_target(TARGET): its .cu files for HPCAI500_CUDA_ARCHITECTURES,
# with the host compiler's warnings on.
function(hpcai500_cuda_target target)
  set_target_properties(${target} PROPERTIES
    CUDA_ARCHITECTURES "${HPCAI500_CUDA_ARCHITECTURES}")
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
endfunction()
