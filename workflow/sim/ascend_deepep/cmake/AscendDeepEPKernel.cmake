# Stand-in for ascend_deepep's cmake/AscendDeepEPKernel.cmake (simulated cluster).
# The real file compiles kernels/elastic_dispatch.cpp for the device with -O2 -xasc --npu-arch=dav-3510;
# -g is added to the device target when the build asks for debug info (needed for msopprof source mapping).
set(ASCEND_DEEPEP_DEVICE_FLAGS -O2 -xasc --npu-arch=dav-3510)
if(ASCEND_DEEPEP_DEVICE_DEBUG_INFO)
  list(APPEND ASCEND_DEEPEP_DEVICE_FLAGS -g)
endif()
if(DEBUG_CLOCK_ON)
  list(APPEND ASCEND_DEEPEP_DEVICE_FLAGS -DDEBUG_CLOCK_ON)
endif()
target_compile_options(ascend_deepep_kernels PRIVATE ${ASCEND_DEEPEP_DEVICE_FLAGS})
