// Package configmap is the nap ConfigMap: one tiny binary per architecture in
// binaryData (from package sleeper), each with its sha256 in an annotation, for pods to
// mount and exec as their preStop hook. napctl configmap prints it and the controller
// publishes it into every namespace.
package configmap
