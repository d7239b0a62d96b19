# Renders bench/out/pipelining/results.tsv (written by bench/pipelining.sh):
# rows/s against rows in flight N, log-log, measured points and the
# Little's-law line N / L_row for both variants, each measured point
# labelled with its efficiency (rows/s / (N / L_row)), and the engine's
# ceiling (the same mode at L = 0).
# Usage: gnuplot -e "infile='...'; outfile='...'; L=20; ROWS=2000; CORES=2" bench/pipelining.gp
if (!exists("infile"))  infile  = 'bench/out/pipelining/results.tsv'
if (!exists("outfile")) outfile = 'docs/pipelining.png'
if (!exists("L"))       L = 20
if (!exists("ROWS"))    ROWS = 2000
if (!exists("CORES"))   CORES = 2

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  set terminal pngcairo size 1100,720 enhanced font "DejaVu Sans,12" linewidth 1.5
} else {
  set terminal png size 1100,720 enhanced font "DejaVu Sans,12"
}
set output outfile
set datafile separator "\t"

set title sprintf("Pipelining: throughput against rows in flight N\n{/*0.8 %d rows, delay L = %g ms, audit on, %d cores; sequential (N = 1, --sequential) drawn as open markers}", ROWS, L, CORES)
set xlabel "rows in flight N (--max-rows-in-flight)"
set ylabel "rows/s"
set logscale xy
set xrange [0.7:400]
set xtics ("1" 1, "4" 4, "16" 16, "64" 64, "256" 256)
set format y "%g"
set grid xtics ytics mytics lc rgb "#dddddd" lw 1
set key bottom right box opaque samplen 2.5 spacing 1.2 width 1 font ",11"
set border lw 1

ideal_a(x) = x * 1000.0 / L          # delay:  L_row = L
ideal_b(x) = x * 1000.0 / (2 * L)    # fork:   L_row = 2L
# room above for the L = 0 ceilings (column 12) as well as the ideal lines
stats infile using 12 every ::1 nooutput
ymax = STATS_max > ideal_a(400) ? STATS_max : ideal_a(400)
set yrange [ideal_b(0.7) / 1.5 : ymax * 2]

is(v, m) = strcol(1) eq v && (m eq "seq" ? strcol(2) eq "seq" : strcol(2) ne "seq")
pick(v, m, c) = is(v, m) ? column(c) : NaN
pct(v) = is(v, "n") ? sprintf("%.0f%%", 100 * column(9)) : ""

set style line 1 lc rgb "#1f77b4" lw 2 pt 7 ps 1.6
set style line 2 lc rgb "#d62728" lw 2 pt 5 ps 1.6
set style line 3 lc rgb "#1f77b4" lw 1.5 dt 2
set style line 4 lc rgb "#d62728" lw 1.5 dt 2

set samples 200
set style fill transparent solid 0.2 noborder
plot \
  '+' using 1:(0.9 * ideal_a($1)):(ideal_a($1)) with filledcurves lc rgb "#1f77b4" \
    title "docs/architecture.md §11 budget: within 10% of N / L_{row}", \
  '+' using 1:(0.9 * ideal_b($1)):(ideal_b($1)) with filledcurves lc rgb "#d62728" notitle, \
  ideal_a(x) ls 3 title sprintf("Little's law N / L, delay (L_{row} = %g ms)", L), \
  ideal_b(x) ls 4 title sprintf("Little's law N / 2L, fork + coalesce (L_{row} = %g ms)", 2 * L), \
  infile using (pick("delay", "n", 3)):(pick("delay", "n", 6)) every ::1 with linespoints ls 1 \
    title "measured, delay", \
  infile using (pick("fork", "n", 3)):(pick("fork", "n", 6)) every ::1 with linespoints ls 2 \
    title "measured, fork + coalesce", \
  infile using (pick("delay", "n", 3)):(pick("delay", "n", 12)) every ::1 with linespoints \
    lc rgb "#7fb2d9" lw 1.2 dt 3 pt 1 ps 1.3 title "engine ceiling at L = 0, delay", \
  infile using (pick("fork", "n", 3)):(pick("fork", "n", 12)) every ::1 with linespoints \
    lc rgb "#eb9394" lw 1.2 dt 3 pt 2 ps 1.3 title "engine ceiling at L = 0, fork + coalesce", \
  infile using (pick("delay", "seq", 3)):(pick("delay", "seq", 6)) every ::1 with points \
    lc rgb "#1f77b4" pt 6 ps 2.6 lw 2 notitle, \
  infile using (pick("fork", "seq", 3)):(pick("fork", "seq", 6)) every ::1 with points \
    lc rgb "#d62728" pt 4 ps 2.6 lw 2 notitle, \
  infile using (pick("delay", "n", 3)):(pick("delay", "n", 6)):(pct("delay")) every ::1 \
    with labels offset char -2.2, char 1.1 tc rgb "#1f77b4" font ",11" notitle, \
  infile using (pick("fork", "n", 3)):(pick("fork", "n", 6)):(pct("fork")) every ::1 \
    with labels offset char 2.2, char -1.1 tc rgb "#d62728" font ",11" notitle
