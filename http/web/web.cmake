# The web page: http/web's front-end build, embedded in inlet::http.
#
# build.mjs bundles http/web/src with esbuild (packages installed from the committed
# lockfile by scripts/install-web-deps.sh, never at build time) and writes a C++ source
# holding the files; it reruns when a source, the build script or the lockfile changes.
find_program(INLET_NODE NAMES node nodejs REQUIRED)
set(INLET_WEB_DIR ${CMAKE_CURRENT_SOURCE_DIR}/web)
set(INLET_WEB_OUT ${CMAKE_CURRENT_BINARY_DIR}/web)
file(GLOB_RECURSE _inlet_web_sources CONFIGURE_DEPENDS ${INLET_WEB_DIR}/src/*)
add_custom_command(
  OUTPUT ${INLET_WEB_OUT}/web_assets.cpp ${INLET_WEB_OUT}/bundle-size.json
  COMMAND ${INLET_NODE} ${INLET_WEB_DIR}/build.mjs --out ${INLET_WEB_OUT}
  DEPENDS ${_inlet_web_sources} ${INLET_WEB_DIR}/build.mjs ${INLET_WEB_DIR}/package-lock.json
  COMMENT "Building the web page (esbuild)"
  VERBATIM)
target_sources(inlet_http PRIVATE ${INLET_WEB_OUT}/web_assets.cpp)
if(TARGET inlet_fuzz_http)
  target_sources(inlet_fuzz_http PRIVATE ${INLET_WEB_OUT}/web_assets.cpp)
endif()

inlet_add_test(http_page_test SOURCES test/page_test.cpp LIBS inlet::http)
target_include_directories(http_page_test PRIVATE src)

# Type check and the sources' safety rules (no innerHTML, eval, document.write ...).
add_test(NAME web_check COMMAND ${INLET_NODE} ${INLET_WEB_DIR}/check.mjs)
set_tests_properties(web_check PROPERTIES LABELS "web" TIMEOUT 120)

# The page in a real browser (Debian's chromium driven by Playwright from PyPI) against a
# running inletd filled over SMTP. Screenshots: build/http/browser-artifacts/.
set(INLET_WEB_PYTHON ${INLET_WEB_DIR}/.venv/bin/python)
add_test(NAME http_browser_test
  COMMAND ${INLET_WEB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test/browser/run.py
          --inletd $<TARGET_FILE:inletd> --out ${CMAKE_CURRENT_BINARY_DIR}/browser-artifacts)
set_tests_properties(http_browser_test PROPERTIES LABELS "browser" TIMEOUT 600)
