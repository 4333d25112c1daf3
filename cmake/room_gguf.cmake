# Room gguf: ggml's IQ lattices (src/gguf/iq_lattices.h), written at configure time from gguf-py
# (PyPI `gguf`) by tools/gguf/gen_iq_lattices.py into the build folder: third-party data, never in
# the tree. Without gguf-py the room links src/gguf/lattices/none.cc and refuses IQ1_S, IQ1_M,
# IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S by name.
#   NBITS_IQ_LATTICES: AUTO (default: on where gguf-py imports), ON (fail without it), OFF.
#   NBITS_GGUF_PYTHON: the Python that has gguf-py (default: the project's venv in the cache,
#   ${NBITS_CACHE:-~/.cache/nbits}/venv, then python3).
set(NBITS_IQ_LATTICES AUTO CACHE STRING "ggml's IQ1/IQ2/IQ3 lattices from gguf-py: AUTO, ON or OFF")
set(NBITS_GGUF_PYTHON "" CACHE FILEPATH "A Python with gguf-py (PyPI gguf) for the IQ lattices")

set(_iq_gen ${CMAKE_CURRENT_SOURCE_DIR}/tools/gguf/gen_iq_lattices.py)
set(_iq_out ${CMAKE_BINARY_DIR}/generated/gguf/iq_lattices.cc)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_iq_gen})
set(_iq_why "")
if(NBITS_IQ_LATTICES STREQUAL "OFF")
  set(_iq_why "NBITS_IQ_LATTICES=OFF")
else()
  set(_iq_pythons ${NBITS_GGUF_PYTHON})
  if(DEFINED ENV{NBITS_CACHE})
    list(APPEND _iq_pythons $ENV{NBITS_CACHE}/venv/bin/python)
  endif()
  list(APPEND _iq_pythons $ENV{HOME}/.cache/nbits/venv/bin/python)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    list(APPEND _iq_pythons ${Python3_EXECUTABLE})
  endif()
  set(_iq_why "no Python with gguf-py was found (pip install gguf, or -DNBITS_GGUF_PYTHON=...)")
  foreach(py ${_iq_pythons})
    if(NOT EXISTS "${py}")
      continue()
    endif()
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/generated/gguf)
    execute_process(COMMAND ${py} ${_iq_gen} ${_iq_out}.tmp RESULT_VARIABLE _iq_rc OUTPUT_QUIET ERROR_VARIABLE _iq_err)
    if(_iq_rc EQUAL 0)
      # Unchanged tables leave the generated file's time alone: no rebuild on every configure.
      file(COPY_FILE ${_iq_out}.tmp ${_iq_out} ONLY_IF_DIFFERENT)
      file(REMOVE ${_iq_out}.tmp)
      set(_iq_why "")
      set(_iq_python ${py})
      break()
    endif()
  endforeach()
endif()

if(_iq_why STREQUAL "")
  list(APPEND NBITS_EXTRA_SOURCES_nbits_gguf ${_iq_out})
  message(STATUS "GGUF IQ lattices: from gguf-py (${_iq_python})")
else()
  if(NBITS_IQ_LATTICES STREQUAL "ON")
    message(FATAL_ERROR "NBITS_IQ_LATTICES=ON but the lattices cannot be written: ${_iq_why}")
  endif()
  list(APPEND NBITS_EXTRA_SOURCES_nbits_gguf ${CMAKE_CURRENT_SOURCE_DIR}/src/gguf/lattices/none.cc)
  message(STATUS "GGUF IQ lattices: off (${_iq_why}); IQ1/IQ2/IQ3 tensors are refused by name")
endif()
