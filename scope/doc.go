// Package scope is the one decision of which pods get nap's preStop delay at admission:
// the scopes (opt-in, default, audit) an install and a namespace choose, the labels that
// opt pods and namespaces in or out, and Decide, which the webhook, the Reporter and
// napctl status all call, and which the MutatingAdmissionPolicy's CEL is tested against.
// It is pure: what it needs of the cluster (the namespace's labels, its Services) is
// handed to it. Which Services select a pod is Selects; Index answers it for a whole
// input at once (lint's workloads, inject's templates) without trying every Service.
package scope
