#!/usr/bin/env bash
# Sourced by Tests/run.sh: sets up what the tests need on a fresh machine, idempotently and fast
# when it is already there.
#   - Debian packages the build and tests use (libsqlite3-dev, python3, openssl) when missing;
#   - a Python virtual environment in .build/test-venv with Tests/Interop/requirements.txt
#     (the interop tests' independent implementation, the SMTP sink), first on PATH;
#   - PostgreSQL (Debian's package) when it is missing and this user can install it;
#   - Chromium, its WebDriver and ffmpeg (Debian) for the app's browser tests.
#   - nginx and systemd-analyze (Debian) for the deployment tests (docs/deploy/).
# Sets CONFIDANT_SETUP_NOTES to what could not be set up, for the summary at the end.

CONFIDANT_SETUP_NOTES=()

can_install() { [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; }

apt_install() {
    # One retry: a mirror can fail once.
    (apt-get update -qq && apt-get install -y -qq "$@") >/dev/null 2>&1 \
        || (sleep 5 && apt-get update -qq && apt-get install -y -qq "$@") >/dev/null 2>&1
}

setup_system_packages() {
    local missing=()
    command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
    dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing+=(libsqlite3-dev)   # GRDB links the system SQLite
    command -v openssl >/dev/null 2>&1 || missing+=(openssl)              # the SMTP tests make certificates
    [[ ${#missing[@]} -eq 0 ]] && return
    if can_install; then
        echo "Installing ${missing[*]} (Debian) for the build and the tests…" >&2
        apt_install "${missing[@]}" || CONFIDANT_SETUP_NOTES+=("apt-get could not install ${missing[*]}")
    else
        CONFIDANT_SETUP_NOTES+=("missing ${missing[*]}: install them (apt-get install ${missing[*]})")
    fi
}

setup_python() {
    local venv=.build/test-venv requirements=Tests/Interop/requirements.txt
    local stamp="$venv/.requirements.sha256" wanted
    wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
    if [[ ! -x "$venv/bin/python3" ]]; then
        mkdir -p .build
        if ! python3 -m venv "$venv" >/dev/null 2>&1; then
            rm -rf "$venv"
            if can_install && apt_install python3-venv && python3 -m venv "$venv" >/dev/null 2>&1; then :; else
                CONFIDANT_SETUP_NOTES+=("no Python virtual environment (python3 -m venv failed): the interop and SMTP tests fail")
                return
            fi
        fi
    fi
    if [[ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]]; then
        echo "Installing the tests' Python packages into $venv (Tests/Interop/requirements.txt)…" >&2
        if "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r "$requirements"; then
            echo "$wanted" > "$stamp"
        else
            CONFIDANT_SETUP_NOTES+=("pip could not install Tests/Interop/requirements.txt: the interop and SMTP tests fail")
        fi
    fi
    PATH="$PWD/$venv/bin:$PATH"
    export PATH
}

setup_postgres() {
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && return
    if can_install; then
        echo "Installing PostgreSQL (Debian's postgresql package) for the relay tests…" >&2
        apt_install postgresql || true
    fi
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
        || CONFIDANT_SETUP_NOTES+=("PostgreSQL is not installed and could not be (run as root with apt-get, or apt-get install postgresql): every relay test ran on SQLite only")
}

setup_chromium() {
    command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 && command -v ffmpeg >/dev/null 2>&1 && return
    if can_install; then
        echo "Installing Chromium and chromium-driver (Debian) for the app's browser tests…" >&2
        apt_install chromium chromium-driver ffmpeg || true
    fi
    command -v chromedriver >/dev/null 2>&1 \
        || CONFIDANT_SETUP_NOTES+=("Chromium is not installed and could not be (apt-get install chromium chromium-driver): the app's browser test fails")
}

setup_deployment() {
    [[ -x /usr/sbin/nginx && -x /usr/bin/systemd-analyze ]] && return
    if can_install; then
        echo "Installing nginx and systemd (Debian) for the deployment tests…" >&2
        apt_install nginx systemd || true
        # The package starts a default server on port 80; the tests run their own.
        pkill -x nginx 2>/dev/null || true
    fi
    [[ -x /usr/sbin/nginx ]] \
        || CONFIDANT_SETUP_NOTES+=("nginx is not installed and could not be (apt-get install nginx): the deployment test is skipped")
}

setup_system_packages
setup_python
setup_postgres
setup_chromium
setup_deployment
