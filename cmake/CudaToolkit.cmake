# Which CUDA 13.0 toolkit LibTorch's CMake package (its FindCUDA and
# FindCUDAToolkit) and the project's nvcc use: the first of
#   1. -DCUDA_TOOLKIT_ROOT_DIR=... (kept in the cache once chosen),
#   2. $CUDA_HOME,
#   3. the folder above the nvcc on PATH,
#   4. /usr/local/cuda,
#   5. .venv/cuda: the toolkit scripts/install-deps.sh assembles from
#      NVIDIA's wheels (pinned in scripts/requirements.txt), so that a machine
#      with nothing preinstalled builds too.
# Sets CUDA_TOOLKIT_ROOT_DIR, and CMAKE_CUDA_COMPILER to its nvcc unless
# -DCMAKE_CUDA_COMPILER or $CUDACXX names one. Included by cmake/LibTorch.cmake
# before find_package(Torch); a folder without bin/nvcc is skipped.
function(hpcai500_choose_cuda_toolkit)
  if(CUDA_TOOLKIT_ROOT_DIR)
    set(root "${CUDA_TOOLKIT_ROOT_DIR}")
    set(how "-DCUDA_TOOLKIT_ROOT_DIR")
  else()
    find_program(HPCAI500_NVCC_ON_PATH nvcc NO_CACHE
                 NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH NO_CMAKE_SYSTEM_PATH)
    set(path_root "")
    if(HPCAI500_NVCC_ON_PATH)
      get_filename_component(path_root "${HPCAI500_NVCC_ON_PATH}" DIRECTORY)
      get_filename_component(path_root "${path_root}" DIRECTORY)
    endif()
    # Candidates and how the configure line names them, in order.
    set(dirs "$ENV{CUDA_HOME}" "${path_root}" "/usr/local/cuda"
             "${PROJECT_SOURCE_DIR}/.venv/cuda")
    set(names "$CUDA_HOME" "nvcc on PATH" "/usr/local/cuda"
              ".venv/cuda, from NVIDIA's wheels")
    foreach(i RANGE 3)
      list(GET dirs ${i} dir)
      if(dir AND EXISTS "${dir}/bin/nvcc")
        set(root "${dir}")
        list(GET names ${i} how)
        break()
      endif()
    endforeach()
    if(NOT root)
      message(FATAL_ERROR
        "No CUDA toolkit (bin/nvcc) in $CUDA_HOME, on PATH, in "
        "/usr/local/cuda or in .venv/cuda: scripts/install-deps.sh makes "
        ".venv/cuda from the NVIDIA wheels of scripts/requirements.txt")
    endif()
    set(CUDA_TOOLKIT_ROOT_DIR "${root}" CACHE PATH
        "The CUDA toolkit (cmake/CudaToolkit.cmake says which comes first)")
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    set(CMAKE_CUDA_COMPILER "${root}/bin/nvcc" CACHE FILEPATH
        "nvcc of CUDA_TOOLKIT_ROOT_DIR")
  endif()
  message(STATUS "CUDA toolkit: ${root} (${how})")
endfunction()
hpcai500_choose_cuda_toolkit()
