# cmake -DIN=file -DOUT=file.cpp -DNAME=symbol -P embed.cmake
# Writes a C++ source holding IN's bytes as `inlet::http::NAME_data` / `NAME_size`.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "// Generated from ${IN} by http/cmake/embed.cmake. Do not edit.\n#include <cstddef>\nnamespace inlet::http {\nextern const unsigned char ${NAME}_data[] = {\n${bytes}0x00};\nextern const std::size_t ${NAME}_size = ${size};\n}  // namespace inlet::http\n")
