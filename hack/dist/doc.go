// Command dist writes what a release publishes besides the images (make dist): the
// kubectl plugin's archives for every platform, their checksums and the krew manifest.
//
//	go run ./hack/dist -o dist -version v0.1.0
package main
