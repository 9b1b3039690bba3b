# tpulaunch_catalog_table(GENERATOR INPUT OUTPUT): the build rule that turns a catalog JSON file
# into the generated source of constant rows (tools/catalog_table.cpp). GENERATOR is the
# generator target or the path of a built one. A malformed INPUT fails the build: the generator
# prints "tpulaunch-catalog-table: error: INPUT:LINE:COLUMN: ..." and writes nothing.
# tests/catalog-build/ uses this same function on a malformed copy.
function(tpulaunch_catalog_table generator input output)
  get_filename_component(output_dir ${output} DIRECTORY)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${output_dir}
    COMMAND ${generator} ${input} ${output}
    DEPENDS ${generator} ${input}
    COMMENT "Generating the catalog table from ${input}"
    VERBATIM)
endfunction()
