# Private MariaDB and Redis instances for the integration test
# (tests/servers-integration.sh) and the benchmark (bench/servers.sh).
# Sourced. Each server runs as a child of the caller, listens on a unix
# socket in a folder the caller made (no TCP port), keeps its data there,
# and is stopped by servers_stop; the system's own instances, their data
# and their configuration are never read or touched (--no-defaults).
#
# After mariadb_start DIR: MDB_PID, MDB_SOCK, and a database "sbtest"
# prepared for sysbench ("${SB[@]}" is the sysbench command line).
# After redis_start DIR: RDS_PID, RDS_SOCK.
# After postgres_start DIR: PG_PID (the postmaster), PG_SOCKDIR, PG_BIN, and
# a pgbench database at scale 4; PostgreSQL forks a backend process per
# connection, so it is the process-per-connection case beside MariaDB's
# thread per connection and Redis's one thread.
# The loopback servers (bench/servers.sh only), whose clients speak TCP
# only, each on a free port of 127.0.0.1: after memcached_start MC_PID,
# MC_PORT (4 worker threads, as user memcache like Debian's unit); after
# nginx_start NGX_PID (the master), NGX_PORT (one worker, as www-data like
# Debian's config); after sockperf_start SP_PID, SP_PORT; after
# iperf3_start IP_PID, IP_PORT.

MDB_PID=
RDS_PID=
PG_PID=
MC_PID=
NGX_PID=
SP_PID=
IP_PID=

# The Debian packages a missing server or client comes from, one a line.
servers_missing_packages() {
        command -v mariadbd >/dev/null || echo mariadb-server
        command -v sysbench >/dev/null || echo sysbench
        command -v redis-server >/dev/null || echo redis-server
        command -v redis-benchmark >/dev/null || echo redis-tools
}

# The Debian packages the loopback servers and their clients come from.
loopback_missing_packages() {
        command -v memcached >/dev/null || echo memcached
        command -v memcaslap >/dev/null || echo libmemcached-tools
        command -v nginx >/dev/null || echo nginx-light
        command -v wrk >/dev/null || echo wrk
        command -v sockperf >/dev/null || echo sockperf
}

# A TCP port of 127.0.0.1 that nothing listens on (ss, iproute2).
free_port() {
        local p
        for ((p = 21000 + RANDOM % 2000; p < 65000; p += 7)); do
                [ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && { echo "$p"; return 0; }
        done
        return 1
}

# wait_listen PID PORT NAME LOG: until something listens on PORT, or PID exits (60 s at most).
wait_listen() {
        local deadline=$(( $(date +%s) + 60 ))
        until [ -n "$(ss -Hltn "sport = :$2" 2>/dev/null)" ]; do
                kill -0 "$1" 2>/dev/null || { echo "$3 exited: $4" >&2; return 1; }
                [ "$(date +%s)" -lt "$deadline" ] || { echo "$3 did not listen on port $2 in 60 s" >&2; return 1; }
                sleep 0.1
        done
}

memcached_start() {
        local dir=$1 logs=$2 user=memcache
        id "$user" >/dev/null 2>&1 || user=nobody
        MC_PORT=$(free_port) || { echo "no free port" >&2; return 1; }
        memcached -u "$user" -l 127.0.0.1 -p "$MC_PORT" -U 0 -t 4 -m 256 >"$logs/memcached.log" 2>&1 &
        MC_PID=$!
        wait_listen "$MC_PID" "$MC_PORT" memcached "$logs/memcached.log"
}

# nginx_run DIR LOGDIR NAME PORT PIDVAR HTTP: one nginx (1 worker, as
# www-data, no access log) whose http block also holds HTTP, its files under
# DIR/NAME (temporary ones too: not the packaged /var/lib/nginx), its logs
# LOGDIR/NAME.{log,err}; its PID goes into the variable PIDVAR.
nginx_run() {
        local dir=$1/$3 logs=$2 name=$3 port=$4 t
        mkdir -p "$dir/tmp" && chmod 755 "$dir" || return 1
        {
                echo "user www-data;"
                echo "worker_processes 1;"
                echo "pid $dir/nginx.pid;"
                echo "error_log $logs/$name.err;"
                echo "events { worker_connections 256; }"
                echo "http {"
                echo "        access_log off;"
                for t in client_body proxy fastcgi uwsgi scgi; do echo "        ${t}_temp_path $dir/tmp;"; done
                echo "$6"
                echo "}"
        } >"$dir/nginx.conf"
        nginx -c "$dir/nginx.conf" -g 'daemon off;' >"$logs/$name.log" 2>&1 &
        printf -v "$5" %s "$!"
        wait_listen "$!" "$port" "$name" "$logs/$name.err"
}

nginx_start() {
        local dir=$1 logs=$2
        NGX_PORT=$(free_port) || { echo "no free port" >&2; return 1; }
        mkdir -p "$dir/nginx/www" && chmod 755 "$dir" "$dir/nginx" "$dir/nginx/www" || return 1
        head -c 612 /dev/zero | tr '\0' x >"$dir/nginx/www/index.html"
        nginx_run "$dir" "$logs" nginx "$NGX_PORT" NGX_PID \
                "        server { listen 127.0.0.1:$NGX_PORT; root $dir/nginx/www; }"
}

# nginx_proxy_start DIR LOGDIR: a second nginx in front of nginx_start's,
# proxy_pass with kept-alive upstream connections: a client, the proxy's
# worker and the backend's worker are a chain of three. Needs nginx_start
# first (NGX_PORT).
nginx_proxy_start() {
        local dir=$1 logs=$2
        [ -n "${NGX_PORT:-}" ] || { echo "nginx_proxy_start: start the backend first" >&2; return 1; }
        PXY_PORT=$(free_port) || { echo "no free port" >&2; return 1; }
        nginx_run "$dir" "$logs" proxy "$PXY_PORT" PXY_PID "\
        upstream backend { server 127.0.0.1:$NGX_PORT; keepalive 4; }
        server {
                listen 127.0.0.1:$PXY_PORT;
                location / {
                        proxy_pass http://backend;
                        proxy_http_version 1.1;
                        proxy_set_header Connection \"\";
                }
        }"
}

sockperf_start() {
        local dir=$1 logs=$2
        SP_PORT=$(free_port) || { echo "no free port" >&2; return 1; }
        sockperf sr --tcp -i 127.0.0.1 -p "$SP_PORT" >"$logs/sockperf-server.log" 2>&1 &
        SP_PID=$!
        wait_listen "$SP_PID" "$SP_PORT" "sockperf server" "$logs/sockperf-server.log"
}

iperf3_start() {
        local dir=$1 logs=$2
        IP_PORT=$(free_port) || { echo "no free port" >&2; return 1; }
        # --idle-timeout: a client cut off mid-test does not leave it stuck
        iperf3 -s -B 127.0.0.1 -p "$IP_PORT" --idle-timeout 10 >"$logs/iperf3-server.log" 2>&1 &
        IP_PID=$!
        wait_listen "$IP_PID" "$IP_PORT" "iperf3 server" "$logs/iperf3-server.log"
}

# mariadb_start DIR LOGDIR: returns non-zero with the reason on stderr.
mariadb_start() {
        local dir=$1 logs=$2
        MDB_SOCK=$dir/mdb.sock
        SB=(sysbench --db-driver=mysql --mysql-socket="$MDB_SOCK" --mysql-user=root --mysql-db=sbtest
            --tables=4 --table-size=10000)
        mariadb-install-db --no-defaults --datadir="$dir/mdb" --user=root \
                --auth-root-authentication-method=normal >"$logs/mariadb-install.log" 2>&1 ||
                { echo "mariadb-install-db failed: $logs/mariadb-install.log" >&2; return 1; }
        mariadbd --no-defaults --datadir="$dir/mdb" --socket="$MDB_SOCK" --skip-networking --user=root \
                --pid-file="$dir/mdb.pid" --innodb-buffer-pool-size=256M --log-error="$logs/mariadb.err" &
        MDB_PID=$!
        local deadline=$(( $(date +%s) + 60 ))
        until mariadb --no-defaults -S "$MDB_SOCK" -uroot -e 'select 1' >/dev/null 2>&1; do
                kill -0 "$MDB_PID" 2>/dev/null || { echo "mariadbd exited: $logs/mariadb.err" >&2; return 1; }
                [ "$(date +%s)" -lt "$deadline" ] || { echo "mariadbd did not answer in 60 s" >&2; return 1; }
                sleep 0.1
        done
        mariadb --no-defaults -S "$MDB_SOCK" -uroot -e 'create database sbtest' &&
                "${SB[@]}" oltp_read_only prepare >"$logs/sysbench-prepare.log" 2>&1 ||
                { echo "sysbench prepare failed: $logs/sysbench-prepare.log" >&2; return 1; }
}

# redis_start DIR LOGDIR
redis_start() {
        local dir=$1 logs=$2
        RDS_SOCK=$dir/redis.sock
        redis-server --port 0 --unixsocket "$RDS_SOCK" --unixsocketperm 700 --save '' --appendonly no \
                --dir "$dir" --logfile "$logs/redis.log" &
        RDS_PID=$!
        local deadline=$(( $(date +%s) + 20 ))
        until redis-cli -s "$RDS_SOCK" ping >/dev/null 2>&1; do
                kill -0 "$RDS_PID" 2>/dev/null || { echo "redis-server exited: $logs/redis.log" >&2; return 1; }
                [ "$(date +%s)" -lt "$deadline" ] || { echo "redis-server did not answer in 20 s" >&2; return 1; }
                sleep 0.1
        done
        # the key redis-benchmark's GET asks for
        redis-cli -s "$RDS_SOCK" set key:__rand_int__ x >/dev/null
}

# The Debian package PostgreSQL and pgbench come from, if missing.
postgres_missing_package() {
        compgen -G '/usr/lib/postgresql/*/bin/pgbench' >/dev/null || echo postgresql
}

# postgres_start DIR LOGDIR: as the "postgres" user the package made (the
# server refuses to run as root), unix socket only, data in DIR.
postgres_start() {
        local dir=$1 logs=$2 b
        for b in /usr/lib/postgresql/*/bin; do PG_BIN=$b; done
        [ -x "${PG_BIN:-}/postgres" ] || { echo "no PostgreSQL below /usr/lib/postgresql" >&2; return 1; }
        id postgres >/dev/null 2>&1 || { echo "no postgres user" >&2; return 1; }
        PG_SOCKDIR=$dir/pg
        mkdir -p "$PG_SOCKDIR/data" && chown -R postgres "$PG_SOCKDIR" && chmod 755 "$dir" || return 1
        runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_SOCKDIR/data" >"$logs/pg-initdb.log" 2>&1 ||
                { echo "initdb failed: $logs/pg-initdb.log" >&2; return 1; }
        runuser -u postgres -- "$PG_BIN/postgres" -D "$PG_SOCKDIR/data" -k "$PG_SOCKDIR" -c listen_addresses= \
                -c shared_buffers=128MB >"$logs/postgres.log" 2>&1 &
        PG_PID=$!
        local deadline=$(( $(date +%s) + 60 ))
        until runuser -u postgres -- "$PG_BIN/pg_isready" -q -h "$PG_SOCKDIR" 2>/dev/null; do
                kill -0 "$PG_PID" 2>/dev/null || { echo "postgres exited: $logs/postgres.log" >&2; return 1; }
                [ "$(date +%s)" -lt "$deadline" ] || { echo "postgres did not answer in 60 s" >&2; return 1; }
                sleep 0.1
        done
        # runuser's child is the postmaster
        local pm
        pm=$(head -1 "$PG_SOCKDIR/data/postmaster.pid" 2>/dev/null)
        [ -n "$pm" ] && PG_PID=$pm
        runuser -u postgres -- "$PG_BIN/pgbench" -h "$PG_SOCKDIR" -i -s 4 postgres >"$logs/pgbench-init.log" 2>&1 ||
                { echo "pgbench -i failed: $logs/pgbench-init.log" >&2; return 1; }
}

# Redis's count of commands processed so far (server side).
redis_commands() {
        redis-cli -s "$RDS_SOCK" info stats | awk -F: '/^total_commands_processed/ { print $2 + 0 }'
}

# Stop both, waiting for each to exit (MariaDB flushes on SIGTERM).
servers_stop() {
        local p
        for p in ${MDB_PID:-} ${RDS_PID:-} ${PG_PID:-} ${MC_PID:-} ${PXY_PID:-} ${NGX_PID:-} ${SP_PID:-} ${IP_PID:-}; do
                kill -TERM "$p" 2>/dev/null || continue
                local deadline=$(( $(date +%s) + 30 ))
                while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
                kill -KILL "$p" 2>/dev/null || true
                wait "$p" 2>/dev/null || true
        done
        MDB_PID= RDS_PID= PG_PID= MC_PID= PXY_PID= NGX_PID= SP_PID= IP_PID=
}
