# gnuplot script for bench/plot_micro.sh; expects datadir, outfile and caption set with -e.
# datadir/panels.gp sets `ops` (operations to draw) and cols_<op> (their columns with data);
# each datadir/<op>.dat holds: N, wheel, heap, asio, asio_user (ns per operation, NaN if none).

load datadir."/panels.gp"
n = words(ops)
ncols = n < 3 ? n : 3
nrows = (n + 2) / 3

width = 500 * ncols < 640 ? 640 : 500 * ncols
set terminal pngcairo size width, 140 + 400 * nrows font "sans,10" enhanced
set output outfile
set datafile missing "NaN"

set multiplot layout nrows, ncols title "delayq micro-benchmarks: ns per operation vs pending entries\n(lower is better)\n{/*0.8 ".caption."}"
set logscale xy
set xrange [500:8e6]
set xtics ("1K" 1e3, "10K" 1e4, "100K" 1e5, "1M" 1e6, "4M" 4e6)
set format y "%g"
set grid xtics ytics mytics lc rgb "#dddddd"
set xlabel "pending entries"
set ylabel "ns / op"
set key top left box opaque font ",9"
set pointsize 1.1

# Styles by data column: 2 wheel, 3 priority_queue, 4 asio, 5 asio user CPU (hold).
array title_of[5] = ["", "wheel", "priority\\_queue", "asio", "asio (user CPU)"]
array color_of[5] = ["#000000", "#1b9e77", "#d95f02", "#7570b3", "#7570b3"]
array point_of[5] = [1, 7, 5, 9, 9]
array dash_of[5] = [1, 1, 1, 1, 2]

do for [op in ops] {
  f = datadir."/".op.".dat"
  t = op
  if (op eq "schedule_5s")     { t = "schedule, due in U[1, 5 s]" }
  if (op eq "schedule_spread") { t = "schedule, due log-uniform, 1 tick to 1 year" }
  if (op eq "cancel")          { t = "cancel by handle" }
  if (op eq "expire_5s")       { t = "expire (per fired entry), due in 5 s" }
  if (op eq "expire_spread")   { t = "expire (per fired entry), log-uniform" }
  if (op eq "hold")            { t = "hold: fire earliest + schedule again" }
  set title t
  cols = value("cols_".op)
  plot for [c in cols] f using 1:(column(int(c + 0))) with linespoints lw 2 \
       lc rgb color_of[int(c + 0)] pt point_of[int(c + 0)] dt dash_of[int(c + 0)] \
       title ((op eq "hold" && int(c + 0) == 4) ? "asio (wall)" : title_of[int(c + 0)])
}
unset multiplot
