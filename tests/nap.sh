# A pause that starts no process (sourced by tests/lib.sh and the
# benchmarks that time a daemon). Any process, even sleep(1), is news to
# the daemon's proc connector and may bring a pass forward (an early pass
# and its looks): a script that counts passes, spends the early-pass
# limit's tokens, or times a settled daemon must not make them itself.
# nap_open DIR, then nap SECONDS: read -t on a FIFO in DIR that nobody
# writes is a builtin's wait.
nap_open() { mkfifo "$1/nap" && exec {NAP_FD}<>"$1/nap"; }
nap() { read -r -t "$1" -u "$NAP_FD" || true; }
