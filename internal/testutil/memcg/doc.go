// Package memcg runs a process in a memory cgroup of its own, limited as a container's
// memory limit limits it (the kubelet's cgroup for a container with
// resources.limits.memory), and reads what the kernel counted there: the peak charged
// to the group and the OOM kills. cgroup v1 (the memory controller's own hierarchy) and
// v2 (the unified one) are both handled. It needs root.
package memcg
