# A throwaway PostgreSQL server for the message-table tests (tests/postgres.rs).
#
# Sourced by .ci/run (and usable by hand: `bash -c 'source .ci/postgres.sh &&
# cargo test --test postgres'`). It
#   1. installs PostgreSQL from Debian's packages when no server binaries are
#      found under /usr/lib/postgresql/*/bin;
#   2. creates a data directory in a fresh temporary directory and starts the
#      server as a non-root user (`postgres` when run as root, as CI is) on a
#      free loopback port, TCP on 127.0.0.1 only, password authentication;
#   3. creates the database `gbrain` with gbrain's schema and the seed's rows
#      (fixtures/gbrain/gbrain.pgsql);
#   4. exports CHATFSCK_TEST_PG (a superuser URL of that database), and
#   5. stops the server and removes its files when the shell exits (trap).

# The newest version installed (the glob sorts 10 before 9: sort -V).
pg_find_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/psql" ]; then echo "$d"; fi
    done | sort -V | tail -n 1
}

CHATFSCK_PG_BIN=$(pg_find_bin)
if [ -z "$CHATFSCK_PG_BIN" ]; then
    echo "postgres: no server binaries under /usr/lib/postgresql/*/bin; installing Debian's postgresql package"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
    CHATFSCK_PG_BIN=$(pg_find_bin)
fi
if [ -z "$CHATFSCK_PG_BIN" ]; then
    echo "postgres: installation did not provide initdb/pg_ctl/psql" >&2
    exit 1
fi

# initdb refuses to run as root: run the server as `postgres` under root.
if [ "$(id -u)" = 0 ]; then
    if ! id -u postgres >/dev/null 2>&1; then
        useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
    fi
    pg_as() { runuser -u postgres -- "$@"; }
else
    pg_as() { "$@"; }
fi

CHATFSCK_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/chatfsck-pg.XXXXXX")
chmod 700 "$CHATFSCK_PG_DIR"
if [ "$(id -u)" = 0 ]; then chown postgres "$CHATFSCK_PG_DIR"; fi

chatfsck_pg_stop() {
    pg_as "$CHATFSCK_PG_BIN/pg_ctl" -D "$CHATFSCK_PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$CHATFSCK_PG_DIR"
}
trap chatfsck_pg_stop EXIT

# A free port on the loopback interface.
CHATFSCK_PG_PORT=""
for p in $(seq 54329 54429); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        CHATFSCK_PG_PORT=$p
        break
    fi
done
[ -n "$CHATFSCK_PG_PORT" ] || { echo "postgres: no free port in 54329-54429" >&2; exit 1; }

# A random password, kept (readable by this user only) in target/ for the
# next run: the URL the tests get is then the same from run to run, and
# build.rs, which watches CHATFSCK_TEST_PG, does not rebuild the package
# each time the server starts.
chatfsck_pg_keep=target/tools/postgres-password
if [ ! -s "$chatfsck_pg_keep" ]; then
    mkdir -p "$(dirname "$chatfsck_pg_keep")"
    (umask 077 && od -An -N12 -tx1 /dev/urandom | tr -d ' \n' >"$chatfsck_pg_keep")
fi
CHATFSCK_PG_PASSWORD=$(cat "$chatfsck_pg_keep")
printf '%s\n' "$CHATFSCK_PG_PASSWORD" | pg_as tee "$CHATFSCK_PG_DIR/pwfile" >/dev/null
pg_as "$CHATFSCK_PG_BIN/initdb" -D "$CHATFSCK_PG_DIR/data" -U postgres \
    --pwfile="$CHATFSCK_PG_DIR/pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C --no-sync >"$CHATFSCK_PG_DIR/initdb.log" 2>&1 \
    || { cat "$CHATFSCK_PG_DIR/initdb.log" >&2; exit 1; }
pg_as rm -f "$CHATFSCK_PG_DIR/pwfile"
pg_as "$CHATFSCK_PG_BIN/pg_ctl" -D "$CHATFSCK_PG_DIR/data" -l "$CHATFSCK_PG_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $CHATFSCK_PG_PORT -k $CHATFSCK_PG_DIR -c fsync=off -c max_connections=200" \
    start >/dev/null || { cat "$CHATFSCK_PG_DIR/server.log" >&2; exit 1; }

pg_psql() {
    pg_as "$CHATFSCK_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$CHATFSCK_PG_DIR" -p "$CHATFSCK_PG_PORT" -U postgres "$@"
}
pg_psql -d postgres -c 'CREATE DATABASE gbrain'
# The file is read by this shell, not by the server's user.
pg_psql -d gbrain <fixtures/gbrain/gbrain.pgsql >/dev/null

export CHATFSCK_TEST_PG="postgres://postgres:$CHATFSCK_PG_PASSWORD@127.0.0.1:$CHATFSCK_PG_PORT/gbrain"
echo "postgres: $("$CHATFSCK_PG_BIN/postgres" --version) on 127.0.0.1:$CHATFSCK_PG_PORT, database gbrain seeded; CHATFSCK_TEST_PG exported"
