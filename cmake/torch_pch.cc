// The translation unit that precompiles LibTorch's headers
// (cmake/LibTorch.cmake, hpcai500_torch_pch): nothing of its own.
