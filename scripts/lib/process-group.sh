# Sourced by the CI scripts (issue 23, item 16): what a step starts in the background runs in a
# process group of its own, and is stopped as a group. `npx bun run ...` is npx with bun as its
# child: a SIGTERM to the pid of `$!` reached npx only, and the server outlived CI.
#
#   start_group <command...>     runs it under setsid in the background; its group id in GROUP
#   stop_group <group> [seconds] SIGTERM to the whole group, waits (default 15 s), then SIGKILL;
#                                fails when anything of the group is still alive after that
#   group_alive <group>          true while any process of the group lives

start_group() {
  # without job control a background job is no group leader, so setsid makes no fork: $! is the
  # new session's (and group's) id
  setsid "$@" &
  GROUP=$!
}

group_alive() {
  kill -0 -- "-$1" 2>/dev/null
}

stop_group() {
  local group=$1 seconds=${2:-15} i
  kill -TERM -- "-$group" 2>/dev/null || true
  for ((i = 0; i < seconds * 10; i++)); do
    group_alive "$group" || break
    sleep 0.1
  done
  if group_alive "$group"; then
    echo "process group $group still alive ${seconds}s after SIGTERM: SIGKILL" >&2
    kill -KILL -- "-$group" 2>/dev/null || true
    sleep 0.5
  fi
  wait "$group" 2>/dev/null || true
  if group_alive "$group"; then
    echo "process group $group survived SIGKILL:" >&2
    ps -o pid,pgid,cmd -g "$group" >&2 || true
    return 1
  fi
}

# the port is free again: nothing answers on it
port_closed() {
  ! curl -s -m 2 -o /dev/null "http://127.0.0.1:$1/" 2>/dev/null
}

# the processes whose environment holds this exact `NAME=value` (Linux /proc): what a step started
# with a unique value (e.g. its DATA_DIR) can be found by it, whatever became of its group
procs_with_env() {
  local entry pid
  for entry in /proc/[0-9]*/environ; do
    pid=${entry#/proc/}; pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    if { tr '\0' '\n' <"$entry"; } 2>/dev/null | grep -Fxq -- "$1"; then echo "$pid"; fi
  done
}
