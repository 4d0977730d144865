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

MDB_PID=
RDS_PID=
PG_PID=

# The Debian packages a missing server or client comes from, one a line.
servers_missing_packages() {
        command -v mariadbd >/dev/null || echo mariadb-server
        command -v sysbench >/dev/null || echo sysbench
        command -v redis-server >/dev/null || echo redis-server
        command -v redis-benchmark >/dev/null || echo redis-tools
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
        for p in $MDB_PID $RDS_PID $PG_PID; do
                kill -TERM "$p" 2>/dev/null || continue
                local deadline=$(( $(date +%s) + 30 ))
                while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
                kill -KILL "$p" 2>/dev/null || true
                wait "$p" 2>/dev/null || true
        done
        MDB_PID= RDS_PID= PG_PID=
}
