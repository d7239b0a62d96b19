# Renders the flaky scenario of bench/limits.sh: the rate the mock admitted
# (and refused) per second against its limit (20 <-> 5 req/s every 10 s,
# refused requests counted), one panel per controller mode, from the
# mock's /admin/series at 500 ms (bench/out/limits/log/flaky-MODE-1.series.tsv:
# t_s, admitted/s, refused/s, limit).
# Usage: gnuplot -e "dir='bench/out/limits/log'; outfile='docs/capacity-flaky.png'; modes='aimd adaptive'" bench/limits.gp
if (!exists("dir"))     dir = 'bench/out/limits/log'
if (!exists("outfile")) outfile = 'docs/capacity-flaky.png'
if (!exists("modes"))   modes = 'aimd adaptive'

n = words(modes)
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  set terminal pngcairo size 1100,(330 * n + 60) enhanced font "DejaVu Sans,11" linewidth 1.3
} else {
  set terminal png size 1100,(330 * n + 60) enhanced font "DejaVu Sans,11"
}
set output outfile
set datafile separator "\t"
set datafile missing "NaN"
set multiplot layout n,1 title "Flaky limit (20 <-> 5 req/s every 10 s, 1 s rolling window, refused requests count): admitted rate against the limit"
set xlabel "seconds"
set ylabel "requests/s"
set yrange [0:32] # the first burst (up to ~90/s refused) is cut off
set grid lc rgb "#dddddd"
set key top right box opaque
do for [i=1:n] {
  m = word(modes, i)
  f = sprintf("%s/flaky-%s-1.series.tsv", dir, m)
  set title sprintf("capacity\\_control: %s", m)
  plot f using 1:4 with steps lw 2 lc rgb "#444444" title "limit", \
       f using 1:2 with lines lw 1.5 lc rgb "#1f77b4" title "admitted/s", \
       f using 1:3 with lines lw 1 lc rgb "#d62728" title "refused/s"
}
unset multiplot
