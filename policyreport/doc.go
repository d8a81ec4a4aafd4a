// Package policyreport writes what nap finds unprotected as the policy report objects
// that policy engines write and dashboards read (policy-reporter, Kyverno's UI): one
// report per namespace, one result per unprotected workload and reason. It writes
// OpenReports' Report (openreports.io/v1alpha1) or, where the cluster serves only that,
// the wg-policy PolicyReport (wgpolicyk8s.io/v1alpha2): writer.Detect asks the API server.
//
// Its writer package keeps them current from the controller's Reporter: a namespace's report is
// created when something there is unprotected, updated when that changes, deleted when
// the namespace is clean, and not written at rest. napctl status -o openreports prints
// the same reports from its own scan.
package policyreport
