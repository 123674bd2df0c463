# Writes OUTPUT from INPUT with PROJECT_VERSION and the current `git describe`, at build time,
# touching OUTPUT only when its content changes (so that a rebuild recompiles only when needed).
execute_process(COMMAND git -C ${SOURCE_DIR} describe --always --dirty
                OUTPUT_VARIABLE REPLISIM_GIT_DESCRIBE OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT REPLISIM_GIT_DESCRIBE)
  set(REPLISIM_GIT_DESCRIBE "unknown")
endif()
configure_file(${INPUT} ${OUTPUT} @ONLY)
