# The fast CPU backend (oneDNN + vectorized loops), included by src/osprey/tensor/CMakeLists.txt.
# Paths are relative to src/osprey/tensor.
set(OSPREY_TENSOR_CPU_SRCS
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
  cpu/cpu_backend_test.cpp
  cpu/cpu_nn_test.cpp
  cpu/cpu_primitive_cache_test.cpp
  cpu/cpu_rnn_test.cpp)
