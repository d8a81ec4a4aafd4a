// Package testenv is how nap's tests meet their prerequisites (qemu-user, root, a
// kube-apiserver, a cluster). A missing prerequisite fails the test with the make
// target that installs it. Only a developer may opt out, explicitly, with
// NAP_ALLOW_SKIP=1 outside CI; in CI (CI=true) nothing skips.
package testenv
