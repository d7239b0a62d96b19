# cmake -DIN=FILE -DOUT=FILE.c -DNAME=sym -P embed.cmake: FILE's bytes as
# `const unsigned char sym[]` (NUL-terminated) and `const size_t sym_len`.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed.cmake */\n#include <stddef.h>\n"
  "extern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_len;\n"
  "const unsigned char ${NAME}[] = {\n${bytes}0x00 };\nconst size_t ${NAME}_len = ${len};\n")
