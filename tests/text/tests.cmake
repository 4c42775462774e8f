# tests/text/tests.cmake — the text says what is (label text; no compile, each under a second):
#   text_lint        scripts/lint_text.py over the tracked files: no dates, commit hashes or
#                    history wording in the code, the build files, the README and docs/
#   text_lint_fails  tests/text/lint_text_fails.sh: the lint fails on each kind planted in a
#                    file of its own, and passes a file of hex constants and batches of data
#   readme_core_lines  tests/text/check_core_lines.py: the README's "Read in this order" table
#                    gives each file's true line count and their total
#   header_openings  tests/text/check_openings.py: every file of include/tinytorch/ names its
#                    chapter in an opening of at most 30 lines
#   ctags_finds_ipp  tests/text/ctags_finds_ipp.sh: `ctags -R include` (Universal Ctags, with
#                    .ctags.d/tinytorch.ctags) tags the bodies in .ipp files; Skipped without it
# Included by tests/CMakeLists.txt (one scope: CMAKE_CURRENT_SOURCE_DIR is tests/).
if(TT_DEBIAN_PYTHON AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  add_test(NAME text_lint COMMAND ${TT_DEBIAN_PYTHON} "${PROJECT_SOURCE_DIR}/scripts/lint_text.py")
  add_test(NAME text_lint_fails
           COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/text/lint_text_fails.sh" ${TT_DEBIAN_PYTHON})
  set_tests_properties(text_lint text_lint_fails PROPERTIES LABELS text TIMEOUT 60 SKIP_RETURN_CODE 77)
else()
  message(STATUS "tinytorch: ✗ text_lint (needs python3 and a git clone)")
endif()
if(TT_DEBIAN_PYTHON)
  add_test(NAME readme_core_lines COMMAND ${TT_DEBIAN_PYTHON} "${CMAKE_CURRENT_SOURCE_DIR}/text/check_core_lines.py")
  add_test(NAME header_openings COMMAND ${TT_DEBIAN_PYTHON} "${CMAKE_CURRENT_SOURCE_DIR}/text/check_openings.py")
  set_tests_properties(readme_core_lines header_openings PROPERTIES LABELS text TIMEOUT 60)
endif()
add_test(NAME ctags_finds_ipp COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/text/ctags_finds_ipp.sh")
set_tests_properties(ctags_finds_ipp PROPERTIES LABELS text TIMEOUT 60 SKIP_RETURN_CODE 77)
