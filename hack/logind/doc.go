// Command logind is the lab's stand-in for systemd-logind, for node 2's kubelet only (lab
// code, as hack/lb is): it runs a D-Bus bus of its own (dbus-daemon, on a socket in the
// lab's folder), owns org.freedesktop.login1 there, and answers the three things a
// kubelet's graceful node shutdown manager asks of logind: the InhibitDelayMaxUSec
// property, Inhibit("shutdown", ..., "delay") (a pipe's end as the lock), and the
// PrepareForShutdown signal. Node 2's kubelet reaches it through
// DBUS_SYSTEM_BUS_ADDRESS; nothing else does.
//
// The machine is never touched: no system bus, no real logind, no power state. A
// SIGUSR1 to this program tells the kubelet that the node is shutting down
// (PrepareForShutdown true); a SIGUSR2 that the shutdown was cancelled (false), after
// which the kubelet takes its lock again and the node serves as before. Each event and
// each lock taken or released is a line of its log, with the time.
//
// InhibitDelayMaxUSec is --max-delay, longer than the kubelet's shutdownGracePeriod:
// a kubelet that finds it shorter writes /etc/systemd/logind.conf.d/99-kubelet.conf and
// asks systemd to reload logind, which the lab must never let it do.
//
//	go run ./hack/logind --dir DIR [--dbus-daemon PATH] [--max-delay 5m]
package main
