# Writes a C++ source holding every migration of store/sql as a string literal.
#   cmake -DOUT=file.cpp -DSQL_DIR=store/sql -P embed.cmake
# Migrations are NNNN_name.sql, applied in order; NNNN is the schema version.
file(GLOB files "${SQL_DIR}/[0-9][0-9][0-9][0-9]_*.sql")
list(SORT files)
set(body "// Generated from store/sql/*.sql by store/sql/embed.cmake. Do not edit.\n")
string(APPEND body "#include \"schema.hpp\"\n\nnamespace inlet::store::pgstore {\n\n")
string(APPEND body "const std::vector<migration>& migrations() {\n  static const std::vector<migration> all = {\n")
foreach(f ${files})
  get_filename_component(name "${f}" NAME_WE)
  string(SUBSTRING "${name}" 0 4 version)
  math(EXPR version "${version}")
  file(READ "${f}" sql)
  string(APPEND body "    {${version}, \"${name}\", R\"inlet_sql(${sql})inlet_sql\"},\n")
endforeach()
string(APPEND body "  };\n  return all;\n}\n\n}  // namespace inlet::store::pgstore\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
