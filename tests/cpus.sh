# The CPUs a shell may use (sourced by the tests, the benchmarks and
# .ci/run). A script that starts its work on CPUs of its own choosing takes
# them from its own allowed set, not as 0, 1, ... up to nproc: a
# container's or a CI runner's cpuset may leave those out (nproc counts the
# set, it does not say which CPUs are in it), and then every taskset to
# them fails.

# cpu_list_expand LIST: the CPUs of a kernel CPU list ("0-3,8"), one a line,
# written at once by one process: a reader that stops at its match
# (grep -q) does not fail the pipe under pipefail.
cpu_list_expand() {
        awk -v RS='[,\n]' -F- 'NF { e = NF > 1 ? $2 : $1; for (c = $1; c <= e; c++) print c }' <<<"$1"
}
# allowed_of TID: the thread's Cpus_allowed_list ("0-3,8"); nothing for a
# thread that has gone (a poll's check then fails by itself, without noise).
allowed_of() { awk '/^Cpus_allowed_list/ {print $2}' "/proc/$1/status" 2>/dev/null; }
# allowed_cpus: the CPUs this shell may run on, one a line.
allowed_cpus() { cpu_list_expand "$(allowed_of $$)"; }
# have_two_cpus: sets CPU_A and CPU_B, the first two CPUs this shell may
# run on, and CPU_LAST, the last; false where fewer than two are allowed.
have_two_cpus() {
        local cpus
        mapfile -t cpus < <(allowed_cpus)
        [ "${#cpus[@]}" -ge 2 ] || return 1
        # shellcheck disable=SC2034 # set for the caller
        CPU_A=${cpus[0]} CPU_B=${cpus[1]} CPU_LAST=${cpus[-1]}
}
