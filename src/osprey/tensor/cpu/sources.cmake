# The fast CPU backend (oneDNN + vectorized loops), included by src/osprey/tensor/CMakeLists.txt.
# Paths are relative to src/osprey/tensor.
set(OSPREY_TENSOR_CPU_SRCS
  cpu/attention.cpp
  cpu/attention_avx2.cpp
  cpu/attention_avx512.cpp
  cpu/backend_table.cpp
  cpu/conv.cpp
  cpu/conv2d_int8.cpp
  cpu/copy.cpp
  cpu/dnnl_info.cpp
  cpu/dnnl_util.cpp
  cpu/elementwise.cpp
  cpu/int8_chunks.cpp
  cpu/loss.cpp
  cpu/matmul.cpp
  cpu/matmul_int8.cpp
  cpu/norm.cpp
  cpu/pool.cpp
  cpu/primitive_cache.cpp
  cpu/quantize_rows_int8.cpp
  cpu/reduce.cpp
  cpu/rnn.cpp
  cpu/rnn_masked.cpp
  cpu/rnn_primitive.cpp
  cpu/softmax.cpp)
set(OSPREY_TENSOR_CPU_TESTS
  cpu/cpu_attention_test.cpp
  cpu/cpu_backend_test.cpp
  cpu/cpu_nn_test.cpp
  cpu/cpu_primitive_cache_test.cpp
  cpu/cpu_rnn_test.cpp)
# The AVX-512 attention kernels: compiled for AVX-512 alone, outside the unity batches (the flags
# must not reach other files), and called only where the CPU and OSPREY_MAX_CPU_ISA allow. GCC 12
# warns inside its own AVX-512 intrinsics (_mm512_undefined_ps reads an uninitialized value by
# design), hence -Wno-maybe-uninitialized for this file alone.
set_source_files_properties(cpu/attention_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx512bw;-mavx512vl;-Wno-maybe-uninitialized"
  SKIP_UNITY_BUILD_INCLUSION ON)
