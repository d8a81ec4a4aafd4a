// Package evicted takes the pods a kubelet evicts, or stops because its node shuts down,
// out of their Services' routes at once.
//
// A kubelet that evicts a pod for node pressure stops it with no deletion: the pod stays
// ready, so its endpoint stays in every EndpointSlice, through its preStop hook and
// until its containers are gone, and a preStop delay then only moves the loss later
// (kubernetes/kubernetes #124648; TestKubeletTerminations measures it on the lab). The
// pod's DisruptionTarget condition comes too late to act on: the kubelet sends it only
// with the terminal phase. What the kubelet writes first is its Evicted Event.
//
// Router watches those Events (reason Evicted, from a kubelet, on a Pod: a field
// selector, so the API server sends no other) and deletes each such pod whose preStop
// holds it (hook.Hook.Holds), with the pod's own grace period and its UID as a
// precondition: the endpoint turns terminating as in any deletion, and the preStop then
// covers the routes' tail, while the kubelet's stop goes on, no shorter. The pod leaves
// the API once stopped (its record is the Events). Why a deletion and not removing the
// labels its Service selects, which the lab measured as just as good: an unlabelled pod
// leaves its ReplicaSet, so nothing ever deletes it, and other selectors (network
// policies, budgets, monitoring) lose it mid-preStop.
//
// A kubelet's graceful node shutdown stops every pod of its node the same way, with no
// deletion and no Event on the pods; what it writes first is its node's Ready condition,
// False with the message "node is shutting down" (ShutdownMessage). Router also watches
// the Nodes (kept as their name and Ready condition only) and, for a node that says so,
// reads the node again, lists its pods and deletes each one whose preStop holds it, as
// above (TestKubeletTerminations measures it on the lab, through the kubelet's own shutdown
// manager and a stand-in logind).
//
// It is a small keyed controller in the shape of Kubernetes' root-CA publisher: the
// informers' handlers enqueue a pod's key or a node's, sync does one, a rate-limited
// work queue retries.
package evicted
