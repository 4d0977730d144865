#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The include rules of README "Layout": each folder of daemon/ (and ctl/)
# includes only the folders listed for it here, so the data flow
# sample -> detect -> plan -> apply reads off the #include lines and apply/
# never learns about the planner. A new #include that breaks a rule fails
# here, naming the file, the line and the rule.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}

# folder: the folders it may include ("apply/action.h": that header only)
declare -A allowed=(
        [common]="common"
        [config]="common config"
        [sample]="common config sample"
        [detect]="common config sample detect"
        [apply]="common config sample apply"
        [plan]="common config sample detect plan apply/action.h"
        [control]="common config sample detect plan apply control core/log.h"
        [core]="common config sample detect plan apply control core"
        [ctl]="common config ctl"
)

bad=0 seen=0
for dir in "$top"/daemon/*/ "$top"/ctl/; do
        folder=$(basename "$dir")
        rules=${allowed[$folder]-}
        if [ -z "$rules" ]; then
                echo "FAIL: $folder/ has no include rule here (add it, and to README \"Layout\")"
                bad=1
                continue
        fi
        for f in "$dir"*.c "$dir"*.h; do
                [ -e "$f" ] || continue
                n=0
                while IFS= read -r line; do
                        n=$((n + 1))
                        [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]+\"([^\"]+)\" ]] || continue
                        inc=${BASH_REMATCH[1]}
                        seen=$((seen + 1))
                        case $inc in
                        */*) ;;
                        *)
                                echo "FAIL: ${f#"$top"/}:$n: #include \"$inc\" names no folder"
                                bad=1
                                continue ;;
                        esac
                        ok=0
                        for r in $rules; do
                                if [ "$inc" = "$r" ] || [ "${inc%%/*}" = "$r" ]; then
                                        ok=1
                                        break
                                fi
                        done
                        if [ "$ok" = 0 ]; then
                                echo "FAIL: ${f#"$top"/}:$n: #include \"$inc\": $folder/ may include only: $rules"
                                bad=1
                        fi
                done < "$f"
        done
done
# A checker that read nothing would pass anything.
[ "$seen" -gt 100 ] || { echo "FAIL: only $seen #include lines found under $top/daemon"; exit 1; }
echo "$seen #include lines checked"
exit "$bad"
