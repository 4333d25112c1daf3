# Room tokenizer: Unicode tables generated at build time from Debian's unicode-data package.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(NBITS_UNICODE_DIR "/usr/share/unicode" CACHE PATH "Directory holding UnicodeData.txt (Debian unicode-data)")
foreach(f UnicodeData.txt DerivedNormalizationProps.txt PropList.txt CaseFolding.txt)
  if(NOT EXISTS "${NBITS_UNICODE_DIR}/${f}")
    message(FATAL_ERROR "missing ${NBITS_UNICODE_DIR}/${f}: install Debian package unicode-data")
  endif()
endforeach()
set(_nbits_ut "${CMAKE_BINARY_DIR}/generated/tokenizer/unicode_tables.cc")
add_custom_command(
  OUTPUT ${_nbits_ut}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/generated/tokenizer
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tools/gen_unicode_tables.py
          ${NBITS_UNICODE_DIR} ${_nbits_ut}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tools/gen_unicode_tables.py
          ${NBITS_UNICODE_DIR}/UnicodeData.txt ${NBITS_UNICODE_DIR}/DerivedNormalizationProps.txt
          ${NBITS_UNICODE_DIR}/PropList.txt ${NBITS_UNICODE_DIR}/CaseFolding.txt
  COMMENT "Generating tokenizer Unicode tables"
  VERBATIM)
list(APPEND NBITS_EXTRA_SOURCES_nbits_tokenizer ${_nbits_ut})
