#!/usr/bin/env python3
"""Growth of dfsssp-rs's offline routing time with fabric size: reads benches/scale.sh's TSV,
prints per family the exponent b of time ~ a * CAs^b (least squares on log-log over the fabrics
with at least MIN_CAS CAs, where fixed costs no longer dominate) and draws a log-log SVG.
Standard library only.
    scale_plot.py scale.tsv scale.svg"""
import math
import sys

MIN_CAS = 2500
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def fit(points):
    """Least-squares slope and intercept of log(t) over log(n)."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return b, my - b * mx


def main(tsv, svg):
    fams = {}
    with open(tsv) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(header, line.rstrip("\n").split("\t")))
            t = float(r["route_s"]) + float(r["verify_s"])
            fams.setdefault(r["family"], []).append((int(r["CAs"]), max(t, 1e-3), r["fabric"]))
    fits = {}
    for fam, pts in fams.items():
        big = [(n, t) for n, t, _ in pts if n >= MIN_CAS]
        fits[fam] = fit(big) if len(big) >= 2 else None
        if fits[fam]:
            print("%-10s time ~ CAs^%.2f (route + verify, %d fabrics of >= %d CAs)"
                  % (fam, fits[fam][0], len(big), MIN_CAS))
        else:
            print("%-10s too few fabrics of >= %d CAs to fit" % (fam, MIN_CAS))
    allp = [p for pts in fams.values() for p in pts]
    if not allp:
        return
    w, h, m = 720, 480, 70
    lx0, lx1 = math.log10(min(n for n, _, _ in allp)) - 0.1, math.log10(max(n for n, _, _ in allp)) + 0.1
    ly0, ly1 = math.log10(min(t for _, t, _ in allp)) - 0.2, math.log10(max(t for _, t, _ in allp)) + 0.2
    X = lambda n: m + (math.log10(n) - lx0) / (lx1 - lx0) * (w - 2 * m)
    Y = lambda t: h - m - (math.log10(t) - ly0) / (ly1 - ly0) * (h - 2 * m)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="12">' % (w, h), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="24" font-size="15">dfsssp-rs offline: routing + deadlock removal + '
         'verification (8 lanes)</text>' % m]
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (m, h - m, w - m, h - m))
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (m, m, m, h - m))
    for e in range(math.ceil(lx0), math.floor(lx1) + 1):
        x = X(10 ** e)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, m, x, h - m))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, h - m + 16, f"{10**e:,}"))
    for e in range(math.ceil(ly0), math.floor(ly1) + 1):
        y = Y(10 ** e)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (m, y, w - m, y))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%g s</text>' % (m - 6, y + 4, 10 ** e))
    o.append('<text x="%d" y="%d" text-anchor="middle">CAs (log)</text>' % (w // 2, h - 24))
    for i, (fam, pts) in enumerate(sorted(fams.items())):
        c = COLORS[i % len(COLORS)]
        pts = sorted(pts)
        o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                 % (c, " ".join("%.1f,%.1f" % (X(n), Y(t)) for n, t, _ in pts)))
        for n, t, spec in pts:
            o.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %d CAs, %.3f s</title>'
                     '</circle>' % (X(n), Y(t), c, spec, n, t))
        label = fam + (" (~CAs^%.2f)" % fits[fam][0] if fits[fam] else "")
        o.append('<text x="%d" y="%d" fill="%s">%s</text>' % (m + 12, m + 16 + 16 * i, c, label))
    o.append("</svg>")
    with open(svg, "w") as f:
        f.write("\n".join(o) + "\n")
    print("plot:", svg)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
