// Package controller is nap's in-cluster controller (`napctl controller`):
//
//   - Publisher keeps the nap ConfigMap (the binaries of the running version) in every
//     selected namespace, like Kubernetes' root-CA publisher keeps kube-root-ca.crt, and
//     repairs every deletion or edit of its copies;
//   - Injector is the mutating admission webhook that gives opted-in pods a preStop
//     hook, with the same inject.Inject as `napctl inject`;
//   - Reporter finds what fails silently — pods the webhook missed, hooks that cannot
//     work, FailedPreStopHook events — and reports it on the owning workloads and as
//     metrics (optionally evicting the missed pods so they are recreated injected);
//   - Certs bootstraps and rotates the webhook's CA and certificate in a Secret and
//     the caBundle of its own MutatingWebhookConfiguration;
//   - Install is every object `napctl install` prints (and deploy/ holds).
package controller
