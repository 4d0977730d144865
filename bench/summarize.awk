# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/summarize.awk: turns the per-run rows of bench/run.sh into the
# results table (stdout), JSON (-v json=FILE), CSV (-v csv=FILE) and plot
# data (-v plotfile=FILE). POSIX awk (mawk is the Debian default).
#
# Input 1, metric table: scenario metric unit better target
#   better: higher | lower | info
#   target: "-" or terms joined by "&": REF OP X[:every]
#     REF stock|hand: performance ratio of affinityd to REF, that is
#       affinityd/REF for higher-is-better, REF/affinityd for lower-is-better
#     REF abs: the affinityd median itself
#     :every: the worst interleaved repeat must meet it, not only the median
# Input 2, runs: scenario variant rep metric value status other% steal% noisy elapsed note
#   (note: e.g. "foreign-affinityd:PID": another daemon ran, so the run is noisy)
#
# Medians use the clean (not noisy) runs while there is at least one, all
# runs otherwise (marked "!").

BEGIN {
        FS = "\t"
        nv = split("stock affinityd hand", VAR, " ")
        nmetrics = 0; nruns = 0
}

function isnum(x) { return x ~ /^-?[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$/ }

function jstr(s) {
        gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s)
        return "\"" s "\""
}

function jnum(x) { return isnum(x) ? x + 0 : "null" }

# Numbers for the table: 4 significant digits, no exponent for big ones.
function fmt(x) {
        if (!isnum(x)) return "n/a"
        if (x >= 10000 || x <= -10000) return sprintf("%.0f", x)
        if (x >= 100 || x <= -100) return sprintf("%.1f", x)
        return sprintf("%.3g", x)
}

# sortn() and median() come from stats.awk, loaded first (run.sh).

# Statistics of one (scenario, metric, variant) into ST[key, ...].
function stats(s, m, v,    key, i, r, n, nc, a, c, val, noisy) {
        key = s SUBSEP m SUBSEP v
        n = 0; nc = 0
        for (i = 1; i <= NREP[key]; i++) {
                r = REPS[key, i]
                val = VAL[key, r]; noisy = NOISY[key, r]
                n++; a[n] = val
                if (!noisy) { nc++; c[nc] = val }
        }
        ST[key, "n"] = n; ST[key, "nnoisy"] = n - nc
        if (n == 0) { ST[key, "med"] = "NA"; return }
        ST[key, "clean"] = nc > 0
        if (nc > 0) {
                ST[key, "med"] = median(c, nc); ST[key, "min"] = c[1]; ST[key, "max"] = c[nc]
        } else {
                ST[key, "med"] = median(a, n); ST[key, "min"] = a[1]; ST[key, "max"] = a[n]
        }
}

function perf_ratio(aff, ref, better) {
        if (!isnum(aff) || !isnum(ref)) return "NA"
        if (better == "lower") return aff > 0 ? ref / aff : (ref > 0 ? 1e9 : 1)
        return ref > 0 ? aff / ref : (aff > 0 ? 1e9 : 1)
}

function cmp(x, op, y) {
        if (op == ">=") return x >= y
        if (op == "<=") return x <= y
        if (op == ">") return x > y
        if (op == "<") return x < y
        return 0
}

# Evaluate one target term for (s, m); sets TERM_TEXT, returns 1 met,
# 0 missed, -1 not measurable.
function eval_term(s, m, better, term,    ref, op, x, every, p, aff, refv, pr, worst, i, r, key_a, key_r, found) {
        every = sub(/:every$/, "", term)
        if (match(term, /(>=|<=|>|<)/) == 0) { TERM_TEXT = term; return -1 }
        ref = substr(term, 1, RSTART - 1); op = substr(term, RSTART, RLENGTH)
        x = substr(term, RSTART + RLENGTH) + 0
        aff = ST[s SUBSEP m SUBSEP "affinityd", "med"]
        if (ref == "abs") {
                TERM_TEXT = op x
                return isnum(aff) ? cmp(aff, op, x) : -1
        }
        if (better == "lower") {
                # "stock>=0.98" on a lower-is-better metric: aff <= stock/0.98.
                TERM_TEXT = (op == ">=" ? "<=" : op == "<=" ? ">=" : op) sprintf("%.2f", 1 / x) "x " ref
        } else {
                TERM_TEXT = op sprintf("%.2f", x) "x " ref
        }
        if (every) TERM_TEXT = TERM_TEXT " every run"
        refv = ST[s SUBSEP m SUBSEP ref, "med"]
        if (!every) {
                pr = perf_ratio(aff, refv, better)
                return isnum(pr) ? cmp(pr, op, x) : -1
        }
        key_a = s SUBSEP m SUBSEP "affinityd"; key_r = s SUBSEP m SUBSEP ref
        found = 0; worst = "NA"
        for (i = 1; i <= NREP[key_a]; i++) {
                r = REPS[key_a, i]
                if (!((key_r, r) in VAL)) continue
                pr = perf_ratio(VAL[key_a, r], VAL[key_r, r], better)
                if (!isnum(pr)) continue
                if (!found || pr < worst) worst = pr
                found = 1
        }
        WORST[s, m, ref] = worst
        return found ? cmp(worst, op, x) : -1
}

FNR == NR {
        if ($0 ~ /^#/ || NF < 5) next
        nmetrics++
        MS[nmetrics] = $1; MM[nmetrics] = $2; UNIT[$1, $2] = $3; BETTER[$1, $2] = $4; TARGET[$1, $2] = $5
        next
}

{
        s = $1; v = $2; r = $3; m = $4; val = $5; status = $6
        if (!((s, v, r) in RUNSEEN)) {
                RUNSEEN[s, v, r] = 1
                nruns++
                RSC[nruns] = s; RV[nruns] = v; RR[nruns] = r
                RSTATUS[nruns] = status; ROTHER[nruns] = $7; RSTEAL[nruns] = $8
                RNOISY[nruns] = $9 + 0; REL[nruns] = $10; RNOTE[nruns] = $11
                RIDX[s, v, r] = nruns
                if (!(s in SCEN_SEEN)) { SCEN_SEEN[s] = 1; nscen++; SCEN[nscen] = s }
        }
        ROWS[++nrows] = $0
        if (m == "-") next
        ri = RIDX[s, v, r]
        RMETRICS[ri] = RMETRICS[ri] (RMETRICS[ri] == "" ? "" : ", ") jstr(m) ": " jnum(val)
        if (status != "ok" || !isnum(val)) next
        key = s SUBSEP m SUBSEP v
        if (!((key, r) in VAL)) { NREP[key]++; REPS[key, NREP[key]] = r }
        VAL[key, r] = val + 0; NOISY[key, r] = $9 + 0
        HAVE[s, m] = 1
}

function cell(s, m, v,    key) {
        key = s SUBSEP m SUBSEP v
        if (ST[key, "n"] == 0) return "n/a"
        return fmt(ST[key, "med"]) (ST[key, "clean"] ? "" : "!") " [" fmt(ST[key, "min"]) "-" fmt(ST[key, "max"]) "]"
}

function jstat(s, m, v,    key) {
        key = s SUBSEP m SUBSEP v
        if (ST[key, "n"] == 0) return "null"
        return sprintf("{\"median\": %s, \"min\": %s, \"max\": %s, \"n\": %d, \"n_noisy\": %d, \"clean_only\": %s}",
                jnum(ST[key, "med"]), jnum(ST[key, "min"]), jnum(ST[key, "max"]), ST[key, "n"],
                ST[key, "nnoisy"], ST[key, "clean"] ? "true" : "false")
}

END {
        printf "%-3s %-28s %-13s %-26s %-26s %-26s %-9s %-9s %-26s %s\n", "sc", "metric", "unit", "stock median [min-max]",
                "affinityd", "hand-tuned", "aff/stock", "aff/hand", "target", "verdict"
        nsum = 0; nmet = 0; nmissed = 0; nna = 0; ntarg = 0
        for (k = 1; k <= nscen; k++) {
                s = SCEN[k]
                plotted = 0
                for (i = 1; i <= nmetrics; i++) {
                        if (MS[i] != s) continue
                        m = MM[i]
                        for (j = 1; j <= nv; j++) stats(s, m, VAR[j])
                        if (!HAVE[s, m]) {
                                # Declared but never measured (e.g. affinityd-only metric
                                # without a daemon): still listed, as n/a.
                                if (TARGET[s, m] == "-" && BETTER[s, m] == "info") continue
                        }
                        better = BETTER[s, m]
                        aff = ST[s SUBSEP m SUBSEP "affinityd", "med"]
                        st = ST[s SUBSEP m SUBSEP "stock", "med"]
                        hd = ST[s SUBSEP m SUBSEP "hand", "med"]
                        rs = (isnum(aff) && isnum(st) && st != 0) ? aff / st : "NA"
                        rh = (isnum(aff) && isnum(hd) && hd != 0) ? aff / hd : "NA"
                        target = TARGET[s, m]; ttext = "-"; verdict = "-"
                        if (target != "-") {
                                ntarg++
                                nt = split(target, terms, "&"); ttext = ""; res = 1
                                for (t = 1; t <= nt; t++) {
                                        e = eval_term(s, m, better, terms[t])
                                        ttext = ttext (t > 1 ? " & " : "") TERM_TEXT
                                        if (e == -1) res = -1
                                        else if (e == 0 && res != -1) res = 0
                                }
                                verdict = res == 1 ? "MET" : res == 0 ? "MISSED" : "n/a"
                                if (res == 1) nmet++
                                if (res == 0) nmissed++
                                if (res == -1) nna++
                        }
                        worst = ""
                        if ((s, m, "hand") in WORST && isnum(WORST[s, m, "hand"]))
                                worst = sprintf(" (worst run %.2fx)", WORST[s, m, "hand"])
                        printf "%-3s %-28s %-13s %-26s %-26s %-26s %-9s %-9s %-26s %s%s\n", s, m, UNIT[s, m],
                                cell(s, m, "stock"), cell(s, m, "affinityd"), cell(s, m, "hand"),
                                isnum(rs) ? sprintf("%.3f", rs) : "n/a", isnum(rh) ? sprintf("%.3f", rh) : "n/a",
                                ttext, verdict, worst
                        nsum++
                        SUM[nsum] = sprintf("{\"scenario\": %s, \"metric\": %s, \"unit\": %s, \"better\": %s, " \
                                "\"stock\": %s, \"affinityd\": %s, \"hand\": %s, \"ratio_affinityd_stock\": %s, " \
                                "\"ratio_affinityd_hand\": %s, \"target\": %s, \"verdict\": %s%s}",
                                jstr(s), jstr(m), jstr(UNIT[s, m]), jstr(better), jstat(s, m, "stock"),
                                jstat(s, m, "affinityd"), jstat(s, m, "hand"), jnum(rs), jnum(rh),
                                jstr(ttext), jstr(verdict),
                                worst != "" ? ", \"worst_run_ratio_hand\": " jnum(WORST[s, m, "hand"]) : "")
                        # Plot: the first non-info metric of each scenario, x stock (or x hand).
                        if (!plotted && better != "info" && plotfile != "") {
                                base = isnum(st) ? st : hd
                                if (isnum(base) && base != 0) {
                                        printf "%s\t%s\t%s\t%s\n", s ":" m,
                                                isnum(st) ? sprintf("%.4f", perf_ratio(st, base, better)) : "?",
                                                isnum(aff) ? sprintf("%.4f", perf_ratio(aff, base, better)) : "?",
                                                isnum(hd) ? sprintf("%.4f", perf_ratio(hd, base, better)) : "?" > plotfile
                                        plotted = 1
                                }
                        }
                }
                # Noise of this scenario's runs.
                n = 0; nn = 0; omax = 0; smax = 0; nfail = 0; fails = ""; nforeign = 0
                for (ri = 1; ri <= nruns; ri++) {
                        if (RSC[ri] != s || RSTATUS[ri] == "na") continue
                        n++
                        if (RNOISY[ri]) nn++
                        if (RNOTE[ri] ~ /foreign-affinityd/) nforeign++
                        if (isnum(ROTHER[ri]) && ROTHER[ri] + 0 > omax) omax = ROTHER[ri] + 0
                        if (isnum(RSTEAL[ri]) && RSTEAL[ri] + 0 > smax) smax = RSTEAL[ri] + 0
                        if (RSTATUS[ri] != "ok") { nfail++; fails = fails " " RV[ri] "/r" RR[ri] ":" RSTATUS[ri] }
                }
                printf "    noise s%s: %d/%d runs noisy (other tenants max %.1f%%, steal max %.1f%%)%s%s%s\n", s, nn, n,
                        omax, smax, nforeign ? sprintf("; another affinityd ran during %d", nforeign) : "",
                        (nn == n && n > 0) ? "; medians use noisy runs (!)" : "",
                        nfail ? "; failed:" fails : ""
        }
        printf "\n%d targets: %d MET, %d MISSED, %d n/a. \"!\" = no clean run: median of noisy runs. Total time %ss.\n",
                ntarg, nmet, nmissed, nna, total_s
        if (aff_available != 1) printf "affinityd columns n/a: %s\n", aff_reason

        if (json != "") {
                printf "{\n  \"schema\": 1,\n  \"stamp\": %s,\n  \"mode\": %s,\n  \"command\": %s,\n", jstr(stamp), jstr(mode), jstr(cmdline) > json
                printf "  \"machine\": {\"nproc\": %d, \"kernel\": %s, \"cpu_model\": %s},\n", nproc, jstr(kernel), jstr(cpu_model) > json
                printf "  \"commit\": %s,\n  \"repeats\": %d,\n  \"duration_s\": %s,\n  \"loops_per_us\": %s,\n  \"total_s\": %s,\n",
                        jstr(commit), repeats, jnum(duration), jnum(loops_per_us), jnum(total_s) > json
                printf "  \"affinityd\": {\"available\": %s, \"command\": %s, \"reason\": %s, \"other_daemons\": %s},\n",
                        aff_available == 1 ? "true" : "false", jstr(aff_cmd), jstr(aff_reason), jstr(other_daemons) > json
                printf "  \"noise_limits\": {\"other_pct\": %s, \"steal_pct\": %s},\n", jnum(noise_max), jnum(steal_max) > json
                printf "  \"summary\": [\n" > json
                for (i = 1; i <= nsum; i++) printf "    %s%s\n", SUM[i], i < nsum ? "," : "" > json
                printf "  ],\n  \"runs\": [\n" > json
                for (ri = 1; ri <= nruns; ri++)
                        printf "    {\"scenario\": %s, \"variant\": %s, \"rep\": %d, \"status\": %s, \"elapsed_s\": %s, " \
                                "\"other_pct\": %s, \"steal_pct\": %s, \"noisy\": %s, \"note\": %s, \"metrics\": {%s}}%s\n",
                                jstr(RSC[ri]), jstr(RV[ri]), RR[ri], jstr(RSTATUS[ri]), jnum(REL[ri]), jnum(ROTHER[ri]),
                                jnum(RSTEAL[ri]), RNOISY[ri] ? "true" : "false", jstr(RNOTE[ri]), RMETRICS[ri], ri < nruns ? "," : "" > json
                printf "  ]\n}\n" > json
                close(json)
        }
        if (csv != "") {
                print "stamp,commit,scenario,variant,rep,metric,value,unit,status,elapsed_s,other_pct,steal_pct,noisy,note" > csv
                for (i = 1; i <= nrows; i++) {
                        split(ROWS[i], f, "\t")
                        printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", stamp, commit, f[1], f[2], f[3], f[4], f[5],
                                UNIT[f[1], f[4]], f[6], f[10], f[7], f[8], f[9], f[11] > csv
                }
                close(csv)
        }
}

