#!/bin/sh
# The container's entry point: run polygraph in the host's mount namespace.
# The kernel names files as the host's mount namespace sees them, and watch
# reads the host's /etc/passwd (whose homes it guards), /proc (hostPID) and
# dpkg database, and hashes the binaries the agents run: all of them must
# be the host's, not the image's. So the binary is copied to the host's
# /var/lib/polygraph (the state volume, mounted at the same path) and run
# there through nsenter with the host's mount, UTS, IPC and network
# namespaces. Needs a privileged container with hostPID (the DaemonSet).
set -eu
state=/var/lib/polygraph
install -d -m 0700 "$state/bin"
install -m 0755 /usr/bin/polygraph "$state/bin/polygraph.new"
mv -f "$state/bin/polygraph.new" "$state/bin/polygraph"
export POLYGRAPH_HOME="$state"
# nsenter execs polygraph (no --pid: no fork), so SIGTERM from the kubelet
# reaches it and it closes its sessions.
exec nsenter --target 1 --mount --uts --ipc --net -- "$state/bin/polygraph" "$@"
