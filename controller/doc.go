// Package controller is nap's in-cluster controller (`napctl controller`):
//
//   - Publisher keeps the nap ConfigMap (the binaries of the running version) in every
//     selected namespace, like Kubernetes' root-CA publisher keeps kube-root-ca.crt, and
//     repairs every deletion or edit of its copies;
//   - Injector is the mutating admission webhook that gives pods a preStop hook: the
//     pods its selectors send, and for the policy webhook those scope.Decide chooses;
//     it runs inject.Patch on the decoded pod, the plan `napctl inject` runs, and
//     answers with its edits as a JSON Patch;
//   - AdmissionPolicy is the MutatingAdmissionPolicy that does the opt-in injection in
//     the API server (CEL), held to the webhook's pod specs by its tests;
//   - Reporter finds what fails silently — pods scope.Decide says the webhook should
//     have injected and it did not, hooks that cannot work (lint's termination checks
//     on live pods), FailedPreStopHook events — and reports it on the owning workloads
//     and as metrics (optionally evicting the missed pods so they are recreated
//     injected);
//   - Certs bootstraps and rotates the webhook's CA and certificate in a Secret and
//     the caBundle of its own MutatingWebhookConfiguration;
//   - NewManager wires them.
//
// Package controller/install holds every object `napctl install` prints (and deploy/).
package controller
