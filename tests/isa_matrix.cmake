# The ISA matrix (issue 41, docs/determinism.md): the unit tests of the kernels, quantization,
# precision, layers, training, strategies and ensembles run again under each lower instruction
# set this CPU supports, capped with OSPREY_MAX_CPU_ISA (core/cpu_isa.h, which hands the cap to
# oneDNN too): one machine runs them as an AVX2-only CPU, an AVX-512 one without VNNI and so on
# would. The uncapped run is the suite itself. The levels come from /proc/cpuinfo when the build
# is configured; CI configures and tests on one machine.
set(_isa_flags "")
if(EXISTS /proc/cpuinfo)
  file(STRINGS /proc/cpuinfo _isa_flags REGEX "^flags" LIMIT_COUNT 1)
endif()
set(_isa_flags "${_isa_flags} ")
function(_osprey_cpu_has out)
  set(_has TRUE)
  foreach(f ${ARGN})
    if(NOT _isa_flags MATCHES " ${f} ")
      set(_has FALSE)
    endif()
  endforeach()
  set(${out} ${_has} PARENT_SCOPE)
endfunction()
_osprey_cpu_has(_avx2 avx2 fma)
_osprey_cpu_has(_avx2_vnni avx2 fma avx_vnni)
_osprey_cpu_has(_avx512 avx512f avx512bw avx512vl avx512dq)
_osprey_cpu_has(_avx512_vnni avx512f avx512bw avx512vl avx512dq avx512_vnni)
_osprey_cpu_has(_avx512_bf16 avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16)
_osprey_cpu_has(_amx avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16 amx_tile amx_int8)
# Each level the CPU has, lowest first; the highest is the uncapped suite's and is left out.
set(_isa_caps "")
foreach(pair _avx2:AVX2 _avx2_vnni:AVX2_VNNI _avx512:AVX512_CORE _avx512_vnni:AVX512_CORE_VNNI
             _avx512_bf16:AVX512_CORE_BF16 _amx:AVX512_CORE_AMX)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 var)
  list(GET pair 1 cap)
  if(${var})
    list(APPEND _isa_caps ${cap})
  endif()
endforeach()
list(LENGTH _isa_caps _n)
if(_n GREATER 0)
  list(REMOVE_AT _isa_caps -1)
endif()
message(STATUS "osprey: ISA matrix caps: ${_isa_caps}")
# Each run gets a TMPDIR of its own: the tests' folders (temp_directory_path) would otherwise be
# shared by the same binary running under two caps at once, or beside its uncapped tests. The
# parameter-server cases (gRPC on free loopback ports) stay with the uncapped suite: they test
# RPC, not kernels, and two whole binaries probing for free ports at once can pick the same one.
set(_isa_filter_distribute
  "--gtest_filter=-PsServerTest.*:WireTest.*:RpcTest.*:ParameterServerStrategyTest.*")
foreach(cap ${_isa_caps})
  foreach(m core tensor autograd nn precision quant models train distribute ensemble applications)
    if(TARGET ${m}_test)
      set(_tmp ${CMAKE_CURRENT_BINARY_DIR}/isa_tmp/${cap}_${m})
      add_test(NAME isa_${cap}_${m}
        COMMAND sh -c "rm -rf \"$TMPDIR\" && mkdir -p \"$TMPDIR\" && exec \"$0\" --gtest_brief=1 \"$@\""
        $<TARGET_FILE:${m}_test> ${_isa_filter_${m}})
      set_tests_properties(isa_${cap}_${m} PROPERTIES LABELS "unit;isa"
        ENVIRONMENT "OSPREY_MAX_CPU_ISA=${cap};TMPDIR=${_tmp}" TIMEOUT 600)
    endif()
  endforeach()
endforeach()
# One int8 model's logits, bit for bit the same under each cap and uncapped.
add_executable(int8_isa_probe data/int8_isa_probe.cpp)
target_link_libraries(int8_isa_probe PRIVATE osprey::osprey)
osprey_target_defaults(int8_isa_probe)
add_test(NAME isa_int8_same_bits COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/int8_isa_test.sh
  $<TARGET_FILE:int8_isa_probe> ${CMAKE_CURRENT_BINARY_DIR}/int8_isa ${_isa_caps})
set_tests_properties(isa_int8_same_bits PROPERTIES LABELS "unit;isa" TIMEOUT 300)
