# The Debian packages (CPack, DEB generator), built by scripts/build-deb.sh:
#   inlet          the programs, the systemd unit, /etc/inlet/inletd.conf, the docs
#   libinlet-dev   headers, static libraries and the CMake package (find_package(inlet))
# Install components: `runtime` for the first, `dev` for the second (cmake/Inlet.cmake).
# The unit and the config file have absolute destinations (/lib/systemd/system, /etc):
# only the package puts them there; `cmake --install --component dev --prefix DIR` (the
# consumer test) never touches them.
include(GNUInstallDirs)

set(_inlet_programs inletd inlet-parse inlet-load)
if(TARGET inletd-uring)
  list(APPEND _inlet_programs inletd-uring)
endif()
install(TARGETS ${_inlet_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# `sendmail` for PHP's sendmail_path and scripts that pipe mail to it (inletd runs as
# Mailpit's sendmail under that name). Beside the programs, not /usr/sbin/sendmail: that
# path belongs to the machine's MTA.
install(CODE "
  set(_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/inlet\")
  file(MAKE_DIRECTORY \"\${_dir}\")
  file(CREATE_LINK ../../bin/inletd \"\${_dir}/sendmail\" SYMBOLIC)
" COMPONENT runtime)
install(FILES ${INLET_ROOT}/packaging/inletd.service DESTINATION /lib/systemd/system
  COMPONENT runtime)
install(FILES ${INLET_ROOT}/packaging/inletd.conf DESTINATION /etc/inlet COMPONENT runtime)
install(FILES ${INLET_ROOT}/README.md ${INLET_ROOT}/docs/configuration.md ${INLET_ROOT}/docs/api.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME inlet)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "inlet maintainers <maintainers@inlet.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "inbound mail service: SMTP in, HTTP API and web page out")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION mail)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME inlet)
# libcurl and GraphicsMagick are opened at run time (docs/architecture.md), so shlibdeps
# cannot see them.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "adduser, libcurl4, libgraphicsmagick-q16-3")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "inletd takes mail for any address over SMTP at high rates, parses each message,
 scans it for unwanted terms, keeps it in memory or in PostgreSQL, and serves the
 inboxes over an HTTP API compatible with Mailpit's and a web page.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
  "${INLET_ROOT}/packaging/debian/postinst;${INLET_ROOT}/packaging/debian/prerm;${INLET_ROOT}/packaging/debian/postrm;${INLET_ROOT}/packaging/debian/conffiles")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libinlet-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "libboost1.81-dev, libboost-context1.81-dev, libboost-json1.81-dev, libpq-dev, libssl-dev, libhyperscan-dev, libhowardhinnant-date-dev, libcurl4-openssl-dev, libgraphicsmagick1-dev, pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "inlet's libraries: buffer, SMTP, MIME, filter, PostgreSQL client, store, HTTP.
 Static libraries, headers and the CMake package: find_package(inlet COMPONENTS pg)
 and link inlet::pg (likewise inlet::mime, inlet::smtp, ...).")

include(CPack)
