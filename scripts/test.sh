#!/usr/bin/env bash
# test.sh is the project's test command: it checks the toolchain, installs
# what is missing on a Debian machine, then vets and tests every package.
#
#   ./scripts/test.sh
#
# Environment: GO_TEST_FLAGS adds flags to `go test` (for example "-race" or
# "-run TestSQLLogic"); SQLLOGIC_FILES and SQLLOGIC_DSN are passed through to
# the sqllogictest runner (see test/sqllogic).
set -euo pipefail

cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# Debian packages the build and the tests need, by the command that shows
# each is present.
need_pkgs=()
command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc libc6-dev)
command -v git >/dev/null 2>&1 || need_pkgs+=(git)
command -v psql >/dev/null 2>&1 || need_pkgs+=(postgresql-client-15)
# The server binaries: tests compare deeplaked's output with PostgreSQL 15's.
[ -x /usr/lib/postgresql/15/bin/initdb ] || need_pkgs+=(postgresql-15)
[ -e /etc/ssl/certs/ca-certificates.crt ] || need_pkgs+=(ca-certificates)
# The client matrix (test/clients) runs these clients against the server:
# Debian's Python modules on Debian's python3, the JDBC driver with a JDK,
# and Node.js with npm for node-postgres. The Python package's tests
# (test/pyclient) need numpy, PyTorch and pytest, and pip with setuptools
# to install the package.
for mod in psycopg psycopg2 sqlalchemy pandas numpy torch pytest pip setuptools; do
	/usr/bin/python3 -c "import $mod" >/dev/null 2>&1 || need_pkgs+=("python3-$mod")
done
[ -e /usr/share/java/postgresql.jar ] || need_pkgs+=(libpostgresql-jdbc-java)
command -v javac >/dev/null 2>&1 || need_pkgs+=(default-jdk-headless)
command -v node >/dev/null 2>&1 || need_pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || need_pkgs+=(npm)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
	step "installing ${need_pkgs[*]}"
	command -v apt-get >/dev/null 2>&1 || die "missing ${need_pkgs[*]} and no apt-get to install them"
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "missing ${need_pkgs[*]}; run as root or install them"
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}"
fi

# Go: use the one on PATH, else the standard install location.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || die "go not found; install Go $(sed -n 's/^go //p' go.mod) or newer (https://go.dev/dl/)"
step "$(go version)"

# pg_query_go parses with the PostgreSQL grammar through cgo.
export CGO_ENABLED=1

step "go mod download"
go mod download

step "npm ci (test/clients/node)"
npm ci --prefix test/clients/node --no-audit --no-fund

# versitygw is the S3-compatible server the S3 tests start on 127.0.0.1
# (internal/s3test). Installed once into the cache, reinstalled when the
# version there is another.
versitygw_version=v1.8.0
versitygw_bin="$HOME/.cache/deeplaked/bin/versitygw"
versitygw_mods="$(go version -m "$versitygw_bin" 2>/dev/null || true)"
if ! grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+${versitygw_version}([[:space:]]|\$)" <<<"$versitygw_mods"; then
	step "installing versitygw $versitygw_version"
	GOBIN="$(dirname "$versitygw_bin")" go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
fi
export DEEPLAKED_VERSITYGW="$versitygw_bin"

step "go vet ./..."
go vet ./...

step "go test ./..."
# shellcheck disable=SC2086 # GO_TEST_FLAGS is a list of flags.
go test -count=1 -timeout 20m ${GO_TEST_FLAGS:-} ./...

step "go test -fuzz FuzzParse ./sql (20s)"
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 20s ./sql

step "ok"
