// Package controller is nap's in-cluster controller (`napctl controller`):
//
//   - Publisher keeps the nap ConfigMap (the binaries of the running version) in every
//     selected namespace, like Kubernetes' root-CA publisher keeps kube-root-ca.crt, and
//     repairs every deletion or edit of its copies;
//   - Injector is the mutating admission webhook that gives pods a preStop hook: the
//     pods its selectors send, and for the policy webhook those scope.Decide chooses;
//     it runs inject.Patch on the decoded pod, the plan `napctl inject` runs, and
//     answers with its edits as a JSON Patch;
//   - CalibrationSource holds the calibration kept in the cluster (napctl calibrate
//     --store), by which the Injector gives each pod the wait of its own paths;
//   - AdmissionPolicy is the MutatingAdmissionPolicy that does the opt-in injection in
//     the API server (CEL), held to the webhook's pod specs by its tests;
//   - NewManager wires them with the Reporter (package controller/report: what fails
//     silently, on the owning workloads, as metrics and policy reports), the webhook's
//     certificates (package controller/certs) and the router of evicted pods (package
//     controller/evicted: a pod its kubelet evicts leaves its routes at once).
//
// Package controller/install holds every object `napctl install` prints (and deploy/).
package controller
