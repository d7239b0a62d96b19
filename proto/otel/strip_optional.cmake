# Copies IN to OUT without proto3's `optional` label (see CMakeLists.txt).
file(READ ${IN} text)
string(REGEX REPLACE "\n([ \t]*)optional " "\n\\1" text "${text}")
file(WRITE ${OUT} "${text}")
