# Guidance room (src/guidance): constrained decoding. Its engine is llguidance (crates.io, MIT), built
# here through cargo from rust/llguidance (Cargo.lock pinned) into one static library. Where cargo
# or the crates are missing (the riscv64 and arm64 cross builds, a machine without Rust), the room
# builds with src/guidance/engines/no_engine.cc and a request for guidance gets a clear error.
#   NBITS_GUIDANCE: AUTO (default: on where cargo works), ON (fail without it), OFF.
#   NBITS_CARGO_TARGET_DIR: cargo's output folder; tools/build.sh points every flavour at one
#   folder in the cache so that llguidance compiles once per machine.
set(NBITS_GUIDANCE AUTO CACHE STRING "Constrained decoding with llguidance (cargo): AUTO, ON or OFF")
#   (default: the environment's NBITS_CARGO_TARGET_DIR, else build/cargo).
set(_g_target "${CMAKE_BINARY_DIR}/cargo")
if(DEFINED ENV{NBITS_CARGO_TARGET_DIR})
  set(_g_target "$ENV{NBITS_CARGO_TARGET_DIR}")
endif()
set(NBITS_CARGO_TARGET_DIR "${_g_target}" CACHE PATH "cargo's target folder for llguidance")

set(_g_src ${CMAKE_CURRENT_SOURCE_DIR}/src/guidance/engines)
set(_g_crate ${CMAKE_CURRENT_SOURCE_DIR}/rust/llguidance)
set(_g_why "")
set(NBITS_GUIDANCE_ENGINE none)
if(NBITS_GUIDANCE STREQUAL "OFF")
  set(_g_why "NBITS_GUIDANCE=OFF")
elseif(CMAKE_CROSSCOMPILING)
  set(_g_why "a cross build (no Rust target for ${CMAKE_SYSTEM_PROCESSOR} is set up)")
else()
  find_program(NBITS_CARGO cargo HINTS $ENV{HOME}/.cargo/bin)
  find_program(NBITS_RUSTC rustc HINTS $ENV{HOME}/.cargo/bin)
  set(_g_rust_version 0)
  if(NBITS_RUSTC)
    execute_process(COMMAND ${NBITS_RUSTC} --version OUTPUT_VARIABLE _g_rv ERROR_QUIET)
    string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" _g_rust_version "${_g_rv}")
  endif()
  if(NOT NBITS_CARGO OR NOT NBITS_RUSTC)
    set(_g_why "cargo was not found (install Rust >= 1.87 with rustup)")
  elseif(_g_rust_version VERSION_LESS 1.87)
    set(_g_why "rustc ${_g_rust_version} is older than the 1.87 llguidance needs (rustup)")
  else()
    # Fetch the pinned crates once (network on the first configure only), then read where the
    # llguidance crate lies: its C header is used from there, never copied into the tree.
    execute_process(COMMAND ${NBITS_CARGO} fetch --locked --manifest-path ${_g_crate}/Cargo.toml
                    RESULT_VARIABLE _g_rc OUTPUT_QUIET ERROR_VARIABLE _g_err)
    if(NOT _g_rc EQUAL 0)
      string(STRIP "${_g_err}" _g_err)
      set(_g_why "cargo fetch failed: ${_g_err}")
    else()
      execute_process(COMMAND ${NBITS_CARGO} metadata --format-version 1 --locked --offline
                              --manifest-path ${_g_crate}/Cargo.toml
                      RESULT_VARIABLE _g_rc OUTPUT_VARIABLE _g_meta ERROR_VARIABLE _g_err)
      set(_g_header "")
      if(_g_rc EQUAL 0)
        string(JSON _g_n LENGTH "${_g_meta}" packages)
        math(EXPR _g_last "${_g_n} - 1")
        foreach(i RANGE ${_g_last})
          string(JSON _g_name GET "${_g_meta}" packages ${i} name)
          if(_g_name STREQUAL "llguidance")
            string(JSON _g_manifest GET "${_g_meta}" packages ${i} manifest_path)
            get_filename_component(_g_dir "${_g_manifest}" DIRECTORY)
            if(EXISTS "${_g_dir}/llguidance.h")
              set(_g_header "${_g_dir}")
            endif()
          endif()
        endforeach()
      endif()
      if(_g_header STREQUAL "")
        set(_g_why "cargo metadata did not lead to llguidance.h")
      else()
        set(NBITS_GUIDANCE_ENGINE llguidance)
      endif()
    endif()
  endif()
endif()

if(NBITS_GUIDANCE_ENGINE STREQUAL "llguidance")
  set(_g_lib "${NBITS_CARGO_TARGET_DIR}/release/libnbits_llguidance.a")
  add_custom_command(
    OUTPUT ${_g_lib}
    COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${NBITS_CARGO_TARGET_DIR}
            ${NBITS_CARGO} build --release --locked --offline --quiet --manifest-path ${_g_crate}/Cargo.toml
    # cargo leaves an up-to-date archive untouched: touch it so that ninja sees the output renewed.
    COMMAND ${CMAKE_COMMAND} -E touch ${_g_lib}
    DEPENDS ${_g_crate}/Cargo.toml ${_g_crate}/Cargo.lock ${_g_crate}/lib.rs
    COMMENT "Building llguidance (cargo)"
    USES_TERMINAL
    VERBATIM)
  add_custom_target(nbits_llguidance_build DEPENDS ${_g_lib})
  list(APPEND NBITS_EXTRA_SOURCES_nbits_guidance ${_g_src}/llguidance_engine.cc)
  set(NBITS_GUIDANCE_INCLUDE "${_g_header}")
  set(NBITS_GUIDANCE_LIB "${_g_lib}")
  message(STATUS "Guidance: llguidance (${_g_header})")
else()
  if(NBITS_GUIDANCE STREQUAL "ON")
    message(FATAL_ERROR "NBITS_GUIDANCE=ON but llguidance cannot be built: ${_g_why}")
  endif()
  list(APPEND NBITS_EXTRA_SOURCES_nbits_guidance ${_g_src}/no_engine.cc)
  message(STATUS "Guidance: off (${_g_why}); requests for constrained output get an error")
endif()

# Called by the root once the room library exists.
function(nbits_guidance_link target)
  if(NBITS_GUIDANCE_ENGINE STREQUAL "llguidance")
    add_dependencies(${target} nbits_llguidance_build)
    target_include_directories(${target} PRIVATE "${NBITS_GUIDANCE_INCLUDE}")
    # Installed, the archive sits beside the room libraries (see the root's install rules).
    target_link_libraries(${target} PUBLIC
      $<BUILD_INTERFACE:${NBITS_GUIDANCE_LIB}>
      $<INSTALL_INTERFACE:$<INSTALL_PREFIX>/${CMAKE_INSTALL_LIBDIR}/libnbits_llguidance.a>
      Threads::Threads ${CMAKE_DL_LIBS} m rt util gcc_s)
    install(FILES ${NBITS_GUIDANCE_LIB} DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endfunction()
