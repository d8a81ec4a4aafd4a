// Package evicted takes the pods a kubelet evicts out of their Services' routes at once.
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
// It is a small keyed controller in the shape of Kubernetes' root-CA publisher: the
// informer's handler enqueues the pod's key, sync does one pod, a rate-limited work
// queue retries.
package evicted
