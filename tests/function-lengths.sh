#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# No function in daemon/ or ctl/ runs over 100 lines, signature to closing
# brace: a decider is read at once, and a longer one is cut into named steps
# along its own seams. The code style makes this a matter of column 0: a
# function's signature starts there (after any __attribute__ line) and ends
# in '{', its closing brace is the only '}' there. Prints every function over the limit, longest first.
# MAX= overrides the limit (MAX=0 lists every function).
set -eu
top=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
max=${MAX:-100}
cd "$top"
over=$(find daemon ctl -name '*.[ch]' | sort | xargs awk -v max="$max" '
        FNR == 1 { body = 0; sig = 0 }
        body && /^}/ {
                n = FNR - start + 1
                if (n > max) printf "%d %s:%s\n", n, FILENAME, name
                body = 0; next
        }
        body { next }
        /^__attribute__/ { next }
        /^[A-Za-z_]/ && !sig { sig = 1; start = FNR; text = "" }
        sig { text = text " " $0 }
        sig && /\)[[:space:]]*\{[[:space:]]*$/ && text !~ /=/ {
                name = text
                sub(/[[:space:]]*\(.*/, "", name)
                sub(/.*[[:space:]*]/, "", name)
                body = 1; sig = 0; next
        }
        sig && (/;[[:space:]]*$/ || /^[[:space:]]*$/ || /\{[[:space:]]*$/ || /^}/) { sig = 0 }
' | sort -rn)
if [ -n "$over" ]; then
        echo "functions over $max lines (split them into named steps):"
        echo "$over"
        [ "$max" = 0 ] && exit 0
        exit 1
fi
