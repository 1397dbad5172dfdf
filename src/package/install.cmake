# Installing and packaging, included by the top-level CMakeLists.txt (in its scope: CPack reads
# the CPACK_* variables from there). Two install components, and a Debian package for each:
#   runtime  delayqd and the delayq CLI (installed by src/delayqd and src/cli, whose install()
#            calls take the default component, set to runtime before those directories),
#            delayq-crashtest (src/crashtest: the crash harness run on a user's volume), the
#            systemd unit, the default config, the README and docs/, LICENSE and the copyright
#            file. Package `delayq`: the binaries stripped, their debug symbols in `delayq-dbgsym`
#            (a .ddeb), Depends computed by dpkg-shlibdeps from what the binaries link.
#   dev      the headers, the static libraries, the CMake package and the pkg-config file.
#            Package `delayq-dev`: depends on `delayq` and on the -dev packages a consumer's
#            compile and link need (the public headers include Boost; the static libraries link
#            RocksDB and hiredis).
# `cmake --install build` installs both; `cd build && cpack` makes the three packages in build/.
# tests/project/package_test.sh checks all of it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS delayq delayq_wheel delayq_core delayq_wal delayq_redis delayq_wire delayq_client
        EXPORT delayqTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/delayq DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
set(delayq_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/delayq)
install(EXPORT delayqTargets NAMESPACE delayq:: DESTINATION ${delayq_cmake_dir} COMPONENT dev)
configure_package_config_file(src/package/delayqConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/delayqConfig.cmake INSTALL_DESTINATION ${delayq_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/delayqConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/delayqConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/delayqConfigVersion.cmake
        DESTINATION ${delayq_cmake_dir} COMPONENT dev)
configure_file(src/package/delayq.pc.in ${CMAKE_CURRENT_BINARY_DIR}/delayq.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/delayq.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
# Each Debian package carries its own copyright file.
install(FILES src/package/copyright DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/delayq-dev
        COMPONENT dev)

# The daemon as a service: its systemd unit, and a default config that the package's postinst
# copies to /etc/delayq/ with a new token, beside a delayq system user and /var/lib/delayq.
# The unit names the installed delayqd and docs, so it is made when installing, from the prefix
# of that install (`cmake --install --prefix`, /usr under cpack), in a scratch file of its own
# (two installs to different prefixes may run at once).
install(CODE "
  set(delayqd_path \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/delayqd\")
  set(delayq_docdir \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR}\")
  string(MD5 delayq_unit_key \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(delayq_unit \"${CMAKE_CURRENT_BINARY_DIR}/unit/\${delayq_unit_key}/delayqd.service\")
  configure_file(\"${CMAKE_CURRENT_SOURCE_DIR}/src/package/delayqd.service.in\" \"\${delayq_unit}\" @ONLY)
  file(INSTALL \"\${delayq_unit}\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
" COMPONENT runtime)
install(FILES src/package/delayqd.conf DESTINATION ${CMAKE_INSTALL_DATADIR}/delayq COMPONENT runtime)
# The license, Apache-2.0: LICENSE, and Debian's machine-readable copyright file that names it;
# and the documentation the unit's Documentation= names: the README and docs/*.md beside it, so
# that the README's links into docs/ hold.
install(FILES LICENSE src/package/copyright README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT runtime)
file(GLOB delayq_doc_pages CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/docs/*.md)
install(FILES ${delayq_doc_pages} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT runtime)

set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_PACKAGE_NAME delayq)
set(CPACK_PACKAGE_CONTACT "delayq developers <delayq-maint@lists.delayq.dev>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_VENDOR "the delayq developers")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE)
set(CPACK_RPM_PACKAGE_LICENSE "Apache-2.0")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME delayq)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
# Each package's Description: its summary line, then the long text.
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "durable delay queue: the delayqd daemon and the delayq CLI
delayqd serves a durable delay queue over HTTP, its jobs in a RocksDB store on disk or in
Redis, as a systemd service (not started on install); delayq is its command line;
delayq-crashtest kills and power-cuts a store on a volume of your choice and checks it.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_SOURCE_DIR}/src/package/postinst ${CMAKE_CURRENT_SOURCE_DIR}/src/package/postrm)
# The shared libraries the binaries load, found by dpkg-shlibdeps (dpkg-dev); passwd for the
# postinst's useradd.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "passwd")
# objcopy moves the debug info of each binary into delayq-dbgsym, under
# /usr/lib/debug/.build-id/, and strips the binary (which keeps a .gnu_debuglink to it).
set(CPACK_DEBIAN_RUNTIME_DEBUGINFO_PACKAGE ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME delayq-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "durable delay queue for C++20: development files
The headers, static libraries, CMake package and pkg-config file of delayq: the timing wheel
engine, the RocksDB store, the Redis backend and the HTTP client of delayqd, for programs that
embed the queue or reach a daemon.")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "delayq (= ${PROJECT_VERSION}), libboost-dev (>= 1.74), librocksdb-dev, libhiredis-dev, libfmt-dev, libhowardhinnant-date-dev, pkg-config")
# The static libraries lose their debug info in the package (src/package/strip_archives.cmake).
set(CPACK_DELAYQ_STRIP ${CMAKE_STRIP})
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/src/package/strip_archives.cmake)
include(CPack)
