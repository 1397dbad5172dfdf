# Run by cpack (CPACK_PRE_BUILD_SCRIPTS, src/package/install.cmake) after the components are
# installed into its staging directory and before the packages are made: the static libraries
# of delayq-dev lose their debug info (`strip --strip-debug`, as Debian does for its own -dev
# packages), which takes them from about 100 MB to about 5 MB. `cmake --install` keeps it.
file(GLOB_RECURSE delayq_archives "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
if(NOT delayq_archives)
  message(FATAL_ERROR "strip_archives.cmake: no static library under ${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
endif()
foreach(archive IN LISTS delayq_archives)
  execute_process(COMMAND "${CPACK_DELAYQ_STRIP}" --strip-debug --enable-deterministic-archives "${archive}"
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "strip_archives.cmake: ${CPACK_DELAYQ_STRIP} failed on ${archive}")
  endif()
endforeach()
