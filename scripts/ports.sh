#!/usr/bin/env bash
# Sourced by setup.sh: when a port we want is taken by someone else, say who holds it and what to do,
# instead of letting pg_ctl or redis-server fail with "could not start server".

# port_holder PORT -> "pid command (checkout or data directory)" of the process listening on 127.0.0.1:PORT
port_holder() {
  local port="$1" pid cmd where
  pid=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
  [ -n "$pid" ] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)
  where=$(readlink "/proc/$pid/cwd" 2>/dev/null || true)
  echo "pid $pid: $cmd (working directory $where)"
}

# refuse_taken_port PORT WHAT VARIABLE: exit with an explanation when PORT is held by another server.
refuse_taken_port() {
  local port="$1" what="$2" variable="$3" holder
  holder=$(port_holder "$port") || holder="an unknown process (ss shows no owner; is it another user's?)"
  cat >&2 <<MSG
[setup] cannot start $what on 127.0.0.1:$port: the port is taken by
        $holder
        That is probably another checkout's 'make run' or 'make test' (their servers keep running).
        Stop it there, or use another port here:  $variable=$((port + 1)) make run
MSG
  exit 1
}
