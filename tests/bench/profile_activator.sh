#!/usr/bin/env bash
# Where the activator's CPU goes on the warm path, beside the bare relays
# that sit in the same place (tcp_relay.h): runs activator_bench's warm
# path (64 keep-alive clients streaming 16 SSE chunks each, no bursts,
# nothing held) under `perf record -g`, then, for each process in between
# (its threads are named "activator", "relay-threads", "relay-epoll"),
# sorts its samples by what their call stack was doing. A sample counts in
# the first class whose pattern its stack matches, so the classes add up to
# 100 %.
#
# Usage: tests/bench/profile_activator.sh [build dir, default build]
#        [more activator_bench flags]
# Needs perf (linux-perf) and permission to sample
# (kernel.perf_event_paranoid <= 1, or root).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

perf record -q -F 2000 -g -o "$out/perf.data" -- \
  "$build/tests/bench/activator_bench" --burst 1 --held 0 --requests 100 "$@" |
  sed -n '/^warm path/,/^first burst/p' | grep -v '^first burst'

# class|pattern (grep -E on the stack). Order matters: first match wins.
classes=(
  "send: waking the reader on loopback|sock_def_readable"
  "send: the rest of the send path|__sys_sendto|tcp_sendmsg|__send"
  "poll/epoll: sleeping, waking, switching|finish_task_switch|schedule|do_sys_poll|__poll|do_epoll_wait|epoll_wait"
  "connect to the pod (a new connection per request)|__sys_connect|tcp_v4_connect"
  "recv|__sys_recvfrom|tcp_recvmsg|__libc_recv"
  "accept, close, socket set-up|__sys_accept|__close|tcp_close|__sys_socket|setsockopt"
  "memory (malloc/free)|malloc|cfree|_int_free|_int_malloc"
  "other kernel (interrupts, timers, softirq)|irq|softirq|hrtimer|do_syscall_64"
)

for comm in activator relay-threads relay-epoll; do
  # One line per sample of the process's threads: its stack, innermost first.
  perf script -i "$out/perf.data" --comm "$comm" -F ip,sym 2>/dev/null |
    awk 'NF == 0 { if (s != "") print s; s = ""; next } { s = s " " $2 }
         END { if (s != "") print s }' >"$out/stacks"
  total=$(wc -l <"$out/stacks")
  echo "$comm samples: $total (at 2000 Hz: $((total / 2)) ms of CPU)"
  [ "$total" -gt 0 ] || continue
  rest=$out/stacks
  for c in "${classes[@]}"; do
    name=${c%%|*}
    pattern=${c#*|}
    n=$(grep -cE -- "$pattern" "$rest" || true)
    grep -vE -- "$pattern" "$rest" >"$rest.next" || true
    mv "$rest.next" "$out/rest"
    rest=$out/rest
    awk -v n="$n" -v t="$total" -v c="$name" \
      'BEGIN { printf "  %-52s %5.1f %% %6d\n", c, 100 * n / t, n }'
  done
  awk -v n="$(wc -l <"$rest")" -v t="$total" \
    'BEGIN { printf "  %-52s %5.1f %% %6d\n", "user space: parsing, routing, relaying", 100 * n / t, n }'
  echo "  its innermost frames, most frequent first:"
  awk '{ print $1 }' "$rest" | sort | uniq -c | sort -rn | head -8 |
    awk '{ printf "    %5d  %s\n", $1, $2 }'
done
