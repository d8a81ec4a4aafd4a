// Package dryrun holds the tests that check napctl inject's output against a real
// kube-apiserver (envtest): every injected golden output, the ConfigMap and the public
// corpus pass a server-side dry-run create. They live apart from package inject so that
// inject's fuzzing builds do not compile client-go and controller-runtime.
package dryrun
